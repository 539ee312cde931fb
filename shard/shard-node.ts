// A shard node: the ShardApi of one process, over the partitions the placement table gives it.
// Owns the routing checks (a write is applied only by the partition's primary at the node's
// placement epoch; reads are also served by followers), the lazy opening of partitions, the
// per-index write order (IndexMailbox), change notifications for the search engine, the files
// and runner of ingestion and export jobs (jobs/), and the orderly close (running jobs stop at
// their next batch, accepted writes finish, then every partition closes).
import { readdirSync } from 'node:fs';
import { access, rm } from 'node:fs/promises';
import path from 'node:path';
import { pack, unpack } from 'msgpackr';
import type * as pb from '../proto/gen/shard.js';
import type { Coordinator, PlacementTable } from '../coordinator/coordinator.js';
import { fail, suggestError } from '../node/runtime/errors.js';
import { decodeEvents, encodeEvent, type EngagementEvent } from '../node/runtime/engagement-event.js';
import { partitionOf } from '../node/runtime/hash.js';
import type { NodeId } from '../node/runtime/ids.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import type { QueryValueRequest, ShardApi, ShardDirectory } from '../node/runtime/shard-api.js';
import { DOC_TAG, indexPartId, readKey } from './index-keys.js';
import { BlobStore } from './jobs/blob-store.js';
import { JobRunner, type JobRunnerOptions } from './jobs/job-runner.js';
import { IndexMailbox } from './index-mailbox.js';
import { PartitionHandoff, type HandoffHost, type PartitionHandoffOptions } from './partition-handoff.js';
import { PartitionStore, type PartitionStoreOptions } from './partition-store.js';
import { QUERY_KINDS, notImplementedQueryHandler, type QueryHandler, type QueryKind } from './query-handler.js';
import { replicatedChanges } from './replicated-changes.js';
import type { BatchOp } from './rocks-db.js';

export interface ShardNodeOptions {
  nodeId: NodeId;
  dataDir: string;
  /** virtual partitions of the cluster (must match every placement table) */
  partitions: number;
  store?: PartitionStoreOptions;
  queryHandler?: QueryHandler;
  /** writes waiting per index part before new ones are refused with `unavailable` */
  maxQueuedWrites?: number;
  logger?: Logger;
  /** runs ingestion and export jobs; without it StartJob answers not_implemented */
  jobs?: ShardJobOptions;
  /** replication to followers and partition moves (clusters); without it the node keeps its data to itself */
  handoff?: Omit<PartitionHandoffOptions, 'log'>;
  /**
   * Reads the current placement table from the coordinator (default: from `jobs.coordinator`).
   * Asked when a request carries a newer epoch than this node's table (its watch lags: etcd slow
   * to deliver, or the watch reconnecting), so the node catches up in the time the caller's retry
   * waits instead of refusing the partition until the watch delivers; and by jobs whose call a
   * part refused as `wrong_owner`.
   */
  readPlacement?: () => Promise<PlacementTable | undefined>;
}

/** What the job runner needs beyond the node: job records and leases, and the other shard nodes. */
export interface ShardJobOptions extends Pick<JobRunnerOptions, 'settings' | 'leaseTtlSeconds' | 'maxAttempts' | 'scanIntervalMs' | 'blobRetentionMs'> {
  coordinator: Coordinator;
  /** reaches every shard node, this one included (in-process) */
  directory: ShardDirectory;
}

/**
 * What changed after an applied write; `ids` is empty for a drop (every document of the part).
 * `events` are engagement events appended to the part's event log (`ids`: their documents).
 */
export interface ChangeEvent {
  type: 'upsert' | 'delete' | 'drop' | 'events';
  ref: pb.IndexRef;
  ids: readonly string[];
  /** the documents as written, for upserts (same objects as the request: do not mutate) */
  documents?: readonly pb.EncodedDocument[];
  /** the events as stored, for `events`, with the sequence number of the first one */
  events?: readonly EngagementEvent[];
  firstSeq?: number;
}

