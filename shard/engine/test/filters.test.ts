import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { canonicalValue, compileFilters, validateFilters } from '../filters.js';
import { SegmentBuilder } from '../segment-builder.js';

const docs: SuggestDocument[] = [
  { id: 'a', title: 'Red Shoe', desc: '', manufacturer: 'Acme', raw: { price: 10, color: 'Red', categories: ['Shoes', 'Sale'], stock: '5' } },
  { id: 'b', title: 'Blue Shoe', desc: '', manufacturer: 'Acmé', raw: { price: '25.50', color: 'blue', categories: ['Shoes'] } },
  { id: 'c', title: 'Green Hat', desc: '', manufacturer: 'Hatco', raw: { price: 40, color: 'Green', on_sale: true } },
  { id: 'd', title: 'Plain Hat', desc: '', manufacturer: '', raw: { brand: 'Hatco' } },
];

function matching(filters: unknown): string[] {
  const v = validateFilters(filters);
  expect(v.problems).toEqual([]);
  if (!v.filters) return [];
  const seg = new SegmentBuilder().addAll(docs).build();
  const p = compileFilters(v.filters, seg);
  return docs.map((_, i) => i).filter(p).map((i) => seg.idAt(i));
}

describe('validateFilters', () => {
  it('accepts JSON text or an object; nothing is no filter', () => {
    expect(validateFilters('{"color": ["red"]}').filters?.clauses).toEqual([{ kind: 'in', field: 'color', values: ['red'] }]);
    expect(validateFilters({ price: { gte: 10, lt: '20' } }).filters?.clauses).toEqual([{ kind: 'range', field: 'price', gte: 10, lt: 20 }]);
    expect(validateFilters(undefined)).toEqual({ filters: null, problems: [] });
    expect(validateFilters('')).toEqual({ filters: null, problems: [] });
  });

  it('lists every problem with its location', () => {
    const bad = validateFilters({ price: { gte: 'cheap', between: 3 }, color: [], size: [{}], '': ['x'], tags: null });
    expect(bad.filters).toBeNull();
    expect(bad.problems.map((p) => p.loc)).toEqual([
      ['filters', 'price', 'gte'],
      ['filters', 'price', 'between'],
      ['filters', 'color'],
      ['filters', 'size', 0],
      ['filters', ''],
      ['filters', 'tags'],
    ]);
    expect(validateFilters('{not json').problems[0]?.type).toBe('json_invalid');
    expect(validateFilters('[1,2]').problems[0]?.msg).toMatch(/JSON object/);
    expect(validateFilters({ price: {} }).problems[0]?.msg).toMatch(/at least one/);
  });

  it('canonicalizes values: numbers by value, text folded', () => {
    expect(canonicalValue('25.50')).toBe('25.5');
    expect(canonicalValue(25.5)).toBe('25.5');
    expect(canonicalValue(' Acmé ')).toBe('acme');
    expect(canonicalValue(true)).toBe('true');
    expect(canonicalValue(-0)).toBe('0');
  });
});

describe('compileFilters', () => {
  it('matches exact values case- and accent-insensitively, any value of an array', () => {
    expect(matching({ color: ['RED', 'blue'] })).toEqual(['a', 'b']);
    expect(matching({ categories: ['sale'] })).toEqual(['a']);
    expect(matching({ 'raw.categories': ['Shoes'] })).toEqual(['a', 'b']);
    expect(matching({ manufacturer: ['acme'] })).toEqual(['a', 'b']);
    expect(matching({ brand: ['hatco'] })).toEqual(['c', 'd']);
    expect(matching({ on_sale: [true] })).toEqual(['c']);
    expect(matching({ id: ['b', 'zzz'] })).toEqual(['b']);
    expect(matching({ title: ['green hat'] })).toEqual(['c']);
    expect(matching({ color: 'green' })).toEqual(['c']);
  });

  it('matches ranges on numbers and numeric strings', () => {
    expect(matching({ price: { gte: 10, lte: 25.5 } })).toEqual(['a', 'b']);
    expect(matching({ price: { gt: 10 } })).toEqual(['b', 'c']);
    expect(matching({ price: { lt: 10 } })).toEqual([]);
    expect(matching({ stock: { gte: 5 } })).toEqual(['a']);
    expect(matching({ price: ['25.5'] })).toEqual(['b']);
  });

  it('combines fields with AND; unknown fields match nothing', () => {
    expect(matching({ color: ['red', 'green'], price: { gte: 20 } })).toEqual(['c']);
    expect(matching({ nope: ['x'] })).toEqual([]);
    expect(matching({ nope: { gte: 1 } })).toEqual([]);
  });
});

describe('filter columns of a document with a very long array', () => {
  // regression: values were deduplicated by searching the document's list, quadratic in its
  // length; 100,000 distinct tags took 20 s to build and blocked whatever thread built them
  it('builds 100,000 distinct values in one document in linear time, every value filterable', () => {
    const tags: string[] = [];
    for (let i = 0; i < 100_000; i++) tags.push(`tag${i}`);
    tags.push('TAG7', 'tag7 ');
    const wide: SuggestDocument = { id: 'w', title: 'Wide', desc: '', manufacturer: '', raw: { tags } };
    const other: SuggestDocument = { id: 'o', title: 'Other', desc: '', manufacturer: '', raw: { tags: ['tag99999'] } };
    const seg = new SegmentBuilder().addAll([wide, other]).build();
    const match = (f: unknown): string[] => {
      const p = compileFilters(validateFilters(f).filters!, seg);
      return [0, 1].filter(p).map((i) => seg.idAt(i));
    };
    expect(match({ tags: ['tag7'] })).toEqual(['w']);
    expect(match({ tags: ['tag99999'] })).toEqual(['w', 'o']);
    expect(match({ tags: ['tag100000'] })).toEqual([]);
  }, 10_000);
});
