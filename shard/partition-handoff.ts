// Moving and replicating partitions between shard nodes. One PartitionHandoff per shard node,
// on both ends of every transfer:
//
// - Replication (primary side): every write batch, once durable on the primary, is sent raw to
//   each follower (and to the target of a running move) and the write is acknowledged only when
//   they have it. A follower that does not answer is evicted from the partition's replica list
//   by an epoch CAS before the write is acknowledged, so a follower missing an acknowledged
//   write can never be promoted; the planner then re-copies the partition to a live node.
// - Moves (primary side): for each move of a partition it is primary of, the node
//   1. BeginTransfer: the target drops what it holds of the partition and accepts this move;
//   2. from then on forwards every write to the target too (catch-up runs alongside the copy);
//   3. SendSnapshot: streams one RocksDB snapshot of the partition; the target skips keys a
//      forwarded write already set (they are newer);
//   4. ownership switch: pauses writes to the partition, lets those in flight finish (each was
//      forwarded), and completes the move in the placement table (epoch CAS, `completeMove`).
//   The target answers SendSnapshot once the engines of the copy's large index parts that the
//   source has loaded (named in BeginTransfer) are loaded (at most `warmMaxMs`), and they follow
//   the writes forwarded from then on: the first queries the switch sends it do not wait for a
//   build, or answer from no documents past the wait. Parts nobody queried stay unloaded.
//   Writes that waited see the new table and are refused with `wrong_owner`; the router retries
//   them on the new owner. A failure anywhere restarts the move from step 1.
// - Receiving side: applies BeginTransfer/SendSnapshot/Replicate for partitions it is the target
//   or a follower of, through one queue per partition, and refuses a sender that its newer table
//   says is not the primary (fencing a deposed primary).
// - Clean-up: a partition the table no longer gives this node is closed and deleted after a grace
//   period.
import { randomUUID } from 'node:crypto';
import type * as hpb from '../proto/gen/placement.js';
import { completeMove, type Coordinator, type PlacementTable } from '../coordinator/coordinator.js';
import { fail } from '../node/runtime/errors.js';
import type { NodeId } from '../node/runtime/ids.js';
import type { Logger } from '../node/runtime/log.js';
import type { PartitionStore } from './partition-store.js';
import type { BatchOp } from './rocks-db.js';
import { withTimeout } from '../node/runtime/timeout.js';

/**
 * How long a move's target loads the engines of its copy before it answers SendSnapshot (the
 * ownership switch waits for the answer): past it the move completes and the engines go on
 * loading, as a first query's would.
 */
const MOVE_WARM_MAX_MS = 60_000;

/** The PartitionHandoff service of another node, whatever carries it (gRPC, or in-process in tests). */
export interface HandoffApi {
  beginTransfer(req: hpb.BeginTransferRequest): Promise<hpb.BeginTransferResponse>;
  sendSnapshot(chunks: AsyncIterable<hpb.SnapshotChunk>): Promise<hpb.SnapshotSummary>;
  replicate(req: hpb.ReplicateRequest): Promise<hpb.ReplicateResponse>;
}

export interface HandoffPeers {
  /** throws `unavailable` when the node has no known address */
  client(node: NodeId): HandoffApi;
}