export type ChangeListener = (event: ChangeEvent) => void;

const EMPTY = Buffer.alloc(0);

export class ShardNode implements ShardApi, HandoffHost {
  readonly nodeId: NodeId;
  readonly partitions: number;
  private readonly dataDir: string;
  private readonly storeOptions: PartitionStoreOptions;
  private readonly log: Logger;
  private readonly mailbox: IndexMailbox;
  private table: PlacementTable | undefined;
  private readonly readPlacement: (() => Promise<PlacementTable | undefined>) | undefined;
  /** a read of the table for a request with a newer epoch is under way (see catchUp) */
  private catchingUp = false;
  private lastCatchUpMs = 0;
  private queryHandler: QueryHandler;
  private readonly listeners = new Set<ChangeListener>();
  /** opening or open partitions */
  private readonly opening = new Map<number, Promise<PartitionStore>>();
  /** open partitions by number, for the hot path (no promise to await) */
  private readonly ready: (PartitionStore | undefined)[] = [];
  private inflight = 0;
  private drainWaiters: (() => void)[] = [];
  private closing: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  /** set once accepted work has drained: from then on no partition may be opened */
  private drained = false;
  /** uploaded and exported files of jobs */
  readonly blobs: BlobStore;
  readonly jobs: JobRunner | null;
  /** replication and moves; null in the single node */
  readonly handoff: PartitionHandoff | null;
  /** writes to a partition wait on this while its ownership switches (see freezeWrites) */
  private readonly frozen = new Map<number, Promise<void>>();
  /** writes applying per partition, and who waits for them to reach zero */
  private readonly applying = new Map<number, number>();
  private readonly applyWaiters = new Map<number, (() => void)[]>();

  constructor(options: ShardNodeOptions) {
    if (!Number.isInteger(options.partitions) || options.partitions < 1) throw new Error(`partitions must be a positive integer, got ${options.partitions}`);
    this.nodeId = options.nodeId;
    this.partitions = options.partitions;
    this.dataDir = options.dataDir;
    this.handoff = options.handoff ? new PartitionHandoff(this, { ...options.handoff, log: options.logger ?? rootLog }) : null;
    const handoff = this.handoff;
    this.storeOptions = handoff ? { ...options.store, replicate: (p, ops) => handoff.shipToReplicas(p, ops) } : (options.store ?? {});
    this.queryHandler = options.queryHandler ?? notImplementedQueryHandler;
    const j = options.jobs;
    this.readPlacement = options.readPlacement ?? (j ? () => j.coordinator.getPlacement() : undefined);
    this.mailbox = new IndexMailbox({ maxDepth: options.maxQueuedWrites });
    this.log = (options.logger ?? rootLog).child({ role: 'shard', node: options.nodeId });
    this.blobs = new BlobStore(options.dataDir, options.nodeId, this.log);
    this.jobs = j
      ? new JobRunner({
          ...j,
          nodeId: options.nodeId,
          blobs: this.blobs,
          placement: { current: () => this.table, refresh: () => this.refreshPlacement() },
          log: this.log,
        })
      : null;
  }

  /** A table in which `nodeId` is the primary of every partition (the single-node mode). */
  static soloPlacement(nodeId: NodeId, partitions: number, epoch = 1): PlacementTable {
    return { epoch, partitions, nodes: Array.from({ length: partitions }, () => [nodeId]) };
  }

  // ---- configuration ----

  /** Adopts a placement table; an older epoch than the current one is ignored (returns false). */
  setPlacement(table: PlacementTable): boolean {
    if (table.partitions !== this.partitions) {
      throw new Error(`placement table has ${table.partitions} partitions; this node was started with ${this.partitions}`);
    }
    if (this.table && table.epoch < this.table.epoch) return false;
    const previous = this.table;
    this.table = table;
    this.handoff?.onPlacement(table, previous);
    return true;
  }

  /** Reads the table from the coordinator and adopts it when newer (nothing without a reader). */
  async refreshPlacement(): Promise<void> {
    const t = await this.readPlacement?.();
    if (t !== undefined) this.setPlacement(t);
  }

