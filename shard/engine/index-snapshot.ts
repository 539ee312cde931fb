// A read view over the segments of one index part at one moment: the collection statistics that
// scoring needs (document count, per-term document frequency, average field lengths) summed over
// segments, vocabulary lookups that span segments, and reusable scratch memory for queries.
// Statistics count deleted documents until their segment is merged, as Lucene does, so a delete
// never changes the scores of other documents.
import { FIELD_COUNT } from './doc-fields.js';
import { fuzzy, type FuzzyMatch } from './fuzzy.js';
import { ClearingMemo, MemoPerOwner } from './memo.js';
import { TERM_PRIMARY, TERM_SUGGESTIVE, type Segment } from './segment.js';

/** Collection statistics a caller may pass in to score several parts on one scale. */
export interface CollectionStats {
  docCount: number;
  avgFieldLength: number[];
  /** document frequency per term; terms absent here fall back to the part's own counts */
  df?: Record<string, number>;
}

export interface VocabularyMatch {
  term: string;
  /** edit distance (0 for exact and prefix matches) */
  distance: number;
  /** the part of the term the typed word matched (its prefix, in prefix mode) */
  matched: string;
  /** summed frequency weight of the term (or of the subtree, in prefix mode) */
  weight: number;
}

export type VocabularyKind = 'suggestive' | 'any';

/**
 * The trie walks of one segment, memoized per segment: its term table never changes, so the
 * walk for a word serves every snapshot that still holds the segment (a write starts a new
 * snapshot, not a new large segment), both vocabulary kinds and every result limit. At most
 * this many words per segment...
 */
const MAX_WALKS_PER_SEGMENT = 16_384;
/** ...and at most this many matches kept per segment (about 4 MB), however many words. */
const MAX_MATCHES_PER_SEGMENT = 100_000;
const walks = new MemoPerOwner<Segment, string, FuzzyMatch[]>(
  () => new ClearingMemo({ maxEntries: MAX_WALKS_PER_SEGMENT, maxWeight: MAX_MATCHES_PER_SEGMENT, weightOf: (m) => m.length, entryBytes: 96, weightBytes: 48 }),
);

function segmentWalk(s: Segment, word: string, maxEdits: number, prefix: boolean): FuzzyMatch[] {
  const memo = walks.of(s);
  const key = `${prefix ? 1 : 0}${maxEdits}${word}`;
  let matches = memo.get(key);
  if (matches !== undefined) return matches;
  // Two edits anywhere make the walk visit most of the trie's top levels; two edits after a
  // correct first letter, plus one edit anywhere else, cover nearly all real typos at a fraction
  // of the cost (first-letter typos are rarer and already ranked lower).
  if (maxEdits >= 2 && word.length > 0) {
    const [lo, hi] = s.terms.prefixRange(word.slice(0, 1));
    const before = fuzzy(s.terms, word, { maxEdits: maxEdits - 1, prefix, limit: 2000, range: [0, lo] });
    const after = fuzzy(s.terms, word, { maxEdits: maxEdits - 1, prefix, limit: 2000 - before.length, range: [hi, s.terms.size] });
    matches = [...before, ...after, ...fuzzy(s.terms, word, { maxEdits, prefix, limit: 2000, range: [lo, hi] })];
  } else matches = fuzzy(s.terms, word, { maxEdits, prefix, limit: 2000 });
  memo.set(key, matches);
  return matches;
}

/** Terms of a prefix weighed for its context (`prefixCooccurrence`). */
const PREFIX_CONTEXT_TERMS = 4;

/** Document frequencies and co-occurrence counts kept per snapshot. */
const MAX_CACHED_TERMS = 50_001;

export class IndexSnapshot {
  readonly docCount: number;
  readonly liveCount: number;
  readonly avgFieldLength: number[];
  private readonly dfCache = new ClearingMemo<string, number>({ maxEntries: MAX_CACHED_TERMS, entryBytes: 80 });
  private readonly fuzzyCache = new ClearingMemo<string, VocabularyMatch[]>({ maxEntries: 16_384, weightOf: (m) => m.length, entryBytes: 96, weightBytes: 48 });
  private readonly pairCache = new ClearingMemo<string, number>({ maxEntries: MAX_CACHED_TERMS, entryBytes: 96 });
  private readonly norms = new Map<Segment, Float32Array>();

  readonly segments: readonly Segment[];