/** What the handoff needs from its shard node. */
export interface HandoffHost {
  readonly nodeId: NodeId;
  readonly partitions: number;
  readonly placement: PlacementTable | undefined;
  store(partition: number): Promise<PartitionStore>;
  /** closes the partition, deletes its data and engine files, opens it again empty */
  replaceStore(partition: number): Promise<PartitionStore>;
  /** closes the partition and deletes its data and engine files */
  dropStore(partition: number): Promise<void>;
  /** holds new writes to the partition and resolves once those in flight are done; call the result to let them go */
  freezeWrites(partition: number): Promise<() => void>;
  /** adopts a table this node just wrote (before the watch brings it) */
  adoptPlacement(table: PlacementTable): void;
  /** the search engine drops what it built from this partition */
  forgetEngine(partition: number): void;
  /** index parts of this partition whose search engines are loaded here (see BeginTransferRequest.loaded_parts) */
  loadedParts(partition: number): string[];
  /** the search engine loads those of `parts` of this partition that are large; resolves with the parts loaded */
  warmEngines(partition: number, parts: readonly string[]): Promise<number>;
  /** writes from the primary are about to reach this replica's store (see ShardNode.beforeReplicaWrite) */
  beforeReplicaWrite(partition: number, ops: readonly BatchOp[]): void;
  /** writes from the primary were applied to this replica's store (see ShardNode.replicaWritten) */
  replicaWritten(partition: number, ops: readonly BatchOp[]): void;
  /** partitions with data on this node's disk, open or not */
  storedPartitions(): number[];
}

export interface PartitionHandoffOptions {
  coordinator: Coordinator;
  peers: HandoffPeers;
  log: Logger;
  /** how long a move's target may spend loading engines before it answers SendSnapshot (default MOVE_WARM_MAX_MS) */
  warmMaxMs?: number;
  /** bytes per snapshot message (default 1 MiB) */
  snapshotBatchBytes?: number;
  /** a partition this node lost is deleted this long after (default 10 s) */
  dropGraceMs?: number;
  /** pause before a failed move is tried again (default 1 s) */
  retryDelayMs?: number;
}

interface Outbound {
  partition: number;
  to: NodeId;
  moveId: string;
  /** BeginTransfer answered: writes are forwarded from now on */
  live: boolean;
  /** a forwarded write failed: the copy has a gap, start over */
  failed: boolean;
  aborted: boolean;
  started: number;
  sent: number;
}

interface Inbound {
  moveId: string;
  from: string;
  /** keys written by forwarded writes during the copy (latin1 strings); null once the snapshot is in */
  touched: Set<string> | null;
  /** every write to the partition on this node goes through this chain while a copy is in */
  chain: Promise<unknown>;
  /** index parts whose engines the source has loaded: loaded here before the switch */
  loadedParts: readonly string[];
}

export interface MoveStatus {
  partition: number;
  to: string;
  bytes_sent: number;
  running_ms: number;
}

const toKeyOps = (ops: readonly BatchOp[]): hpb.KeyOp[] =>
  ops.map((op) => (op.type === 'put' ? { key: op.key, value: op.value, delete: false } : { key: op.key, value: Buffer.alloc(0), delete: true }));

const toBatchOps = (ops: readonly hpb.KeyOp[]): BatchOp[] =>
  ops.map((op) => (op.delete ? { type: 'del', key: Buffer.from(op.key) } : { type: 'put', key: Buffer.from(op.key), value: Buffer.from(op.value) }));

export class PartitionHandoff {
  private readonly outbound = new Map<number, Outbound>();
  private readonly inbound = new Map<number, Inbound>();
  private readonly drops = new Map<number, NodeJS.Timeout>();
  private readonly retries = new Map<number, NodeJS.Timeout>();
  private readonly log: Logger;
  private closed = false;
  /** counters for metrics and the admin view */
  readonly totals = { movesCompleted: 0, movesFailed: 0, followersEvicted: 0, snapshotBytesSent: 0 };

  constructor(
    private readonly host: HandoffHost,
    private readonly opts: PartitionHandoffOptions,
  ) {
    this.log = opts.log.child({ component: 'partition-handoff' });
  }

  /** Moves this node is running as the sending primary. */
  moves(): MoveStatus[] {
    const now = Date.now();
    return [...this.outbound.values()].map((o) => ({ partition: o.partition, to: o.to, bytes_sent: o.sent, running_ms: now - o.started }));
  }

  // ------------------------------------------------------------------ placement changes