  /** HandoffHost: a table this node wrote itself. */
  adoptPlacement(table: PlacementTable): void {
    this.setPlacement(table);
  }

  /** HandoffHost: the engine forgets a partition whose data changed under it. */
  forgetEngine(partition: number): void {
    this.queryHandler.forgetPartition?.(partition);
  }

  /** HandoffHost: index parts of the partition whose engines are loaded here. */
  loadedParts(partition: number): string[] {
    return this.queryHandler.loadedParts?.(partition) ?? [];
  }

  /** HandoffHost: the engine loads large index parts of a partition copy (see QueryHandler.warmPartition). */
  async warmEngines(partition: number, parts: readonly string[]): Promise<number> {
    if (!this.queryHandler.warmPartition || parts.length === 0) return 0;
    return this.queryHandler.warmPartition(await this.store(partition), partition, this.table?.epoch ?? 0, new Set(parts));
  }

  /**
   * HandoffHost: a follower's store took writes from the primary. The engines reads built here
   * take them as the primary's take its own writes, before the primary hears back, so a read sent
   * to this replica after the write was acknowledged sees it. Writes that cannot be read as
   * changes drop what was built from the partition instead (the next read builds it again).
   */
  /**
   * HandoffHost: a follower's store is about to take writes from the primary: the query
   * handler's `beforeWrite` for each index part whose documents they change, as for the
   * primary's own writes.
   */
  beforeReplicaWrite(partition: number, ops: readonly BatchOp[]): void {
    const store = this.ready[partition];
    if (!store || !this.queryHandler.beforeWrite) return;
    // A batch is one write of one part (PartitionStore ships each write alone): its first document
    // key names the part, and the thousands after it need not be decoded. Were a batch to span
    // parts, the others would only lose their held snapshot (onChange removes it), never an answer.
    for (const op of ops) {
      if (op.key[0] !== DOC_TAG) continue;
      const k = readKey(op.key);
      if (k === null || k.kind !== 'doc') continue;
      this.beforeWrite(store, { tenantId: k.tenantId, physicalIndexId: k.physicalIndexId, part: k.part, parts: 0, partition, epoch: this.table?.epoch ?? 0 }, true);
      return;
    }
  }

  replicaWritten(partition: number, ops: readonly BatchOp[]): void {
    const handler = this.queryHandler;
    const changes = handler.replicaChanged ? replicatedChanges(partition, this.table?.epoch ?? 0, ops) : null;
    if (changes === null) {
      handler.replicaWritten?.(partition);
      return;
    }
    try {
      for (const change of changes) handler.replicaChanged!(change);
    } catch (err) {
      this.log.error('a replicated change could not reach the engines; they are dropped', { err, partition });
      handler.replicaWritten?.(partition);
    }
  }

  /** HandoffHost: closes a partition and deletes its data (it moved away, or a copy replaces it). */
  async dropStore(partition: number): Promise<void> {
    const pending = this.opening.get(partition);
    this.opening.delete(partition);
    this.ready[partition] = undefined;
    if (pending) await pending.then((s) => s.close(), () => undefined);
    this.queryHandler.forgetPartition?.(partition);
    await rm(PartitionStore.location(this.dataDir, partition), { recursive: true, force: true });
  }

  /** HandoffHost: partitions with a directory under this node's data dir. */
  storedPartitions(): number[] {
    try {
      return readdirSync(path.dirname(PartitionStore.location(this.dataDir, 0)))
        .map((name) => /^p(\d+)$/.exec(name)?.[1])
        .filter((n): n is string => n !== undefined)
        .map(Number)
        .filter((n) => n < this.partitions);
    } catch {
      return [];
    }
  }

  /** HandoffHost: an empty partition in place of whatever was there. */
  async replaceStore(partition: number): Promise<PartitionStore> {
    await this.dropStore(partition);
    return this.store(partition);
  }

