// The precomputed typeahead structure of one segment. Suggestions are stored sorted by key, so a
// suggestion id is its rank and "keys starting with p" is an id range (the start table). A second
// table (the inner table) holds every later word start of every key, sorted by the rest of the
// key, so "gal" finds "samsung galaxy". For every prefix whose range is larger than
// NODE_THRESHOLD entries the best NODE_TOP_K distinct suggestions are stored in score order:
// those prefixes are exactly the LCP intervals of the sorted table, found with one stack pass.
// Smaller ranges are scanned at query time, so no completion is ever silently dropped.
// All arrays are typed arrays in the segment's arena.
import { Arena, ArenaBuilder } from './typed-arena.js';
import { PrefixIndex, compareKey, decode, sortedOrder } from './prefix-index.js';
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

export interface CompletionHit {
  sug: number;
  /** static score adjusted for deleted documents */
  score: number;
  /** matched at a later word of the key rather than its start */
  inner: boolean;
}

/** Deleted weight per suggestion; written by the segment owner when documents are removed. */
export type DeletedWeights = Float32Array;

export class SuggestionIndex {
  readonly size: number;
  readonly keys: PrefixIndex;
  private readonly displayOffsets: Uint32Array;
  private readonly displayChars: Uint16Array;
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
  private readonly startNodes: NodeTable;
  private readonly innerNodes: NodeTable;

  constructor(arena: Arena, prefix = 'sug.') {
    const p = prefix;
    this.keys = new PrefixIndex({ offsets: arena.u32(`${p}key.offsets`), chars: arena.u16(`${p}key.chars`) });
    this.size = this.keys.size;
    this.displayOffsets = arena.u32(`${p}display.offsets`);
    this.displayChars = arena.u16(`${p}display.chars`);
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
    this.startNodes = readNodes(arena, `${p}start.`);
    this.innerNodes = readNodes(arena, `${p}inner.`);
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

    const displayOffsets = new Uint32Array(n + 1);
    let chars = 0;
    for (let i = 0; i < n; i++) {
      chars += (sorted[i] as { display: string }).display.length;
      displayOffsets[i + 1] = chars;
    }
    const displayChars = new Uint16Array(chars);
    const types = new Uint8Array(n);
    const weights = new Float32Array(n);
    const scores = new Float32Array(n);
    const counts = new Uint32Array(n);
    const bestDocs = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      const s = sorted[i] as (typeof sorted)[number];
      const at = displayOffsets[i] as number;
      for (let j = 0; j < s.display.length; j++) displayChars[at + j] = s.display.charCodeAt(j);
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

    const startNodes = buildNodes(n, (i) => keys.commonPrefix(i - 1, i), (i) => i, scores);
    const innerNodes = buildNodes(
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
    );

    builder
      .add(`${p}key.offsets`, keys.offsets)
      .add(`${p}key.chars`, keys.chars)
      .add(`${p}display.offsets`, displayOffsets)
      .add(`${p}display.chars`, displayChars)
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
    writeNodes(builder, `${p}start.`, startNodes);
    writeNodes(builder, `${p}inner.`, innerNodes);
  }

  key(sug: number): string {
    return this.keys.termAt(sug);
  }

  display(sug: number): string {
    return decode(this.displayChars, this.displayOffsets[sug] as number, this.displayOffsets[sug + 1] as number);
  }

  type(sug: number): SuggestionType {
    return SUGGESTION_TYPES[this.types[sug] as number] ?? 'query';
  }

