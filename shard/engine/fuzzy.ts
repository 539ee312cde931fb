// Typo-tolerant term lookup: every term of a PrefixIndex within an optimal-string-alignment
// (restricted Damerau-Levenshtein) distance of a word, or, for the word still being typed, every
// term that has a prefix within that distance. The sorted term table is walked as an implicit
// trie: one DP row per character of the current path, rows shared with the previous term over
// their common prefix, whole subtrees skipped (prefix-index.ts skipPrefix) as soon as no cell of a row is
// within the budget. Cost grows with the number of trie nodes near the word, not the vocabulary.
import type { PrefixIndex } from './prefix-index.js';

export interface FuzzyOptions {
  maxEdits: number;
  /** match against term prefixes: the word is the last one of a query still being typed */
  prefix?: boolean;
  /** stop after this many matches (default 1000) */
  limit?: number;
  /** walk only term ids `[lo, hi)`, e.g. the terms sharing the word's first letter */
  range?: [number, number];
}

export interface FuzzyMatch {
  /** term ids `[lo, hi)`: one term for whole-word matches, a whole subtree in prefix mode */
  lo: number;
  hi: number;
  distance: number;
  /** code units of the matched term (prefix mode: of the term prefix the word matched) */
  prefixLength: number;
}

/** Edits allowed for a word of this many characters: 1 from 5 letters, 2 from 9. */
export function maxEditsFor(length: number): number {
  return length >= 9 ? 2 : length >= 5 ? 1 : 0;
}

/**
 * Ranking cost of a typo: its distance, plus a half edit when the first letter differs, because
 * people rarely mistype the first letter and such matches are usually different words.
 */
export function typoCost(distance: number, word: string, term: string): number {
  if (distance === 0) return 0;
  return distance + (word.charCodeAt(0) !== term.charCodeAt(0) ? 0.5 : 0);
}

export function fuzzy(index: PrefixIndex, word: string, options: FuzzyOptions): FuzzyMatch[] {
  const k = options.maxEdits;
  const prefixMode = options.prefix ?? false;
  const limit = options.limit ?? 1000;
  const m = word.length;
  const w = new Uint16Array(m);
  for (let j = 0; j < m; j++) w[j] = word.charCodeAt(j);
  const width = m + 1;
  let capacity = 64;
  let rows = new Int32Array((capacity + 1) * width);
  let best = new Int32Array(capacity + 1);
  let bestAt = new Int32Array(capacity + 1);
  for (let j = 0; j <= m; j++) rows[j] = j;
  best[0] = m;
  bestAt[0] = 0;

  const out: FuzzyMatch[] = [];
  const n = options.range ? Math.min(options.range[1], index.size) : index.size;
  const over = k + 1; // any value above the budget; cells outside the diagonal band hold it
  let pathTerm = -1;
  let computed = 0; // rows valid for pathTerm up to this depth
  let i = options.range ? Math.max(0, options.range[0]) : 0;
  while (i < n && out.length < limit) {
    const len = index.lengthOf(i);
    if (len > capacity) {
      capacity = len;
      const grown = new Int32Array((capacity + 1) * width);
      grown.set(rows);
      rows = grown;
      const b = new Int32Array(capacity + 1);
      b.set(best);
      best = b;
      const ba = new Int32Array(capacity + 1);
      ba.set(bestAt);
      bestAt = ba;
    }
    // the previous term visited is i - 1 or a skip away, so what the two share is lcp[i]
    const d0 = pathTerm < 0 ? 0 : Math.min(computed, index.lcpAt(i));
    pathTerm = i;
    computed = d0;
    let skipTo = -1;
    let last = d0 === 0 ? m : 0;
    for (let d = d0 + 1; d <= len; d++) {
      const c = index.charAt(i, d - 1);
      const before = d > 1 ? index.charAt(i, d - 2) : -1;
      const prev = (d - 1) * width;
      const cur = d * width;
      // Only cells within k of the diagonal can stay within budget (Ukkonen's band).
      const jLo = d - k > 1 ? d - k : 1;
      const jHi = d + k < m ? d + k : m;
      rows[cur] = d;
      if (jLo > 1) rows[cur + jLo - 1] = over;
      let rowMin = d <= k ? d : over;
      for (let j = jLo; j <= jHi; j++) {
        const wj = w[j - 1] as number;
        let v = (rows[prev + j - 1] as number) + (wj === c ? 0 : 1);
        const del = (rows[prev + j] as number) + 1;
        if (del < v) v = del;
        const ins = (rows[cur + j - 1] as number) + 1;
        if (ins < v) v = ins;
        if (j > 1 && wj === before && w[j - 2] === c) {
          const tr = (rows[(d - 2) * width + j - 2] as number) + 1;
          if (tr < v) v = tr;
        }
        if (v > over) v = over;
        rows[cur + j] = v;
        if (v < rowMin) rowMin = v;
      }
      if (jHi < m) rows[cur + jHi + 1] = over;
      computed = d;
      last = jLo <= m && m <= jHi ? (rows[cur + m] as number) : over;
      if (last < (best[d - 1] as number)) {
        best[d] = last;
        bestAt[d] = d;
      } else {
        best[d] = best[d - 1] as number;
        bestAt[d] = bestAt[d - 1] as number;
      }
      const bestHere = best[d] as number;
      if (prefixMode && bestHere <= k && rowMin >= bestHere) {
        // Rows never get a smaller minimum deeper down, so every term below matches with the
        // best distance already seen on the path: report the subtree as one range.
        const hi = index.skipPrefix(i, d);
        out.push({ lo: i, hi, distance: bestHere, prefixLength: bestAt[d] as number });
        skipTo = hi;
        break;
      }
      if (rowMin > k) {
        skipTo = index.skipPrefix(i, d);
        break;
      }
    }
    if (skipTo >= 0) {
      i = skipTo;
      continue;
    }
    const dist = prefixMode ? (best[len] as number) : last;
    if (dist <= k) out.push({ lo: i, hi: i + 1, distance: dist, prefixLength: prefixMode ? (bestAt[len] as number) : len });
    i++;
  }
  return out;
}

/** Optimal string alignment distance (the reference the walk is tested against). */
export function osaDistance(a: string, b: string): number {
  const n = a.length;
  const m = b.length;
  const d: number[][] = [];
  for (let i = 0; i <= n; i++) {
    const row = new Array<number>(m + 1).fill(0);
    row[0] = i;
    d.push(row);
  }
  const at = (i: number, j: number): number => (d[i] as number[])[j] as number;
  for (let j = 0; j <= m; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, at(i - 2, j - 2) + 1);
      (d[i] as number[])[j] = v;
    }
  }
  return at(n, m);
}
