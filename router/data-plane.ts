// The router's view of where data lives: the placement table (watched from the coordinator),
// logical index -> physical index aliases (watched), and the calls that reach the primary of the
// partition holding one part of one physical index. A call refused with `wrong_owner` (the
// placement moved under us, or the new owner has not seen the new table yet) is retried with
// backoff after re-reading placement, for up to WRONG_OWNER_BUDGET_MS; an `unavailable` node is
// retried only once placement names another node for the part (a follower was promoted);
// otherwise it surfaces as 503.
import type { Coordinator, IndexRecord, MemberRecord, MetaEvent, PhysicalIndexRecord, PlacementTable, Unsubscribe } from '../coordinator/coordinator.js';
import { pack, unpack } from 'msgpackr';
import type * as pb from '../proto/gen/shard.js';
import { decodeDocument, encodeDocument, type SuggestDocument } from '../node/runtime/document.js';
import { SuggestError, fail } from '../node/runtime/errors.js';
import { partOf, partitionOf } from '../node/runtime/hash.js';
import { IndexId, PhysicalIndexId, type NodeId, type TenantId } from '../node/runtime/ids.js';
import type { Logger } from '../node/runtime/log.js';
import type { ShardApi, ShardDirectory, UnloadState, WarmRequest, WarmState } from '../node/runtime/shard-api.js';
import { Gauge } from 'prom-client';
import { metrics } from '../node/runtime/metrics.js';
import { KeyedQueue } from './keyed-queue.js';
import { TtlCache } from './ttl-cache.js';

/** An index as a request addresses it: its logical record and the physical index to act on. */
export interface ResolvedIndex {
  tenant: TenantId;
  index: IndexRecord;
  physical: PhysicalIndexRecord;
  /** the request named the physical index id instead of the logical one */
  viaPhysical: boolean;
}

export interface PartStats {
  part: number;
  partition: number;
  node: string;
  document_count: number;
  stored_bytes: number;
  engine: Buffer;
}

export interface Readiness {
  ready: boolean;
  reason: string | null;
  epoch: number | null;
  partitions: number | null;
  /** partitions whose primary is not live while a follower serves their reads */
  writesWaiting: number;
}

/** One part's destination under one placement epoch. */
export interface PartRoute {
  node: NodeId;
  ref: pb.IndexRef;
}

const POSITIVE_TTL_MS = 60_000;
/** How long a memoized resolution is trusted without looking at the caches it came from. */
const RESOLVED_TTL_MS = 1_000;
const NEGATIVE_TTL_MS = 2_000;
const MAX_ENTRIES = 200_000;

const key = (tenant: string, id: string) => `${tenant}\0${id}`;

/** How long a call keeps retrying `wrong_owner` (a move's ownership switch takes milliseconds; a shard's watch may lag a little). */
export const WRONG_OWNER_BUDGET_MS = 5_000;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Data planes of this process (tests run several routers in one), read by the placement gauges. */
const planes = new Set<DataPlane>();

/** Placement series on the process registry, registered once: what an SRE watches while the cluster grows. */
function registerPlacementGauges(): void {
  const registry = metrics.registry;
  if (registry.getSingleMetric('suggest_placement_epoch')) return;
  const latest = () => [...planes].map((d) => d.currentPlacement).reduce<PlacementTable | undefined>((a, t) => (t && (!a || t.epoch > a.epoch) ? t : a), undefined);
  metrics.sampled('gauge', [
    ['suggest_placement_epoch', 'Epoch of the placement table this router routes with.', () => latest()?.epoch ?? 0],
    ['suggest_placement_moves_in_progress', 'Partition moves (copy, catch-up, ownership switch) in the placement table.', () => latest()?.moves?.length ?? 0],
  ]);
  new Gauge({
    name: 'suggest_router_shard_retries',
    help: 'Shard calls this router retried since start, by reason (wrong_owner: placement moved; unavailable: a follower was promoted).',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      let wrongOwner = 0;
      let unavailable = 0;
      for (const d of planes) {
        wrongOwner += d.retries.wrongOwner;
        unavailable += d.retries.unavailable;
      }
      this.set({ reason: 'wrong_owner' }, wrongOwner);
      this.set({ reason: 'unavailable' }, unavailable);
    },
  });
  new Gauge({
    name: 'suggest_router_part_queries',
    help: 'Part reads (searches, predictions, document reads) this router sent since start, by the replica that answered (primary, follower), follower queries it gave to the primary after a follower failed them (follower_fallback), and queries a follower answered after the primary failed them (follower_for_primary).',
    labelNames: ['replica'],
    registers: [registry],
    collect() {
      const sum = { primary: 0, follower: 0, follower_fallback: 0, follower_for_primary: 0 };
      for (const d of planes) for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += d.partQueries[k];
      for (const [replica, n] of Object.entries(sum)) this.set({ replica }, n);
    },
  });
}

