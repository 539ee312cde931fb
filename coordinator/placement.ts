// Partition placement: which shard nodes own which virtual partition. Pure functions
// (rendezvous hashing, the sticky reconcile) plus PlacementLeader, which runs them on the
// elected coordinator leader and writes the table with an epoch compare-and-swap.
//
// Placement is STICKY: a partition that has an owner keeps it. Moving a partition means moving
// its RocksDB data, which needs a snapshot hand-off between nodes that is not built yet; until
// it is, reconcile only fills partitions with no owner left (never assigned, or every owner
// forgotten as a shard node), promotes a surviving follower when the primary is forgotten, and
// never adds followers to a partition that has data (an empty follower would serve empty
// results). So a node that joins later only receives partitions nobody owns, and a dead node
// keeps its partitions (queries to them fail with 503) until it comes back. Known shard nodes
// are permanent records, so today "forgotten" happens only if an operator removes one.
import { score64 } from '../node/runtime/hash.js';
import type { NodeId } from '../node/runtime/ids.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import type { Coordinator, PlacementTable, Unsubscribe } from './coordinator.js';

const partitionKey = (p: number) => `partition/${p}`;

/** Nodes ranked for partition `p` by rendezvous (highest random weight) hashing; the first `count`. */
export function rendezvous(p: number, nodes: readonly NodeId[], count: number): NodeId[] {
  const key = partitionKey(p);
  return [...new Set(nodes)]
    .map((n) => ({ n, s: score64(key, n) }))
    .sort((a, b) => (a.s === b.s ? (a.n < b.n ? -1 : a.n > b.n ? 1 : 0) : a.s > b.s ? -1 : 1))
    .slice(0, Math.max(0, count))
    .map((x) => x.n);
}

/** Every partition placed from scratch: `min(rf, nodes)` distinct nodes each, primary first. */
export function rendezvousPlacement(nodes: readonly NodeId[], partitions: number, rf: number): NodeId[][] {
  return Array.from({ length: partitions }, (_, p) => rendezvous(p, nodes, rf));
}

const sameList = (a: readonly NodeId[] | undefined, b: readonly NodeId[]) => a !== undefined && a.length === b.length && a.every((n, i) => n === b[i]);

/**
 * The next placement table, or `current` itself when nothing changes. Partitions keep their
 * owners that are still known shard nodes (order kept, so a surviving follower becomes primary);
 * a partition with no such owner gets `min(rf, known)` nodes by rendezvous hashing. The epoch is
 * bumped exactly when the table changes. The partition count of a cluster never changes.
 */
export function reconcilePlacement(current: PlacementTable | undefined, knownShardNodes: readonly NodeId[], partitions: number, rf: number): PlacementTable {
  if (current && current.partitions !== partitions) {
    throw new Error(`the placement table has ${current.partitions} partitions but ${partitions} are configured; the partition count of a cluster cannot change`);
  }
  const known = new Set(knownShardNodes);
  const nodes: NodeId[][] = [];
  let changed = current === undefined;
  for (let p = 0; p < partitions; p++) {
    const before = current?.nodes[p];
    const kept = [...new Set(before ?? [])].filter((n) => known.has(n));
    const next = kept.length > 0 ? kept : rendezvous(p, knownShardNodes, rf);
    if (!sameList(before, next)) changed = true;
    nodes.push(next);
  }
  if (!changed && current) return current;
  return { epoch: (current?.epoch ?? 0) + 1, partitions, nodes };
}

export interface PlacementLeaderOptions {
  coordinator: Coordinator;
  nodeId: NodeId;
  partitions: number;
  replicationFactor: number;
  /** the first table waits until this many shard nodes have joined, so a launch spreads evenly */
  minShardNodes?: number;
  log?: Logger;
}

/**
 * Campaigns for coordinator leadership; while leader, reconciles the placement table after every
 * membership change. Two nodes that both believe they lead (a deposed leader is not told) are
 * harmless: each write is a compare-and-swap on the epoch computed from the table it replaces,
 * and reconcile is deterministic, so they converge on the same table.
 */
export class PlacementLeader {
  private readonly coordinator: Coordinator;
  private readonly log: Logger;
  private readonly minShardNodes: number;
  private unsubCampaign: Unsubscribe | undefined;
  private unwatch: Unsubscribe | undefined;
  private leading = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private dirty = false;
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly opts: PlacementLeaderOptions) {
    this.coordinator = opts.coordinator;
    this.log = opts.log ?? rootLog.child({ component: 'placement-leader' });
    this.minShardNodes = Math.max(1, opts.minShardNodes ?? 1);
  }

  /** true once this node has been elected (and not stopped) */
  get isLeader(): boolean {
    return this.leading && !this.stopped;
  }

  async start(): Promise<void> {
    this.unsubCampaign = await this.coordinator.campaign(this.opts.nodeId, () => this.onElected());
  }

  /**
   * One reconcile pass: read the table and the known shard nodes, write the reconciled table if
   * it differs. Returns the table in force afterwards (undefined while waiting for nodes).
   */
  async reconcileOnce(): Promise<PlacementTable | undefined> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const [current, known] = await Promise.all([this.coordinator.getPlacement(), this.coordinator.listKnownShardNodes()]);
      const ids = known.map((m) => m.node_id);
      if (!current && ids.length < this.minShardNodes) {
        this.log.info('waiting for shard nodes before the first placement', { known: ids.length, needed: this.minShardNodes });
        return undefined;
      }
      const next = reconcilePlacement(current, ids, this.opts.partitions, this.opts.replicationFactor);
      if (next === current) return current;
      if (await this.coordinator.putPlacement(next, current?.epoch ?? 0)) {
        this.log.info('placement written', { epoch: next.epoch, nodes: ids.length, partitions: next.partitions });
        return next;
      }
      // another writer got there first: reconcile against its table
    }
    throw new Error('placement kept changing under this leader; will retry on the next change');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    this.unwatch?.();
    this.unsubCampaign?.();
    await this.running;
  }

  private onElected(): void {
    if (this.leading || this.stopped) return;
    this.leading = true;
    // the member watch delivers the current list first, which runs the first reconcile
    this.coordinator
      .watchMembers(() => this.trigger())
      .then((unwatch) => {
        if (this.stopped) unwatch();
        else this.unwatch = unwatch;
      })
      .catch((err: unknown) => {
        this.leading = false;
        this.log.error('placement leader could not watch members', { err });
      });
  }

  /** Serialized reconcile runs; a change during a run causes one more run. */
  private trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.dirty = true;
      return;
    }
    this.running = (async () => {
      try {
        do {
          this.dirty = false;
          await this.reconcileOnce();
        } while (this.dirty && !this.stopped);
      } catch (err) {
        this.log.error('placement reconcile failed; retrying', { err });
        if (!this.stopped) {
          this.retry = setTimeout(() => this.trigger(), 1_000);
          this.retry.unref();
        }
      } finally {
        this.running = undefined;
      }
    })();
  }
}
