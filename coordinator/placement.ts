// Partition placement: which shard nodes own which virtual partition. Rendezvous hashing (the
// tie-breaker of every decision) and PlacementLeader, which runs the planner
// (placement-planner.ts) on the elected coordinator leader after every membership or placement
// change and writes the result with an epoch compare-and-swap.
//
// Placement follows LIVE members (leased keys): a dead primary is replaced by its first live
// follower at once, and replica changes (a node joining, re-replication after a death) are moves
// that the partition's primary runs by snapshot hand-off (shard/partition-handoff.ts) before the
// epoch flips. At most `maxConcurrentMoves` run at a time.
import type { NodeId } from '../node/runtime/ids.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import type { Coordinator, PlacementTable, Unsubscribe } from './coordinator.js';
import { planPlacement } from './placement-planner.js';

export { rendezvous, rendezvousPlacement } from './placement-planner.js';

export interface PlacementLeaderOptions {
  coordinator: Coordinator;
  nodeId: NodeId;
  partitions: number;
  replicationFactor: number;
  /** replica moves in flight at once, cluster-wide (default 2) */
  maxConcurrentMoves?: number;
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
  private unwatchPlacement: Unsubscribe | undefined;
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
      const [current, members] = await Promise.all([this.coordinator.getPlacement(), this.coordinator.listMembers()]);
      const ids = members.filter((m) => m.roles.includes('shard')).map((m) => m.node_id);
      if (!current && ids.length < this.minShardNodes) {
        this.log.info('waiting for shard nodes before the first placement', { live: ids.length, needed: this.minShardNodes });
        return undefined;
      }
      const next = planPlacement(current, ids, {
        partitions: this.opts.partitions,
        replicationFactor: this.opts.replicationFactor,
        maxMoves: this.opts.maxConcurrentMoves ?? 2,
      });
      if (next === undefined || next === current) return current;
      if (await this.coordinator.putPlacement(next, current?.epoch ?? 0)) {
        this.log.info('placement written', { epoch: next.epoch, nodes: ids.length, partitions: next.partitions, moves: (next.moves ?? []).map((m) => `${m.partition}->${m.to}`) });
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
    this.unwatchPlacement?.();
    this.unsubCampaign?.();
    await this.running;
  }

  private onElected(): void {
    if (this.leading || this.stopped) return;
    this.leading = true;
    // the member watch delivers the current list first, which runs the first reconcile; the
    // placement watch starts the next moves when a shard completes one
    Promise.all([this.coordinator.watchMembers(() => this.trigger()), this.coordinator.watchPlacement(() => this.trigger())])
      .then(([unwatch, unwatchPlacement]) => {
        if (this.stopped) {
          unwatch();
          unwatchPlacement();
        } else {
          this.unwatch = unwatch;
          this.unwatchPlacement = unwatchPlacement;
        }
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
