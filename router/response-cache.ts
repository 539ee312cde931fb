// The router's cache of rendered answers (search and predict). An entry is keyed by everything
// that shapes the answer, including the generation of its physical index: every change a shard
// node announces for that index bumps the generation, so no answer older than the last write is
// ever served. Bounded by memory (keys and bodies, estimated per character), with second-chance
// eviction: the oldest entry goes unless it was served since it was stored or last spared, in
// which case it moves to the back. A hit costs one flag (no LRU list to relink), and popular
// prefixes ("s", "sa") stay while the long tail of once-typed ones passes through. Entries of
// retired generations are never served again and leave the same way.
//
// Where the announcements come from decides what "last write" means. The single node sees every
// write in process. A cluster router follows every shard node's change feed over gRPC (see
// node/runtime/grpc-change-feed.ts): writes it forwarded itself bump the generation as soon as
// they are acknowledged (read-your-writes through the same router), writes through other routers
// or jobs when their announcement arrives (milliseconds on a LAN). While the feed is not live
// (a stream connecting, dropped, or silent) the cache neither answers nor stores, and every
// (re)connection or drop forgets everything: a write may have gone unannounced.
import type { CacheSize, Metrics } from '../node/runtime/metrics.js';
import type { CompiledRoute } from './compiled-route.js';
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

/** A cached answer; the response cache's front holds entries to serve them while they are held here. */
export interface CacheEntry {
  readonly body: string;
  bytes: number;
  /** served since it was stored or last spared */
  used: boolean;
  /** still held: false once evicted or replaced (and for every entry of a reset cache, see `holds`) */
  held: boolean;
  /** the cache's resets when it was stored */
  readonly resets: number;
  /** the requests the cache's front answers from this entry (front-cache.ts), null for none */
  fronts: { route: CompiledRoute; apiKey: string; query: string }[] | null;
}

/** Map entry, entry object and string headers of one cached answer, beside its characters. */
const ENTRY_OVERHEAD_BYTES = 120;
/** An answer larger than this share of the bound is not kept (it would push out many others). */
const MAX_ENTRY_SHARE = 1 / 16;

/** a character outside Latin-1 (any UTF-16 unit from 0x100, surrogates included) */
const TWO_BYTE = /[\u0100-\uffff]/;
/** Estimated memory of a string: V8 keeps one byte per character unless a character needs two. */
export function stringBytes(s: string): number {
  return TWO_BYTE.test(s) ? 2 * s.length : s.length;
}

export class ResponseCache implements CacheSize {
  private readonly byKey = new Map<string, CacheEntry>();
  private size = 0;
  private evicted = 0;
  private readonly generations = new Map<string, number>();
  /**
   * The highest generation handed out; `reset` moves every index above it: a generation is never
   * reused for an index, so a key built before a bump or reset never matches again.
   */
  private highest = 0;
  private floor = 0;
  private resets = 0;
  private leaving: ((entry: CacheEntry) => void) | null = null;
  private resetting: (() => void) | null = null;
  private readonly live: () => boolean;
  private readonly hits: { inc(): void };
  private readonly misses: { inc(): void };

  /**
   * `name` labels the cache's metrics, e.g. `search_response`; `maxBytes` bounds the estimated
   * memory of its entries (0: nothing is kept).
   */
  constructor(name: string, shards: ShardDirectory, metrics: Metrics, private readonly maxBytes: number) {
    ({ hit: this.hits, miss: this.misses } = metrics.cacheLookupsOf(name));
    metrics.cacheSize(name, this);
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

  get entries(): number {
    return this.byKey.size;
  }

  get bytes(): number {
    return this.size;
  }

  get evictions(): number {
    return this.evicted;
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
    return this.lookup(key)?.body;
  }

  /** The cached entry, counting a hit (as `get`). */
  lookup(key: string): CacheEntry | undefined {
    const hit = this.byKey.get(key);
    if (hit === undefined) return undefined;
    hit.used = true;
    this.hits.inc();
    return hit;
  }

  /** Whether `entry` is still held (not evicted, replaced or reset away). */
  holds(entry: CacheEntry): boolean {
    return entry.held && entry.resets === this.resets;
  }

  /**
   * Calls `leave` with every entry that leaves the cache (evicted or replaced) and `reset` when
   * everything does: what keeps state beside entries (the cache's front) drops it with them.
   */
  onLeave(leave: (entry: CacheEntry) => void, reset: () => void): void {
    this.leaving = leave;
    this.resetting = reset;
  }

  /** Adds `bytes` to a held entry's estimate (what is kept beside it), evicting as `set` does. */
  grow(entry: CacheEntry, bytes: number): void {
    if (!this.holds(entry)) return;
    entry.bytes += bytes;
    this.size += bytes;
    while (this.size > this.maxBytes) this.evictOldest();
  }

  /** Counts a hit served from `entry` without a lookup (the cache's front). */
  served(entry: CacheEntry): void {
    entry.used = true;
    this.hits.inc();
  }

  missed(): void {
    this.misses.inc();
  }

  /** Stores an answer; the entry, or null when it is too large to keep. */
  set(key: string, body: string): CacheEntry | null {
    const bytes = stringBytes(key) + stringBytes(body) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.maxBytes * MAX_ENTRY_SHARE) return null;
    const previous = this.byKey.get(key);
    if (previous !== undefined) {
      this.size -= previous.bytes;
      previous.held = false;
      this.byKey.delete(key);
      this.leaving?.(previous);
    }
    const entry: CacheEntry = { body, bytes, used: false, held: true, resets: this.resets, fronts: null };
    this.byKey.set(key, entry);
    this.size += bytes;
    while (this.size > this.maxBytes) this.evictOldest();
    return entry.held ? entry : null;
  }

  /** The oldest entry goes, or moves to the back unused if it was served (second chance). */
  private evictOldest(): void {
    const oldest = this.byKey.entries().next().value;
    if (oldest === undefined) return;
    const [key, entry] = oldest;
    this.byKey.delete(key);
    if (entry.used) {
      entry.used = false;
      this.byKey.set(key, entry);
      return;
    }
    this.size -= entry.bytes;
    entry.held = false;
    this.evicted++;
    this.leaving?.(entry);
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
    this.resets++;
    this.floor = ++this.highest;
    this.generations.clear();
    this.byKey.clear();
    this.size = 0;
    this.resetting?.();
  }
}