  constructor(segments: readonly Segment[]) {
    // the engine's own list changes in place as segments are added and merged: a snapshot keeps its moment's
    this.segments = segments.slice();
    let docs = 0;
    let live = 0;
    const sums = new Array<number>(FIELD_COUNT).fill(0);
    for (const s of segments) {
      docs += s.docCount;
      live += s.liveCount;
      s.meta.fieldLengthSums.forEach((v, f) => (sums[f] = (sums[f] as number) + v));
    }
    this.docCount = docs;
    this.liveCount = live;
    this.avgFieldLength = sums.map((v) => (docs > 0 ? Math.max(1, v / docs) : 1));
  }

  /** Documents containing `term` in any field, over all segments. */
  df(term: string): number {
    let v = this.dfCache.get(term);
    if (v !== undefined) return v;
    v = 0;
    for (const s of this.segments) {
      const id = s.terms.get(term);
      if (id >= 0) v += s.termDf[id] as number;
    }
    this.dfCache.set(term, v);
    return v;
  }

  /**
   * `df(term)` for a term whose id in segment i, if any, lies within `ranges[i]` (the segment's
   * ids of a prefix of `term`), and which `seg` holds as `id`: a few ids of each segment are
   * searched instead of all of them. Typeahead expands a typed prefix into dozens of completions,
   * and a refreshed index (small segments beside the large one, a new snapshot at every refresh)
   * looked each one up again in every segment's whole table.
   */
  dfWithin(term: string, ranges: readonly (readonly [number, number])[], seg: Segment, id: number): number {
    let v = this.dfCache.get(term);
    if (v !== undefined) return v;
    v = 0;
    for (let i = 0; i < this.segments.length; i++) {
      const s = this.segments[i] as Segment;
      const [lo, hi] = ranges[i] as readonly [number, number];
      const t = s === seg ? id : hi > lo ? s.terms.getIn(term, lo, hi) : -1;
      if (t >= 0) v += s.termDf[t] as number;
    }
    this.dfCache.set(term, v);
    return v;
  }

