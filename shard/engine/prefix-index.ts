// The term dictionary: a sorted, de-duplicated table of strings stored as UTF-16 code units in
// two flat typed arrays, so it lives in a SharedArrayBuffer and every worker reads it in place.
// A term's id is its rank, so every prefix maps to one contiguous id range; that is what the
// typeahead tables, the prefix expansion of the last query word and the fuzzy walk (fuzzy.ts,
// which treats the sorted table as an implicit trie) are built on. Usable on its own.
import { FNV_OFFSET, FNV_PRIME } from '../../node/runtime/hash.js';

export interface PrefixIndexArrays {
  /** `size + 1` code-unit offsets into `chars`; term i is chars[offsets[i], offsets[i+1]) */
  offsets: Uint32Array;
  chars: Uint16Array;
}

/** Sorted string keys addressed by start/end code-unit offsets into one character pool. */
export interface KeyTable {
  chars: Uint16Array;
  starts: Uint32Array;
  ends: Uint32Array;
}

/** What a subtree skip reads: shared-prefix lengths of neighbouring terms and their next-smaller links. */
interface SkipTables {
  /** `lcp[i]`: code units term i shares with term i - 1 (0 for the first) */
  lcp: Uint16Array;
  /** `below[i]`: the first id after i whose lcp is smaller than `lcp[i]` (size when none) */
  below: Uint32Array;
}

export class PrefixIndex {
  readonly size: number;
  readonly offsets: Uint32Array;
  readonly chars: Uint16Array;
  /** subtree skips (see `skips`), built on first use */
  private skipTables: SkipTables | null = null;

  constructor(arrays: PrefixIndexArrays) {
    this.offsets = arrays.offsets;
    this.chars = arrays.chars;
    this.size = arrays.offsets.length - 1;
  }

  /** Builds the table from any strings (duplicates removed, code-unit order). */
  static build(terms: Iterable<string>): PrefixIndex {
    const sorted = [...new Set(terms)].sort(compareStrings);
    return PrefixIndex.fromSorted(sorted);
  }

  /** Builds from strings already sorted by code unit and unique (the caller guarantees it). */
  static fromSorted(sorted: readonly string[]): PrefixIndex {
    let total = 0;
    for (const t of sorted) total += t.length;
    const offsets = new Uint32Array(sorted.length + 1);
    const chars = new Uint16Array(total);
    let at = 0;
    for (let i = 0; i < sorted.length; i++) {
      const t = sorted[i] as string;
      for (let j = 0; j < t.length; j++) chars[at + j] = t.charCodeAt(j);
      at += t.length;
      offsets[i + 1] = at;
    }
    return new PrefixIndex({ offsets, chars });
  }

  /** Id of `term`, or -1. */
  get(term: string): number {
    return this.getIn(term, 0, this.size);
  }

  /**
   * Id of `term` among ids `[lo, hi)`, or -1: a term starting with a prefix lies in that prefix's
   * `prefixRange`, a handful of ids in a small table where `get` searches all of them.
   */
  getIn(term: string, lo: number, hi: number): number {
    const i = lowerBound(this.chars, this.offsets, this.offsets, 1, lo, hi, term);
    return i < hi && this.equalsAt(i, term) ? i : -1;
  }

  /**
   * Id of term `id` of `other` in this table, or -1: the same lookup as `get(other.termAt(id))`,
   * comparing code units in place instead of decoding the term.
   */
  getTermOf(other: PrefixIndex, id: number): number {
    const from = other.offsets[id] as number;
    const to = other.offsets[id + 1] as number;
    const chars = this.chars;
    const offsets = this.offsets;
    const qc = other.chars;
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareRanges(chars, offsets[mid] as number, offsets[mid + 1] as number, qc, from, to) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.size && this.sameTerm(lo, other, id) ? lo : -1;
  }