/**
 * Which replica a part read went to: the primary, a follower in its turn (which may decline, for
 * the primary to answer: see SearchService's `defer_loading`), or a follower standing in for a
 * primary that failed (the last resort: it must answer).
 */
export type ReadTurn = 'primary' | 'follower' | 'stand-in';

export class DataPlane {
  private placement: PlacementTable | undefined;
  private liveShards = new Set<string>();
  private placementRefresh: Promise<void> | null = null;
  private readonly indexes = new TtlCache<string, IndexRecord | null>(MAX_ENTRIES, POSITIVE_TTL_MS);
  // Physical index records change once (marked `deleting`) before they go; the watch reports both.
  private readonly physicals = new TtlCache<string, PhysicalIndexRecord | null>(MAX_ENTRIES, POSITIVE_TTL_MS);
  private physicalGeneration = 0;
  private readonly writes = new KeyedQueue();
  private readonly unsubscribers: Unsubscribe[] = [];
  private generation = 0;
  /**
   * Resolutions and part routes of the hot path, memoized: a search costs one Map lookup instead
   * of two cache lookups, an object and a hash per part. Any index, physical-index or placement
   * change bumps `memoEpoch`, which voids every memo at once.
   */
  private readonly resolved = new Map<string, { value: ResolvedIndex; epoch: number; expires: number }>();
  private readonly routes = new Map<string, { value: PartRoute[]; epoch: number }>();
  private memoEpoch = 0;

  /** each partition's next query turn among its live replicas (one counter per partition, so that the parts of one query do not always fall on the same replicas) */
  private readTurns = new Uint32Array(0);

  /**
   * `replicaReads`: part queries (searches, predictions) go to the live replicas of their
   * partition in turn, followers included, instead of always to the primary (default true; see
   * queryAllParts).
   */
  constructor(
    private readonly coordinator: Coordinator,
    private readonly shards: ShardDirectory,
    private readonly log: Logger,
    private readonly opts: { replicaReads?: boolean } = {},
  ) {}

  async start(): Promise<void> {
    registerPlacementGauges();
    planes.add(this);
    this.unsubscribers.push(await this.coordinator.watchPlacement((t) => this.onPlacement(t)));
    this.unsubscribers.push(await this.coordinator.watchMembers((m) => this.onMembers(m)));
    const [table, members] = await Promise.all([this.coordinator.getPlacement(), this.coordinator.listMembers()]);
    if (table) this.onPlacement(table);
    this.onMembers(members);
  }

  stop(): void {
    planes.delete(this);
    for (const u of this.unsubscribers.splice(0)) u();
  }

