// Predict candidates of one engine on real Best Buy products: every source maps to its type,
// documents declare other types, requested fields come back, filters restrict documents, and
// the candidates of a split index merge into the same set.
import { beforeAll, describe, expect, it } from 'vitest';
import { SuggestEngine } from '../engine.js';
import { validateFilters } from '../filters.js';
import { fieldsOf } from '../predict.js';
import { loadBestBuy } from './helpers.js';

describe('SuggestEngine.predict', () => {
  let engine: SuggestEngine;
  beforeAll(() => {
    engine = new SuggestEngine();
    engine.upsert(loadBestBuy());
    engine.upsert([{ id: 'help-1', title: 'Returns and exchanges policy', desc: '', manufacturer: '', raw: { predict_type: 'content', url: '/help/returns' } }]);
    engine.optimize();
  });

  it('maps brands, categories, phrases and products to prediction types', () => {
    const r = engine.predict({ query: 'sams' });
    const types = new Set(r.candidates.map((c) => c.type));
    expect(types.has('destination')).toBe(true);
    expect(types.has('product')).toBe(true);
    expect(types.has('intent')).toBe(true);
    const brand = r.candidates.find((c) => c.object === 'brand')!;
    expect(brand).toMatchObject({ type: 'destination', label: 'Samsung', source: 'suggestion', key: 's:q:samsung' });
    const docs = r.candidates.filter((c) => c.source === 'document');
    expect(docs.length).toBe(20);
    docs.forEach((d, i) => {
      expect(d.rank).toBe(i);
      expect(d.key).toBe(`d:${d.id}`);
      expect(d.matched).toBeGreaterThan(0);
    });
    expect(r.suggestions.length).toBeGreaterThan(0);
    const cat = engine.predict({ query: 'cell pho' }).candidates.find((c) => c.type === 'category');
    expect(cat?.object).toBe('category');
  });

  it('lets a document declare its type and returns the requested fields', () => {
    const r = engine.predict({ query: 'returns policy', fields: ['url', 'title', 'missing'] });
    const help = r.candidates.find((c) => c.id === 'help-1' && c.source === 'document')!;
    expect(help).toMatchObject({ type: 'content', object: 'document', fields: { url: '/help/returns', title: 'Returns and exchanges policy' } });
    expect(help.fields).not.toHaveProperty('missing');
  });

  it('spell-corrects like typeahead and autocomplete', () => {
    expect(engine.predict({ query: 'iphne' }).corrected_query).toBe('iphone');
    expect(engine.predict({ query: 'iphone' }).corrected_query).toBeNull();
  });

  it('applies filters to documents and drops unfiltered product suggestions', () => {
    const r = engine.predict({ query: 'galaxy', filters: validateFilters({ price: { gte: 500 } }).filters, fields: ['price'] });
    const docs = r.candidates.filter((c) => c.type === 'product');
    expect(docs.length).toBeGreaterThan(0);
    for (const d of docs) {
      expect(d.source).toBe('document');
      expect(Number(d.fields.price)).toBeGreaterThanOrEqual(500);
    }
  });

  it('reads fields from the document and its raw attributes', () => {
    const doc = { id: 'x', title: ' T ', desc: '', manufacturer: 'M', raw: { n: 3, list: ['a', 'b'], empty: '', obj: { a: 1 } } };
    expect(fieldsOf(doc, ['id', 'title', 'desc', 'manufacturer', 'n', 'list', 'empty', 'obj'])).toEqual({ id: 'x', title: 'T', manufacturer: 'M', n: '3', list: 'a' });
    expect(fieldsOf(null, ['id'])).toEqual({});
  });
});
