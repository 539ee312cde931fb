// The placement planner: a pure function from (current table, live shard nodes, settings) to the
// next table. It decides three things and nothing else:
//
// 1. Failover, at once: a replica whose node is no longer a live member is dropped from its
//    partition when another replica of that partition is live; order is kept, so the first
//    surviving follower becomes the primary. A partition with no live replica keeps its list
//    (its data is on those disks; 503 until one returns), never an empty fresh copy.
// 2. Repair and balance, as moves: the target is every partition on `min(rf, live)` distinct
//    live nodes with replica counts per node differing by at most one. It is reached from the
//    current table by the fewest replica changes (fill under-replicated partitions on the least
//    loaded nodes, then move one replica at a time from the most to the least loaded node), so a
//    joining node takes about `P * rf / n` replicas and nothing else moves.
// 3. Pacing: each replica change is a move `{partition, to, replaces}` carried in the table; at
//    most `maxMoves` are in flight and at most one per partition. The partition's primary runs
//    a move (snapshot, catch-up) and completes it with `completeMove` (an epoch CAS); the planner
//    then starts the next ones. Moves not started yet are recomputed each time, deterministically.
//
// Ties are broken by rendezvous score, so every leader computes the same table from the same input.
import { score64 } from '../node/runtime/hash.js';
import type { NodeId } from '../node/runtime/ids.js';
import { applyMove, type PartitionMove, type PlacementTable } from './coordinator.js';

export { applyMove, completeMove } from './coordinator.js';

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


export interface PlanOptions {
  partitions: number;
  replicationFactor: number;
  /** moves in flight at once, cluster-wide (at least 1) */
  maxMoves: number;
  /** clock for `started_at` of new moves (tests pin it) */
  now?: () => Date;
}

const sameList = (a: readonly NodeId[] | undefined, b: readonly NodeId[]) => a !== undefined && a.length === b.length && a.every((n, i) => n === b[i]);

function sameMoves(a: readonly PartitionMove[], b: readonly PartitionMove[]): boolean {
  return a.length === b.length && a.every((m, i) => m.partition === b[i]!.partition && m.to === b[i]!.to && m.replaces === b[i]!.replaces);
}

/** Rendezvous rank of `node` for partition `p` among `nodes` (0 = best). */
function ranker(nodes: readonly NodeId[]): (p: number) => Map<NodeId, number> {
  const cache = new Map<number, Map<NodeId, number>>();
  return (p) => {
    let m = cache.get(p);
    if (!m) {
      m = new Map(rendezvous(p, nodes, nodes.length).map((n, i) => [n, i]));
      cache.set(p, m);
    }
    return m;
  };
}

/**
 * Balanced replica sets for `lists` (modified in place, each list's order kept where it can be):
 * partitions in `movable` are filled to `want` live replicas and replicas are shifted from the
 * most to the least loaded live node until counts differ by at most one.
 */
function balance(lists: NodeId[][], movable: ReadonlySet<number>, live: readonly NodeId[], want: number): void {
  const rank = ranker(live);
  const load = new Map<NodeId, number>(live.map((n) => [n, 0]));
  for (const p of movable) for (const n of lists[p]!) if (load.has(n)) load.set(n, load.get(n)! + 1);
  const byLoad = (p: number) => (a: NodeId, b: NodeId) => load.get(a)! - load.get(b)! || rank(p).get(a)! - rank(p).get(b)!;

  // fill: a partition short of replicas gets the least loaded nodes it is not on
  for (const p of [...movable].sort((a, b) => a - b)) {
    const list = lists[p]!;
    while (list.filter((n) => load.has(n)).length < want) {
      const pick = live.filter((n) => !list.includes(n)).sort(byLoad(p))[0];
      if (pick === undefined) break;
      list.push(pick);
      load.set(pick, load.get(pick)! + 1);
    }
  }

  // shift: one replica at a time from the most loaded node to the least loaded one
  for (let guard = 0; guard < 100_000; guard++) {
    const sorted = [...live].sort((a, b) => load.get(a)! - load.get(b)! || (a < b ? -1 : 1));
    const least = sorted[0]!;
    const most = sorted[sorted.length - 1]!;
    if (load.get(most)! - load.get(least)! <= 1) return;
    // the partition on `most` (not on `least`) that `least` ranks best: deterministic, and
    // close to where plain rendezvous would have put it
    let best = -1;
    for (const p of movable) {
      const list = lists[p]!;
      if (!list.includes(most) || list.includes(least)) continue;
      if (best < 0 || rank(p).get(least)! < rank(best).get(least)! || (rank(p).get(least) === rank(best).get(least) && p < best)) best = p;
    }
    if (best < 0) return;
    const list = lists[best]!;
    list[list.indexOf(most)] = least;
    load.set(most, load.get(most)! - 1);
    load.set(least, load.get(least)! + 1);
  }
}

