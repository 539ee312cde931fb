// The router's cache of rendered answers (search and predict). An entry is keyed by everything
// that shapes the answer, including the generation of its physical index: every change a shard
// node announces for that index bumps the generation, so no answer older than the last write is
// ever served. Bounded, with first-in first-out eviction (cheaper than LRU bookkeeping per hit).
import type { Metrics } from '../node/runtime/metrics.js';
import type { ShardDirectory } from '../node/runtime/shard-api.js';

export class ResponseCache {
  /** false where shard nodes announce no changes (a cluster router): nothing may be cached */
  readonly enabled: boolean;
  private readonly entries = new Map<string, string>();
  private readonly generations = new Map<string, number>();
  private readonly hits: { inc(): void };
  private readonly misses: { inc(): void };

  /** `name` labels the cache-lookup metric, e.g. `search_response`. */
  constructor(name: string, shards: ShardDirectory, metrics: Metrics, private readonly maxEntries: number) {
    this.hits = metrics.cacheLookups.labels(name, 'hit');
    this.misses = metrics.cacheLookups.labels(name, 'miss');
    this.enabled = typeof shards.subscribeChanges === 'function';
    shards.subscribeChanges?.((tenant, physicalId) => this.invalidate(tenant, physicalId));
  }

  /** The generation of a physical index, part of every key of its answers. */
  generation(tenant: string, physicalId: string): number {
    return this.generations.get(`${tenant}\0${physicalId}`) ?? 0;
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
    this.generations.set(k, (this.generations.get(k) ?? 0) + 1);
  }
}
