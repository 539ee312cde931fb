// Answers typeahead and autocomplete: resolves the index, sends the query to every part of the
// physical index (scatter), merges the partial top-k lists by score (gather) and renders the
// response body fixed in ARCHITECTURE.md. Rendered bodies are cached per (tenant, physical index,
// placement epoch, request) while the shard directory's change feed is live (response-cache.ts):
// a write bumps the index's generation, so a cached body is never older than the last write.
// While the feed is not live (a cluster router whose stream to some shard node is down), the
// router does not cache and every request goes to the shards.
// A tenant in proxy mode is answered by its connected search API instead (search-proxy.ts), before
// any cache is looked at: its answers are never cached, so no hosted answer reaches it.
import { pack, unpack } from 'msgpackr';
import type { IndexRecord, PhysicalIndexRecord } from '../coordinator/coordinator.js';
import type { TenantId } from '../node/runtime/ids.js';
import type { Metrics } from '../node/runtime/metrics.js';
import type { ShardDirectory } from '../node/runtime/shard-api.js';
import type { FrontCache, FrontTicket } from './front-cache.js';
import { ResponseCache, sawEveryWrite, unseenDocuments, type CacheEntry } from './response-cache.js';
import type { PinnedSuggestion } from '../node/runtime/ranking-payload.js';
import type { DataPlane, ResolvedIndex } from './data-plane.js';
import { placePins, RankingConfig, rankingDebug, type PartRankingReport, type PlacedPin, type RankingSelection } from './ranking-config.js';
import { Reply } from './route.js';
import type { SearchApi, SearchProxy } from './search-proxy.js';

export type SearchKind = 'typeahead' | 'autocomplete';

export interface SearchParams {
  kind: SearchKind;
  tenant: TenantId;
  index: string;
  query: string;
  limit: number;
  mode?: string | undefined;
  filters?: unknown;
  debug?: boolean;
  profile?: boolean;
  bypassCache?: boolean;
  userId?: string | undefined;
  /** ANN library of the vector modes (the shard's default when absent) */
  vectorBackend?: string | undefined;
  /** run both vector libraries and report `debug.vector.benchmark` */
  benchmark?: boolean;
  /**
   * set for a tenant in proxy mode: its connected search API (null when the record has none),
   * which answers instead of the index; undefined for hosted search
   */
  proxy?: SearchApi | null | undefined;
}

interface Suggestion {
  id: string;
  score: number;
  [k: string]: unknown;
}

interface PartResult {
  normalized_query: string;
  corrected_query: string | null;
  mode?: string;
  suggestions: Suggestion[];
  pinned?: PinnedSuggestion<Suggestion>[];
  ranking?: PartRankingReport;
  debug?: { vector?: PartVectorDebug };
  /** documents written before the query that it did not see (a bulk load still being indexed) */
  indexing?: number;
  /** per-stage timings (profile=true) */
  profile?: PartProfile;
}

/** What a part reports of its own time with profile=true (shard/engine/stage-clock.ts EngineProfile). */
interface PartProfile {
  engine_ms: number;
  stages: Record<string, number>;
  thread?: string;
  queue_ms?: number;
  handoff_ms?: number;
  view_sent?: boolean;
  fresh_wait_ms?: number;
  load_wait_ms?: number;
}

interface BackendTiming {
  ms: number;
  method: string;
  graph_ready: boolean;
  recall_at_k: number;
}

/** What one part's vector retrieval did (shard/engine/types.ts VectorDebug). */
interface PartVectorDebug {
  backend: string;
  embedder: string;
  dimensions: number;
  method: string;
  graph: { ready: boolean; built: number; total: number };
  candidates: number;
  ms: number;
  benchmark?: { k: number; backends: Record<string, BackendTiming>; overlap_at_k: number; exact_ms: number };
}

export class SearchService {
  private readonly cache: ResponseCache;
  private readonly ranking = new RankingConfig();
  /** Answers computed from the index parts (not served from the response cache), by route: with suggestions, and without. */
  private readonly computed: Record<SearchKind, { some: number; empty: number }> = { typeahead: { some: 0, empty: 0 }, autocomplete: { some: 0, empty: 0 } };