/** The first table: balanced rendezvous placement, no moves (there is no data yet). */
export function initialPlacement(live: readonly NodeId[], opts: PlanOptions): PlacementTable {
  const nodes = [...new Set(live)].sort();
  const want = Math.min(Math.max(1, opts.replicationFactor), nodes.length);
  const lists = Array.from({ length: opts.partitions }, (_, p) => rendezvous(p, nodes, want));
  balance(lists, new Set(lists.keys()), nodes, want);
  return { epoch: 1, partitions: opts.partitions, nodes: lists, moves: [] };
}

/**
 * The next placement table, or `current` itself when nothing changes (idempotent: planning the
 * result again returns it unchanged). See the module header for what it decides.
 */
export function planPlacement(current: PlacementTable | undefined, liveShardNodes: readonly NodeId[], opts: PlanOptions): PlacementTable | undefined {
  const live = [...new Set(liveShardNodes)].sort();
  if (!current) return live.length > 0 ? initialPlacement(live, opts) : undefined;
  if (current.partitions !== opts.partitions) {
    throw new Error(`the placement table has ${current.partitions} partitions but ${opts.partitions} are configured; the partition count of a cluster cannot change`);
  }
  const isLive = new Set(live);
  const want = Math.min(Math.max(1, opts.replicationFactor), live.length);

  // 1. failover: drop dead replicas where a live one remains
  const nodes = current.nodes.map((list) => {
    const alive = list.filter((n) => isLive.has(n));
    return alive.length > 0 && alive.length < list.length ? alive : [...list];
  });

  // 2. moves in flight survive while their target is live and still missing from the partition
  const busy = new Set<number>();
  const moves: PartitionMove[] = [];
  for (const m of current.moves ?? []) {
    const list = nodes[m.partition];
    if (!list || !isLive.has(m.to) || list.includes(m.to) || busy.has(m.partition)) continue;
    busy.add(m.partition);
    moves.push(m.replaces !== null && !list.includes(m.replaces) ? { ...m, replaces: null } : m);
  }

  // 3. target: the current lists with moves in flight applied, then balanced. Only partitions
  // with a live replica can be copied; the others wait for their nodes.
  const target = nodes.map((list) => [...list]);
  for (const m of moves) target[m.partition] = applyMove(target[m.partition]!, m);
  const movable = new Set<number>();
  for (let p = 0; p < target.length; p++) if (nodes[p]!.some((n) => isLive.has(n))) movable.add(p);
  if (live.length > 0) balance(target, movable, live, want);

  // 4. new moves: the differences between target and the effective lists, a partition at a time
  const now = (opts.now ?? (() => new Date()))().toISOString();
  for (let p = 0; p < target.length && moves.length < Math.max(1, opts.maxMoves); p++) {
    if (busy.has(p) || !movable.has(p)) continue;
    const have = nodes[p]!;
    const added = target[p]!.filter((n) => !have.includes(n));
    if (added.length === 0) continue;
    const removed = have.filter((n) => !target[p]!.includes(n) && isLive.has(n));
    moves.push({ partition: p, to: added[0]!, replaces: removed[0] ?? null, started_at: now });
  }
  moves.sort((a, b) => a.partition - b.partition);

  const changed = !nodes.every((list, p) => sameList(current.nodes[p], list)) || !sameMoves(moves, current.moves ?? []);
  if (!changed) return current;
  return { ...current, epoch: current.epoch + 1, nodes, moves };
}
