// The router's cache of rendered answers (search and predict). An entry is keyed by everything
// that shapes the answer, including the generation of its physical index: every change a shard
// node announces for that index bumps the generation, so no answer older than the last write is
// ever served. Bounded, with first-in first-out eviction (cheaper than LRU bookkeeping per hit).
//
// Where the announcements come from decides what "last write" means. The single node sees every
// write in process. A cluster router follows every shard node's change feed over gRPC (see
// node/runtime/grpc-change-feed.ts): writes it forwarded itself bump the generation as soon as
// they are acknowledged (read-your-writes through the same router), writes through other routers
// or jobs when their announcement arrives (milliseconds on a LAN). While the feed is not live
// (a stream connecting, dropped, or silent) the cache neither answers nor stores, and every
// (re)connection or drop forgets everything: a write may have gone unannounced.
import type { Metrics } from '../node/runtime/metrics.js';
import type { ShardDirectory } from '../node/runtime/shard-api.js';

/**
 * Documents written before a query that its answer did not see, over the parts that answered
 * (each part reports `indexing` while a bulk load is still being indexed).
 */
export function unseenDocuments(parts: readonly { indexing?: number }[]): number {
  return parts.reduce((n, part) => n + (part.indexing ?? 0), 0);
}

/**
 * Whether an answer saw every document written before its query on every part: one given while a
 * bulk load was still being indexed would stay cached after the documents become searchable
 * (their writes were announced before), so it is not stored.
 */
export function sawEveryWrite(parts: readonly { indexing?: number }[]): boolean {
  return unseenDocuments(parts) === 0;
}

export class ResponseCache {
  private readonly entries = new Map<string, string>();
  private readonly generations = new Map<string, number>();
  /**
   * The highest generation handed out; `reset` moves every index above it: a generation is never
   * reused for an index, so a key built before a bump or reset never matches again.
   */
  private highest = 0;
  private floor = 0;
  private readonly live: () => boolean;
  private readonly hits: { inc(): void };
  private readonly misses: { inc(): void };

  /** `name` labels the cache-lookup metric, e.g. `search_response`. */
  constructor(name: string, shards: ShardDirectory, metrics: Metrics, private readonly maxEntries: number) {
    this.hits = metrics.cacheLookups.labels(name, 'hit');
    this.misses = metrics.cacheLookups.labels(name, 'miss');
    if (typeof shards.subscribeChanges === 'function') {
      shards.subscribeChanges(
        (tenant, physicalId) => this.invalidate(tenant, physicalId),
        () => this.reset(),
      );
      this.live = typeof shards.changesLive === 'function' ? shards.changesLive.bind(shards) : () => true;
    } else {
      this.live = () => false;
    }
  }

  /**
   * Whether answers may be cached and served now: only while the shards' change feed is live
   * (always in the single node; in a cluster, while every shard node's stream is open).
   */
  get enabled(): boolean {
    return this.live();
  }

  /** The generation of a physical index, part of every key of its answers. */
  generation(tenant: string, physicalId: string): number {
    return this.generations.get(`${tenant}\0${physicalId}`) ?? this.floor;
  }

  /** The cached body, counting a hit; a miss is counted by `missed` once the answer is computed. */
  get(key: string): string | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) this.hits.inc();
    return hit;
  }

  missed(): void {
    this.misses.inc();
  }

  set(key: string, body: string): void {
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, body);
  }

  /** Retires every cached answer of one physical index (changed, dropped or swapped). */
  invalidate(tenant: string, physicalId: string): void {
    const k = `${tenant}\0${physicalId}`;
    const next = (this.generations.get(k) ?? this.floor) + 1;
    this.generations.set(k, next);
    if (next > this.highest) this.highest = next;
  }

  /** Retires every cached answer (announcements may have been missed). */
  reset(): void {
    this.floor = ++this.highest;
    this.generations.clear();
    this.entries.clear();
  }
}