  /**
   * `cacheBytes`: the bound of the response cache's estimated memory (0: nothing cached);
   * `front`: where answers served from the cache are remembered by the request as it arrived
   * (null: not at all)
   */
  constructor(
    private readonly data: DataPlane,
    shards: ShardDirectory,
    metrics: Metrics,
    cacheBytes: number,
    private readonly front: FrontCache | null = null,
    private readonly proxy: SearchProxy | null = null,
  ) {
    this.cache = new ResponseCache('search_response', shards, metrics, cacheBytes);
    front?.attach(this.cache);
    metrics.labelledCounter(
      'suggest_search_answers_total',
      'Typeahead and autocomplete answers computed from the index parts (answers served from the response cache are not counted), by route and result: "empty" held no suggestion, the zero-result rate of the queries the cache did not answer.',
      ['route', 'result'],
      () => Object.entries(this.computed).flatMap(([route, n]) => [[{ route, result: 'suggestions' }, n.some] as const, [{ route, result: 'empty' }, n.empty] as const]),
    );
  }

  /**
   * The hot path, inside the HTTP callback: the rendered 200 body when the index resolution is
   * cached and the answer is either in the response cache or computed synchronously by
   * in-process engines that are loaded; a promise of it when an in-process engine answers later
   * (on a query thread, or once it has loaded), whose failure the server renders like any
   * handler's. Undefined sends the request to `search` (which also turns every failure into its
   * error response); nothing here has a side effect but caching.
   */
  searchSync(p: SearchParams, ticket: FrontTicket | null = null): string | Promise<string> | undefined {
    if (p.proxy !== undefined) return this.forward(p);
    const started = performance.now();
    if (p.debug || p.profile || p.benchmark) return undefined;
    const resolved = this.data.resolveCached(p.tenant, p.index);
    if (resolved === undefined) return undefined;
    const physical = resolved.physical;
    const ranking = this.ranking.select(resolved.index, p.kind, p.query);
    const behavior = behaviorOf(resolved.index);
    const keyed = this.cacheKeyOf(p, physical, ranking, behavior);
    if (keyed !== null) {
      const hit = this.cache.lookup(keyed.key);
      if (hit !== undefined) {
        if (ticket !== null) this.rememberFront(ticket, p, resolved, hit, keyed);
        return `{"took_ms":${round(performance.now() - started)},${hit.body}`;
      }
    }
    const routes = this.data.partRoutes(p.tenant, physical);
    const payload = payloadOf(p, ranking, behavior, routes.length);
    const parts: (PartResult | Promise<unknown>)[] = [];
    let pending = false;
    for (const r of routes) {
      const api = this.data.client(r.node);
      if (api.queryValue === undefined) return undefined;
      const result = api.queryValue({ ref: r.ref, kind: p.kind, payload });
      pending ||= result instanceof Promise;
      parts.push(result as PartResult | Promise<unknown>);
    }
    if (keyed !== null) this.cache.missed();
    const finish = (done: PartResult[]): string => {
      const rest = this.render(p, done, ranking, null);
      // keyed by the generation the query started under: a write meanwhile makes it unreachable
      if (keyed !== null && sawEveryWrite(done)) {
        const entry = this.cache.set(keyed.key, rest);
        if (entry !== null && ticket !== null) this.rememberFront(ticket, p, resolved, entry, keyed);
      }
      return `{"took_ms":${round(performance.now() - started)},${rest}`;
    };
    // a part answered on a query thread, or an engine still loading: the answer is awaited here,
    // not asked for again by the pipeline
    return pending ? Promise.all(parts).then((done) => finish(done as PartResult[])) : finish(parts as PartResult[]);
  }

