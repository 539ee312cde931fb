// Precomputed best-k lists for the prefixes of a sorted key table. Every prefix whose range holds
// more than `threshold` entries is an LCP interval of the table (its neighbours share fewer
// characters than its members), so the intervals found by one bottom-up stack pass over the
// longest-common-prefix array cover exactly the prefixes that are too large to scan. Each
// interval stores its k best distinct ids by score; children pass their lists up to their
// parent, so the build is linear in the table size times k. Used for typeahead completions
// (suggestion-index.ts) and for the completions of the last query word (the term dictionary).
import type { Arena, ArenaBuilder } from './arena.js';

export class PrefixTopLists {
  constructor(
    /** interval starts, sorted (nested intervals share a start: larger first) */
    readonly lo: Uint32Array,
    readonly hi: Uint32Array,
    readonly listOffsets: Uint32Array,
    /** ids, best first within each interval */
    readonly list: Uint32Array,
  ) {}

  /**
   * @param n entries of the sorted table
   * @param lcpWithPrevious common prefix length of entry i and entry i - 1
   * @param idAt the id entry i stands for (several entries may share one)
   * @param scores score per id (higher is better)
   */
  static build(n: number, lcpWithPrevious: (i: number) => number, idAt: (i: number) => number, scores: ArrayLike<number>, threshold: number, k: number): PrefixTopLists {
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
      if (uniq.length > k) uniq.length = k;
      return uniq;
    };
    for (let i = 1; i <= n; i++) {
      const cur = i < n ? lcpWithPrevious(i) : -1;
      let pending: number[] = [idAt(i - 1)];
      let lb = i - 1;
      while (stack.length > 0 && cur < (stack[stack.length - 1] as Frame).lcp) {
        const f = stack.pop() as Frame;
        for (const s of pending) f.cands.push(s);
        const top = best(f.cands);
        if (i - f.lb > threshold) reported.push({ lo: f.lb, hi: i, list: top });
        pending = top;
        lb = f.lb;
      }
      const top = stack[stack.length - 1];
      if (top === undefined || cur > top.lcp) {
        stack.push({ lcp: cur, lb, cands: pending });
      } else {
        for (const s of pending) top.cands.push(s);
        if (top.cands.length > 4 * k) top.cands = best(top.cands);
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
    return new PrefixTopLists(lo, hi, listOffsets, Uint32Array.from(list));
  }

  static read(arena: Arena, prefix: string): PrefixTopLists {
    return new PrefixTopLists(arena.u32(`${prefix}node.lo`), arena.u32(`${prefix}node.hi`), arena.u32(`${prefix}node.listOffsets`), arena.u32(`${prefix}node.list`));
  }

  write(builder: ArenaBuilder, prefix: string): void {
    builder.add(`${prefix}node.lo`, this.lo).add(`${prefix}node.hi`, this.hi).add(`${prefix}node.listOffsets`, this.listOffsets).add(`${prefix}node.list`, this.list);
  }

  /** `[from, to)` in `list` of the interval `[lo, hi)`, or null when it has none (small range). */
  find(lo: number, hi: number): [number, number] | null {
    let a = 0;
    let b = this.lo.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if ((this.lo[mid] as number) < lo) a = mid + 1;
      else b = mid;
    }
    for (let i = a; i < this.lo.length && this.lo[i] === lo; i++) {
      if (this.hi[i] === hi) return [this.listOffsets[i] as number, this.listOffsets[i + 1] as number];
    }
    return null;
  }
}
