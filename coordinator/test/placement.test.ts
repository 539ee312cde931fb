// Property tests of rendezvous hashing: it spreads partitions evenly and moves only what it must.
// The planner built on it is tested in placement-planner.test.ts. Random cases come from a seeded
// generator, so a failure reproduces.
import { describe, expect, it } from 'vitest';
import { NodeId } from '../../node/runtime/ids.js';
import { rendezvous, rendezvousPlacement } from '../placement.js';

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

describe('rendezvous hashing', () => {
  it('spreads primaries and replicas evenly over the nodes', () => {
    for (const [n, partitions] of [
      [3, 3_000],
      [8, 8_000],
      [16, 16_000],
    ] as const) {
      const placed = rendezvousPlacement(nodeIds(n), partitions, 3);
      const primaries = new Map<string, number>();
      const replicas = new Map<string, number>();
      for (const owners of placed) {
        primaries.set(owners[0]!, (primaries.get(owners[0]!) ?? 0) + 1);
        for (const o of owners) replicas.set(o, (replicas.get(o) ?? 0) + 1);
      }
      const fair = partitions / n;
      expect(primaries.size).toBe(n);
      // 1000 draws per node: a node off by 15% would be about 5 standard deviations out
      for (const count of primaries.values()) expect(Math.abs(count - fair) / fair).toBeLessThan(0.15);
      for (const count of replicas.values()) expect(Math.abs(count - 3 * fair) / (3 * fair)).toBeLessThan(0.15);
    }
  });

  it('gives min(rf, nodes) distinct owners and is independent of the order nodes are listed in', () => {
    const rnd = mulberry32(7);
    for (let trial = 0; trial < 200; trial++) {
      const n = 1 + Math.floor(rnd() * 9);
      const rf = 1 + Math.floor(rnd() * 4);
      const nodes = nodeIds(n, `t${trial}`);
      const shuffled = [...nodes].sort(() => rnd() - 0.5);
      for (let p = 0; p < 20; p++) {
        const owners = rendezvous(p, nodes, rf);
        expect(owners).toHaveLength(Math.min(rf, n));
        expect(new Set(owners).size).toBe(owners.length);
        expect(rendezvous(p, shuffled, rf)).toEqual(owners);
      }
    }
  });

  it('moves only the partitions a joining node takes, and only those a leaving node had', () => {
    const rnd = mulberry32(11);
    for (let trial = 0; trial < 50; trial++) {
      const nodes = nodeIds(2 + Math.floor(rnd() * 8), `m${trial}`);
      const before = rendezvousPlacement(nodes, 256, 1);
      const joined = NodeId(`m${trial}-new`);
      const after = rendezvousPlacement([...nodes, joined], 256, 1);
      let moved = 0;
      for (let p = 0; p < 256; p++) {
        if (after[p]![0] !== before[p]![0]) {
          expect(after[p]![0]).toBe(joined);
          moved++;
        }
      }
      // about 1/(n+1) of the partitions, not a reshuffle
      expect(moved / 256).toBeLessThan(2.5 / (nodes.length + 1));
      const leaving = nodes[Math.floor(rnd() * nodes.length)]!;
      const without = rendezvousPlacement(nodes.filter((n) => n !== leaving), 256, 1);
      for (let p = 0; p < 256; p++) if (before[p]![0] !== leaving) expect(without[p]![0]).toBe(before[p]![0]);
    }
  });
});