  async search(p: SearchParams): Promise<Reply> {
    if (p.proxy !== undefined) return Reply.text(await this.forward(p), 'application/json');
    const started = performance.now();
    const resolved = this.data.resolveCached(p.tenant, p.index) ?? (await this.data.resolve(p.tenant, p.index));
    const physical = resolved.physical;
    const ranking = this.ranking.select(resolved.index, p.kind, p.query);
    const behavior = behaviorOf(resolved.index);
    const cacheKey = this.cacheKeyOf(p, physical, ranking, behavior)?.key ?? null;
    if (cacheKey !== null) {
      const hit = this.cache.get(cacheKey);
      if (hit !== undefined) return Reply.text(`{"took_ms":${round(performance.now() - started)},${hit}`, 'application/json');
      this.cache.missed();
    }
    const resolvedAt = performance.now();
    const partTimes: ({ part: number; node: string; ms: number } & Partial<PartProfile>)[] = [];
    const value = payloadOf(p, ranking, behavior, physical.parts);
    let packed: Buffer | null = null;
    let packedDeferring: Buffer | null = null;
    const parts = await this.data.queryAllParts(p.tenant, physical, async (api, ref, node, turn) => {
      const t0 = performance.now();
      let result: PartResult;
      // A follower in its turn whose engine of the part is still loading (after a start, or a
      // copy made before the engine was) declines at once, and the primary answers: the query
      // neither waits for the load nor gets an answer from no documents.
      const deferring = turn === 'follower';
      if (api.queryValue !== undefined) {
        // in-process: values, no msgpack round trip
        const r = api.queryValue({ ref, kind: p.kind, payload: deferring ? { ...value, defer_loading: true } : value });
        result = (r instanceof Promise ? await r : r) as PartResult;
      } else {
        const payload = deferring ? (packedDeferring ??= pack({ ...value, defer_loading: true })) : (packed ??= pack(value));
        const r = await api.query({ ref, kind: p.kind, payload });
        result = unpack(r.result) as PartResult;
      }
      // the part's own breakdown (where it ran, queueing, engine stages) follows the round trip
      partTimes.push({ part: ref.part, node, ms: round(performance.now() - t0), ...(p.profile && result.profile !== undefined ? result.profile : {}) });
      return result;
    });
    const gathered = performance.now();
    const placed: PlacedPin[] = [];
    let debug: ((merged: number) => unknown) | null = null;
    if (p.debug || p.profile || p.benchmark) {
      debug = () => {
        const done = performance.now();
        const vector = mergeVectorDebug(parts);
        return {
          physical_index_id: physical.physical_index_id,
          parts: physical.parts,
          cache: cacheKey !== null ? 'miss' : 'bypassed',
          ...(vector ? { vector } : {}),
          ranking: rankingDebug(ranking, parts, placed),
          ...(p.profile
            ? {
                profile: {
                  resolve_ms: round(resolvedAt - started),
                  scatter_gather_ms: round(gathered - resolvedAt),
                  merge_ms: round(done - gathered),
                  parts: partTimes.sort((a, b) => a.part - b.part),
                  total_ms: round(done - started),
                },
              }
            : {}),
        };
      };
    }
    const rest = this.render(p, parts, ranking, debug, placed);
    if (cacheKey !== null && sawEveryWrite(parts)) this.cache.set(cacheKey, rest);
    return Reply.text(`{"took_ms":${round(performance.now() - started)},${rest}`, 'application/json');
  }

  /** A proxy-mode answer: never looked up in nor written to the response cache or its front. */
  private async forward(p: SearchParams): Promise<string> {
    const started = performance.now();
    if (this.proxy === null) throw new Error('search proxy is not wired');
    const rest = await this.proxy.forward(p.proxy ?? null, { kind: p.kind, query: p.query, limit: p.limit, index: p.index });
    return `{"took_ms":${round(performance.now() - started)},${rest}`;
  }

  /** Remembers, by the request as it arrived, how to serve `entry` again (front-cache.ts). */
  private rememberFront(ticket: FrontTicket, p: SearchParams, resolved: ResolvedIndex, entry: CacheEntry, keyed: CacheKey): void {
    this.front?.remember(ticket, entry, { index: p.index, resolved, generation: keyed.gen, epoch: keyed.epoch, until: this.ranking.stableUntil(resolved.index) });
  }