  /** Called by the node after it adopts a table (`previous` is the one it replaces). */
  onPlacement(table: PlacementTable, previous: PlacementTable | undefined): void {
    if (this.closed) return;
    const self = this.host.nodeId;
    // moves this node must run, and runs that lost their move
    const wanted = new Map<number, NodeId>();
    for (const m of table.moves ?? []) if (table.nodes[m.partition]?.[0] === self) wanted.set(m.partition, m.to);
    for (const [p, out] of this.outbound) {
      if (wanted.get(p) !== out.to) {
        out.aborted = true;
        this.outbound.delete(p);
      }
    }
    for (const [p, to] of wanted) if (!this.outbound.has(p)) this.startMove(p, to);

    for (let p = 0; p < table.nodes.length; p++) {
      const list = table.nodes[p] ?? [];
      const before = previous?.nodes[p] ?? [];
      const target = (table.moves ?? []).some((m) => m.partition === p && m.to === self);
      // A primary that stops being one drops its engines: a follower's are built by the reads sent
      // to it and follow the replicated writes from then on, with no question of what a hand-over
      // let through. So does a node that starts as anything but the primary: an engine snapshot it
      // kept from before the start would be read as current.
      if (list[0] !== self && (previous === undefined || before[0] === self)) this.host.forgetEngine(p);
      // a copy that became a replica no longer needs its filter
      const inb = this.inbound.get(p);
      if (inb && inb.touched === null && list.includes(self)) this.inbound.delete(p);
      if (list.includes(self) || target) {
        const timer = this.drops.get(p);
        if (timer) {
          clearTimeout(timer);
          this.drops.delete(p);
        }
      } else if (before.includes(self) || (inb && !target)) {
        this.scheduleDrop(p);
      }
    }
    // the first table after a start: copies this node kept from before it was failed over are stale
    if (!previous) {
      for (const p of this.host.storedPartitions()) {
        const target = (table.moves ?? []).some((m) => m.partition === p && m.to === self);
        if (p < table.nodes.length && !table.nodes[p]!.includes(self) && !target) this.scheduleDrop(p);
      }
    }
  }

  private scheduleDrop(p: number): void {
    if (this.drops.has(p)) return;
    const timer = setTimeout(() => {
      this.drops.delete(p);
      const t = this.host.placement;
      const self = this.host.nodeId;
      if (!t || t.nodes[p]?.includes(self) || (t.moves ?? []).some((m) => m.partition === p && m.to === self)) return;
      // its data lives on: never delete the last copy a table still names
      if ((t.nodes[p] ?? []).length === 0) return;
      this.inbound.delete(p);
      this.host.dropStore(p).then(
        () => this.log.info('partition data removed after it moved away', { partition: p, epoch: t.epoch }),
        (err: unknown) => this.log.warn('could not remove a partition that moved away', { partition: p, err }),
      );
    }, this.opts.dropGraceMs ?? 10_000);
    timer.unref();
    this.drops.set(p, timer);
  }

  // ------------------------------------------------------------------ primary: replication

  /** The PartitionStore replication hook: resolves once every replica (and a move's target) has the batch. */
  async shipToReplicas(partition: number, ops: readonly BatchOp[]): Promise<void> {
    const t = this.host.placement;
    const self = this.host.nodeId;
    const list = t?.nodes[partition];
    if (!t || !list || list[0] !== self) fail('wrong_owner', { partition, epoch: t?.epoch ?? 0 });
    const out = this.outbound.get(partition);
    const learner = out?.live && !out.failed && !list.includes(out.to) ? out : undefined;
    const followers = list.slice(1);
    if (followers.length === 0 && !learner) return;
    const keyOps = toKeyOps(ops);
    const calls: Promise<unknown>[] = followers.map((f) =>
      this.peer(f)
        .then((api) => api.replicate({ partition, epoch: t.epoch, fromNode: self, moveId: '', ops: keyOps }))
        .catch((err: unknown) => this.followerFailed(partition, f, err)),
    );
    if (learner) {
      calls.push(
        this.peer(learner.to)
          .then((api) => api.replicate({ partition, epoch: t.epoch, fromNode: self, moveId: learner.moveId, ops: keyOps }))
          .catch((err: unknown) => {
            // the copy has a gap now: the move starts over, the write itself is fine
            learner.failed = true;
            this.log.warn('write not forwarded to a move target; the move will restart', { partition, to: learner.to, err: String(err) });
          }),
      );
    }
    await Promise.all(calls);
  }