  /** Id of the suggestion with exactly this key, or -1. */
  find(key: string): number {
    return this.keys.get(key);
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
   * those with a later word starting with it. A suggestion may appear in both lists.
   */
  complete(prefix: string, k: number, inner: boolean, deleted: DeletedWeights | null, out: CompletionHit[]): void {
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
    const buf: CompletionHit[] = [];
    for (let i = ilo; i < ihi; i++) {
      const sug = this.innerSug[i] as number;
      const start = this.innerStarts[i] as number;
      if (compareKey(this.keys.chars, start, this.keys.offsets[sug + 1] as number, prefix, true) !== 0) continue;
      const score = this.liveScore(sug, deleted);
      if (score > 0) buf.push({ sug, score, inner: true });
    }
    dedupeHits(buf);
    selectTop(buf, k);
    for (const h of buf) out.push(h);
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

  private collect(lo: number, hi: number, sugOf: Uint32Array | null, nodes: NodeTable, k: number, inner: boolean, deleted: DeletedWeights | null, out: CompletionHit[]): void {
    if (hi <= lo) return;
    if (hi - lo > NODE_THRESHOLD) {
      const node = findNode(nodes, lo, hi);
      if (node >= 0) {
        const from = nodes.listOffsets[node] as number;
        const to = nodes.listOffsets[node + 1] as number;
        let taken = 0;
        for (let i = from; i < to && taken < k; i++) {
          const sug = nodes.list[i] as number;
          const score = this.liveScore(sug, deleted);
          if (score <= 0) continue;
          out.push({ sug, score, inner });
          taken++;
        }
        // A full list, or a list that holds the whole range, is exact; otherwise deletions ate
        // into it and the range is scanned below.
        if (taken >= k || to - from < NODE_TOP_K) return;
        out.length -= taken;
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

interface NodeTable {
  lo: Uint32Array;
  hi: Uint32Array;
  listOffsets: Uint32Array;
  list: Uint32Array;
}

function readNodes(arena: Arena, p: string): NodeTable {
  return { lo: arena.u32(`${p}node.lo`), hi: arena.u32(`${p}node.hi`), listOffsets: arena.u32(`${p}node.listOffsets`), list: arena.u32(`${p}node.list`) };
}

function writeNodes(builder: ArenaBuilder, p: string, nodes: NodeTable): void {
  builder.add(`${p}node.lo`, nodes.lo).add(`${p}node.hi`, nodes.hi).add(`${p}node.listOffsets`, nodes.listOffsets).add(`${p}node.list`, nodes.list);
}

function findNode(nodes: NodeTable, lo: number, hi: number): number {
  let a = 0;
  let b = nodes.lo.length;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if ((nodes.lo[mid] as number) < lo) a = mid + 1;
    else b = mid;
  }
  for (let i = a; i < nodes.lo.length && nodes.lo[i] === lo; i++) if (nodes.hi[i] === hi) return i;
  return -1;
}

/**
 * Every prefix range larger than NODE_THRESHOLD is an LCP interval of the sorted table (its
 * neighbours share fewer characters than its members do). One bottom-up stack pass enumerates
 * the intervals; each passes its best distinct suggestions up to its parent, so the whole build
 * is linear in the table size times NODE_TOP_K.
 */
function buildNodes(n: number, lcpWithPrevious: (i: number) => number, sugAt: (i: number) => number, scores: Float32Array): NodeTable {
  interface Frame { lcp: number; lb: number; cands: number[] }
  const reported: { lo: number; hi: number; list: number[] }[] = [];
  const stack: Frame[] = [{ lcp: 0, lb: 0, cands: [] }];
  const stamp = new Int32Array(scores.length).fill(-1);
  let round = 0;
  const best = (cands: number[]): number[] => {
    round++;
    const uniq: number[] = [];
    for (const s of cands) {
      if (stamp[s] === round) continue;
      stamp[s] = round;
      uniq.push(s);
    }
    uniq.sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
    if (uniq.length > NODE_TOP_K) uniq.length = NODE_TOP_K;
    return uniq;
  };
  for (let i = 1; i <= n; i++) {
    const cur = i < n ? lcpWithPrevious(i) : -1;
    let pending: number[] = [sugAt(i - 1)];
    let lb = i - 1;
    while (stack.length > 0 && cur < (stack[stack.length - 1] as Frame).lcp) {
      const f = stack.pop() as Frame;
      for (const s of pending) f.cands.push(s);
      const top = best(f.cands);
      if (i - f.lb > NODE_THRESHOLD) reported.push({ lo: f.lb, hi: i, list: top });
      pending = top;
      lb = f.lb;
    }
    const top = stack[stack.length - 1];
    if (top === undefined || cur > top.lcp) {
      stack.push({ lcp: cur, lb, cands: pending });
    } else {
      for (const s of pending) top.cands.push(s);
      if (top.cands.length > 4 * NODE_TOP_K) top.cands = best(top.cands);
    }
  }
  // the same range can be reported at several LCP values (e.g. the root and its only child)
  reported.sort((a, b) => a.lo - b.lo || b.hi - a.hi);
  const unique = reported.filter((r, i) => i === 0 || r.lo !== (reported[i - 1] as typeof r).lo || r.hi !== (reported[i - 1] as typeof r).hi);
  const lo = new Uint32Array(unique.length);
  const hi = new Uint32Array(unique.length);
  const listOffsets = new Uint32Array(unique.length + 1);
  const list: number[] = [];
  unique.forEach((r, idx) => {
    lo[idx] = r.lo;
    hi[idx] = r.hi;
    for (const s of r.list) list.push(s);
    listOffsets[idx + 1] = list.length;
  });
  return { lo, hi, listOffsets, list: Uint32Array.from(list) };
}

function scanTop(lo: number, hi: number, sugOf: Uint32Array | null, k: number, inner: boolean, scoreOf: (s: number) => number, out: CompletionHit[]): void {
  const buf: CompletionHit[] = [];
  let prev = -1;
  for (let i = lo; i < hi; i++) {
    const sug = sugOf ? (sugOf[i] as number) : i;
    if (sug === prev) continue;
    prev = sug;
    const score = scoreOf(sug);
    if (score > 0) buf.push({ sug, score, inner });
  }
  if (sugOf) dedupeHits(buf);
  selectTop(buf, k);
  for (const h of buf) out.push(h);
}

function dedupeHits(buf: CompletionHit[]): void {
  const seen = new Set<number>();
  let w = 0;
  for (const h of buf) {
    if (seen.has(h.sug)) continue;
    seen.add(h.sug);
    buf[w++] = h;
  }
  buf.length = w;
}

/** Keeps the `k` best hits of `buf`, best first (ties by id for a stable order). */
export function selectTop(buf: CompletionHit[], k: number): void {
  buf.sort((a, b) => b.score - a.score || a.sug - b.sug);
  if (buf.length > k) buf.length = k;
}
