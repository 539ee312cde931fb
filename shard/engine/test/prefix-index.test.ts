import { describe, expect, it } from 'vitest';
import { PrefixIndex, tableRange } from '../prefix-index.js';
import { random, randomWord } from './helpers.js';

describe('PrefixIndex', () => {
  it('finds prefix ranges like a linear scan over random strings', () => {
    const rnd = random(7);
    for (let round = 0; round < 20; round++) {
      const alphabet = round % 2 === 0 ? 'abc' : 'abcdefgh';
      const words = Array.from({ length: 300 }, () => randomWord(rnd, alphabet, 0, 8));
      const index = PrefixIndex.build(words);
      const sorted = [...new Set(words)].sort();
      expect([...index]).toEqual(sorted);
      for (let q = 0; q < 100; q++) {
        const prefix = randomWord(rnd, alphabet + 'z', 0, 4);
        const [lo, hi] = index.prefixRange(prefix);
        const expected = sorted.filter((w) => w.startsWith(prefix));
        expect(sorted.slice(lo, hi)).toEqual(expected);
        const exact = sorted.indexOf(prefix);
        expect(index.get(prefix)).toBe(exact);
      }
    }
  });

  it('finds a term within the range of any prefix of it as get does, and no term outside the range', () => {
    const rnd = random(17);
    for (let round = 0; round < 10; round++) {
      const words = Array.from({ length: 400 }, () => randomWord(rnd, 'abcde', 1, 7));
      const index = PrefixIndex.build(words);
      for (let q = 0; q < 200; q++) {
        const term = randomWord(rnd, 'abcdez', 1, 7);
        for (let cut = 0; cut <= term.length; cut++) {
          const [lo, hi] = index.prefixRange(term.slice(0, cut));
          expect(index.getIn(term, lo, hi)).toBe(index.get(term));
        }
        // a range that does not hold it: never found there
        const id = index.get(term);
        if (id >= 0) expect([index.getIn(term, 0, id), index.getIn(term, id + 1, index.size)]).toEqual([-1, -1]);
      }
    }
  });

  it("finds another table's term in place as get finds it decoded, and hashes and compares terms of two tables alike", () => {
    const rnd = random(23);
    for (let round = 0; round < 10; round++) {
      const alphabet = round % 2 === 0 ? 'ab' : 'abcdeé電';
      const mine = PrefixIndex.build(Array.from({ length: 300 }, () => randomWord(rnd, alphabet, 0, 6)));
      const other = PrefixIndex.build(Array.from({ length: 200 }, () => randomWord(rnd, alphabet, 0, 7)));
      for (let id = 0; id < other.size; id++) {
        const term = other.termAt(id);
        const found = mine.getTermOf(other, id);
        expect(found).toBe(mine.get(term));
        if (found >= 0) {
          expect(mine.sameTerm(found, other, id)).toBe(true);
          expect(mine.hashOf(found)).toBe(other.hashOf(id));
        }
        // a neighbour of another length or other code units is not the same term
        const near = Math.min(found >= 0 ? found + 1 : 0, mine.size - 1);
        expect(mine.sameTerm(near, other, id)).toBe(mine.termAt(near) === term);
      }
    }
  });

  it('handles non-ASCII keys by code unit', () => {
    const index = PrefixIndex.build(['東京', '東京タワー', 'crème', 'creme', '😀x', '😀']);
    expect(index.get('東京タワー')).toBeGreaterThanOrEqual(0);
    const [lo, hi] = index.prefixRange('東京');
    expect(hi - lo).toBe(2);
    expect(index.termAt(index.get('😀x'))).toBe('😀x');
    expect(index.get('missing')).toBe(-1);
  });

  it('skips a shared prefix in one step', () => {
    const index = PrefixIndex.build(['apple', 'apply', 'apt', 'banana', 'band']);
    expect(index.termAt(index.skipPrefix(0, 3))).toBe('apt');
    expect(index.termAt(index.skipPrefix(0, 2))).toBe('banana');
    expect(index.skipPrefix(3, 3)).toBe(5);
  });

  it('skips subtrees and reports shared prefixes like a linear scan over random strings', () => {
    const rnd = random(11);
    for (let round = 0; round < 20; round++) {
      const alphabet = round % 2 === 0 ? 'ab' : 'abcde';
      const words = Array.from({ length: 400 }, () => randomWord(rnd, alphabet, 1, 10));
      const index = PrefixIndex.build(words);
      const sorted = [...index];
      for (let i = 1; i < sorted.length; i++) expect(index.lcpAt(i)).toBe(index.commonPrefix(i - 1, i));
      for (let q = 0; q < 200; q++) {
        const from = Math.floor(rnd() * sorted.length);
        const term = sorted[from] as string;
        const depth = 1 + Math.floor(rnd() * term.length);
        const head = term.slice(0, depth);
        let expected = from + 1;
        while (expected < sorted.length && (sorted[expected] as string).startsWith(head)) expected++;
        expect(index.skipPrefix(from, depth)).toBe(expected);
      }
    }
  });

  it('serves ranges over a key table with explicit ends', () => {
    const keys = ['a b', 'a c', 'b', 'b a'];
    const index = PrefixIndex.build(keys);
    const table = { chars: index.chars, starts: index.offsets.subarray(0, index.size), ends: index.offsets.subarray(1) };
    expect(tableRange(table, 'a ')).toEqual([0, 2]);
    expect(tableRange(table, 'b')).toEqual([2, 4]);
    expect(tableRange(table, 'c')).toEqual([4, 4]);
  });
});
