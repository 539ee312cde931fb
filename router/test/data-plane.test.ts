// The data plane's routing: primary of the part's partition, one retry after `wrong_owner` with
// a fresh placement, `unavailable` surfacing, readiness from placement and membership.
import { describe, expect, it } from 'vitest';
import type { Coordinator, MemberRecord, PhysicalIndexRecord, PlacementTable } from '../../coordinator/coordinator.js';
import { ERRORS, SuggestError, fail, format } from '../../node/runtime/errors.js';
import { partitionOf } from '../../node/runtime/hash.js';
import { IndexId, NodeId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import { createLogger } from '../../node/runtime/log.js';
import type { ShardApi, ShardDirectory } from '../../node/runtime/shard-api.js';
import { DataPlane } from '../data-plane.js';

const tenant = TenantId('t');
const physical: PhysicalIndexRecord = { tenant_id: tenant, physical_index_id: PhysicalIndexId('p'), index_id: IndexId('i'), parts: 1, created_at: '' };
const table = (epoch: number, owner: string): PlacementTable => ({ epoch, partitions: 4, nodes: Array.from({ length: 4 }, () => [NodeId(owner)]) });
const member = (id: string): MemberRecord => ({ node_id: NodeId(id), roles: ['shard'], grpc_address: null, http_address: null, started_at: '' });

function setup(opts: { initial?: PlacementTable; fresh?: PlacementTable; members?: MemberRecord[] }) {
  let placementReads = 0;
  const coordinator = {
    watchPlacement: async () => () => undefined,
    watchMembers: async () => () => undefined,
    getPlacement: async () => (placementReads++ === 0 ? opts.initial : (opts.fresh ?? opts.initial)),
    listMembers: async () => opts.members ?? [],
  } as unknown as Coordinator;
  const calls: string[] = [];
  const behaviour = new Map<string, () => Promise<unknown>>();
  const shards: ShardDirectory = {
    client(node) {
      return {
        indexStats: async (req: { ref: { partition: number; epoch: number } }) => {
          calls.push(`${node}@${req.ref.epoch}#${req.ref.partition}`);
          const b = behaviour.get(node);
          if (b) return b();
          return { documentCount: 3, storedBytes: 10, engine: Buffer.alloc(0) };
        },
      } as unknown as ShardApi;
    },
  };
  const data = new DataPlane(coordinator, shards, createLogger());
  return { data, calls, behaviour, placementReads: () => placementReads };
}

describe('DataPlane', () => {
  it('routes a part to the primary of hash(tenant, physical, part) mod P at the current epoch', async () => {
    const s = setup({ initial: table(3, 'a'), members: [member('a')] });
    await s.data.start();
    const stats = await s.data.stats(tenant, physical);
    expect(stats[0]).toMatchObject({ node: 'a', document_count: 3, partition: partitionOf('t', 'p', 0, 4) });
    expect(s.calls).toEqual([`a@3#${partitionOf('t', 'p', 0, 4)}`]);
  });

  it('re-reads placement once after wrong_owner and retries on the new primary', async () => {
    const s = setup({ initial: table(1, 'a'), fresh: table(2, 'b') });
    await s.data.start();
    s.behaviour.set('a', async () => fail('wrong_owner', { partition: 0, epoch: 2 }));
    const stats = await s.data.stats(tenant, physical);
    expect(stats[0]!.node).toBe('b');
    expect(s.calls.map((c) => c.split('#')[0])).toEqual(['a@1', 'b@2']);
  });

  it('gives up after one retry and surfaces unavailable as is', async () => {
    const s = setup({ initial: table(1, 'a') });
    await s.data.start();
    s.behaviour.set('a', async () => fail('wrong_owner', { partition: 0, epoch: 1 }));
    await expect(s.data.stats(tenant, physical)).rejects.toMatchObject({ code: 'wrong_owner', status: 503 });
    s.behaviour.set('a', async () => {
      throw new SuggestError('unavailable', format(ERRORS.unavailable.message, { reason: 'node down' }));
    });
    await expect(s.data.stats(tenant, physical)).rejects.toMatchObject({ code: 'unavailable', status: 503 });
  });

  it('answers 503 without placement and is ready only with a live primary everywhere', async () => {
    const none = setup({});
    await none.data.start();
    await expect(none.data.stats(tenant, physical)).rejects.toMatchObject({ code: 'unavailable' });
    expect(none.data.readiness()).toMatchObject({ ready: false, reason: 'placement is not known yet' });
    const dead = setup({ initial: table(1, 'a'), members: [member('b')] });
    await dead.data.start();
    expect(dead.data.readiness().ready).toBe(false);
    const live = setup({ initial: table(1, 'a'), members: [member('a')] });
    await live.data.start();
    expect(live.data.readiness()).toEqual({ ready: true, reason: null, epoch: 1, partitions: 4 });
  });

  it('ignores an older placement epoch', async () => {
    const s = setup({ initial: table(5, 'a'), members: [member('a')] });
    await s.data.start();
    s.data.onPlacement(table(4, 'b'));
    await s.data.stats(tenant, physical);
    expect(s.calls[0]!.startsWith('a@5')).toBe(true);
  });
});
