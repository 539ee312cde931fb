// The data plane's routing: primary of the part's partition, one retry after `wrong_owner` with
// a fresh placement, `unavailable` surfacing, readiness from placement and membership, and reads
// over a partition's replicas (turns, a follower's failure to the primary, the primary's to a
// follower).
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

function setup(opts: { initial?: PlacementTable; fresh?: PlacementTable; members?: MemberRecord[]; replicaReads?: boolean }) {
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
  const data = new DataPlane(coordinator, shards, createLogger(), opts.replicaReads === undefined ? {} : { replicaReads: opts.replicaReads });
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
    expect(live.data.readiness()).toEqual({ ready: true, reason: null, epoch: 1, partitions: 4, writesWaiting: 0 });
  });

  it('ignores an older placement epoch', async () => {
    const s = setup({ initial: table(5, 'a'), members: [member('a')] });
    await s.data.start();
    s.data.onPlacement(table(4, 'b'));
    await s.data.stats(tenant, physical);
    expect(s.calls[0]!.startsWith('a@5')).toBe(true);
  });

  it('stays ready while followers can serve the reads of partitions whose primary is not live', async () => {
    const replicated: PlacementTable = { epoch: 2, partitions: 4, nodes: [[NodeId('a'), NodeId('b')], [NodeId('b'), NodeId('a')], [NodeId('a'), NodeId('b')], [NodeId('b'), NodeId('a')]] };
    const onlyB = setup({ initial: replicated, members: [member('b')] });
    await onlyB.data.start();
    expect(onlyB.data.readiness()).toEqual({ ready: true, reason: null, epoch: 2, partitions: 4, writesWaiting: 2 });
    const primariesOnly = setup({ initial: replicated, members: [member('b')], replicaReads: false });
    await primariesOnly.data.start();
    expect(primariesOnly.data.readiness()).toMatchObject({ ready: false, reason: 'the primary of partition 0 (a) is not live, nor any of its followers' });
    const none = setup({ initial: replicated, members: [] });
    await none.data.start();
    expect(none.data.readiness().ready).toBe(false);
  });
});

describe('DataPlane reads over replicas', () => {
  const p0 = partitionOf('t', 'p', 0, 4);
  const replicated = (replicas: string[]): PlacementTable => ({ epoch: 1, partitions: 4, nodes: Array.from({ length: 4 }, () => replicas.map((r) => NodeId(r))) });
  const read = (s: ReturnType<typeof setup>) => s.data.queryAllParts(tenant, physical, async (api, ref, node) => {
    await api.indexStats({ ref });
    return node as string;
  });

  it('takes the live replicas of the partition in turn', async () => {
    const s = setup({ initial: replicated(['a', 'b', 'c']), members: [member('a'), member('b'), member('c')] });
    await s.data.start();
    const answered: string[] = [];
    for (let i = 0; i < 6; i++) answered.push(...(await read(s)));
    expect(answered).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
    expect(s.data.partQueries).toMatchObject({ primary: 2, follower: 4 });
    // a replica that is not live takes no turn
    const s2 = setup({ initial: replicated(['a', 'b', 'c']), members: [member('a'), member('c')] });
    await s2.data.start();
    const answered2: string[] = [];
    for (let i = 0; i < 4; i++) answered2.push(...(await read(s2)));
    expect(answered2).toEqual(['a', 'c', 'a', 'c']);
    expect(s2.calls.every((c) => c.endsWith(`#${p0}`))).toBe(true);
  });

  it('tells the call which turn it is: the primary, a follower, or a follower standing in for the primary', async () => {
    const s = setup({ initial: replicated(['a', 'b']), members: [member('a'), member('b')] });
    await s.data.start();
    const turns: string[] = [];
    const readTurn = () => s.data.queryAllParts(tenant, physical, async (api, ref, node, turn) => {
      await api.indexStats({ ref });
      turns.push(`${node}:${turn}`);
      return node as string;
    });
    await readTurn();
    await readTurn();
    s.behaviour.set('a', async () => fail('unavailable', { reason: 'node down' }));
    await readTurn(); // a's turn fails: b stands in
    expect(turns).toEqual(['a:primary', 'b:follower', 'b:stand-in']);
  });

  it("gives a follower's failure to the primary, and the primary's to a follower", async () => {
    const s = setup({ initial: replicated(['a', 'b']), members: [member('a'), member('b')] });
    await s.data.start();
    s.behaviour.set('b', async () => fail('unavailable', { reason: 'node down' }));
    expect([...(await read(s)), ...(await read(s))]).toEqual(['a', 'a']);
    expect(s.data.partQueries).toMatchObject({ primary: 2, follower: 0, follower_fallback: 1 });
    s.behaviour.delete('b');
    s.behaviour.set('a', async () => fail('unavailable', { reason: 'node down' }));
    expect([...(await read(s)), ...(await read(s))]).toEqual(['b', 'b']);
    expect(s.data.partQueries).toMatchObject({ follower: 1, follower_for_primary: 1 });
  });

  it('sends every read to a live follower while the primary is not live, and to the primary alone without replica reads', async () => {
    const s = setup({ initial: replicated(['a', 'b']), members: [member('b')] });
    await s.data.start();
    expect([...(await read(s)), ...(await read(s))]).toEqual(['b', 'b']);
    const off = setup({ initial: replicated(['a', 'b']), members: [member('a'), member('b')], replicaReads: false });
    await off.data.start();
    expect([...(await read(off)), ...(await read(off))]).toEqual(['a', 'a']);
  });

  it('does not retry a refusal of the query itself on another replica', async () => {
    const s = setup({ initial: replicated(['a', 'b']), members: [member('a'), member('b')] });
    await s.data.start();
    await read(s); // the primary's turn
    s.behaviour.set('b', async () => fail('bad_request', { reason: 'the payload is wrong' }));
    await expect(read(s)).rejects.toMatchObject({ code: 'bad_request' });
    expect(s.calls.map((c) => c.split('@')[0])).toEqual(['a', 'b']);
  });
});
