// Synonyms and merchandising rules inside one engine: boost/bury/hide act before the top-k cut,
// synonym readings find documents the typed words miss (and say so), pinned documents are
// returned for the router to place, typeahead honours hides, and malformed payloads are refused.
import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { SuggestError } from '../../../node/runtime/errors.js';
import type { RankingPayload } from '../../../node/runtime/ranking-payload.js';
import { SuggestEngine } from '../engine.js';
import { parseRankingPayload, SYNONYM_FACTOR } from '../ranking-rules.js';
import { loadBestBuy } from './helpers.js';

const docs: SuggestDocument[] = [
  { id: 'tv1', title: 'Samsung 55 inch 4K TV', desc: '', manufacturer: 'Samsung', raw: { category: 'TVs', price: 499 } },
  { id: 'tv2', title: 'LG 65 inch OLED TV', desc: '', manufacturer: 'LG', raw: { category: 'TVs', price: 1299 } },
  { id: 'tv3', title: 'Sony Bravia Television 50 inch', desc: '', manufacturer: 'Sony', raw: { category: 'TVs', price: 699 } },
  { id: 'st1', title: 'TV Stand for 55 inch TV', desc: '', manufacturer: 'Walker', raw: { category: 'Furniture', price: 149 } },
  { id: 'ca1', title: 'HDMI Cable 6 ft', desc: 'for TV and monitor', manufacturer: 'Insignia', raw: { category: 'Cables', price: 9.99 } },
];

function engine(): SuggestEngine {
  const e = new SuggestEngine();
  e.upsert(docs);
  return e;
}

const ids = (r: { suggestions: { id: string }[] }) => r.suggestions.map((s) => s.id);

