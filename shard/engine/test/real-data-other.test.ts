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
