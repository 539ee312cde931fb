// Behaviour on the Best Buy catalogue (see /work/shared/data/SOURCES.md).
import { beforeAll, describe, expect, it } from 'vitest';
import { words } from '../../../node/runtime/text/tokenize.js';
import { SuggestEngine } from '../engine.js';
import { validateFilters } from '../filters.js';
import { loadBestBuy } from './helpers.js';

const titles = (r: { suggestions: { title: string }[] }): string[] => r.suggestions.map((s) => s.title);

describe('Best Buy catalogue', () => {
  const engine = new SuggestEngine();
  beforeAll(() => {
    engine.upsert(loadBestBuy());
    engine.refresh();
  });

  it('suggests the brand first for a brand prefix', () => {
    const r = engine.typeahead({ query: 'sams' });
    expect(r.suggestions[0]).toMatchObject({ type: 'brand', title: 'Samsung', id: 'q:samsung' });
    expect(r.corrected_query).toBeNull();
  });

  it('completes a multi-word prefix', () => {
    const t = titles(engine.typeahead({ query: 'samsung gal' }));
    expect(t[0]).toBe('Samsung Galaxy');
    expect(t).toContain('Samsung Galaxy S7');
    for (const s of t) expect(s.toLowerCase()).toContain('samsung galaxy');
  });

  it('completes any word, ranking later-word matches lower', () => {
    const r = engine.typeahead({ query: 'gal' });
    expect(titles(r)).toContain('Samsung Galaxy');
    expect(titles(r)).toContain('Galaxy');
  });

  it('corrects a typo', () => {
    const r = engine.typeahead({ query: 'iphne' });
    expect(r.corrected_query).toBe('iphone');
    expect(r.suggestions[0]?.title.toLowerCase()).toContain('iphone');
    expect(engine.typeahead({ query: 'smasung' }).corrected_query).toBe('samsung');
    expect(engine.typeahead({ query: 'samsung galxy' }).corrected_query).toBe('samsung galaxy');
  });

  it('treats a finished word as a whole word', () => {
    for (const s of engine.typeahead({ query: 'case ' }).suggestions) expect(words(s.title)).toContain('case');
  });

  it('falls back to products when no suggestion covers the words', () => {
    const r = engine.typeahead({ query: 'defender s7 gr' });
    expect(r.suggestions.length).toBeGreaterThan(0);
    expect(r.suggestions[0]?.type).toBe('product');
    expect(r.suggestions[0]?.title).toMatch(/Defender.*S7.*Gr/);
  });

  it('ranks matching products for autocomplete, typos included', () => {
    const r = engine.autocomplete({ query: 'otterbox defender galaxy s7' });
    expect(r.suggestions[0]?.title).toMatch(/OtterBox - Defender Series Case for Samsung Galaxy S7/i);
    const typo = engine.autocomplete({ query: 'wireles charger' });
    expect(typo.corrected_query).toBe('wireless charger');
    expect(typo.suggestions[0]?.title).toMatch(/Wireless Charg/);
    expect(typo.suggestions[0]?.metadata.typos).toBeGreaterThan(0);
  });

  it('prefers products whose title or category holds the words over description matches', () => {
    const top = engine.autocomplete({ query: 'samsung galaxy s7 case' }).suggestions.slice(0, 8);
    for (const s of top) expect(`${s.title} ${s.metadata.concepts.join(' ')}`).toMatch(/case/i);
  });

  it('filters by category and price', () => {
    const f = validateFilters({ categories: ['Cell Phone Cases & Clips'], price: { lte: 20 } });
    const r = engine.autocomplete({ query: 'iphone', filters: f.filters, limit: 20 });
    expect(r.suggestions.length).toBeGreaterThan(5);
    for (const s of r.suggestions) expect(s.price).toBeLessThanOrEqual(20);
  });

  it('answers every keystroke of a typed query, typos included', () => {
    // speed is measured by shard/bench/engine-bench.ts and loadtest/, not here: a timed unit test
    // only measures how busy the machine is
    const queries = ['s', 'sa', 'sam', 'sams', 'samsu', 'samsung', 'samsung g', 'samsung gal', 'i', 'ip', 'iph', 'ipho', 'iphon', 'iphone', 'iphne', 'case f', 'otter', 'wirel'];
    for (const q of queries) expect(engine.typeahead({ query: q }).suggestions.length, q).toBeGreaterThan(0);
  });
});
