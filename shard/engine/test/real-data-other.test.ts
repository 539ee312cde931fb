// Behaviour on the BigBasket catalogue (CSV-shaped attributes) and on non-Latin scripts.
import { describe, expect, it } from 'vitest';
import { SuggestEngine } from '../engine.js';
import { validateFilters } from '../filters.js';
import { loadBigBasket } from './helpers.js';

const titles = (r: { suggestions: { title: string }[] }): string[] => r.suggestions.map((s) => s.title);

describe('BigBasket catalogue', () => {
  it('handles CSV-shaped attributes: brand from manufacturer, categories, INR prices, ratings', () => {
    const engine = new SuggestEngine();
    engine.upsert(loadBigBasket().slice(0, 6000));
    const r = engine.autocomplete({ query: 'garlic oil' });
    expect(r.suggestions[0]?.title.toLowerCase()).toContain('garlic');
    expect(r.suggestions[0]?.currency).toBe('INR');
    const cat = engine.typeahead({ query: 'beauty' });
    expect(cat.suggestions.some((s) => s.type === 'category' && s.title === 'Beauty & Hygiene')).toBe(true);
    const f = validateFilters({ category: ['Beauty & Hygiene'], rating: { gte: 4 } });
    const filtered = engine.autocomplete({ query: 'oil', filters: f.filters, limit: 20 });
    expect(filtered.suggestions.length).toBeGreaterThan(0);
    for (const s of filtered.suggestions) expect(s.metadata.concepts).toContain('Beauty & Hygiene');
  });

  it('keeps the products of the words before the last when the last word leaves none, in typeahead', () => {
    const engine = new SuggestEngine();
    engine.upsert(loadBigBasket());
    // no BigBasket title gives a juice's size: "mango juice" products (juice may be their
    // category) instead of an empty list
    const juice = engine.typeahead({ query: 'mango juice 1l' });
    expect(juice.suggestions.length).toBeGreaterThan(3);
    for (const s of juice.suggestions) expect(s.title.toLowerCase()).toContain('mango');
    expect(juice.suggestions.some((s) => s.title.toLowerCase().includes('juice'))).toBe(true);
    expect(juice.corrected_query).toBeNull();
    // the words before the last find nothing either: nothing is made up
    expect(engine.typeahead({ query: 'qqxv zzkw 1l' }).suggestions).toEqual([]);
    // a last word that does match keeps every word required
    for (const s of engine.typeahead({ query: 'mango juice alphon' }).suggestions) expect(s.title.toLowerCase()).toContain('alphonso');
  });
});

describe('other scripts', () => {
  it('finds CJK and Devanagari titles by prefix', () => {
    const engine = new SuggestEngine();
    engine.upsert([
      { id: 'jp1', title: '東京タワー 模型', desc: '', manufacturer: '東京模型', raw: {} },
      { id: 'jp2', title: '東京スカイツリー 模型', desc: '', manufacturer: '東京模型', raw: {} },
      { id: 'hi1', title: 'नमस्ते चाय', desc: '', manufacturer: '', raw: {} },
      { id: 'ru1', title: 'Красный чай', desc: '', manufacturer: '', raw: {} },
    ]);
    expect(engine.autocomplete({ query: '東京タ' }).suggestions[0]?.id).toBe('jp1');
    expect(titles(engine.typeahead({ query: '東京' }))).toContain('東京模型');
    expect(engine.autocomplete({ query: 'नमस्' }).suggestions[0]?.id).toBe('hi1');
    expect(engine.autocomplete({ query: 'красн' }).suggestions[0]?.id).toBe('ru1');
  });
});
