// The candidates of one typeahead query (typeahead.ts): one per suggestion key, gathered from
// the tables of every segment, with the best match factor each was found with.
import { grown } from './arena.js';
import type { Segment } from './segment.js';

/**
 * The candidates of one query in reusable typed arrays, one set per thread (queries are
 * synchronous): candidate `i` is suggestion `sug[i]` of `segment[i]`, with its best match
 * factor, its score once every candidate is gathered (see candidateScore) and its key once
 * decoded (see keyOf). There is one candidate per key: by key over several segments, by
 * suggestion id within one (keys are unique within a table), found through a small
 * open-addressing table rather than a map of objects (a keystroke gathers a few dozen).
 */
export class TypeaheadCandidates {
  count = 0;
  byId = false;
  sug = new Int32Array(64);
  factor = new Float64Array(64);
  score = new Float64Array(64);
  readonly segment: (Segment | undefined)[] = [];
  readonly key: (string | null)[] = [];
  private readonly byKey = new Map<string, number>();
  /** candidate index + 1 by suggestion id (byId), 0 for a free slot; at most half full */
  private slots = new Int32Array(256);

  reset(byId: boolean): this {
    // no reference outlives the query (a merged-away or unloaded segment must not be kept alive);
    // typeahead resets at its end too
    for (let i = 0; i < this.count; i++) {
      this.segment[i] = undefined;
      this.key[i] = null;
    }
    if (this.count > 0) {
      this.slots.fill(0);
      this.byKey.clear();
    }
    this.count = 0;
    this.byId = byId;
    return this;
  }

  /** Adds suggestion `sug` of `seg` (its key when not byId), or raises its factor to `factor`. */
  add(seg: Segment, sug: number, key: string | null, factor: number): void {
    const found = this.byId ? this.slotOf(sug) : (this.byKey.get(key as string) ?? -1);
    if (found >= 0) {
      if (factor > (this.factor[found] as number)) this.factor[found] = factor;
      return;
    }
    const i = this.count;
    if (i === this.sug.length) this.grow();
    this.sug[i] = sug;
    this.factor[i] = factor;
    this.score[i] = 0;
    this.segment[i] = seg;
    this.key[i] = key;
    this.count = i + 1;
    if (!this.byId) this.byKey.set(key as string, i);
    else if (this.count * 2 > this.slots.length) this.rehash(this.slots.length * 2);
    else this.place(sug, i);
  }

  private slotOf(sug: number): number {
    const mask = this.slots.length - 1;
    for (let at = Math.imul(sug, 0x9e3779b1) >>> 0 & mask; ; at = (at + 1) & mask) {
      const v = this.slots[at] as number;
      if (v === 0) return -1;
      if (this.sug[v - 1] === sug) return v - 1;
    }
  }

  private place(sug: number, i: number): void {
    const mask = this.slots.length - 1;
    let at = Math.imul(sug, 0x9e3779b1) >>> 0 & mask;
    while (this.slots[at] !== 0) at = (at + 1) & mask;
    this.slots[at] = i + 1;
  }

  private rehash(size: number): void {
    this.slots = new Int32Array(size);
    for (let i = 0; i < this.count; i++) this.place(this.sug[i] as number, i);
  }

  private grow(): void {
    const n = this.sug.length * 2;
    this.sug = grown(this.sug, n);
    this.factor = grown(this.factor, n);
    this.score = grown(this.score, n);
  }
}