  /**
   * The response-cache key with the generation and placement epoch it was built with (what the
   * cache's front checks later), or null when this request may not use the cache.
   */
  private cacheKeyOf(p: SearchParams, physical: PhysicalIndexRecord, ranking: RankingSelection, behavior: Record<string, unknown> | undefined): CacheKey | null {
    if (!this.cache.enabled || p.bypassCache || p.debug || p.profile || p.benchmark) return null;
    const gen = this.cache.generation(p.tenant, physical.physical_index_id);
    const epoch = this.data.placementEpoch;
    // user_id and the schema's events settings change behaviour ranking; events themselves bump `gen`
    const key = `${p.kind}\0${p.tenant}\0${physical.physical_index_id}\0${gen}\0${epoch}\0${p.limit}\0${p.mode ?? ''}\0${p.vectorBackend ?? ''}\0${p.filters === undefined ? '' : JSON.stringify(p.filters)}\0${p.userId ?? ''}\0${behavior === undefined ? '' : JSON.stringify(behavior)}\0${p.index}\0${ranking.cacheKey}\0${p.query}`;
    return { key, gen, epoch };
  }

  /**
   * The response body after its leading `{"took_ms":...,` (parts merged, pins placed, rendered
   * once). `debug` builds the debug object after the merge (null: none).
   */
  private render(p: SearchParams, parts: PartResult[], ranking: RankingSelection, debug: ((merged: number) => unknown) | null, placed: PlacedPin[] = []): string {
    const pinned = parts.flatMap((part) => part.pinned ?? []);
    const merged = pinned.length > 0 ? placePins(merge(parts, p.limit + pinned.length, p.kind), pinned, ranking, p.limit, placed) : merge(parts, p.limit, p.kind);
    const counted = this.computed[p.kind];
    if (merged.length === 0) counted.empty++;
    else counted.some++;
    const first = parts[0];
    const corrected = pickCorrection(parts);
    // documents written before the query that it did not see (a bulk load being indexed)
    const indexing = unseenDocuments(parts);
    const body = {
      query: corrected ?? p.query,
      original_query: p.query,
      normalized_query: first?.normalized_query ?? p.query,
      corrected_query: corrected,
      mode: p.kind === 'typeahead' ? 'typeahead' : (first?.mode ?? p.mode ?? 'fts_only'),
      ...(p.kind === 'autocomplete' && p.mode ? { requested_mode: p.mode } : {}),
      index: p.index,
      suggestions: merged,
      ...(indexing > 0 ? { documents_indexing: indexing } : {}),
      debug: debug === null ? null : debug(merged.length),
    };
    return JSON.stringify(body).slice(1);
  }

  /** Forget cached answers of one physical index (used when it is dropped or swapped). */
  invalidate(tenant: TenantId, physical: PhysicalIndexRecord): void {
    this.cache.invalidate(tenant, physical.physical_index_id);
  }
}

interface CacheKey {
  key: string;
  gen: number;
  epoch: number;
}

/** The index schema's `events` settings: they travel with the query (the shard has no schema). */
const behaviorOf = (index: IndexRecord) => index.schema?.events as Record<string, unknown> | undefined;

/** The query as the shards take it (msgpack-encoded over gRPC, as is in process). */
const payloadOf = (p: SearchParams, ranking: RankingSelection, behavior: Record<string, unknown> | undefined, parts: number) => ({
  query: p.query,
  limit: p.limit,
  // Typeahead's phrase scores add up over parts (see `merge`), so with several parts each is asked
  // for half as many phrases again as the answer shows (`spare`; its product fallback still fills
  // only up to `limit`): a phrase just outside one part's first `limit` would otherwise be summed
  // over the other parts only (at half its support and less in the lower half of answers, measured
  // on Best Buy in 3 parts). Half: as many again cost `bypass_cache` typeahead through the local
  // cluster about 9 % of its throughput against 5 %, for two phrases of 45 summed closer
  // (BENCHMARKS.md, "Typeahead over an index in parts").
  ...(p.kind === 'typeahead' && parts > 1 ? { spare: Math.ceil(p.limit / 2) } : {}),
  ...(p.mode ? { mode: p.mode } : {}),
  ...(p.filters !== undefined ? { filters: p.filters } : {}),
  ...(p.userId !== undefined ? { user_id: p.userId } : {}),
  ...(behavior !== undefined ? { behavior } : {}),
  ...(ranking.payload ? { ranking: ranking.payload } : {}),
  ...(p.debug ? { debug: true } : {}),
  ...(p.vectorBackend ? { vector_backend: p.vectorBackend } : {}),
  ...(p.benchmark ? { benchmark: true } : {}),
  ...(p.profile ? { profile: true } : {}),
});

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/**
 * Top-k over the parts' partial lists. A document lives in one part: the same document id from
 * several parts keeps its best score. Typeahead's phrase suggestions (ids `q:...`: queries,
 * brands, categories, attributes) are mined in every part from that part's documents, and their
 * scores are sums of support (shard/engine/typeahead.ts): the parts' scores add up to what one
 * part holding every document gives, so a brand spread over three parts is not ranked as a third
 * of itself against products, each of which is whole in its part.
 */
