import { describe, expect, it } from 'vitest';
import { CompletionHits, NODE_THRESHOLD, SuggestionIndex } from '../suggestion-index.js';
import type { MinedSuggestion, MinedSuggestions } from '../suggestion-miner.js';
import { ArenaBuilder } from '../arena.js';
import { random, randomWord } from './helpers.js';

function build(list: MinedSuggestion[]): SuggestionIndex {
  const mined: MinedSuggestions = { suggestions: list, docOffsets: new Uint32Array(1), docSuggestions: new Uint32Array(0) };
  const builder = new ArenaBuilder();
  SuggestionIndex.build(mined, builder);
  return new SuggestionIndex(builder.build());
}

function randomSuggestions(seed: number, n: number): MinedSuggestion[] {
  const rnd = random(seed);
  const keys = new Set<string>();
  while (keys.size < n) {
    const words = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => randomWord(rnd, 'abcd', 1, 4));
    keys.add(words.join(' '));
  }
  return [...keys].map((key) => ({ key, display: key.toUpperCase(), type: 0, weight: 1 + rnd() * 100, count: 1, bestDoc: 0, quality: 1 }));
}

/** Brute force: every key (start) or later word start (inner) beginning with the prefix, best first. */
function expected(idx: SuggestionIndex, prefix: string, k: number, inner: boolean, live: (s: number) => number): number[] {
  const out: { sug: number; score: number }[] = [];
  for (let s = 0; s < idx.size; s++) {
    const key = idx.key(s);
    const starts = inner ? key.split('').flatMap((c, i) => (c === ' ' ? [i + 1] : [])) : [0];
    if (starts.some((p) => key.slice(p).startsWith(prefix)) && live(s) > 0) out.push({ sug: s, score: live(s) });
  }
  out.sort((a, b) => b.score - a.score || a.sug - b.sug);
  return out.slice(0, k).map((h) => h.sug);
}

function actual(idx: SuggestionIndex, prefix: string, k: number, deleted: Float32Array | null): { start: number[]; inner: number[] } {
  const out = new CompletionHits();
  idx.complete(prefix, k, true, deleted, out);
  const hits = Array.from({ length: out.count }, (_, i) => ({ sug: out.sug[i] as number, inner: out.inner[i] === 1 }));
  return { start: hits.filter((h) => !h.inner).map((h) => h.sug), inner: hits.filter((h) => h.inner).map((h) => h.sug) };
}

describe('SuggestionIndex', () => {
  it('returns the same top-k as sorting every match (start and inner tables)', () => {
    const idx = build(randomSuggestions(1, 3000));
    const rnd = random(2);
    let bigRanges = 0;
    for (let q = 0; q < 300; q++) {
      const prefix = randomWord(rnd, 'abcd ', 1, 4).trimStart();
      if (!prefix) continue;
      const k = 1 + Math.floor(rnd() * 50);
      if (idx.countPrefix(prefix) > NODE_THRESHOLD) bigRanges++;
      const got = actual(idx, prefix, k, null);
      expect(got.start).toEqual(expected(idx, prefix, k, false, (s) => idx.scores[s] as number));
      expect(got.inner).toEqual(expected(idx, prefix, k, true, (s) => idx.scores[s] as number));
    }
    expect(bigRanges).toBeGreaterThan(20); // precomputed lists were exercised, not only scans
  });

  it('skips fully deleted suggestions and still fills k', () => {
    const idx = build(randomSuggestions(3, 2000));
    const deleted = new Float32Array(idx.size);
    const rnd = random(4);
    for (let s = 0; s < idx.size; s++) if (rnd() < 0.5) deleted[s] = idx.weights[s] as number;
    const live = (s: number): number => idx.liveScore(s, deleted);
    for (const prefix of ['a', 'b', 'ab', 'c d', 'dd', 'a b']) {
      for (const k of [1, 10, 50]) {
        const got = actual(idx, prefix, k, deleted);
        expect(got.start).toEqual(expected(idx, prefix, k, false, live));
        expect(got.inner).toEqual(expected(idx, prefix, k, true, live));
      }
    }
  });

  it('finds exact keys and reports displays', () => {
    const idx = build([
      { key: 'samsung', display: 'Samsung', type: 1, weight: 10, count: 5, bestDoc: 0, quality: 1 },
      { key: 'samsung galaxy', display: 'Samsung Galaxy', type: 0, weight: 8, count: 4, bestDoc: 1, quality: 1 },
    ]);
    const id = idx.find('samsung galaxy');
    expect(idx.display(id)).toBe('Samsung Galaxy');
    expect(idx.type(idx.find('samsung'))).toBe('brand');
    expect(idx.find('samsung gal')).toBe(-1);
    const out = new CompletionHits();
    idx.complete('gal', 5, true, null, out);
    expect(Array.from(out.sug.subarray(0, out.count), (s) => idx.display(s))).toEqual(['Samsung Galaxy']);
  });

  it('finds every key and no other, in small tables (a map of keys) and large ones (binary search) alike', () => {
    for (const n of [1, 40, 2048, 2049, 6000]) {
      const idx = build(randomSuggestions(n, n));
      const rnd = random(n + 1);
      for (let s = 0; s < idx.size; s++) expect(idx.find(idx.key(s))).toBe(s);
      for (let i = 0; i < 2000; i++) {
        const words = Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => randomWord(rnd, 'abcde', 1, 4));
        const key = words.join(' ');
        let brute = -1;
        for (let s = 0; s < idx.size && brute < 0; s++) if (idx.key(s) === key) brute = s;
        expect(idx.find(key)).toBe(brute);
      }
      expect(idx.find('')).toBe(-1);
    }
  });

  it('handles an empty table', () => {
    const idx = build([]);
    const out = new CompletionHits();
    idx.complete('a', 10, true, null, out);
    expect(out.count).toBe(0);
    expect(idx.find('a')).toBe(-1);
  });
});
