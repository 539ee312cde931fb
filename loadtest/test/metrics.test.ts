import { describe, expect, it } from 'vitest';
import { typingPrefix } from '../relevance/eval-set.js';
import { firstRelevantRank, reciprocalRank, scoreRanks, successAtK } from '../relevance/metrics.js';

describe('success@k and MRR on a hand-made example', () => {
  const relevant = new Set(['p3', 'p9']);

  it('finds the first relevant position', () => {
    // p9 is relevant too but comes after p3: only the first counts
    const ranked = ['p1', 'p2', 'p3', 'p4', 'p9'];
    expect(firstRelevantRank(ranked, relevant, 10)).toBe(3);
    expect(successAtK(ranked, relevant, 10)).toBe(1);
    expect(reciprocalRank(ranked, relevant, 10)).toBeCloseTo(1 / 3);
  });

  it('ignores answers beyond k', () => {
    const ranked = ['p1', 'p2', 'p3'];
    expect(successAtK(ranked, relevant, 2)).toBe(0);
    expect(reciprocalRank(ranked, relevant, 2)).toBe(0);
    const eleven = [...Array.from({ length: 10 }, (_, i) => `x${i}`), 'p3'];
    expect(successAtK(eleven, relevant, 10)).toBe(0);
    expect(successAtK(eleven, relevant, 11)).toBe(1);
  });

  it('scores a position standing for several products when any is relevant', () => {
    expect(firstRelevantRank([[], ['p7', 'p8'], ['p8', 'p9']], relevant, 10)).toBe(3);
    expect(firstRelevantRank([[], ['p7']], relevant, 10)).toBe(0);
  });

  it('averages over queries, misses counting as zero', () => {
    // ranks: hit at 1, miss, hit at 2, hit at 4
    expect(scoreRanks([1, 0, 2, 4])).toEqual({ queries: 4, success_at_k: 0.75, mrr: (1 + 0 + 0.5 + 0.25) / 4 });
    expect(scoreRanks([0, 0])).toEqual({ queries: 2, success_at_k: 0, mrr: 0 });
    expect(scoreRanks([]).mrr).toBeNaN();
  });
});

describe('typing prefix', () => {
  it('keeps the first 60% of the characters, rounded up', () => {
    expect(typingPrefix('angle bracket')).toBe('angle br'); // 13 chars -> 8
    expect(typingPrefix('l bracket')).toBe('l brac'); // 9 -> 6
    expect(typingPrefix('tv')).toBe('tv'); // 2 -> 2
    expect(typingPrefix('a')).toBe('a');
    expect(typingPrefix('deck over')).toBe('deck o'); // 9 -> 6
    expect(typingPrefix('mw 3')).toBe('mw '); // 4 -> 3: sent as typed, trailing space kept
  });
});
