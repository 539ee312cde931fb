import { describe, expect, it } from 'vitest';
import { fuzzy, maxEditsFor, osaDistance } from '../fuzzy.js';
import { PrefixIndex } from '../prefix-index.js';
import { random, randomWord } from './helpers.js';

function prefixDistance(word: string, term: string): number {
  let best = Infinity;
  for (let j = 0; j <= term.length; j++) best = Math.min(best, osaDistance(word, term.slice(0, j)));
  return best;
}

describe('osaDistance', () => {
  it('counts adjacent transpositions as one edit', () => {
    expect(osaDistance('iphone', 'iphnoe')).toBe(1);
    expect(osaDistance('ca', 'abc')).toBe(3); // OSA, not unrestricted Damerau
    expect(osaDistance('', 'abc')).toBe(3);
    expect(osaDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('fuzzy', () => {
  it('matches a brute-force OSA distance over the vocabulary (whole words)', () => {
    const rnd = random(11);
    for (let round = 0; round < 12; round++) {
      const words = Array.from({ length: 400 }, () => randomWord(rnd, 'abcde', 1, 9));
      const index = PrefixIndex.build(words);
      const vocab = [...index];
      for (let q = 0; q < 40; q++) {
        const word = randomWord(rnd, 'abcdef', 1, 9);
        const k = q % 3;
        const got = new Map<string, number>();
        for (const m of fuzzy(index, word, { maxEdits: k })) {
          expect(m.hi).toBe(m.lo + 1);
          got.set(index.termAt(m.lo), m.distance);
        }
        const expected = new Map<string, number>();
        for (const t of vocab) {
          const d = osaDistance(word, t);
          if (d <= k) expected.set(t, d);
        }
        expect(got).toEqual(expected);
      }
    }
  });

  it('matches a brute-force prefix distance (the word being typed)', () => {
    const rnd = random(12);
    for (let round = 0; round < 12; round++) {
      const words = Array.from({ length: 400 }, () => randomWord(rnd, 'abcde', 1, 10));
      const index = PrefixIndex.build(words);
      const vocab = [...index];
      for (let q = 0; q < 40; q++) {
        const word = randomWord(rnd, 'abcdef', 2, 7);
        const k = 1 + (q % 2);
        const got = new Map<string, number>();
        for (const m of fuzzy(index, word, { maxEdits: k, prefix: true })) {
          for (let id = m.lo; id < m.hi; id++) {
            const t = index.termAt(id);
            expect(got.has(t)).toBe(false);
            got.set(t, m.distance);
            expect(osaDistance(word, t.slice(0, m.prefixLength))).toBe(m.distance);
          }
        }
        const expected = new Map<string, number>();
        for (const t of vocab) {
          const d = prefixDistance(word, t);
          if (d <= k) expected.set(t, d);
        }
        expect(new Map([...got].sort())).toEqual(new Map([...expected].sort()));
      }
    }
  });

  it('finds real typos and skips most of a large vocabulary', () => {
    const rnd = random(3);
    const words = Array.from({ length: 20_000 }, () => randomWord(rnd, 'abcdefghijklmnopqrstuvwxyz', 3, 10));
    words.push('iphone', 'samsung', 'refrigerator');
    const index = PrefixIndex.build(words);
    const hits = (w: string, prefix = false) => fuzzy(index, w, { maxEdits: maxEditsFor(w.length), prefix }).map((m) => index.termAt(m.lo));
    expect(hits('iphne')).toContain('iphone');
    expect(hits('smasung')).toContain('samsung');
    expect(hits('refridgerator')).toContain('refrigerator');
    expect(hits('refrig', true)).toContain('refrigerator');
    expect(hits('refirg', true)).toContain('refrigerator');
    // a worst case (two edits over 20k random words) stays in milliseconds, even on a busy machine
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) hits('refridgerator');
    expect((performance.now() - t0) / 50).toBeLessThan(25);
  });

  it('allows 1 edit from 5 letters and 2 from 9', () => {
    expect([4, 5, 8, 9].map(maxEditsFor)).toEqual([0, 1, 1, 2]);
  });
});