  private peer(node: NodeId): Promise<HandoffApi> {
    try {
      return Promise.resolve(this.opts.peers.client(node));
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }

  /** A follower missed a write: drop it from the replica list (epoch CAS) or fail the write. */
  private async followerFailed(partition: number, follower: NodeId, err: unknown): Promise<void> {
    // A refusal (`wrong_owner`) is decided by the coordinator's table like any other failure: if
    // it still names this node primary, the follower is dropped (it was evicted already, or its
    // table is ahead); if not, this node was deposed and the write fails.
    for (let attempt = 0; attempt < 8; attempt++) {
      const cur = await this.opts.coordinator.getPlacement();
      const list = cur?.nodes[partition];
      if (!cur || !list) fail('unavailable', { reason: `No placement for partition ${partition}` });
      if (!list.includes(follower)) return; // someone else removed it already
      if (list[0] !== this.host.nodeId) fail('wrong_owner', { partition, epoch: cur.epoch });
      const next: PlacementTable = { ...cur, epoch: cur.epoch + 1, nodes: cur.nodes.map((l, p) => (p === partition ? l.filter((n) => n !== follower) : l)) };
      if (await this.opts.coordinator.putPlacement(next, cur.epoch)) {
        this.totals.followersEvicted++;
        this.log.warn('follower evicted after a failed write; it will be copied again', { partition, follower, epoch: next.epoch, err: String(err) });
        this.host.adoptPlacement(next);
        return;
      }
    }
    fail('unavailable', { reason: `Follower ${follower} of partition ${partition} missed a write and could not be evicted` });
  }

  // ------------------------------------------------------------------ primary: moves

  private startMove(partition: number, to: NodeId): void {
    const out: Outbound = { partition, to, moveId: randomUUID(), live: false, failed: false, aborted: false, started: Date.now(), sent: 0 };
    this.outbound.set(partition, out);
    this.runMove(out).then(
      (done) => {
        if (this.outbound.get(partition) === out) this.outbound.delete(partition);
        if (done) return;
        if (!out.aborted && !this.closed) this.retryLater(out);
      },
      (err: unknown) => {
        if (this.outbound.get(partition) === out) this.outbound.delete(partition);
        this.totals.movesFailed++;
        this.log.warn('partition move failed; retrying', { partition, to, err: String((err as Error)?.message ?? err) });
        if (!out.aborted && !this.closed) this.retryLater(out);
      },
    );
  }

  /** One pending retry per partition, however many runs failed meanwhile. */
  private retryLater(out: Outbound): void {
    if (this.retries.has(out.partition)) return;
    const timer = setTimeout(() => {
      this.retries.delete(out.partition);
      const t = this.host.placement;
      if (t && !this.closed) this.onPlacement(t, t);
    }, this.opts.retryDelayMs ?? 1_000);
    timer.unref();
    this.retries.set(out.partition, timer);
  }

  /** true when the move completed (this node wrote the flip), false when it was called off */
  private async runMove(out: Outbound): Promise<boolean> {
    const { partition, to } = out;
    const self = this.host.nodeId;
    const epoch = this.host.placement?.epoch ?? 0;
    this.log.info('partition move started', { partition, to, move: out.moveId, epoch });
    const api = this.opts.peers.client(to);
    await api.beginTransfer({ partition, moveId: out.moveId, fromNode: self, epoch, loadedParts: this.host.loadedParts(partition) });
    if (out.aborted) return false;
    // from here every write is forwarded; the snapshot below is taken after this point, so a
    // write is in the snapshot, forwarded, or both
    out.live = true;
    const store = await this.host.store(partition);
    const batchBytes = this.opts.snapshotBatchBytes ?? 1 << 20;
    const chunks = async function* (this: PartitionHandoff): AsyncGenerator<hpb.SnapshotChunk> {
      yield { partition, moveId: out.moveId, entries: [] };
      for await (const batch of store.scanRaw(batchBytes)) {
        if (out.aborted || out.failed) throw new Error('move called off during the copy');
        let bytes = 0;
        for (const e of batch) bytes += e.key.length + e.value.length;
        out.sent += bytes;
        this.totals.snapshotBytesSent += bytes;
        yield { partition, moveId: out.moveId, entries: batch.map((e) => ({ key: e.key, value: e.value, delete: false })) };
      }
    }.call(this);
    const summary = await api.sendSnapshot(chunks);
    if (out.aborted) return false;
    if (out.failed) throw new Error('a write during the copy was not forwarded');

    // ownership switch: writes wait while the move completes; each one in flight was forwarded
    const release = await this.host.freezeWrites(partition);
    try {
      if (out.aborted) return false;
      if (out.failed) throw new Error('a write during the catch-up was not forwarded');
      for (let attempt = 0; attempt < 8; attempt++) {
        const cur = await this.opts.coordinator.getPlacement();
        if (!cur || cur.nodes[partition]?.[0] !== self) return false;
        const next = completeMove(cur, partition, to);
        if (!next) return false;
        if (await this.opts.coordinator.putPlacement(next, cur.epoch)) {
          this.host.adoptPlacement(next);
          this.totals.movesCompleted++;
          this.log.info('partition move completed', {
            partition,
            to,
            epoch: next.epoch,
            replicas: next.nodes[partition],
            entries: summary.entries,
            skipped: summary.skipped,
            bytes: out.sent,
            ms: Date.now() - out.started,
          });
          return true;
        }
      }
      throw new Error('the placement table kept changing during the ownership switch');
    } finally {
      release();
    }
  }

  // ------------------------------------------------------------------ receiving side

  /** Starts (or restarts) a copy of `partition` onto this node. */
  async beginTransfer(req: hpb.BeginTransferRequest): Promise<hpb.BeginTransferResponse> {
    const p = this.checkPartition(req.partition);
    const t = this.host.placement;
    const self = this.host.nodeId;
    const expected = (t?.moves ?? []).some((m) => m.partition === p && m.to === self);
    if (t && t.epoch > req.epoch && !expected) fail('wrong_owner', { partition: p, epoch: t.epoch });
    if (t?.nodes[p]?.includes(self)) fail('conflict', { reason: `Node ${self} already holds partition ${p}` });
    const previous = this.inbound.get(p);
    const inb: Inbound = { moveId: req.moveId, from: req.fromNode, touched: new Set(), chain: Promise.resolve(), loadedParts: req.loadedParts ?? [] };
    this.inbound.set(p, inb);
    const timer = this.drops.get(p);
    if (timer) {
      clearTimeout(timer);
      this.drops.delete(p);
    }
    const reset = (previous?.chain ?? Promise.resolve()).then(async () => {
      this.host.forgetEngine(p);
      await this.host.replaceStore(p);
    });
    inb.chain = reset.catch(() => undefined);
    await reset;
    this.log.info('partition copy begins', { partition: p, from: req.fromNode, move: req.moveId });
    return { nodeId: self };
  }

  async sendSnapshot(chunks: AsyncIterable<hpb.SnapshotChunk>): Promise<hpb.SnapshotSummary> {
    let inb: Inbound | undefined;
    let partition = -1;
    let entries = 0;
    let skipped = 0;
    let bytes = 0;
    for await (const chunk of chunks) {
      if (!inb) {
        partition = this.checkPartition(chunk.partition);
        inb = this.inbound.get(partition);
        if (!inb || inb.moveId !== chunk.moveId || inb.touched === null) fail('conflict', { reason: `No copy of partition ${chunk.partition} with move ${chunk.moveId} is in progress here` });
      }
      if (this.inbound.get(partition) !== inb) fail('conflict', { reason: `The copy of partition ${partition} was restarted` });
      const touched = inb.touched!;
      const ops: BatchOp[] = [];
      for (const e of chunk.entries) {
        const key = Buffer.from(e.key);
        bytes += key.length + e.value.length;
        if (touched.has(key.toString('latin1'))) {
          skipped++;
          continue;
        }
        ops.push({ type: 'put', key, value: Buffer.from(e.value) });
      }
      entries += chunk.entries.length;
      if (ops.length > 0) await this.enqueue(inb, partition, (store) => store.applyRaw(ops));
    }
    if (!inb) fail('bad_request', { reason: 'The snapshot stream was empty' });
    // Every key of the snapshot is queued: from here forwarded writes are reported to the engines
    // once applied (see replicate), and any queued before this point is applied before the
    // engines read the store.
    inb.touched = null;
    await inb.chain;
    // the copy is whole: its engines load, and follow the forwarded writes from here
    const warmStarted = Date.now();
    let engines = 0;
    try {
      engines = await withTimeout(this.host.warmEngines(partition, inb.loadedParts), this.opts.warmMaxMs ?? MOVE_WARM_MAX_MS);
    } catch (err) {
      // the move goes on: the engines go on loading, or the first query builds them
      this.log.warn('engines of a partition copy not loaded before the switch', { partition, err: String((err as Error)?.message ?? err) });
    }
    this.log.info('partition copy received', { partition, from: inb.from, entries, skipped, bytes, engines_loaded: engines, warm_ms: Date.now() - warmStarted });
    return { entries, skipped, bytes };
  }

  async replicate(req: hpb.ReplicateRequest): Promise<hpb.ReplicateResponse> {
    const p = this.checkPartition(req.partition);
    const ops = toBatchOps(req.ops);
    const inb = this.inbound.get(p);
    if (req.moveId) {
      if (!inb || inb.moveId !== req.moveId) fail('conflict', { reason: `No copy of partition ${p} with move ${req.moveId} is in progress here` });
      if (inb.touched) for (const op of ops) inb.touched.add(op.key.toString('latin1'));
      const whole = inb.touched === null;
      await this.enqueue(inb, p, (store) => store.applyRaw(ops));
      // past the copy, engines loaded from it follow (see sendSnapshot)
      if (whole && this.inbound.get(p) === inb) this.host.replicaWritten(p, ops);
      return {};
    }
    const t = this.host.placement;
    const self = this.host.nodeId;
    if (t && t.epoch > req.epoch && t.nodes[p]?.[0] !== req.fromNode) fail('wrong_owner', { partition: p, epoch: t.epoch });
    if (t && t.epoch >= req.epoch && !t.nodes[p]?.includes(self)) fail('wrong_owner', { partition: p, epoch: t.epoch });
    if (inb) {
      if (inb.touched) for (const op of ops) inb.touched.add(op.key.toString('latin1'));
      await this.enqueue(inb, p, (store) => store.applyRaw(ops));
    } else {
      const store = await this.host.store(p);
      this.host.beforeReplicaWrite(p, ops);
      await store.applyRaw(ops);
    }
    this.host.replicaWritten(p, ops);
    return {};
  }

  private enqueue(inb: Inbound, partition: number, task: (store: PartitionStore) => Promise<void>): Promise<void> {
    const run = inb.chain.then(async () => task(await this.host.store(partition)));
    inb.chain = run.catch(() => undefined);
    return run;
  }

  private checkPartition(p: number): number {
    if (!Number.isInteger(p) || p < 0 || p >= this.host.partitions) fail('bad_request', { reason: `Partition ${p} does not exist; the cluster has ${this.host.partitions}` });
    return p;
  }

  close(): void {
    this.closed = true;
    for (const out of this.outbound.values()) out.aborted = true;
    this.outbound.clear();
    for (const t of this.drops.values()) clearTimeout(t);
    this.drops.clear();
    for (const t of this.retries.values()) clearTimeout(t);
    this.retries.clear();
  }
}
