import { describe, expect, it } from 'vitest';
import { keystrokePrefixes, keystrokeStream, loadWeightedQueries, prefixDistribution, queryStream, WeightedSampler } from '../data/keystrokes.js';
import { SeededRandom } from '../data/seeded-random.js';

describe('keystroke expansion', () => {
  it('sends every prefix a typist sends, spaces included', () => {
    expect(keystrokePrefixes('tv')).toEqual(['t', 'tv']);
    expect(keystrokePrefixes('mw 3')).toEqual(['m', 'mw', 'mw ', 'mw 3']);
    expect(keystrokePrefixes('  dead  ')).toEqual(['d', 'de', 'dea', 'dead']);
    expect(keystrokePrefixes('abcd', 3)).toEqual(['abc', 'abcd']);
    expect(keystrokePrefixes('')).toEqual([]);
  });

  it('never splits a character in two', () => {
    expect(keystrokePrefixes('a😀b')).toEqual(['a', 'a😀', 'a😀b']);
  });

  it('streams typed sessions back to back, deterministically', () => {
    const qs = [{ query: 'ab', weight: 1 }];
    expect(keystrokeStream(qs, { sessions: 3, seed: 1 })).toEqual(['a', 'ab', 'a', 'ab', 'a', 'ab']);
    const real = loadWeightedQueries(['homedepot', 'bestbuy-log']);
    expect(keystrokeStream(real, { sessions: 50, seed: 7 })).toEqual(keystrokeStream(real, { sessions: 50, seed: 7 }));
    expect(keystrokeStream(real, { sessions: 50, seed: 7 })).not.toEqual(keystrokeStream(real, { sessions: 50, seed: 8 }));
  });

  it('weights Best Buy queries by their log count and Home Depot queries by 1', () => {
    const bb = loadWeightedQueries(['bestbuy-log']);
    expect(bb[0]).toEqual({ query: 'gears of war 3', weight: 1_779 });
    const hd = loadWeightedQueries(['homedepot']);
    expect(hd.length).toBe(11_795);
    expect(hd.every((q) => q.weight === 1)).toBe(true);
  });

  it('draws queries in proportion to their weight', () => {
    const sampler = new WeightedSampler(
      [
        { query: 'a', weight: 1 },
        { query: 'b', weight: 3 },
      ],
      new SeededRandom(3),
    );
    let b = 0;
    const n = 40_000;
    for (let i = 0; i < n; i++) if (sampler.next().query === 'b') b++;
    expect(b / n).toBeGreaterThan(0.73);
    expect(b / n).toBeLessThan(0.77);
    expect(() => new WeightedSampler([{ query: 'x', weight: 0 }], new SeededRandom(1))).toThrow();
    expect(queryStream([{ query: 'only', weight: 2 }], { count: 3, seed: 1 })).toEqual(['only', 'only', 'only']);
  });

  it('gives the expected share of each prefix', () => {
    const d = prefixDistribution([
      { query: 'ab', weight: 3 },
      { query: 'ac', weight: 1 },
    ]);
    // 8 weighted keystrokes: a x4, ab x3, ac x1
    expect(d.get('a')).toBeCloseTo(0.5);
    expect(d.get('ab')).toBeCloseTo(0.375);
    expect(d.get('ac')).toBeCloseTo(0.125);
    expect([...d.values()].reduce((s, x) => s + x, 0)).toBeCloseTo(1);
  });
});
