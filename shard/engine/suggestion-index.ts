// The precomputed typeahead structure of one segment. Suggestions are stored sorted by key, so a
// suggestion id is its rank and "keys starting with p" is an id range (the start table). A second
// table (the inner table) holds every later word start of every key, sorted by the rest of the
// key, so "gal" finds "samsung galaxy". For every prefix whose range is larger than
// NODE_THRESHOLD entries the best NODE_TOP_K distinct suggestions are stored in score order
// (prefix-top-lists.ts); smaller ranges are scanned at query time, so no completion is ever silently
// dropped.
// All arrays are typed arrays in the segment's arena.
import { PrefixTopLists } from './prefix-top-lists.js';
import { grown, type Arena, type ArenaBuilder } from './arena.js';
import { ClearingMemo } from './memo.js';
import { Utf8Pool, Utf8Reader } from './string-pool.js';
import { PrefixIndex, compareKey, sortedOrder } from './prefix-index.js';
import { SUG, SUGGESTION_TYPES, TYPE_FACTOR, type MinedSuggestions, type SuggestionType } from './suggestion-miner.js';

/** Ranges up to this size are scanned; larger ones have a precomputed top list. */
export const NODE_THRESHOLD = 128;
/** Length of each precomputed list: the largest `limit` plus room for deleted entries. */
export const NODE_TOP_K = 64;
/** Later word starts indexed per suggestion; products (long titles) stop earlier. */
const MAX_INNER_STARTS = 6;
const MAX_PRODUCT_INNER_STARTS = 3;
/**
 * Inner keys are sorted on their first INNER_KEY_CHARS code units only (cheaper to build, and
 * nobody types more inside a title); longer prefixes are checked entry by entry.
 */
export const INNER_KEY_CHARS = 32;

/**
 * The hits of `complete`, in reusable typed arrays (a keystroke's few dozen hits were as many
 * objects): hit `i` is suggestion `sug[i]`, with its static score adjusted for deleted
 * documents, matched at the start of the key or (`inner[i]` 1) at a later word.
 */
export class CompletionHits {
  count = 0;
  sug = new Int32Array(64);
  score = new Float64Array(64);
  inner = new Uint8Array(64);

  clear(): this {
    this.count = 0;
    return this;
  }

  push(sug: number, score: number, inner: boolean): void {
    const i = this.count;
    if (i === this.sug.length) {
      this.sug = grown(this.sug, i * 2);
      this.score = grown(this.score, i * 2);
      this.inner = grown(this.inner, i * 2);
    }
    this.sug[i] = sug;
    this.score[i] = score;
    this.inner[i] = inner ? 1 : 0;
    this.count = i + 1;
  }
}

/** Deleted weight per suggestion; written by the segment owner when documents are removed. */
export type DeletedWeights = Float32Array;

/** Entries of each decoded-string memo of a table (about 1 MB when full). */
const MEMO_ENTRIES = 16_384;

export class SuggestionIndex {
  readonly size: number;
  readonly keys: PrefixIndex;
  private readonly displays: Utf8Reader;
  readonly types: Uint8Array;
  readonly weights: Float32Array;
  readonly scores: Float32Array;
  readonly counts: Uint32Array;
  readonly bestDocs: Uint32Array;
  readonly docOffsets: Uint32Array;
  readonly docSuggestions: Uint32Array;
  private readonly innerStarts: Uint32Array;
  private readonly innerLens: Uint8Array;
  private readonly innerSug: Uint32Array;
  private readonly startNodes: PrefixTopLists;
  private readonly innerNodes: PrefixTopLists;