function merge(parts: PartResult[], limit: number, kind: SearchKind): Suggestion[] {
  if (parts.length === 1) return parts[0]!.suggestions.slice(0, limit);
  const best = new Map<string, Suggestion>();
  for (const part of parts) {
    for (const s of part.suggestions) {
      const seen = best.get(s.id);
      if (seen === undefined) best.set(s.id, s);
      else if (kind === 'typeahead' && s.id.startsWith('q:')) best.set(s.id, { ...seen, score: round4(seen.score + s.score) });
      else if (s.score > seen.score) best.set(s.id, s);
    }
  }
  return [...best.values()].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, limit);
}

/** Scores as the engine rounds them (4 decimals), so that sums carry no float noise. */
const round4 = (x: number) => Math.round(x * 1e4) / 1e4;

/**
 * One `debug.vector` for the whole index: a single part's as it is; several parts' summed
 * (graph sizes, candidates), the slowest part's times (parts run in parallel), mean recall and
 * overlap, and each part's own report under `parts`.
 */
function mergeVectorDebug(parts: PartResult[]): Record<string, unknown> | null {
  const reports = parts.map((p) => p.debug?.vector).filter((v): v is PartVectorDebug => v !== undefined);
  const first = reports[0];
  if (first === undefined) return null;
  if (reports.length === 1) return { ...first };
  const methods = new Set(reports.map((r) => r.method).filter((m) => m !== 'none'));
  const method = methods.size === 0 ? 'none' : methods.size === 1 ? [...methods][0] : 'mixed';
  const merged: Record<string, unknown> = {
    backend: first.backend,
    embedder: first.embedder,
    dimensions: first.dimensions,
    method,
    graph: {
      ready: reports.every((r) => r.graph.ready),
      built: reports.reduce((a, r) => a + r.graph.built, 0),
      total: reports.reduce((a, r) => a + r.graph.total, 0),
    },
    candidates: reports.reduce((a, r) => a + r.candidates, 0),
    ms: Math.max(...reports.map((r) => r.ms)),
  };
  const benches = reports.map((r) => r.benchmark).filter((b) => b !== undefined);
  const b0 = benches[0];
  if (b0 !== undefined) {
    const mean = (xs: number[]) => round(xs.reduce((a, x) => a + x, 0) / Math.max(1, xs.length));
    const backends: Record<string, BackendTiming> = {};
    for (const name of Object.keys(b0.backends)) {
      const ts = benches.map((b) => b.backends[name]).filter((t): t is BackendTiming => t !== undefined);
      const ms = new Set(ts.map((t) => t.method));
      backends[name] = {
        ms: Math.max(...ts.map((t) => t.ms)),
        method: ms.size === 1 ? [...ms][0]! : 'mixed',
        graph_ready: ts.every((t) => t.graph_ready),
        recall_at_k: mean(ts.map((t) => t.recall_at_k)),
      };
    }
    merged.benchmark = { k: b0.k, backends, overlap_at_k: mean(benches.map((b) => b.overlap_at_k)), exact_ms: Math.max(...benches.map((b) => b.exact_ms)) };
  }
  merged.parts = reports;
  return merged;
}

/** The correction most parts agree on (parts see different slices of the vocabulary). */
function pickCorrection(parts: PartResult[]): string | null {
  if (parts.length === 1) return parts[0]!.corrected_query;
  const votes = new Map<string, number>();
  for (const p of parts) if (p.corrected_query) votes.set(p.corrected_query, (votes.get(p.corrected_query) ?? 0) + 1);
  let best: string | null = null;
  let n = 0;
  for (const [q, c] of votes) if (c > n) [best, n] = [q, c];
  return best;
}
