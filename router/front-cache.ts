// The front of the search response cache: a cached answer found from the request as it arrived
// (its API key, raw query string and declared headers), before the query string is parsed and
// checked and the cache key is built. Those steps are pure functions of the raw request, so a
// request identical to one answered from the cache needs none of them again; what can change
// meanwhile is checked instead, at the cost of a few map lookups:
//
// - the key still authenticates as the same key record and names the same tenant context (the
//   auth caches replace both on any key or tenant event, and on expiry);
// - the response-cache entry is still held and the cache is live;
// - the index resolves to the same index and physical-index records (which carry its schema and
//   merchandising; the metadata caches replace them on every event and on expiry), its
//   generation and the placement epoch are those the cache key was built with, and no
//   scheduled merchandising rule has started or ended since.
//
// Any doubt falls through to the ordinary path, which answers and remembers the request again.
// Remembered requests live as long as the cached answers they lead to: each is charged to its
// response-cache entry's size and forgotten when the entry leaves, so the response cache's bound
// covers both. On typeahead keystrokes answered from the cache, the steps this skips were about
// half of a cached request's CPU (BENCHMARKS.md, "The front of the response cache").
import type { KeyRecord } from '../coordinator/coordinator.js';
import type { Metrics } from '../node/runtime/metrics.js';
import type { Auth } from './auth.js';
import type { CompiledRoute } from './compiled-route.js';
import type { DataPlane, ResolvedIndex } from './data-plane.js';
import type { RequestHead } from './http-server.js';
import { stringBytes, type CacheEntry, type ResponseCache } from './response-cache.js';
import type { TenantContext } from './tenant-context.js';

/** What the request pipeline knows of a request on the fast path, for its answer to be remembered. */
export interface FrontTicket {
  route: CompiledRoute;
  head: RequestHead;
  key: KeyRecord;
  tenant: TenantContext;
}

/** What a cached answer was built from, as the search service saw it when it built the key. */
export interface FrontStamps {
  /** the index as the request named it */
  index: string;
  resolved: ResolvedIndex;
  generation: number;
  epoch: number;
  /** when a scheduled merchandising rule next starts or ends (Infinity: none) */
  until: number;
}

/**
 * A remembered request. A class, so that every entry has one shape: entries made by spreading the
 * ticket and the stamps took several, and reading their fields went through the slow lookups of
 * megamorphic code (a third of a front hit on a keystroke stream).
 */
class FrontEntry {
  readonly headerValues: string[];
  readonly key: KeyRecord;
  readonly tenant: TenantContext;
  readonly index: string;
  readonly resolved: ResolvedIndex;
  readonly generation: number;
  readonly epoch: number;
  readonly until: number;

  constructor(
    ticket: FrontTicket,
    stamps: FrontStamps,
    /** the response-cache entry answered from */
    readonly entry: CacheEntry,
  ) {
    this.headerValues = ticket.head.headerValues;
    this.key = ticket.key;
    this.tenant = ticket.tenant;
    this.index = stamps.index;
    this.resolved = stamps.resolved;
    this.generation = stamps.generation;
    this.epoch = stamps.epoch;
    this.until = stamps.until;
  }
}

/**
 * Requests remembered per cached answer (the same answer reached by other keys of the tenant, or
 * with the parameters in another order); more are answered by the ordinary path.
 */
const MAX_FRONTS_PER_ENTRY = 4;
/** Estimated bytes of a remembered request besides its key's characters (entry object, map slot, header list). */
const FRONT_ENTRY_BYTES = 200;

export class FrontCache {
  /**
   * by route (a search box may send the same query string to typeahead and autocomplete), API
   * key, then raw query string ('' for none): the key's hash is already kept in the string by
   * auth's lookup of it, where a joined string would be built and hashed at every request
   */
  private readonly byRequest = new Map<CompiledRoute, Map<string, Map<string, FrontEntry>>>();
  private cache: ResponseCache | null = null;

  private readonly hits: { inc(): void };
  private readonly misses: { inc(): void };