  constructor(arena: Arena, prefix = 'sug.') {
    const p = prefix;
    this.keys = new PrefixIndex({ offsets: arena.u32(`${p}key.offsets`), chars: arena.u16(`${p}key.chars`) });
    this.size = this.keys.size;
    this.displays = new Utf8Reader(arena.u32(`${p}display.offsets`), arena.u8(`${p}display.bytes`));
    this.types = arena.u8(`${p}type`);
    this.weights = arena.f32(`${p}weight`);
    this.scores = arena.f32(`${p}score`);
    this.counts = arena.u32(`${p}count`);
    this.bestDocs = arena.u32(`${p}bestDoc`);
    this.docOffsets = arena.u32(`${p}doc.offsets`);
    this.docSuggestions = arena.u32(`${p}doc.sugs`);
    this.innerStarts = arena.u32(`${p}inner.starts`);
    this.innerLens = arena.u8(`${p}inner.lens`);
    this.innerSug = arena.u32(`${p}inner.sug`);
    this.startNodes = PrefixTopLists.read(arena, `${p}start.`);
    this.innerNodes = PrefixTopLists.read(arena, `${p}inner.`);
  }

  /** Adds the sections for `mined` to an arena under construction. */
  static build(mined: MinedSuggestions, builder: ArenaBuilder, prefix = 'sug.'): void {
    const p = prefix;
    const list = mined.suggestions;
    const order = sortedOrder(list.map((m) => m.key));
    const rank = new Uint32Array(list.length);
    order.forEach((old, i) => (rank[old] = i));
    const sorted = Array.from(order, (i) => list[i] as (typeof list)[number]);
    const keys = PrefixIndex.fromSorted(sorted.map((s) => s.key));
    const n = sorted.length;

    const displays = new Utf8Pool();
    const types = new Uint8Array(n);
    const weights = new Float32Array(n);
    const scores = new Float32Array(n);
    const counts = new Uint32Array(n);
    const bestDocs = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const s = sorted[i] as (typeof sorted)[number];
      displays.push(s.display);
      types[i] = s.type;
      weights[i] = s.weight;
      scores[i] = staticScore(s.weight, s.type, s.quality);
      counts[i] = s.count;
      bestDocs[i] = s.bestDoc;
    }
    const docSugs = new Uint32Array(mined.docSuggestions.length);
    for (let i = 0; i < docSugs.length; i++) docSugs[i] = rank[mined.docSuggestions[i] as number] as number;

    // inner table: every later word start, sorted by (the start of) the rest of the key
    const rests: string[] = [];
    const restSug: number[] = [];
    const restStart: number[] = [];
    for (let i = 0; i < n; i++) {
      const key = (sorted[i] as { key: string }).key;
      const base = keys.offsets[i] as number;
      let starts = 0;
      const maxStarts = (sorted[i] as { type: number }).type === SUG.product ? MAX_PRODUCT_INNER_STARTS : MAX_INNER_STARTS;
      for (let c = key.indexOf(' '); c >= 0 && starts < maxStarts; c = key.indexOf(' ', c + 1)) {
        rests.push(key.slice(c + 1, c + 1 + INNER_KEY_CHARS));
        restSug.push(i);
        restStart.push(base + c + 1);
        starts++;
      }
    }
    const innerOrder = sortedOrder(rests);
    const innerCount = rests.length;
    const innerStarts = new Uint32Array(innerCount);
    const innerLens = new Uint8Array(innerCount);
    const innerSug = new Uint32Array(innerCount);
    for (let i = 0; i < innerCount; i++) {
      const e = innerOrder[i] as number;
      innerStarts[i] = restStart[e] as number;
      innerLens[i] = (rests[e] as string).length;
      innerSug[i] = restSug[e] as number;
    }

    const startNodes = PrefixTopLists.build(n, (i) => keys.commonPrefix(i - 1, i), (i) => i, scores, NODE_THRESHOLD, NODE_TOP_K);
    const innerNodes = PrefixTopLists.build(
      innerCount,
      (i) => {
        const a = innerStarts[i - 1] as number;
        const b = innerStarts[i] as number;
        const len = Math.min(innerLens[i - 1] as number, innerLens[i] as number);
        let c = 0;
        while (c < len && keys.chars[a + c] === keys.chars[b + c]) c++;
        return c;
      },
      (i) => innerSug[i] as number,
      scores,
      NODE_THRESHOLD,
      NODE_TOP_K,
    );

