// Property tests of the placement planner over seeded random clusters: moves in flight never
// exceed the bound (nor one per partition), running the moves to completion always ends
// balanced (replica counts per node differ by at most one, every partition on min(rf, n)
// distinct live nodes), a joining node causes only the moves it must (every move targets it, and
// their number is the minimum a balanced result needs), a dead primary's partitions are taken
// over by their first live follower without a copy, and a partition with no live replica is
// never handed to an empty node.
import { describe, expect, it } from 'vitest';
import { NodeId } from '../../node/runtime/ids.js';
import type { PlacementTable } from '../coordinator.js';
import { completeMove, initialPlacement, planPlacement, type PlanOptions } from '../placement-planner.js';

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const nodeIds = (n: number, tag = 'shard') => Array.from({ length: n }, (_, i) => NodeId(`${tag}-${i + 1}`));
const fixedNow = () => new Date('2026-01-01T00:00:00Z');

function loads(t: PlacementTable, live: readonly NodeId[]): Map<NodeId, number> {
  const out = new Map<NodeId, number>(live.map((n) => [n, 0]));
  for (const list of t.nodes) for (const n of list) if (out.has(n)) out.set(n, out.get(n)! + 1);
  return out;
}

function spread(t: PlacementTable, live: readonly NodeId[]): number {
  const l = [...loads(t, live).values()];
  return Math.max(...l) - Math.min(...l);
}

/** Plans, completes the first move in flight, plans again... until no move is left. */
function settle(table: PlacementTable, live: readonly NodeId[], opts: PlanOptions, onStep?: (t: PlacementTable) => void): { table: PlacementTable; completed: number } {
  let t = planPlacement(table, live, opts)!;
  let completed = 0;
  for (let step = 0; step < 10_000; step++) {
    onStep?.(t);
    const move = t.moves?.[0];
    if (!move) return { table: t, completed };
    const done = completeMove(t, move.partition, move.to)!;
    expect(done.epoch).toBe(t.epoch + 1);
    completed++;
    t = planPlacement(done, live, opts)!;
  }
  throw new Error('placement did not settle');
}

function checkInvariants(t: PlacementTable, live: readonly NodeId[], opts: PlanOptions): void {
  const want = Math.min(opts.replicationFactor, live.length);
  for (const list of t.nodes) {
    expect(new Set(list).size).toBe(list.length);
    expect(list.length).toBe(want);
    for (const n of list) expect(live).toContain(n);
  }
}

