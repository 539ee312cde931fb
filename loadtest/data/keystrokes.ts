// The keystroke workload: real queries expanded into the prefixes a search-as-you-type client
// sends while the query is typed ("q", "qu", "que", ...), each query drawn as often as real
// users issued it.
//
// Weights: a Best Buy query weighs its number of events in the query log; a Home Depot query
// weighs 1, because the judged file repeats a query once per judged product, which says nothing
// about how often it was searched. Prefixes are sent as typed, including those that end in a
// space (a client sends "gears " before "gears o").
import { loadBestBuyQueryLog } from './bestbuy.js';
import { loadHomeDepot } from './homedepot.js';
import { SeededRandom } from './seeded-random.js';

export const QUERY_SOURCES = ['homedepot', 'bestbuy-log'] as const;
export type QuerySource = (typeof QUERY_SOURCES)[number];

export interface WeightedQuery {
  query: string;
  weight: number;
}

/** Every prefix of `query` (trimmed) from `minLength` characters up to the whole query. */
export function keystrokePrefixes(query: string, minLength = 1): string[] {
  const q = query.trim();
  const out: string[] = [];
  // by code point, so a keystroke never splits a surrogate pair
  const chars = Array.from(q);
  for (let n = Math.max(1, minLength); n <= chars.length; n++) out.push(chars.slice(0, n).join(''));
  return out;
}

export function loadWeightedQueries(sources: readonly QuerySource[]): WeightedQuery[] {
  const out: WeightedQuery[] = [];
  for (const source of sources) {
    if (source === 'homedepot') {
      for (const q of loadHomeDepot().queries) if (q.query.trim()) out.push({ query: q.query.trim(), weight: 1 });
    } else {
      for (const q of loadBestBuyQueryLog()) out.push({ query: q.query, weight: q.count });
    }
  }
  return out;
}

export function parseQuerySources(names: readonly string[]): QuerySource[] {
  for (const n of names) {
    if (!(QUERY_SOURCES as readonly string[]).includes(n)) throw new Error(`unknown query source "${n}" (known: ${QUERY_SOURCES.join(', ')})`);
  }
  return names as QuerySource[];
}

/** Draws queries with probability proportional to weight (with replacement), seeded. */
export class WeightedSampler {
  private readonly cumulative: Float64Array;
  private readonly total: number;

  constructor(private readonly queries: readonly WeightedQuery[], private readonly random: SeededRandom) {
    if (queries.length === 0) throw new Error('no queries to sample from');
    this.cumulative = new Float64Array(queries.length);
    let sum = 0;
    queries.forEach((q, i) => {
      if (!(q.weight > 0)) throw new Error(`query "${q.query}" has weight ${q.weight}`);
      sum += q.weight;
      this.cumulative[i] = sum;
    });
    this.total = sum;
  }

  next(): WeightedQuery {
    const x = this.random.next() * this.total;
    let lo = 0;
    let hi = this.cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.cumulative[mid]! > x) hi = mid;
      else lo = mid + 1;
    }
    return this.queries[lo]!;
  }
}

export interface StreamOptions {
  /** how many typed queries to draw */
  sessions: number;
  seed: number;
  /** shortest prefix sent (1 = from the first keystroke) */
  minPrefix?: number;
}

/** The request texts of `sessions` typists, one after another, each typing one drawn query. */
export function keystrokeStream(queries: readonly WeightedQuery[], opts: StreamOptions): string[] {
  const sampler = new WeightedSampler(queries, new SeededRandom(opts.seed));
  const out: string[] = [];
  for (let i = 0; i < opts.sessions; i++) out.push(...keystrokePrefixes(sampler.next().query, opts.minPrefix ?? 1));
  return out;
}

/** Whole queries drawn by weight, for workloads that send complete queries. */
export function queryStream(queries: readonly WeightedQuery[], opts: { count: number; seed: number }): string[] {
  const sampler = new WeightedSampler(queries, new SeededRandom(opts.seed));
  return Array.from({ length: opts.count }, () => sampler.next().query);
}

/**
 * Expected share of each prefix in the keystroke traffic: the summed weight of the queries that
 * pass through it, divided by the total number of weighted keystrokes.
 */
export function prefixDistribution(queries: readonly WeightedQuery[], minPrefix = 1): Map<string, number> {
  const weights = new Map<string, number>();
  let total = 0;
  for (const q of queries) {
    for (const p of keystrokePrefixes(q.query, minPrefix)) {
      weights.set(p, (weights.get(p) ?? 0) + q.weight);
      total += q.weight;
    }
  }
  for (const [p, w] of weights) weights.set(p, w / total);
  return weights;
}