describe('ranking rules in the engine', () => {
  it('finds documents through a synonym reading, scored below, and marks them', () => {
    const e = engine();
    const plain = e.autocomplete({ query: 'tv ' });
    expect(ids(plain)).not.toContain('tv3');
    const ranking: RankingPayload = { synonyms: [{ query: 'television', from: 'tv', to: 'television' }] };
    const r = e.autocomplete({ query: 'tv ', ranking, debug: true });
    const sony = r.suggestions.find((s) => s.id === 'tv3');
    expect(sony?.metadata.synonym).toEqual({ from: 'tv', to: 'television' });
    for (const s of r.suggestions.filter((x) => x.id !== 'tv3')) expect(s.metadata.synonym).toBeUndefined();
    // the same document searched directly scores 1 / SYNONYM_FACTOR higher
    const direct = e.autocomplete({ query: 'television ' }).suggestions.find((s) => s.id === 'tv3')!;
    expect(sony!.score).toBeCloseTo(direct.score * SYNONYM_FACTOR, 3);
    expect(r.ranking?.synonym_readings[0]).toMatchObject({ from: 'tv', to: 'television', query: 'television' });
  });

  it('boosts and buries by attribute before the top-k cut', () => {
    const e = engine();
    const base = ids(e.autocomplete({ query: 'inch', limit: 5 }));
    const lastTv = base[base.length - 1]!;
    const boosted = e.autocomplete({ query: 'inch', limit: 1, ranking: { rules: [{ id: 'b', action: 'boost', target: { ids: [lastTv] }, factor: 50 }] } });
    expect(ids(boosted)).toEqual([lastTv]);
    expect(boosted.suggestions[0]!.metadata.merchandised).toEqual([{ id: 'b', action: 'boost', factor: 50 }]);
    const buried = e.autocomplete({ query: 'inch', limit: 5, ranking: { rules: [{ id: 'x', action: 'bury', target: { field: 'manufacturer', values: ['samsung'] }, factor: 0.01 }] } });
    expect(ids(buried).at(-1)).toBe('tv1');
    expect(buried.suggestions.at(-1)!.metadata.merchandised).toEqual([{ id: 'x', action: 'bury', factor: 0.01 }]);
  });

  it('hides documents by id or attribute, and a hidden document is never pinned', () => {
    const e = engine();
    const ranking: RankingPayload = {
      rules: [
        { id: 'h1', action: 'hide', target: { field: 'category', values: ['Furniture'] } },
        { id: 'h2', action: 'hide', target: { ids: ['tv2'] } },
      ],
      pins: [{ id: 'p', target: { ids: ['tv2', 'ca1'] }, position: 1 }],
    };
    const r = e.autocomplete({ query: 'tv', ranking, debug: true });
    expect(ids(r)).not.toContain('st1');
    expect(ids(r)).not.toContain('tv2');
    expect(r.ranking?.hidden).toEqual({ h1: 1, h2: 1 });
    expect(r.pinned?.map((x) => x.suggestion.id)).toEqual(['ca1']);
    expect(r.pinned?.[0]).toMatchObject({ rule: 'p', position: 1, order: 1 });
  });

  it('returns pinned documents even when the query does not match them, but not when filters exclude them', () => {
    const e = engine();
    const pins = [{ id: 'p', target: { ids: ['ca1', 'nope'] }, position: 2 }];
    const r = e.autocomplete({ query: 'oled', ranking: { pins } });
    expect(r.pinned?.map((x) => x.suggestion.id)).toEqual(['ca1']);
    const filtered = e.autocomplete({ query: 'oled', filters: { clauses: [{ kind: 'range', field: 'price', gte: 100 }] }, ranking: { pins } });
    expect(filtered.pinned).toBeUndefined();
    // an attribute pin: the best match of the query having the attribute
    const attr = e.autocomplete({ query: 'inch', ranking: { pins: [{ id: 'a', target: { field: 'manufacturer', values: ['Sony'] }, position: 1 }] } });
    expect(attr.pinned?.map((x) => x.suggestion.id)).toEqual(['tv3']);
    expect(attr.pinned?.[0]!.suggestion.score).toBeGreaterThan(0);
  });

  it('typeahead honours hides of products and nothing else', () => {
    const e = new SuggestEngine();
    e.upsert(loadBestBuy().slice(0, 800));
    const plain = e.typeahead({ query: 'otterbox defender', limit: 10 });
    const products = plain.suggestions.filter((s) => s.type === 'product');
    expect(products.length).toBeGreaterThan(2);
    const hidden = products[0]!.id;
    const hid = e.typeahead({ query: 'otterbox defender', limit: 10, ranking: { rules: [{ id: 'h', action: 'hide', target: { ids: [hidden] } }] } });
    expect(hid.suggestions.map((s) => s.id)).not.toContain(hidden);
    expect(hid.suggestions).toHaveLength(10);
    // by attribute (the exact title): that product goes, the mined query suggestions stay
    const byAttr = e.typeahead({ query: 'otterbox defender', limit: 10, ranking: { rules: [{ id: 'h', action: 'hide', target: { field: 'title', values: [products[1]!.title] } }] } });
    expect(byAttr.suggestions.map((s) => s.id)).not.toContain(products[1]!.id);
    expect(byAttr.suggestions.some((s) => s.type !== 'product')).toBe(true);
    const boosted = e.typeahead({ query: 'sam', ranking: { rules: [{ id: 'b', action: 'boost', target: { field: 'brand', values: ['Apple'] }, factor: 10 }] } });
    expect(boosted.suggestions).toEqual(e.typeahead({ query: 'sam' }).suggestions);
  });

  it('costs nothing when no rule applies: the answer is the same object shape as without rules', () => {
    const e = engine();
    expect(e.autocomplete({ query: 'tv', ranking: {} })).toEqual(e.autocomplete({ query: 'tv' }));
    expect(e.autocomplete({ query: 'tv', ranking: { rules: [{ id: 'z', action: 'boost', target: { ids: ['absent'] }, factor: 3 }] } }).suggestions.map((s) => s.score)).toEqual(
      e.autocomplete({ query: 'tv' }).suggestions.map((s) => s.score),
    );
  });

  it('refuses malformed ranking payloads with a validation error', () => {
    const bad: unknown[] = [
      'x',
      [],
      { synonyms: 'tv' },
      { synonyms: [{ query: 1 }] },
      { rules: [{ id: 'a', action: 'explode', target: { ids: [] } }] },
      { rules: [{ id: 'a', action: 'boost', target: { ids: ['x'] } }] },
      { rules: [{ id: 'a', action: 'boost', target: { ids: ['x'] }, factor: -1 }] },
      { rules: [{ id: 'a', action: 'hide', target: { field: 'brand' } }] },
      { pins: [{ id: 'p', target: { ids: ['x'] }, position: 0 }] },
      { synonyms: Array.from({ length: 9 }, () => ({ query: 'a', from: 'b', to: 'a' })) },
    ];
    for (const b of bad) expect(() => parseRankingPayload(b), JSON.stringify(b)).toThrow(SuggestError);
    expect(parseRankingPayload(undefined)).toBeNull();
    expect(parseRankingPayload({ rules: [{ id: 'a', action: 'hide', target: { field: 'brand', values: ['x', 1, true] } }] })?.rules?.[0]?.target).toEqual({ field: 'brand', values: ['x', 1, true] });
  });
});

describe('ranking rules in the vector modes', () => {
  it('keeps hidden documents out of vector_only and hybrid answers and boosts there too', () => {
    const e = engine();
    for (const mode of ['vector_only', 'hybrid', 'fts_rerank'] as const) {
      const query = mode === 'fts_rerank' ? 'inch' : 'television';
      const plain = e.autocomplete({ query, mode, limit: 5 });
      expect(plain.suggestions.length, mode).toBeGreaterThan(1);
      const top = plain.suggestions[0]!.id;
      const hid = e.autocomplete({ query, mode, limit: 5, ranking: { rules: [{ id: 'h', action: 'hide', target: { ids: [top] } }] } });
      expect(ids(hid), mode).not.toContain(top);
      const last = plain.suggestions.at(-1)!.id;
      const up = e.autocomplete({ query, mode, limit: 5, ranking: { rules: [{ id: 'b', action: 'boost', target: { ids: [last] }, factor: 100 }] } });
      expect(ids(up)[0], mode).toBe(last);
      expect(up.suggestions[0]!.metadata.merchandised, mode).toEqual([{ id: 'b', action: 'boost', factor: 100 }]);
    }
  });
});