  /** Whether term `id` here and term `otherId` of `other` are the same code units. */
  sameTerm(id: number, other: PrefixIndex, otherId: number): boolean {
    const a = this.offsets[id] as number;
    const len = (this.offsets[id + 1] as number) - a;
    const b = other.offsets[otherId] as number;
    if ((other.offsets[otherId + 1] as number) - b !== len) return false;
    const x = this.chars;
    const y = other.chars;
    for (let i = 0; i < len; i++) if (x[a + i] !== y[b + i]) return false;
    return true;
  }

  /** A 32-bit hash (FNV-1a, as a signed integer) of term `id`'s code units: equal terms of any two tables hash alike. */
  hashOf(id: number): number {
    const chars = this.chars;
    let h = FNV_OFFSET;
    for (let i = this.offsets[id] as number, end = this.offsets[id + 1] as number; i < end; i++) h = Math.imul(h ^ (chars[i] as number), FNV_PRIME);
    return h | 0;
  }

  has(term: string): boolean {
    return this.get(term) >= 0;
  }

  /** The ids `[lo, hi)` of every term starting with `prefix` (empty prefix: all terms). */
  prefixRange(prefix: string): [number, number] {
    const lo = lowerBound(this.chars, this.offsets, this.offsets, 1, 0, this.size, prefix);
    const hi = prefixUpperBound(this.chars, this.offsets, this.offsets, 1, lo, this.size, prefix);
    return [lo, hi];
  }

  termAt(id: number): string {
    return decode(this.chars, this.offsets[id] as number, this.offsets[id + 1] as number);
  }

  lengthOf(id: number): number {
    return (this.offsets[id + 1] as number) - (this.offsets[id] as number);
  }

  /** Code unit `i` of term `id` (no bounds check). */
  charAt(id: number, i: number): number {
    return this.chars[(this.offsets[id] as number) + i] as number;
  }

  /** Length of the common prefix of terms `a` and `b`. */
  commonPrefix(a: number, b: number): number {
    const sa = this.offsets[a] as number;
    const sb = this.offsets[b] as number;
    const n = Math.min(this.lengthOf(a), this.lengthOf(b));
    let i = 0;
    while (i < n && this.chars[sa + i] === this.chars[sb + i]) i++;
    return i;
  }

  /**
   * Code units term `id` shares with term `id - 1` (0 for the first term). Along the sorted
   * table, the common prefix of term a and a later term b is the smallest of these over (a, b].
   */
  lcpAt(id: number): number {
    return this.skips().lcp[id] as number;
  }

  /** First id after `from` whose first `depth` code units differ from those of term `from`. */
  skipPrefix(from: number, depth: number): number {
    // Every term up to the answer shares at least `depth` code units with its predecessor, and
    // the answer shares fewer. From a term that shares l >= depth, every term before the next
    // one that shares less than l shares l or more: jump straight there. Each jump lowers the
    // shared length, so a skip costs at most a term's length in jumps, however large the
    // subtree (the fuzzy walk skips thousands of subtrees per word).
    const { lcp, below } = this.skips();
    let j = from + 1;
    while (j < this.size && (lcp[j] as number) >= depth) j = below[j] as number;
    return j;
  }

  /** The lcp table and its next-smaller links, built once per table (a few ms per 100,000 terms). */
  private skips(): SkipTables {
    if (this.skipTables !== null) return this.skipTables;
    const n = this.size;
    const lcp = new Uint16Array(n + 1);
    for (let i = 1; i < n; i++) lcp[i] = Math.min(this.commonPrefix(i - 1, i), 0xffff);
    const below = new Uint32Array(n + 1);
    // next strictly smaller value, right to left with a stack of candidates
    const stack = new Uint32Array(n + 1);
    let top = 0;
    for (let i = n - 1; i >= 0; i--) {
      const v = lcp[i] as number;
      while (top > 0 && (lcp[stack[top - 1] as number] as number) >= v) top--;
      below[i] = top > 0 ? (stack[top - 1] as number) : n;
      stack[top++] = i;
    }
    this.skipTables = { lcp, below };
    return this.skipTables;
  }