  /** Documents containing both terms (postings intersection over segments; cached). */
  cooccurrence(a: string, b: string): number {
    const key = a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`;
    const cached = this.pairCache.get(key);
    if (cached !== undefined) return cached;
    let n = 0;
    for (const s of this.segments) {
      const ta = s.terms.get(a);
      const tb = ta < 0 ? -1 : s.terms.get(b);
      if (tb < 0) continue;
      const ia = s.postOffsets[ta] as number;
      const ea = s.postOffsets[ta + 1] as number;
      const ib = s.postOffsets[tb] as number;
      const eb = s.postOffsets[tb + 1] as number;
      n += ea - ia <= eb - ib ? commonDocs(s.postDocs, ia, ea, ib, eb) : commonDocs(s.postDocs, ib, eb, ia, ea);
    }
    this.pairCache.set(key, n);
    return n;
  }

  /**
   * Documents containing `a` and some term that starts with `prefix`, as the most of any one such
   * term (the first PREFIX_CONTEXT_TERMS of them in each segment): the context of a word still
   * being typed, whose readings are prefixes.
   */
  prefixCooccurrence(a: string, prefix: string): number {
    let best = 0;
    for (const s of this.segments) {
      const [lo, hi] = s.terms.prefixRange(prefix);
      for (let t = lo; t < hi && t < lo + PREFIX_CONTEXT_TERMS; t++) best = Math.max(best, this.cooccurrence(a, s.terms.termAt(t)));
    }
    return best;
  }

  /** What the terms that start with `prefix` weigh together (0 when none does). */
  prefixTermsWeight(prefix: string, kind: VocabularyKind): number {
    return this.fuzzyTerms(prefix, 0, true, kind, 1)[0]?.weight ?? 0;
  }

  /** Frequency weight of a term as a word people type (title, brand or category word). */
  termWeight(term: string, kind: VocabularyKind): number {
    let w = 0;
    for (const s of this.segments) {
      const id = s.terms.get(term);
      if (id < 0) continue;
      const mask = s.termMask[id] as number;
      if (kind === 'suggestive' ? (mask & TERM_SUGGESTIVE) !== 0 : (mask & TERM_PRIMARY) !== 0) {
        w += kind === 'suggestive' ? (s.termWeight[id] as number) : (s.termDf[id] as number);
      }
    }
    return w;
  }

  /** Whether some term of the given kind starts with `prefix`. */
  hasPrefix(prefix: string, kind: VocabularyKind): boolean {
    const bit = kind === 'suggestive' ? TERM_SUGGESTIVE : TERM_PRIMARY;
    for (const s of this.segments) {
      const [lo, hi] = s.terms.prefixRange(prefix);
      for (let t = lo; t < hi && t < lo + 256; t++) if ((s.termMask[t] as number) & bit) return true;
      if (hi - lo > 256) return true;
    }
    return false;
  }

  /**
   * Terms within `maxEdits` of `word` (prefix mode: terms with a prefix within it), merged over
   * segments, best first (distance, then weight).
   */
  fuzzyTerms(word: string, maxEdits: number, prefix: boolean, kind: VocabularyKind, limit = 16): VocabularyMatch[] {
    // typing sessions and load repeat words; the walk is the costly part of a query
    const cacheKey = `${kind}|${prefix ? 1 : 0}|${maxEdits}|${limit}|${word}`;
    const cached = this.fuzzyCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const result = this.fuzzyTermsUncached(word, maxEdits, prefix, kind, limit);
    this.fuzzyCache.set(cacheKey, result);
    return result;
  }

  /** The field norms of a segment for the snapshot's own average lengths (`normsFor`, once per snapshot). */
  fieldNorms(seg: Segment, weights: readonly number[], b: readonly number[]): Float32Array {
    let n = this.norms.get(seg);
    if (n === undefined) {
      n = normsFor(seg, weights, b, this.avgFieldLength);
      this.norms.set(seg, n);
    }
    return n;
  }

  private fuzzyTermsUncached(word: string, maxEdits: number, prefix: boolean, kind: VocabularyKind, limit: number): VocabularyMatch[] {
    const bit = kind === 'suggestive' ? TERM_SUGGESTIVE : TERM_PRIMARY;
    const merged = new Map<string, VocabularyMatch>();
    for (const s of this.segments) {
      const local = new Map<string, VocabularyMatch>();
      const matches = segmentWalk(s, word, maxEdits, prefix);
      for (const m of matches) {
        // a prefix-mode subtree is one candidate: its matched prefix, weighted by its terms
        if (prefix && m.hi - m.lo > 1) {
          let weight = 0;
          let any = false;
          for (let t = m.lo; t < m.hi && t < m.lo + 512; t++) {
            const mask = s.termMask[t] as number;
            if (!(mask & bit)) continue;
            any = true;
            weight += kind === 'suggestive' ? (s.termWeight[t] as number) : (s.termDf[t] as number);
          }
          if (!any) continue;
          const matched = s.terms.termAt(m.lo).slice(0, m.prefixLength);
          keepBest(local, { term: matched, distance: m.distance, matched, weight });
          continue;
        }
        const mask = s.termMask[m.lo] as number;
        if (!(mask & bit)) continue;
        const term = s.terms.termAt(m.lo);
        const weight = kind === 'suggestive' ? (s.termWeight[m.lo] as number) : (s.termDf[m.lo] as number);
        keepBest(local, { term, distance: m.distance, matched: prefix ? term.slice(0, m.prefixLength) : term, weight });
      }
      for (const m of local.values()) add(merged, m);
    }
    const out = [...merged.values()];
    out.sort((a, b) => a.distance - b.distance || b.weight - a.weight || (a.term < b.term ? -1 : 1));
    return out.slice(0, limit);
  }

  /**
   * Zeroed Float32Array of at least `n` entries (slot i of several live at once). Scratch memory
   * belongs to the thread, not the snapshot: a write makes a new snapshot, and a new megabyte of
   * scratch for a large segment at every refresh cost a trickle of writes a fifth of each query.
   * Queries are synchronous, and each leaves what it touched at zero again (`clearScratch` after
   * one that failed midway).
   */
  f32(slot: number, n: number): Float32Array {
    return scratch(SCRATCH.f32, slot, n, Float32Array);
  }

  u8(slot: number, n: number): Uint8Array {
    return scratch(SCRATCH.u8, slot, n, Uint8Array);
  }

  u16(n: number): Uint16Array {
    return scratch(SCRATCH.u16, 0, n, Uint16Array);
  }

  i32(slot: number, n: number): Int32Array {
    return scratch(SCRATCH.i32, slot, n, Int32Array);
  }

  i8(n: number): Int8Array {
    return scratch(SCRATCH.i8, 0, n, Int8Array);
  }
}

/** This thread's scratch arrays, by kind and slot (see `IndexSnapshot.f32`). */
const SCRATCH = { f32: [] as Float32Array[], u8: [] as Uint8Array[], u16: [] as Uint16Array[], i32: [] as Int32Array[], i8: [] as Int8Array[] };

/** Zeroes every scratch array: after a query that failed before it could clear what it touched. */
export function clearScratch(): void {
  for (const list of Object.values(SCRATCH)) for (const a of list) a?.fill(0);
}

/** Slot `slot` of `list`, replaced by a new zeroed array when shorter than `n`. */
function scratch<T extends { length: number }>(list: T[], slot: number, n: number, make: new (n: number) => T): T {
  let a = list[slot];
  if (a === undefined || a.length < n) {
    a = new make(n);
    list[slot] = a;
  }
  return a;
}

/**
 * Average field lengths as BM25 uses them: on a grid of 1/128 of a power of two (within 0.4 % of
 * the true average), so that a write, which moves the averages a hair, leaves the norms, and
 * every memo keyed by them (posting impacts, ranked postings), as they were. They change once
 * the corpus has changed enough to move an average past a grid step.
 */
export function gridAverage(avg: number): number {
  if (!(avg > 0) || !Number.isFinite(avg)) return 1;
  const step = 2 ** Math.floor(Math.log2(avg)) / 128;
  return Math.round(avg / step) * step;
}

/** The last norms computed per segment (a segment is immutable: only the averages move them). */
const segmentNorms = new WeakMap<Segment, { key: string; norms: Float32Array }[]>();
/** Norms kept per segment: its own snapshot's, and shared statistics' of an index in parts. */
const NORMS_PER_SEGMENT = 2;

/**
 * Field weight over BM25 length normalization, per document and field of a segment:
 * `weights[f] / (1 - b[f] + b[f] * len / grid(avg[f]))`. The same array while the gridded
 * averages stay (see `gridAverage`), whichever snapshot asks: memos keyed by it outlive writes.
 */
export function normsFor(seg: Segment, weights: readonly number[], b: readonly number[], avg: readonly number[]): Float32Array {
  const grid = avg.map(gridAverage);
  const key = `${grid.join(',')}|${weights.join(',')}|${b.join(',')}`;
  let held = segmentNorms.get(seg);
  if (held === undefined) segmentNorms.set(seg, (held = []));
  const at = held.findIndex((h) => h.key === key);
  if (at >= 0) {
    const hit = held[at]!;
    if (at > 0) held.unshift(...held.splice(at, 1));
    return hit.norms;
  }
  const norms = computeNorms(seg, weights, b, grid);
  held.unshift({ key, norms });
  held.length = Math.min(held.length, NORMS_PER_SEGMENT);
  return norms;
}

function computeNorms(seg: Segment, weights: readonly number[], b: readonly number[], avg: readonly number[]): Float32Array {
  const D = seg.docCount;
  const out = new Float32Array(D * FIELD_COUNT);
  for (let d = 0; d < D; d++) {
    for (let f = 0; f < FIELD_COUNT; f++) {
      const bf = b[f] as number;
      out[d * FIELD_COUNT + f] = (weights[f] as number) / (1 - bf + (bf * (seg.fieldLen[d * FIELD_COUNT + f] as number)) / (avg[f] as number));
    }
  }
  return out;
}

/**
 * Documents in both ascending runs `docs[i, ie)` and `docs[j, je)`, the first the shorter: each of
 * its documents is found by galloping through the longer, so a rare word against a common one
 * ("4", in thousands of titles) reads a few dozen entries rather than the whole list.
 */
function commonDocs(docs: Uint32Array, i: number, ie: number, j: number, je: number): number {
  let n = 0;
  for (; i < ie && j < je; i++) {
    const d = docs[i] as number;
    if ((docs[j] as number) < d) {
      // gallop to a bound past d, then binary search the last step
      let step = 1;
      let lo = j;
      while (j + step < je && (docs[j + step] as number) < d) {
        lo = j + step;
        step *= 2;
      }
      let hi = Math.min(j + step, je);
      while (lo + 1 < hi) {
        const mid = (lo + hi) >>> 1;
        if ((docs[mid] as number) < d) lo = mid;
        else hi = mid;
      }
      j = hi;
    }
    if (j < je && docs[j] === d) {
      n++;
      j++;
    }
  }
  return n;
}

/**
 * One candidate per matched text within a segment: the nearest, and at the same distance the
 * terms of every match together. A prefix that is itself a term ("toile") is met once as that term
 * and again as the subtree of the terms after it ("toilet", ...): both are the same candidate, and
 * keeping only the first weighed "toiled" -> "toile" by one rare word.
 */
function keepBest(local: Map<string, VocabularyMatch>, m: VocabularyMatch): void {
  const prev = local.get(m.matched);
  if (prev === undefined || m.distance < prev.distance) local.set(m.matched, m);
  else if (m.distance === prev.distance) prev.weight += m.weight;
}

function add(merged: Map<string, VocabularyMatch>, m: VocabularyMatch): void {
  const prev = merged.get(m.matched);
  if (prev === undefined) merged.set(m.matched, m);
  else {
    prev.weight += m.weight;
    if (m.distance < prev.distance) prev.distance = m.distance;
  }
}