  onMetaEvent(e: MetaEvent): void {
    if (e.type === 'physical') {
      const k = key(e.tenant_id, e.physical_index_id);
      // A mark is never lifted: an older event arriving after this router's own mark must not
      // make the index writable again while its parts are being dropped.
      if (e.record && e.record.status !== 'deleting' && this.physicals.get(k)?.value?.status === 'deleting') return;
      this.physicalGeneration++;
      this.memoEpoch++;
      this.physicals.set(k, e.record, e.record ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
      return;
    }
    if (e.type !== 'index') return;
    this.generation++;
    this.memoEpoch++;
    this.indexes.set(key(e.tenant_id, e.index_id), e.record, e.record ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
  }

  onPlacement(t: PlacementTable): void {
    if (this.placement && t.epoch < this.placement.epoch) return;
    this.placement = t;
    this.memoEpoch++;
  }

  private onMembers(members: MemberRecord[]): void {
    this.liveShards = new Set(members.filter((m) => m.roles.includes('shard')).map((m) => m.node_id));
  }

  /**
   * Ready when placement is known and every partition can answer reads: its primary is a live
   * shard node, or, with reads over replicas, some replica is. Partitions whose primary is not
   * live are counted in `writesWaiting` (their writes wait for the failover): taking the router
   * out of its load balancer for them would stop the reads it can still serve.
   */
  readiness(): Readiness {
    const t = this.placement;
    if (!t) return { ready: false, reason: 'placement is not known yet', epoch: null, partitions: null, writesWaiting: 0 };
    let writesWaiting = 0;
    for (let p = 0; p < t.partitions; p++) {
      const replicas = t.nodes[p] ?? [];
      const primary = replicas[0];
      if (primary === undefined) return { ready: false, reason: `partition ${p} has no primary`, epoch: t.epoch, partitions: t.partitions, writesWaiting };
      if (this.liveShards.has(primary)) continue;
      const readable = this.opts.replicaReads !== false && replicas.some((n) => this.liveShards.has(n));
      if (!readable) return { ready: false, reason: `the primary of partition ${p} (${primary}) is not live${replicas.length > 1 ? ', nor any of its followers' : ''}`, epoch: t.epoch, partitions: t.partitions, writesWaiting };
      writesWaiting++;
    }
    return { ready: true, reason: null, epoch: t.epoch, partitions: t.partitions, writesWaiting };
  }

  // ------------------------------------------------------------------ index resolution

  /** The index named `id` (logical id, or a physical id); 404 `index_not_found` otherwise. */
  async resolve(tenant: TenantId, id: string): Promise<ResolvedIndex> {
    const memo = this.resolveCached(tenant, id);
    if (memo !== undefined) return memo;
    const logical = await this.index(tenant, id);
    if (logical) {
      const physical = await this.physical(tenant, logical.physical_index_id);
      if (!physical) fail('unavailable', { reason: `The metadata of physical index '${logical.physical_index_id}' is missing` });
      return { tenant, index: logical, physical, viaPhysical: false };
    }
    const physical = await this.physical(tenant, id);
    if (physical) {
      // A physical index belongs to a live logical index, or to nothing.
      const owner = await this.index(tenant, physical.index_id);
      if (owner) return { tenant, index: owner, physical, viaPhysical: true };
    }
    return fail('index_not_found', { index: id, tenant });
  }

  /**
   * The resolution of a logical index id when everything it needs is cached, synchronously;
   * undefined otherwise (and for physical ids and unknown indexes: `resolve` answers those).
   */
  resolveCached(tenant: TenantId, id: string, now = Date.now()): ResolvedIndex | undefined {
    const k = key(tenant, id);
    const memo = this.resolved.get(k);
    if (memo !== undefined && memo.epoch === this.memoEpoch && memo.expires > now) return memo.value;
    const logical = this.indexes.get(k, now)?.value;
    if (!logical) return undefined;
    const physical = this.physicals.get(key(tenant, logical.physical_index_id), now)?.value;
    if (!physical) return undefined;
    const value: ResolvedIndex = { tenant, index: logical, physical, viaPhysical: false };
    if (this.resolved.size >= MAX_ENTRIES) this.resolved.clear();
    this.resolved.set(k, { value, epoch: this.memoEpoch, expires: now + RESOLVED_TTL_MS });
    return value;
  }

  /** The logical index record, cached. */
  async index(tenant: TenantId, id: string): Promise<IndexRecord | null> {
    const k = key(tenant, id);
    const hit = this.indexes.get(k);
    if (hit !== undefined) return hit.value;
    const gen = this.generation;
    const rec = (await this.coordinator.getIndex(tenant, IndexId(id))) ?? null;
    if (gen === this.generation) this.indexes.set(k, rec, rec ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
    return rec;
  }

  /** The physical index record, cached. */
  async physical(tenant: TenantId, id: string): Promise<PhysicalIndexRecord | null> {
    const k = key(tenant, id);
    const hit = this.physicals.get(k);
    if (hit !== undefined) return hit.value;
    const gen = this.physicalGeneration;
    const rec = (await this.coordinator.getPhysicalIndex(tenant, PhysicalIndexId(id))) ?? null;
    // a read that started before a watch event may carry the record as it was before it
    if (gen === this.physicalGeneration) this.physicals.set(k, rec, rec ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
    return rec;
  }

  /** Records what this router just wrote, without waiting for the watch to echo it. */
  remember(rec: IndexRecord | null, tenant: TenantId, id: string): void {
    this.generation++;
    this.memoEpoch++;
    this.indexes.set(key(tenant, id), rec, rec ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
  }

  rememberPhysical(rec: PhysicalIndexRecord): void {
    this.physicalGeneration++;
    this.physicals.set(key(rec.tenant_id, rec.physical_index_id), rec);
    this.memoEpoch++;
  }

  forgetPhysical(tenant: TenantId, id: string): void {
    this.physicalGeneration++;
    this.physicals.delete(key(tenant, id));
    this.memoEpoch++;
  }

  /** Runs `task` after every earlier write this router forwarded for the same physical index. */
  serialize<T>(tenant: TenantId, physical: string, task: () => Promise<T>): Promise<T> {
    return this.writes.run(key(tenant, physical), task);
  }

  // ------------------------------------------------------------------ routing

  /**
   * Where every part of a physical index goes under the current placement, memoized per epoch.
   * The refs are shared: callers must not change them.
   */
  partRoutes(tenant: TenantId, physical: PhysicalIndexRecord): PartRoute[] {
    const k = key(tenant, physical.physical_index_id);
    const memo = this.routes.get(k);
    if (memo !== undefined && memo.epoch === this.memoEpoch && memo.value.length === physical.parts) return memo.value;
    const value: PartRoute[] = [];
    for (let part = 0; part < physical.parts; part++) value.push(this.route(tenant, physical, part));
    if (this.routes.size >= MAX_ENTRIES) this.routes.clear();
    this.routes.set(k, { value, epoch: this.memoEpoch });
    return value;
  }

  /** The shard client of a node (for the synchronous in-process path). */
  client(node: NodeId): ShardApi {
    return this.shards.client(node);
  }

  private route(tenant: TenantId, physical: PhysicalIndexRecord, part: number): PartRoute {
    const t = this.placement;
    if (!t) return fail('unavailable', { reason: 'Placement is not known yet' });
    const { partition, replicas } = replicasOf(t, tenant, physical, part);
    const node = replicas[0];
    if (node === undefined) return fail('unavailable', { reason: `Partition ${partition} has no primary` });
    return { node, ref: refOf(t, tenant, physical, part, partition) };
  }

  /**
   * Calls the primary of one part. On `wrong_owner` re-reads placement and retries with backoff
   * (25 ms doubling, capped at 400 ms) within WRONG_OWNER_BUDGET_MS; on `unavailable` retries
   * only when placement now names another node for the part.
   */
  async onPart<T>(tenant: TenantId, physical: PhysicalIndexRecord, part: number, call: (api: ShardApi, ref: pb.IndexRef, node: NodeId) => Promise<T>): Promise<T> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const { node, ref } = this.route(tenant, physical, part);
      try {
        return await call(this.shards.client(node), ref, node);
      } catch (err) {
        if (!(err instanceof SuggestError)) throw err;
        if (err.code === 'wrong_owner' && Date.now() - started < WRONG_OWNER_BUDGET_MS) {
          this.retries.wrongOwner++;
          this.log.debug('placement moved; retrying', { tenant, physical: physical.physical_index_id, part, node, attempt });
          if (attempt > 0) await sleep(Math.min(400, 25 << Math.min(attempt - 1, 4)));
          await this.refreshPlacement();
          continue;
        }
        if (err.code === 'unavailable' && attempt < 3) {
          await this.refreshPlacement();
          if (this.route(tenant, physical, part).node !== node) {
            this.retries.unavailable++;
            continue;
          }
        }
        throw err;
      }
    }
  }

  /** Calls retried by onPart since start (for /metrics and the admin view). */
  readonly retries = { wrongOwner: 0, unavailable: 0 };

  /**
   * The epoch of the placement this router routes with (0 before it is known). Response-cache
   * keys carry it: once a part is served by another node, no answer of the old owner is reused.
   */
  get placementEpoch(): number {
    return this.placement?.epoch ?? 0;
  }

  /** The placement table this router routes with. */
  get currentPlacement(): PlacementTable | undefined {
    return this.placement;
  }

  /** Part reads (queries and document reads) sent since start, by the replica that answered (for /metrics). */
  readonly partQueries = { primary: 0, follower: 0, follower_fallback: 0, follower_for_primary: 0 };

  /**
   * Runs a query on every part concurrently, each on one live replica of its partition, taken in
   * turn (document reads take the same path one part at a time), so that a partition's replicas
   * share its reads (with replication factor 2, each answers
   * half). A follower holds every write acknowledged before the query (the primary acknowledges a
   * write once every replica in the table applied it, engines included), refuses a query whose
   * placement is newer than its own (it may have been dropped from the table for missing a write),
   * and a query it fails goes to the primary as `onPart` sends it. A primary that cannot be
   * reached (crashed, its lease not lapsed yet, or not live at all) leaves its queries to a live
   * follower: reads go on through the failover. A follower dropped from the table still answers
   * until this router sees the new table (its watch: milliseconds), without the writes
   * acknowledged since. Without `replicaReads`, or with one replica, the primary.
   */
  queryAllParts<T>(tenant: TenantId, physical: PhysicalIndexRecord, call: (api: ShardApi, ref: pb.IndexRef, node: NodeId, turn: ReadTurn) => Promise<T>): Promise<T[]> {
    const calls: Promise<T>[] = [];
    for (let part = 0; part < physical.parts; part++) calls.push(this.queryPart(tenant, physical, part, call));
    return Promise.all(calls);
  }

  private async queryPart<T>(tenant: TenantId, physical: PhysicalIndexRecord, part: number, call: (api: ShardApi, ref: pb.IndexRef, node: NodeId, turn: ReadTurn) => Promise<T>): Promise<T> {
    const follower = this.followerTurn(tenant, physical, part);
    if (follower !== undefined) {
      try {
        const answer = await call(this.shards.client(follower.node), follower.ref, follower.node, 'follower');
        this.partQueries.follower++;
        return answer;
      } catch (err) {
        // a refusal of the query itself (its payload) is the same on every replica
        if (err instanceof SuggestError && (err.status === 422 || err.status === 400)) throw err;
        this.partQueries.follower_fallback++;
        this.log.debug('a follower failed a query; asking the primary', { tenant, physical: physical.physical_index_id, part, node: follower.node, err: err instanceof Error ? err.message : String(err) });
      }
    }
    let answer: T;
    try {
      answer = await this.onPart(tenant, physical, part, (api, ref, node) => call(api, ref, node, 'primary'));
    } catch (err) {
      const standIn = err instanceof SuggestError && err.code === 'unavailable' ? this.followerTurn(tenant, physical, part, true) : undefined;
      if (standIn === undefined) throw err;
      this.log.debug('the primary failed a query; asking a follower', { tenant, physical: physical.physical_index_id, part, node: standIn.node });
      let fromFollower: T;
      try {
        fromFollower = await call(this.shards.client(standIn.node), standIn.ref, standIn.node, 'stand-in');
      } catch {
        // the primary's failure is the one to report
        throw err;
      }
      this.partQueries.follower_for_primary++;
      return fromFollower;
    }
    this.partQueries.primary++;
    return answer;
  }

  /**
   * The route of a part's query when its turn falls on a live follower; undefined for the
   * primary, and always without `replicaReads`. The turn goes round the live replicas, or only the
   * live followers when the primary is not live or `skipPrimary` (it failed the query: a stand-in
   * is picked without taking a turn, so the next query still starts where the rotation stands).
   */
  private followerTurn(tenant: TenantId, physical: PhysicalIndexRecord, part: number, skipPrimary = false): PartRoute | undefined {
    const t = this.placement;
    if (!t || this.opts.replicaReads === false) return undefined;
    const { partition, replicas } = replicasOf(t, tenant, physical, part);
    if (replicas.length < 2) return undefined;
    const first = skipPrimary || !this.liveShards.has(replicas[0]!) ? 1 : 0;
    let live = 0;
    for (let i = first; i < replicas.length; i++) if (this.liveShards.has(replicas[i]!)) live++;
    if (live === 0 || (first === 0 && live === 1)) return undefined;
    if (this.readTurns.length !== t.partitions) this.readTurns = new Uint32Array(t.partitions);
    let turn = (skipPrimary ? this.readTurns[partition]! : this.readTurns[partition]!++) % live;
    for (let i = first; i < replicas.length; i++) {
      const n = replicas[i]!;
      if (!this.liveShards.has(n)) continue;
      if (turn-- === 0) {
        if (i === 0) return undefined;
        return { node: n, ref: refOf(t, tenant, physical, part, partition) };
      }
    }
    return undefined;
  }

  /** The live followers of a part's partition under the current placement (its replicas but the primary). */
  followers(tenant: TenantId, physical: PhysicalIndexRecord, part: number): NodeId[] {
    const t = this.placement;
    if (!t) return [];
    return replicasOf(t, tenant, physical, part).replicas.slice(1).filter((n) => this.liveShards.has(n));
  }

  /**
   * Asks every part's primary, and its live followers when reads go to them, to bring the part's
   * engine into memory (QueryKind `warm`, SearchHost.warm): one state per replica asked, a
   * replica that could not be asked as `unavailable` with the reason.
   */
  warm(tenant: TenantId, physical: PhysicalIndexRecord): Promise<ReplicaWarmState[]> {
    const payload = pack({} satisfies WarmRequest);
    return this.onEveryReplica<ReplicaWarmState>(
      tenant,
      physical,
      async (api, ref, node) => {
        const state = unpack((await api.query({ ref, kind: 'warm', payload })).result) as WarmState;
        return { part: ref.part, node, state: state.state, documents: state.documents };
      },
      (part, node, err) => ({ part, node, state: 'unavailable', documents: 0, detail: err instanceof Error ? err.message : String(err) }),
    );
  }

  /**
   * Asks every replica of every part (as `warm` does) to let its engine go ahead of its idle time
   * (QueryKind `unload`); how many started an unload. A replica that cannot be asked is skipped:
   * its engine goes when idle.
   */
  async unload(tenant: TenantId, physical: PhysicalIndexRecord): Promise<number> {
    const payload = pack({});
    const started = await this.onEveryReplica(
      tenant,
      physical,
      async (api, ref) => (unpack((await api.query({ ref, kind: 'unload', payload })).result) as UnloadState).state === 'unloading',
      () => false,
    );
    return started.filter(Boolean).length;
  }

  /**
   * Runs `call` on every part's primary (as `onPart` routes it) and, when reads go to followers,
   * on each live follower; a call that fails answers `failed(part, node, err)` instead (`node`
   * null for a primary that could not be reached).
   */
  private onEveryReplica<T>(tenant: TenantId, physical: PhysicalIndexRecord, call: (api: ShardApi, ref: pb.IndexRef, node: NodeId) => Promise<T>, failed: (part: number, node: NodeId | null, err: unknown) => T): Promise<T[]> {
    const calls: Promise<T>[] = [];
    const t = this.placement;
    for (let part = 0; part < physical.parts; part++) {
      calls.push(this.onPart(tenant, physical, part, call).catch((err: unknown) => failed(part, null, err)));
      if (!t || this.opts.replicaReads === false) continue;
      const { partition } = replicasOf(t, tenant, physical, part);
      for (const node of this.followers(tenant, physical, part)) {
        calls.push(call(this.shards.client(node), refOf(t, tenant, physical, part, partition), node).catch((err: unknown) => failed(part, node, err)));
      }
    }
    return Promise.all(calls);
  }

  /** Runs `call` on every part concurrently. */
  onAllParts<T>(tenant: TenantId, physical: PhysicalIndexRecord, call: (api: ShardApi, ref: pb.IndexRef, node: NodeId) => Promise<T>): Promise<T[]> {
    const calls: Promise<T>[] = [];
    for (let part = 0; part < physical.parts; part++) calls.push(this.onPart(tenant, physical, part, call));
    return Promise.all(calls);
  }

  private refreshPlacement(): Promise<void> {
    this.placementRefresh ??= this.coordinator
      .getPlacement()
      .then((t) => {
        if (t) this.onPlacement(t);
      })
      .finally(() => {
        this.placementRefresh = null;
      });
    return this.placementRefresh;
  }

  // ------------------------------------------------------------------ part operations

  async stats(tenant: TenantId, physical: PhysicalIndexRecord): Promise<PartStats[]> {
    return this.onAllParts(tenant, physical, async (api, ref, node) => {
      const r = await api.indexStats({ ref });
      return { part: ref.part, partition: ref.partition, node, document_count: r.documentCount, stored_bytes: r.storedBytes, engine: r.engine };
    });
  }

  async documentCount(tenant: TenantId, physical: PhysicalIndexRecord): Promise<number> {
    const parts = await this.stats(tenant, physical);
    return parts.reduce((n, p) => n + p.document_count, 0);
  }

  async getDocument(tenant: TenantId, physical: PhysicalIndexRecord, docId: string): Promise<SuggestDocument | null> {
    // a read: any replica has every acknowledged write (see queryAllParts)
    const r = await this.queryPart(tenant, physical, partOf(docId, physical.parts), (api, ref) => api.getDocument({ ref, docId }));
    return r.found && r.document ? decodeDocument(r.document.body) : null;
  }

  async deleteDocument(tenant: TenantId, physical: PhysicalIndexRecord, docId: string): Promise<boolean> {
    const r = await this.onPart(tenant, physical, partOf(docId, physical.parts), (api, ref) => api.deleteDocument({ ref, docId }));
    return r.deleted;
  }

  /** Upserts documents already grouped by part; `maxDocuments(part)` is the per-part cap (0 = none). */
  async upsertPart(tenant: TenantId, physical: PhysicalIndexRecord, part: number, docs: SuggestDocument[], maxDocuments: number): Promise<pb.UpsertResponse> {
    const documents = docs.map((d) => ({ id: d.id, body: encodeDocument(d) }));
    return this.onPart(tenant, physical, part, (api, ref) => api.upsert({ ref, documents, maxDocuments }));
  }

  async listPart(tenant: TenantId, physical: PhysicalIndexRecord, part: number, offset: number, limit: number): Promise<{ items: SuggestDocument[]; total: number }> {
    const r = await this.queryPart(tenant, physical, part, (api, ref) => api.listDocuments({ ref, afterId: '', limit, offset }));
    return { items: r.documents.map((d) => decodeDocument(d.body)), total: r.total };
  }

  /** Partition counters of one shard node (the admin cluster view). */
  partitionStats(node: NodeId): Promise<pb.PartitionStatsResponse> {
    return this.shards.client(node).partitionStats({});
  }

  /** Removes every part of a physical index from its shard node; returns the documents removed. */
  async drop(tenant: TenantId, physical: PhysicalIndexRecord): Promise<number> {
    const removed = await this.onAllParts(tenant, physical, async (api, ref) => (await api.dropIndex({ ref })).removed);
    return removed.reduce((a, b) => a + b, 0);
  }
}

/** Where one replica of a part stands after a `warm` query (DataPlane.warm). */
export interface ReplicaWarmState {
  part: number;
  /** the shard node asked; null when the part's primary could not be reached */
  node: NodeId | null;
  state: WarmState['state'] | 'unavailable';
  documents: number;
  /** why the replica could not be asked */
  detail?: string;
}

/** The partition that holds part `part` of `physical` under table `t`, and its replicas (primary first). */
function replicasOf(t: PlacementTable, tenant: TenantId, physical: PhysicalIndexRecord, part: number): { partition: number; replicas: readonly NodeId[] } {
  const partition = partitionOf(tenant, physical.physical_index_id, part, t.partitions);
  return { partition, replicas: t.nodes[partition] ?? [] };
}

/** The ref a call to part `part` of `physical` carries under table `t`. */
function refOf(t: PlacementTable, tenant: TenantId, physical: PhysicalIndexRecord, part: number, partition: number): pb.IndexRef {
  return { tenantId: tenant, physicalIndexId: physical.physical_index_id, part, parts: physical.parts, partition, epoch: t.epoch };
}