describe('placement planner', () => {
  it('first table: balanced, min(rf, n) distinct nodes per partition, no moves, epoch 1', () => {
    const rnd = mulberry32(3);
    for (let trial = 0; trial < 100; trial++) {
      const n = 1 + Math.floor(rnd() * 8);
      const opts = { partitions: 1 + Math.floor(rnd() * 128), replicationFactor: 1 + Math.floor(rnd() * 3), maxMoves: 2 };
      const live = nodeIds(n, `f${trial}`);
      const t = initialPlacement(live, opts);
      expect(t.epoch).toBe(1);
      expect(t.moves).toEqual([]);
      checkInvariants(t, live, opts);
      expect(spread(t, live)).toBeLessThanOrEqual(1);
      // the same input gives the same table whatever order the nodes are listed in
      expect(initialPlacement([...live].reverse(), opts)).toEqual(t);
      expect(planPlacement(t, live, opts)).toBe(t);
    }
  });

  it('never has more moves in flight than the bound, nor two on one partition', () => {
    const rnd = mulberry32(5);
    for (let trial = 0; trial < 20; trial++) {
      const opts = { partitions: 8 + Math.floor(rnd() * 120), replicationFactor: 1 + Math.floor(rnd() * 3), maxMoves: 1 + Math.floor(rnd() * 4), now: fixedNow };
      const start = nodeIds(1 + Math.floor(rnd() * 5), `b${trial}`);
      const grown = [...start, ...nodeIds(1 + Math.floor(rnd() * 3), `b${trial}-new`)];
      settle(initialPlacement(start, opts), grown, opts, (t) => {
        const moves = t.moves ?? [];
        expect(moves.length).toBeLessThanOrEqual(opts.maxMoves);
        expect(new Set(moves.map((m) => m.partition)).size).toBe(moves.length);
        for (const m of moves) expect(t.nodes[m.partition]).not.toContain(m.to);
        // idempotent while moves run: planning again changes nothing
        expect(planPlacement(t, grown, opts)).toBe(t);
      });
    }
  });

  it('a joining node takes exactly the replicas balance needs, all moves go to it, and the result is balanced', () => {
    const rnd = mulberry32(7);
    for (let trial = 0; trial < 25; trial++) {
      const n = 1 + Math.floor(rnd() * 7);
      const opts = { partitions: 16 + Math.floor(rnd() * 240), replicationFactor: 1 + Math.floor(rnd() * 3), maxMoves: 2, now: fixedNow };
      const live = nodeIds(n, `j${trial}`);
      const before = initialPlacement(live, opts);
      const joined = NodeId(`j${trial}-joined`);
      const grown = [...live, joined];
      const targets = new Set<string>();
      const { table: after, completed } = settle(before, grown, opts, (t) => {
        for (const m of t.moves ?? []) targets.add(m.to);
      });
      checkInvariants(after, grown, opts);
      expect(spread(after, grown)).toBeLessThanOrEqual(1);
      const want = Math.min(opts.replicationFactor, grown.length);
      const total = opts.partitions * want;
      const added = total - opts.partitions * Math.min(opts.replicationFactor, n);
      // the minimum: the joiner must end with at least floor(total / (n+1)) replicas; extra
      // replicas (rf grew with the cluster) are the only other changes
      const joinerLoad = loads(after, grown).get(joined)!;
      expect(joinerLoad).toBeGreaterThanOrEqual(Math.floor(total / grown.length));
      expect(joinerLoad).toBeLessThanOrEqual(Math.ceil(total / grown.length));
      expect(completed).toBe(joinerLoad);
      if (added === 0) expect([...targets]).toEqual(completed > 0 ? [joined] : []);
      // stability: every replica not given to the joiner stays where it was
      let kept = 0;
      for (let p = 0; p < opts.partitions; p++) for (const node of before.nodes[p]!) if (after.nodes[p]!.includes(node)) kept++;
      expect(kept).toBe(total - joinerLoad);
    }
  });

  it('a dead primary is replaced by its first live follower at once, with no copy', () => {
    const rnd = mulberry32(9);
    for (let trial = 0; trial < 50; trial++) {
      const n = 3 + Math.floor(rnd() * 5);
      const opts = { partitions: 16 + Math.floor(rnd() * 100), replicationFactor: 2 + Math.floor(rnd() * 2), maxMoves: 2, now: fixedNow };
      const live = nodeIds(n, `d${trial}`);
      const before = initialPlacement(live, opts);
      const dead = live[Math.floor(rnd() * n)]!;
      const survivors = live.filter((x) => x !== dead);
      const after = planPlacement(before, survivors, opts)!;
      expect(after.epoch).toBe(before.epoch + 1);
      for (let p = 0; p < opts.partitions; p++) {
        const was = before.nodes[p]!;
        // survivors keep their order: the first live follower is the new primary
        expect(after.nodes[p]).toEqual(was.filter((x) => x !== dead));
      }
      // re-replication runs as bounded moves, onto live nodes only, from partitions that lost a copy
      for (const m of after.moves ?? []) {
        expect(survivors).toContain(m.to);
        expect(before.nodes[m.partition]).toContain(dead);
      }
      const { table: settled } = settle(after, survivors, opts);
      checkInvariants(settled, survivors, opts);
      expect(spread(settled, survivors)).toBeLessThanOrEqual(1);
    }
  });

  it('keeps a partition whose every replica is dead on those nodes (never an empty copy), and cancels moves to dead targets', () => {
    const opts = { partitions: 32, replicationFactor: 1, maxMoves: 2, now: fixedNow };
    const live = nodeIds(3);
    const t = initialPlacement(live, opts);
    const after = planPlacement(t, live.slice(1), opts)!;
    // rf 1: the dead node's partitions have no other copy, so nothing changes and nothing moves
    expect(after).toBe(t);

    const grown = [...live, NodeId('shard-new')];
    const moving = planPlacement(t, grown, opts)!;
    expect(moving.moves!.length).toBe(2);
    const cancelled = planPlacement(moving, live, opts)!;
    expect(cancelled.moves).toEqual([]);
    expect(cancelled.nodes).toEqual(t.nodes);
    expect(cancelled.epoch).toBe(moving.epoch + 1);
  });

  it('completeMove is refused for a move the planner cancelled', () => {
    const opts = { partitions: 8, replicationFactor: 2, maxMoves: 1, now: fixedNow };
    const t = initialPlacement(nodeIds(2), opts);
    const moving = planPlacement(t, nodeIds(3), opts)!;
    const m = moving.moves![0]!;
    expect(completeMove(moving, m.partition, NodeId('someone-else'))).toBeUndefined();
    const done = completeMove(moving, m.partition, m.to)!;
    expect(done.nodes[m.partition]).toContain(m.to);
    expect(done.nodes[m.partition]).not.toContain(m.replaces);
    expect(done.nodes[m.partition]).toHaveLength(2);
  });

  it('refuses a change of the partition count', () => {
    const t = initialPlacement(nodeIds(2), { partitions: 8, replicationFactor: 1, maxMoves: 2 });
    expect(() => planPlacement(t, nodeIds(2), { partitions: 16, replicationFactor: 1, maxMoves: 2 })).toThrow(/partition count/);
  });
});
