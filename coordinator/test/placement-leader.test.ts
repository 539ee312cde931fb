// PlacementLeader over the embedded store: it waits for enough shard nodes, writes the first
// table once, leaves owned partitions alone when nodes join, and only the elected leader writes.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NodeId } from '../../node/runtime/ids.js';
import { setLogLevel } from '../../node/runtime/log.js';
import type { PlacementTable } from '../coordinator.js';
import { EmbeddedBackend } from '../embedded-backend.js';
import { MetadataCoordinator } from '../metadata-coordinator.js';
import { PlacementLeader, rendezvousPlacement } from '../placement.js';
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

  it('waits for minShardNodes, then places every partition; later nodes get nothing owned', async () => {
    const c = client();
    const tables: PlacementTable[] = [];
    await c.watchPlacement((t) => tables.push(t));
    const leader = new PlacementLeader({ coordinator: c, nodeId: NodeId('shard-1'), partitions: 16, replicationFactor: 2, minShardNodes: 3 });
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
    expect(tables[0]).toEqual({ epoch: 1, partitions: 16, nodes: rendezvousPlacement(ids, 16, 2) });
    // sticky: a fourth node joins, nothing moves and the epoch stays
    await c.register(memberRec('shard-4', ['shard']), 30);
    expect(await leader.reconcileOnce()).toEqual(tables[0]);
    expect((await c.getPlacement())?.epoch).toBe(1);
    await leader.stop();
    expect(tables).toHaveLength(1);
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
    // the new leader finds the table already right and leaves it alone
    await b.register(memberRec('shard-2', ['shard']), 30);
    expect(await second.reconcileOnce()).toMatchObject({ epoch: 1 });
    await second.stop();
  });
});