    builder
      .add(`${p}key.offsets`, keys.offsets)
      .add(`${p}key.chars`, keys.chars)
      .add(`${p}display.offsets`, displays.offsetArray())
      .add(`${p}display.bytes`, displays.byteArray())
      .add(`${p}type`, types)
      .add(`${p}weight`, weights)
      .add(`${p}score`, scores)
      .add(`${p}count`, counts)
      .add(`${p}bestDoc`, bestDocs)
      .add(`${p}doc.offsets`, mined.docOffsets)
      .add(`${p}doc.sugs`, docSugs)
      .add(`${p}inner.starts`, innerStarts)
      .add(`${p}inner.lens`, innerLens)
      .add(`${p}inner.sug`, innerSug);
    startNodes.write(builder, `${p}start.`);
    innerNodes.write(builder, `${p}inner.`);
  }

  /** Decoded keys and display texts, memoized: every query reads the keys of the hits it shows. */
  private readonly keyMemo = new ClearingMemo<number, string>({ maxEntries: MEMO_ENTRIES, entryBytes: 112 });
  private readonly displayMemo = new ClearingMemo<number, string>({ maxEntries: MEMO_ENTRIES, entryBytes: 112 });

  key(sug: number): string {
    let key = this.keyMemo.get(sug);
    if (key === undefined) {
      key = this.keys.termAt(sug);
      this.keyMemo.set(sug, key);
    }
    return key;
  }

  /** Length of a suggestion's key in UTF-16 code units, without decoding it. */
  keyLength(sug: number): number {
    return (this.keys.offsets[sug + 1] as number) - (this.keys.offsets[sug] as number);
  }

  display(sug: number): string {
    let text = this.displayMemo.get(sug);
    if (text === undefined) {
      text = this.displays.get(sug);
      this.displayMemo.set(sug, text);
    }
    return text;
  }

  type(sug: number): SuggestionType {
    return SUGGESTION_TYPES[this.types[sug] as number] ?? 'query';
  }

  /** Id of the suggestion with exactly this key, or -1. */
  find(key: string): number {
    return this.keys.get(key);
  }

  /** The suggestion of this table with the key of suggestion `sug` of `other`, or -1 (no key decoded). */
  findKeyOf(other: SuggestionIndex, sug: number): number {
    return this.keys.getTermOf(other.keys, sug);
  }

  /** Score of a suggestion once the weight of its deleted documents is taken out. */
  liveScore(sug: number, deleted: DeletedWeights | null): number {
    const s = this.scores[sug] as number;
    if (deleted === null) return s;
    const d = deleted[sug] as number;
    if (d === 0) return s;
    const w = this.weights[sug] as number;
    return d >= w * 0.999 ? 0 : s * (1 - d / w);
  }

  /**
   * The best `k` suggestions whose key starts with `prefix` (start table), and, when `inner`,
   * those with a later word starting with it, added to `out`. A suggestion may appear in both
   * lists.
   */
  complete(prefix: string, k: number, inner: boolean, deleted: DeletedWeights | null, out: CompletionHits): void {
    const [lo, hi] = this.keys.prefixRange(prefix);
    this.collect(lo, hi, null, this.startNodes, k, false, deleted, out);
    if (!inner) return;
    if (prefix.length <= INNER_KEY_CHARS) {
      const [ilo, ihi] = this.innerRange(prefix);
      this.collect(ilo, ihi, this.innerSug, this.innerNodes, k, true, deleted, out);
      return;
    }
    // longer than the sorted part of inner keys: narrow on it, then check each entry
    const [ilo, ihi] = this.innerRange(prefix.slice(0, INNER_KEY_CHARS));
    const top = topScratch.reset(k);
    for (let i = ilo; i < ihi; i++) {
      const sug = this.innerSug[i] as number;
      const start = this.innerStarts[i] as number;
      if (compareKey(this.keys.chars, start, this.keys.offsets[sug + 1] as number, prefix, true) !== 0) continue;
      top.offer(sug, this.liveScore(sug, deleted));
    }
    top.emit(true, out);
  }

  /** Number of keys starting with `prefix` (start table only). */
  countPrefix(prefix: string): number {
    const [lo, hi] = this.keys.prefixRange(prefix);
    return hi - lo;
  }

  /** `[lo, hi)` of inner entries starting with `q` (|q| <= INNER_KEY_CHARS). */
  private innerRange(q: string): [number, number] {
    const chars = this.keys.chars;
    const starts = this.innerStarts;
    const lens = this.innerLens;
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = starts[mid] as number;
      if (compareKey(chars, s, s + (lens[mid] as number), q, false) < 0) lo = mid + 1;
      else hi = mid;
    }
    const first = lo;
    hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const s = starts[mid] as number;
      if (compareKey(chars, s, s + (lens[mid] as number), q, true) === 0) lo = mid + 1;
      else hi = mid;
    }
    return [first, lo];
  }

  private collect(lo: number, hi: number, sugOf: Uint32Array | null, nodes: PrefixTopLists, k: number, inner: boolean, deleted: DeletedWeights | null, out: CompletionHits): void {
    if (hi <= lo) return;
    if (hi - lo > NODE_THRESHOLD) {
      const node = nodes.find(lo, hi);
      if (node !== null) {
        const [from, to] = node;
        let taken = 0;
        for (let i = from; i < to && taken < k; i++) {
          const sug = nodes.list[i] as number;
          const score = this.liveScore(sug, deleted);
          if (score <= 0) continue;
          out.push(sug, score, inner);
          taken++;
        }
        // A full list, or a list that holds the whole range, is exact; otherwise deletions ate
        // into it and the range is scanned below.
        if (taken >= k || to - from < NODE_TOP_K) return;
        out.count -= taken;
      }
    }
    scanTop(lo, hi, sugOf, k, inner, (s) => this.liveScore(s, deleted), out);
  }
}