  *[Symbol.iterator](): IterableIterator<string> {
    for (let i = 0; i < this.size; i++) yield this.termAt(i);
  }

  get byteLength(): number {
    return this.offsets.byteLength + this.chars.byteLength;
  }

  private equalsAt(i: number, term: string): boolean {
    const s = this.offsets[i] as number;
    if ((this.offsets[i + 1] as number) - s !== term.length) return false;
    for (let j = 0; j < term.length; j++) if (this.chars[s + j] !== term.charCodeAt(j)) return false;
    return true;
  }
}

/**
 * The permutation that sorts `strings` by code unit (ties by index). Sorting indices over a
 * separate string array is about twice as fast in V8 as sorting objects that hold the strings.
 */
export function sortedOrder(strings: readonly string[]): Uint32Array {
  const idx = new Array<number>(strings.length);
  for (let i = 0; i < idx.length; i++) idx[i] = i;
  idx.sort((a, b) => {
    const x = strings[a] as string;
    const y = strings[b] as string;
    return x < y ? -1 : x > y ? 1 : a - b;
  });
  return Uint32Array.from(idx);
}

/** Code-unit order, the order every table here is sorted in. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function decode(chars: Uint16Array, start: number, end: number): string {
  // String.fromCharCode over a subarray is the fastest decode for short keys; chunk long ones
  // to stay under the argument-count limit.
  if (end - start <= 4096) return String.fromCharCode.apply(null, chars.subarray(start, end) as unknown as number[]);
  let s = '';
  for (let i = start; i < end; i += 4096) s += String.fromCharCode.apply(null, chars.subarray(i, Math.min(end, i + 4096)) as unknown as number[]);
  return s;
}

/**
 * Compares key `[start, end)` with `q`, looking at no more than `q.length` code units when
 * `prefixOnly`: 0 then means "the key starts with q".
 */
export function compareKey(chars: Uint16Array, start: number, end: number, q: string, prefixOnly: boolean): number {
  const n = end - start;
  const m = q.length;
  const len = n < m ? n : m;
  for (let i = 0; i < len; i++) {
    const d = (chars[start + i] as number) - q.charCodeAt(i);
    if (d !== 0) return d;
  }
  if (n >= m) return prefixOnly || n === m ? 0 : 1;
  return -1;
}

/**
 * First index in `[lo, hi)` whose key is >= q. Keys are `chars[starts[i], ends[i + endShift])`:
 * the term dictionary passes its offsets twice with endShift 1, other tables pass separate arrays
 * with endShift 0.
 */
export function lowerBound(chars: Uint16Array, starts: Uint32Array, ends: Uint32Array, endShift: number, lo: number, hi: number, q: string): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKey(chars, starts[mid] as number, ends[mid + endShift] as number, q, false) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in `[lo, hi)` whose key does not start with q (keys from `lo` on are >= q). */
export function prefixUpperBound(chars: Uint16Array, starts: Uint32Array, ends: Uint32Array, endShift: number, lo: number, hi: number, q: string): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKey(chars, starts[mid] as number, ends[mid + endShift] as number, q, true) === 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Code-unit order of `a[aFrom, aTo)` against `b[bFrom, bTo)`: negative, 0 or positive. */
function compareRanges(a: Uint16Array, aFrom: number, aTo: number, b: Uint16Array, bFrom: number, bTo: number): number {
  const n = Math.min(aTo - aFrom, bTo - bFrom);
  for (let i = 0; i < n; i++) {
    const d = (a[aFrom + i] as number) - (b[bFrom + i] as number);
    if (d !== 0) return d;
  }
  return aTo - aFrom - (bTo - bFrom);
}

/** `[lo, hi)` of the keys of a table that start with `prefix`. */
export function tableRange(table: KeyTable, prefix: string): [number, number] {
  const n = table.starts.length;
  const lo = lowerBound(table.chars, table.starts, table.ends, 0, 0, n, prefix);
  return [lo, prefixUpperBound(table.chars, table.starts, table.ends, 0, lo, n, prefix)];
}
