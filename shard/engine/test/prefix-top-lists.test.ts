import { describe, expect, it } from 'vitest';
import { PrefixIndex } from '../prefix-index.js';
import { PrefixTopLists } from '../prefix-top-lists.js';
import { random, randomWord } from './helpers.js';

describe('PrefixTopLists', () => {
  it('stores, for every prefix range above the threshold, the same top-k as sorting the range', () => {
    const rnd = random(21);
    for (const [threshold, k] of [[8, 3], [32, 10], [100, 48]] as const) {
      const index = PrefixIndex.build(Array.from({ length: 3000 }, () => randomWord(rnd, 'abcde', 1, 7)));
      const scores = Float64Array.from({ length: index.size }, () => Math.floor(rnd() * 1000));
      const lists = PrefixTopLists.build(index.size, (i) => index.commonPrefix(i - 1, i), (i) => i, scores, threshold, k);
      let checked = 0;
      for (let q = 0; q < 400; q++) {
        const [lo, hi] = index.prefixRange(randomWord(rnd, 'abcde', 0, 4));
        const node = lists.find(lo, hi);
        if (hi - lo <= threshold) {
          expect(node).toBeNull();
          continue;
        }
        checked++;
        expect(node).not.toBeNull();
        const ids = Array.from({ length: hi - lo }, (_, i) => lo + i);
        ids.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
        const [from, to] = node as [number, number];
        expect(Array.from(lists.list.subarray(from, to))).toEqual(ids.slice(0, k));
      }
      expect(checked).toBeGreaterThan(50);
    }
  });
});