  /** Counts its answers as `suggest_cache_lookups_total{cache="search_front"}`, hits and misses. */
  constructor(
    private readonly auth: Auth,
    private readonly data: DataPlane,
    metrics: Metrics,
  ) {
    ({ hit: this.hits, miss: this.misses } = metrics.cacheLookupsOf('search_front'));
  }

  /** Serves from `cache` (once): its entries' departures take the requests remembered for them. */
  attach(cache: ResponseCache): void {
    this.cache = cache;
    cache.onLeave(
      (entry) => this.forget(entry),
      () => this.byRequest.clear(),
    );
  }

  /**
   * The answer to a request identical to a remembered one, counted as a cache hit, if nothing it
   * rests on changed; undefined otherwise.
   */
  answer(route: CompiledRoute, head: RequestHead, key: KeyRecord): string | undefined {
    const started = performance.now();
    const body = this.check(route, head, key);
    if (body === undefined) {
      this.misses.inc();
      return undefined;
    }
    this.hits.inc();
    return `{"took_ms":${Math.round((performance.now() - started) * 1000) / 1000},${body}`;
  }

  /** The cached body after `{"took_ms":...,` (counted as a hit of the cache), or undefined. */
  private check(route: CompiledRoute, head: RequestHead, key: KeyRecord): string | undefined {
    const cache = this.cache;
    const e = this.byRequest.get(route)?.get(head.apiKey)?.get(head.query ?? '');
    if (cache === null || e === undefined || e.key !== key || !sameValues(e.headerValues, head.headerValues)) return undefined;
    if (!cache.holds(e.entry) || !cache.enabled) return undefined;
    // the same key record and raw request name the same tenant id: its context must be the same
    if (this.auth.tenant(e.tenant.id) !== e.tenant) return undefined;
    // the records, not the resolution around them (remade every second from the same records)
    const resolved = this.data.resolveCached(e.resolved.tenant, e.index);
    if (resolved === undefined || resolved.index !== e.resolved.index || resolved.physical !== e.resolved.physical || this.data.placementEpoch !== e.epoch) return undefined;
    if (cache.generation(e.resolved.tenant, e.resolved.physical.physical_index_id) !== e.generation) return undefined;
    if (e.until !== Number.POSITIVE_INFINITY && Date.now() >= e.until) return undefined;
    cache.served(e.entry);
    return e.entry.body;
  }

  /** Remembers how to answer the request of `ticket` again from `entry` of the attached cache. */
  remember(ticket: FrontTicket, entry: CacheEntry, stamps: FrontStamps): void {
    const cache = this.cache;
    if (cache === null || !cache.holds(entry)) return;
    const { apiKey } = ticket.head;
    const query = ticket.head.query ?? '';
    const { route } = ticket;
    const fronts = entry.fronts ?? [];
    const known = fronts.some((f) => f.route === route && f.apiKey === apiKey && f.query === query);
    if (!known && fronts.length >= MAX_FRONTS_PER_ENTRY) return;
    let byKey = this.byRequest.get(route);
    if (byKey === undefined) this.byRequest.set(route, (byKey = new Map()));
    let byQuery = byKey.get(apiKey);
    if (byQuery === undefined) byKey.set(apiKey, (byQuery = new Map()));
    byQuery.set(query, new FrontEntry(ticket, stamps, entry));
    if (!known) {
      fronts.push({ route, apiKey, query });
      entry.fronts = fronts;
      cache.grow(entry, FRONT_ENTRY_BYTES + stringBytes(apiKey) + stringBytes(query));
    }
  }

  /** Forgets the requests remembered for `entry` (it left the cache). */
  private forget(entry: CacheEntry): void {
    if (entry.fronts === null) return;
    for (const { route, apiKey, query } of entry.fronts) {
      const byKey = this.byRequest.get(route);
      const byQuery = byKey?.get(apiKey);
      if (byKey === undefined || byQuery?.get(query)?.entry !== entry) continue;
      byQuery.delete(query);
      if (byQuery.size === 0) byKey.delete(apiKey);
    }
    entry.fronts = null;
  }
}

function sameValues(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