/** Ranking score stored per suggestion: support weight x type factor x phrase quality. */
export function staticScore(weight: number, type: number, quality: number): number {
  const t = SUGGESTION_TYPES[type] ?? 'query';
  return weight * TYPE_FACTOR[t] * quality;
}

function scanTop(lo: number, hi: number, sugOf: Uint32Array | null, k: number, inner: boolean, scoreOf: (s: number) => number, out: CompletionHits): void {
  const top = topScratch.reset(k);
  let prev = -1;
  for (let i = lo; i < hi; i++) {
    const sug = sugOf ? (sugOf[i] as number) : i;
    if (sug === prev) continue;
    prev = sug;
    top.offer(sug, scoreOf(sug));
  }
  top.emit(inner, out);
}

/**
 * The `k` best distinct suggestions offered (positive scores only), best first, ties by id: kept
 * sorted by insertion, so that the many offers below the k-th best cost one comparison. A
 * suggestion offered twice (several word starts) counts once. One per thread, reset for each
 * use (queries are synchronous): a scan allocates nothing but the hits it emits.
 */
class TopSuggestions {
  private sugs = new Int32Array(64);
  private scores = new Float64Array(64);
  private n = 0;
  private k = 0;

  reset(k: number): this {
    if (k > this.sugs.length) {
      this.sugs = new Int32Array(k);
      this.scores = new Float64Array(k);
    }
    this.k = Math.max(0, k);
    this.n = 0;
    return this;
  }

  offer(sug: number, score: number): void {
    const k = this.k;
    if (score <= 0 || k === 0) return;
    const sugs = this.sugs;
    const scores = this.scores;
    let n = this.n;
    if (n === k) {
      const ls = scores[n - 1] as number;
      if (score < ls || (score === ls && sug >= (sugs[n - 1] as number))) return;
    }
    for (let i = 0; i < n; i++) if (sugs[i] === sug) return;
    // full: the last one makes room
    if (n === k) n--;
    let at = n;
    while (at > 0 && ((scores[at - 1] as number) < score || ((scores[at - 1] as number) === score && (sugs[at - 1] as number) > sug))) {
      sugs[at] = sugs[at - 1] as number;
      scores[at] = scores[at - 1] as number;
      at--;
    }
    sugs[at] = sug;
    scores[at] = score;
    this.n = n + 1;
  }

  emit(inner: boolean, out: CompletionHits): void {
    for (let i = 0; i < this.n; i++) out.push(this.sugs[i] as number, this.scores[i] as number, inner);
  }
}

const topScratch = new TopSuggestions();
