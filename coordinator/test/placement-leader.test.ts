// PlacementLeader over the embedded store: it waits for enough shard nodes, writes the first
// table once, starts bounded moves when a node joins, promotes followers when a member's lease
// goes, and only the elected leader writes.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeId } from '../../node/runtime/ids.js';
import { setLogLevel } from '../../node/runtime/log.js';
import type { PlacementTable } from '../coordinator.js';
import { EmbeddedBackend } from '../embedded-backend.js';
import { MetadataCoordinator } from '../metadata-coordinator.js';
import { PlacementLeader } from '../placement.js';
import { initialPlacement } from '../placement-planner.js';
import { memberRec, waitFor } from './coordinator-contract.js';

setLogLevel('error');

describe('PlacementLeader', () => {
  let dir: string;
  let backend: EmbeddedBackend;
  let coordinators: MetadataCoordinator[];
  const client = () => {
    const c = new MetadataCoordinator(backend, { ownsBackend: false });
    coordinators.push(c);
    return c;
  };

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'suggest-leader-'));
    backend = await EmbeddedBackend.open(dir);
    coordinators = [];
  });
  afterEach(async () => {
    for (const c of coordinators) await c.close();
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('waits for minShardNodes, places every partition, then moves a bounded number to a joining node', async () => {
    const c = client();
    const tables: PlacementTable[] = [];
    await c.watchPlacement((t) => tables.push(t));
    const leader = new PlacementLeader({ coordinator: c, nodeId: NodeId('shard-1'), partitions: 16, replicationFactor: 2, minShardNodes: 3, maxConcurrentMoves: 2 });
    await leader.start();
    await waitFor('election', () => leader.isLeader);
    await c.register(memberRec('shard-1', ['shard', 'coordinator']), 30);
    await c.register(memberRec('router-1', ['router']), 30); // not a shard node: never placed
    await c.register(memberRec('shard-2', ['shard']), 30);
    expect(await leader.reconcileOnce()).toBeUndefined();
    expect(tables).toEqual([]);
    await c.register(memberRec('shard-3', ['shard']), 30);
    await waitFor('the first table', () => tables.length === 1);
    const ids = ['shard-1', 'shard-2', 'shard-3'].map(NodeId);
    expect(tables[0]).toEqual(initialPlacement(ids, { partitions: 16, replicationFactor: 2, maxMoves: 2 }));
    // a fourth node joins: replica lists stay, two moves to it start, at epoch 2
    await c.register(memberRec('shard-4', ['shard']), 30);
    await waitFor('moves', () => tables.length === 2);
    expect(tables[1]!.epoch).toBe(2);
    expect(tables[1]!.nodes).toEqual(tables[0]!.nodes);
    expect(tables[1]!.moves!.map((m) => m.to)).toEqual(['shard-4', 'shard-4']);
    expect(await leader.reconcileOnce()).toEqual(tables[1]);
    await leader.stop();
    expect(tables).toHaveLength(2);
  });

  it('promotes the first follower when a primary\'s membership lease goes', async () => {
    const c = client();
    const leader = new PlacementLeader({ coordinator: c, nodeId: NodeId('shard-1'), partitions: 8, replicationFactor: 2, minShardNodes: 2 });
    await leader.start();
    await waitFor('election', () => leader.isLeader);
    const one = await c.register(memberRec('shard-1', ['shard']), 30);
    await c.register(memberRec('shard-2', ['shard']), 30);
    await waitFor('the first table', async () => (await c.getPlacement())?.epoch === 1);
    const before = (await c.getPlacement())!;
    await one.revoke();
    await waitFor('failover', async () => (await c.getPlacement())?.epoch === 2);
    const after = (await c.getPlacement())!;
    for (let p = 0; p < 8; p++) expect(after.nodes[p]).toEqual(before.nodes[p]!.filter((n) => n !== 'shard-1'));
    await leader.stop();
  });

  it('only the elected leader reconciles; the next one takes over after stop', async () => {
    const a = client();
    const b = client();
    const first = new PlacementLeader({ coordinator: a, nodeId: NodeId('a'), partitions: 4, replicationFactor: 1 });
    const second = new PlacementLeader({ coordinator: b, nodeId: NodeId('b'), partitions: 4, replicationFactor: 1 });
    await first.start();
    await waitFor('first elected', () => first.isLeader);
    await second.start();
    await a.register(memberRec('shard-1', ['shard']), 30);
    await waitFor('a table', async () => (await a.getPlacement())?.epoch === 1);
    expect(second.isLeader).toBe(false);
    await first.stop();
    await waitFor('second elected', () => second.isLeader);
    // the new leader reacts to the next join: moves towards shard-2 start at epoch 2
    await b.register(memberRec('shard-2', ['shard']), 30);
    await waitFor('moves to shard-2', async () => (await b.getPlacement())?.epoch === 2);
    expect((await b.getPlacement())!.moves!.every((m) => m.to === 'shard-2')).toBe(true);
    await second.stop();
  });
});