  /** HandoffHost: holds new writes to `partition` until the returned function is called; resolves once none is applying. */
  async freezeWrites(partition: number): Promise<() => void> {
    while (this.frozen.has(partition)) await this.frozen.get(partition);
    let open!: () => void;
    this.frozen.set(partition, new Promise<void>((resolve) => (open = resolve)));
    if ((this.applying.get(partition) ?? 0) > 0) {
      await new Promise<void>((resolve) => {
        const list = this.applyWaiters.get(partition) ?? [];
        list.push(resolve);
        this.applyWaiters.set(partition, list);
      });
    }
    return () => {
      this.frozen.delete(partition);
      open();
    };
  }

  get placement(): PlacementTable | undefined {
    return this.table;
  }

  setQueryHandler(handler: QueryHandler): void {
    this.queryHandler = handler;
  }

  /** Listener called after each applied write, in the index's write order; returns an unsubscribe. */
  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The store of a partition, opened on first use. */
  store(partition: number): Promise<PartitionStore> {
    const open = this.ready[partition];
    if (open) return Promise.resolve(open);
    if (this.drained) return Promise.reject(suggestError('unavailable', { reason: `Shard node ${this.nodeId} is closed` }));
    let pending = this.opening.get(partition);
    if (!pending) {
      const started = Date.now();
      pending = PartitionStore.open(this.dataDir, partition, this.storeOptions).then(
        (store) => {
          this.ready[partition] = store;
          const t = store.totals();
          this.log.info('partition opened', { partition, documents: t.documentCount, indexes: t.indexCount, ms: Date.now() - started });
          return store;
        },
        (err: unknown) => {
          // forget the failure so the next request tries again (e.g. a lock freed by a dying process)
          this.opening.delete(partition);
          this.log.error('partition open failed', { partition, err });
          fail('unavailable', { reason: `Partition ${partition} could not be opened on node ${this.nodeId} (${(err as Error).message})` }, { cause: err });
        },
      );
      this.opening.set(partition, pending);
    }
    return pending;
  }

  /** Opens every partition this node holds in the current table (warms counters at start-up). */
  async openOwned(): Promise<void> {
    await Promise.all(this.heldPartitions().map((p) => this.store(p)));
  }

  // ---- ShardApi: writes (through the index's mailbox lane) ----

  upsert(req: pb.UpsertRequest): Promise<pb.UpsertResponse> {
    return this.write(req.ref, async (store, ref) => {
      this.beforeWrite(store, ref);
      const res = await store.upsert(ref, req.documents, req.maxDocuments);
      if (this.listeners.size > 0 && res.upserted > 0) {
        this.emit({ type: 'upsert', ref, ids: req.documents.map((d) => d.id), documents: req.documents });
      }
      return res;
    });
  }

  deleteDocument(req: pb.DocumentRequest): Promise<pb.DeleteDocumentResponse> {
    return this.write(req.ref, async (store, ref) => {
      this.beforeWrite(store, ref);
      const res = await store.delete(ref, req.docId);
      if (this.listeners.size > 0 && res.deleted) this.emit({ type: 'delete', ref, ids: [req.docId] });
      return res;
    });
  }

