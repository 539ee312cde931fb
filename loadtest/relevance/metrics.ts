// Ranking metrics over judged queries. A ranked answer is a list of positions, best first; a
// position stands for one product id, or for several when the engine answered with something
// (a suggested title) that several products share. A position is relevant when any id it stands
// for is among the query's right answers.
//
// success@k: 1 when a relevant position is among the first k, else 0.
// reciprocal rank@k: 1 / (1-based rank of the first relevant position) within the first k, else 0.
// Their means over the queries are success@k and MRR@k.
export type RankedPosition = string | readonly string[];

/** 1-based rank of the first relevant position within the first `k`, or 0 when none. */
export function firstRelevantRank(ranked: readonly RankedPosition[], relevant: ReadonlySet<string>, k: number): number {
  const n = Math.min(k, ranked.length);
  for (let i = 0; i < n; i++) {
    const p = ranked[i]!;
    if (typeof p === 'string' ? relevant.has(p) : p.some((id) => relevant.has(id))) return i + 1;
  }
  return 0;
}

export function successAtK(ranked: readonly RankedPosition[], relevant: ReadonlySet<string>, k: number): number {
  return firstRelevantRank(ranked, relevant, k) > 0 ? 1 : 0;
}

export function reciprocalRank(ranked: readonly RankedPosition[], relevant: ReadonlySet<string>, k: number): number {
  const r = firstRelevantRank(ranked, relevant, k);
  return r > 0 ? 1 / r : 0;
}

export interface RankingScore {
  queries: number;
  success_at_k: number;
  mrr: number;
}

/** Aggregates first-relevant ranks (0 = missed) into success@k and MRR@k. */
export function scoreRanks(ranks: readonly number[]): RankingScore {
  if (ranks.length === 0) return { queries: 0, success_at_k: Number.NaN, mrr: Number.NaN };
  let hits = 0;
  let rr = 0;
  for (const r of ranks) {
    if (r > 0) {
      hits++;
      rr += 1 / r;
    }
  }
  return { queries: ranks.length, success_at_k: hits / ranks.length, mrr: rr / ranks.length };
}
