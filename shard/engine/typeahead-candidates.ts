// The candidates of one typeahead query (typeahead.ts): one per suggestion key, gathered from
// the tables of every segment, with the best match factor each was found with.
import { grown } from './arena.js';
import type { Segment } from './segment.js';

/**
 * The candidates of one query in reusable typed arrays, one set per thread (queries are
 * synchronous): candidate `i` is suggestion `sug[i]` of `segment[i]`, with its best match
 * factor, its score once every candidate is gathered (see candidateScore) and its key once
 * decoded (see keyOf). There is one candidate per key: by key over several segments, by
 * suggestion id within one (keys are unique within a table). Either way they are found through
 * a small open-addressing table (a keystroke gathers a few dozen); over several segments it is
 * keyed by a hash of the key's code units, read in place from the segment's table, and equal
 * hashes are told apart by comparing code units, so no key is decoded to be gathered.
 */
export class TypeaheadCandidates {
  count = 0;
  byId = false;
  sug = new Int32Array(64);
  factor = new Float64Array(64);
  score = new Float64Array(64);
  /** 1 for a candidate found only in another form of the words (typeahead.ts gatherAlike) */
  alike = new Uint8Array(64);
  /** the hash each candidate was placed by (see hashOf) */
  private hash = new Int32Array(64);
  readonly segment: (Segment | undefined)[] = [];
  readonly key: (string | null)[] = [];
  /** candidate index + 1 by hash, 0 for a free slot; at most half full */
  private slots = new Int32Array(256);

  reset(byId: boolean): this {
    // no reference outlives the query (a merged-away or unloaded segment must not be kept alive);
    // typeahead resets at its end too
    for (let i = 0; i < this.count; i++) {
      this.segment[i] = undefined;
      this.key[i] = null;
    }
    if (this.count > 0) this.slots.fill(0);
    this.count = 0;
    this.byId = byId;
    return this;
  }

  /** Adds suggestion `sug` of `seg` (with its key when already decoded), or raises its factor to `factor`. */
  add(seg: Segment, sug: number, key: string | null, factor: number): void {
    const h = this.byId ? Math.imul(sug, 0x9e3779b1) : seg.suggestions.keys.hashOf(sug);
    const found = this.find(seg, sug, h);
    if (found >= 0) {
      if (factor > (this.factor[found] as number)) this.factor[found] = factor;
      return;
    }
    const i = this.count;
    if (i === this.sug.length) this.grow();
    this.sug[i] = sug;
    this.factor[i] = factor;
    this.score[i] = 0;
    this.alike[i] = 0;
    this.hash[i] = h;
    this.segment[i] = seg;
    this.key[i] = key;
    this.count = i + 1;
    if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    else this.place(h, i);
  }

  /** Marks the candidates added since `from` as found in another form of the words. */
  markAlike(from: number): void {
    this.alike.fill(1, from, this.count);
  }

  /** The candidate of suggestion `sug` of `seg` (hash `h`): by id, or by key over several segments; -1 when none. */
  private find(seg: Segment, sug: number, h: number): number {
    const mask = this.slots.length - 1;
    for (let at = (h >>> 0) & mask; ; at = (at + 1) & mask) {
      const v = this.slots[at] as number;
      if (v === 0) return -1;
      const c = v - 1;
      if (this.byId) {
        if (this.sug[c] === sug) return c;
      } else if (this.hash[c] === h && (this.segment[c] as Segment).suggestions.keys.sameTerm(this.sug[c] as number, seg.suggestions.keys, sug)) {
        return c;
      }
    }
  }

  private place(h: number, i: number): void {
    const mask = this.slots.length - 1;
    let at = (h >>> 0) & mask;
    while (this.slots[at] !== 0) at = (at + 1) & mask;
    this.slots[at] = i + 1;
  }

  private rehash(size: number): void {
    this.slots = new Int32Array(size);
    for (let i = 0; i < this.count; i++) this.place(this.hash[i] as number, i);
  }

  private grow(): void {
    const n = this.sug.length * 2;
    this.sug = grown(this.sug, n);
    this.factor = grown(this.factor, n);
    this.score = grown(this.score, n);
    this.alike = grown(this.alike, n);
    this.hash = grown(this.hash, n);
  }
}