  /**
   * Appends engagement events to the part's event log, in the index's write order (so an event
   * never lands before the upsert of its document that the caller saw acknowledged).
   */
  recordEvents(req: pb.RecordEventsRequest): Promise<pb.RecordEventsResponse> {
    let events: EngagementEvent[];
    try {
      events = decodeEvents(req.events);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.write(req.ref, async (store, ref) => {
      if (events.length === 0) return { accepted: 0, unknownDocumentIds: [] };
      const res = await store.appendEvents(
        ref,
        events.map((e) => e.doc_id),
        events.map((e) => encodeEvent(e)),
      );
      if (this.listeners.size > 0 && res.accepted > 0) {
        const stored = res.stored.map((i) => events[i]!);
        this.emit({ type: 'events', ref, ids: stored.map((e) => e.doc_id), events: stored, firstSeq: res.firstSeq });
      }
      return { accepted: res.accepted, unknownDocumentIds: res.unknown };
    });
  }

  dropIndex(req: pb.DropIndexRequest): Promise<pb.DropIndexResponse> {
    return this.write(req.ref, async (store, ref) => {
      const removed = await store.drop(ref);
      if (this.listeners.size > 0) this.emit({ type: 'drop', ref, ids: [] });
      return { removed };
    });
  }

  // ---- ShardApi: reads (primary or follower) ----

  async getDocument(req: pb.DocumentRequest): Promise<pb.GetDocumentResponse> {
    const ref = this.accept(req.ref, false);
    this.enter();
    try {
      return await (this.ready[ref.partition] ?? (await this.store(ref.partition))).get(ref, req.docId);
    } finally {
      this.leave();
    }
  }

  async listDocuments(req: pb.ListDocumentsRequest): Promise<pb.ListDocumentsResponse> {
    const ref = this.accept(req.ref, false);
    this.enter();
    try {
      const store = this.ready[ref.partition] ?? (await this.store(ref.partition));
      return await store.list(ref, { afterId: req.afterId || undefined, offset: req.offset, limit: req.limit });
    } finally {
      this.leave();
    }
  }

  async indexStats(req: pb.IndexStatsRequest): Promise<pb.IndexStatsResponse> {
    const ref = this.accept(req.ref, false);
    this.enter();
    try {
      const store = this.ready[ref.partition] ?? (await this.store(ref.partition));
      const { documentCount, storedBytes } = store.stats(ref);
      const handler = this.queryHandler;
      const engine = handler.indexStats ? pack(await handler.indexStats({ store, ref })) : EMPTY;
      return { documentCount, storedBytes, engine };
    } finally {
      this.leave();
    }
  }

  async query(req: pb.QueryRequest): Promise<pb.QueryResponse> {
    const ref = this.accept(req.ref, false);
    if (!QUERY_KINDS.has(req.kind)) fail('bad_request', { reason: `Unknown query kind '${req.kind}'` });
    let payload: unknown;
    if (req.payload.length > 0) {
      try {
        payload = unpack(req.payload);
      } catch (err) {
        fail('bad_request', { reason: `The query payload is not valid msgpack: ${(err as Error).message}` }, { cause: err });
      }
    }
    this.enter();
    try {
      const store = this.ready[ref.partition] ?? (await this.store(ref.partition));
      const result: unknown = await this.queryHandler.query({ store, ref, kind: req.kind as QueryKind, payload });
      return { result: pack(result) };
    } finally {
      this.leave();
    }
  }

  /**
   * `query` without msgpack, for the in-process transport: the same checks, the handler's result
   * as it is. Synchronous when the partition is open and the handler answers at once.
   */
  queryValue(req: QueryValueRequest): unknown {
    const ref = this.accept(req.ref, false);
    if (!QUERY_KINDS.has(req.kind)) fail('bad_request', { reason: `Unknown query kind '${req.kind}'` });
    const kind = req.kind as QueryKind;
    const store = this.ready[ref.partition];
    this.enter();
    let result: unknown;
    try {
      result = store
        ? this.queryHandler.query({ store, ref, kind, payload: req.payload })
        : this.store(ref.partition).then((s) => this.queryHandler.query({ store: s, ref, kind, payload: req.payload }));
    } catch (err) {
      this.leave();
      throw err;
    }
    if (result instanceof Promise) return result.finally(() => this.leave());
    this.leave();
    return result;
  }

  /** Documents and index parts of each partition open now (in-memory counters: nothing is read). */
  openPartitionTotals(): { partition: number; documentCount: number; indexCount: number }[] {
    const out: { partition: number; documentCount: number; indexCount: number }[] = [];
    this.ready.forEach((store, partition) => {
      if (store === undefined || store.isClosed) return;
      const t = store.totals();
      out.push({ partition, documentCount: t.documentCount, indexCount: t.indexCount });
    });
    return out;
  }

  async partitionStats(_req: pb.PartitionStatsRequest): Promise<pb.PartitionStatsResponse> {
    if (this.closing) fail('unavailable', { reason: `Shard node ${this.nodeId} is shutting down` });
    const wanted = new Set(this.heldPartitions());
    for (const p of this.opening.keys()) wanted.add(p);
    const partitions: pb.PartitionStat[] = [];
    for (const partition of [...wanted].sort((a, b) => a - b)) {
      let store = this.ready[partition];
      // a partition held by this node but never written has no directory; do not create one
      if (!store && (await exists(PartitionStore.location(this.dataDir, partition)))) store = await this.store(partition);
      const t = store?.totals();
      partitions.push({ partition, documentCount: t?.documentCount ?? 0, indexCount: t?.indexCount ?? 0 });
    }
    return { nodeId: this.nodeId, partitions };
  }

  // ---- ShardApi: blobs and jobs ----

  putBlob(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef> {
    if (this.closing) return Promise.reject(suggestError('unavailable', { reason: `Shard node ${this.nodeId} is shutting down` }));
    return this.blobs.put(chunks);
  }

  getBlob(req: pb.BlobRequest): AsyncIterable<pb.BlobChunk> {
    return this.blobs.get(req);
  }

  async deleteBlob(req: pb.BlobRequest): Promise<pb.DeleteBlobResponse> {
    return { deleted: await this.blobs.delete(req.tenantId, req.blobId) };
  }

  async startJob(req: pb.JobRequest): Promise<pb.JobResponse> {
    if (!this.jobs) return fail('not_implemented', { feature: `Jobs on shard node ${this.nodeId} (started without a coordinator)` });
    return this.jobs.start(req);
  }

  async cancelJob(req: pb.JobRequest): Promise<pb.JobResponse> {
    if (!this.jobs) return { accepted: false, status: '' };
    return this.jobs.cancel(req);
  }

  // ---- lifecycle ----

  /** Stops running jobs, refuses new requests, lets accepted ones finish, then closes the engine hook and every partition. */
  close(): Promise<void> {
    if (!this.stopping) {
      // jobs first, while the node still serves: a stopping job writes its last batch and leaves
      // its record queued; with none running, the node stops taking requests at once
      this.handoff?.close();
      const jobs = this.jobs?.close();
      this.stopping = jobs && this.jobs!.active > 0 ? jobs.then(() => this.closeNode()) : Promise.all([jobs, this.closeNode()]).then(() => undefined);
    }
    return this.stopping;
  }

  private closeNode(): Promise<void> {
    this.closing ??= (async () => {
      await this.mailbox.idle();
      if (this.inflight > 0) await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
      this.drained = true;
      try {
        await this.queryHandler.close?.();
      } catch (err) {
        this.log.error('query handler close failed', { err });
      }
      const stores = await Promise.allSettled(this.opening.values());
      await Promise.all(stores.map((s) => (s.status === 'fulfilled' ? s.value.close() : undefined)));
      this.opening.clear();
      this.ready.length = 0;
    })();
    return this.closing;
  }

  // ---- internals ----

  private write<T>(rawRef: pb.IndexRef | undefined, apply: (store: PartitionStore, ref: pb.IndexRef) => Promise<T>): Promise<T> {
    let ref: pb.IndexRef;
    try {
      ref = this.accept(rawRef, true);
    } catch (err) {
      return Promise.reject(err);
    }
    this.enter();
    const lane = indexPartId(ref.tenantId, ref.physicalIndexId, ref.part);
    return this.mailbox
      .run(lane, async () => {
        const p = ref.partition;
        // an ownership switch of this partition is in progress: wait for its outcome
        while (this.frozen.has(p)) await this.frozen.get(p);
        // placement may have moved while the write waited behind others
        this.checkOwner(ref, true);
        this.applying.set(p, (this.applying.get(p) ?? 0) + 1);
        try {
          const store = this.ready[p] ?? (await this.store(p));
          return await apply(store, ref);
        } finally {
          const left = (this.applying.get(p) ?? 1) - 1;
          this.applying.set(p, left);
          if (left === 0) {
            const waiters = this.applyWaiters.get(p);
            this.applyWaiters.delete(p);
            for (const w of waiters ?? []) w();
          }
        }
      })
      .finally(() => this.leave());
  }

  /** Validates a request's ref and that this node may serve it now. */
  private accept(ref: pb.IndexRef | undefined, write: boolean): pb.IndexRef {
    if (this.closing) fail('unavailable', { reason: `Shard node ${this.nodeId} is shutting down` });
    if (!ref) fail('bad_request', { reason: 'The request names no index (ref is missing)' });
    const { partition, part } = ref;
    const parts = ref.parts || 1;
    if (!Number.isInteger(partition) || partition < 0 || partition >= this.partitions) {
      fail('bad_request', { reason: `Partition ${partition} does not exist; the cluster has ${this.partitions}` });
    }
    if (part >= parts) fail('bad_request', { reason: `Part ${part} does not exist in an index of ${parts} parts` });
    // a misrouted write would be stored where no later read looks for it
    if (partitionOf(ref.tenantId, ref.physicalIndexId, part, this.partitions) !== partition) {
      fail('bad_request', { reason: `Part ${part} of index '${ref.physicalIndexId}' does not live in partition ${partition}` });
    }
    this.checkOwner(ref, write);
    return ref;
  }

  private checkOwner(ref: pb.IndexRef, write: boolean): void {
    const table = this.table;
    if (!table) fail('unavailable', { reason: `Shard node ${this.nodeId} has no placement table yet` });
    const replicas = table.nodes[ref.partition];
    // A caller routing with a newer epoch than ours knows something we do not yet: the
    // partition may have moved away, so a write waits for our table to catch up (the caller
    // retries). So does a read on a follower, which may have been dropped from the table for
    // missing a write; the primary has every acknowledged write whatever the table says.
    const ok = write
      ? replicas?.[0] === this.nodeId && ref.epoch <= table.epoch
      : replicas?.includes(this.nodeId) === true && (replicas[0] === this.nodeId || ref.epoch <= table.epoch);
    if (ok) return;
    if (ref.epoch > table.epoch) this.catchUp();
    fail('wrong_owner', { partition: ref.partition, epoch: table.epoch });
  }

  /**
   * Reads the placement table again, for a request routed with a newer epoch than this node's:
   * one read at a time, at most one every 200 ms however many requests are refused meanwhile.
   */
  private catchUp(): void {
    const read = this.readPlacement;
    const now = Date.now();
    if (read === undefined || this.catchingUp || now - this.lastCatchUpMs < 200) return;
    this.catchingUp = true;
    this.lastCatchUpMs = now;
    void (async () => {
      try {
        const t = await read();
        if (t !== undefined && t.epoch > (this.table?.epoch ?? 0) && this.setPlacement(t)) this.log.info('placement read for a request with a newer epoch', { epoch: t.epoch });
      } catch (err) {
        this.log.debug('reading the placement for a request with a newer epoch failed', { err });
      } finally {
        this.catchingUp = false;
      }
    })();
  }

  private heldPartitions(): number[] {
    const table = this.table;
    if (!table) return [];
    const out: number[] = [];
    for (let p = 0; p < table.nodes.length; p++) if (table.nodes[p]?.includes(this.nodeId)) out.push(p);
    return out;
  }

  /** The query handler's QueryHandler.beforeWrite: its failure is logged, the write goes on. */
  private beforeWrite(store: PartitionStore, ref: pb.IndexRef, replica = false): void {
    try {
      this.queryHandler.beforeWrite?.(store, ref, replica);
    } catch (err) {
      this.log.error('before-write hook failed', { err, partition: ref.partition });
    }
  }

  private emit(event: ChangeEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        // a listener's bug must not fail a write that is already durable
        this.log.error('change listener failed', { err, type: event.type, partition: event.ref.partition });
      }
    }
  }

  private enter(): void {
    this.inflight++;
  }

  private leave(): void {
    if (--this.inflight === 0 && this.drainWaiters.length > 0) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}
