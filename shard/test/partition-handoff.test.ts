// Partition hand-off between real shard nodes in one process: each node has its own RocksDB
// directory and gRPC server (ShardService + PartitionHandoff) on a loopback port, placement
// lives in an embedded coordinator. Covers a move under concurrent writes (nothing acknowledged
// is lost, counters are right, the old owner refuses and later deletes its copy), synchronous
// replication to a follower and eviction of a dead one, and hostile calls (unknown moves, bad
// partitions, a deposed primary, a truncated snapshot).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type * as pb from '../../proto/gen/shard.js';
import type { PlacementTable } from '../../coordinator/coordinator.js';
import { EmbeddedBackend } from '../../coordinator/embedded-backend.js';
import { MetadataCoordinator } from '../../coordinator/metadata-coordinator.js';
import { SuggestError } from '../../node/runtime/errors.js';
import { startGrpcServer, type GrpcServer } from '../../node/runtime/grpc-server.js';
import { NodeId } from '../../node/runtime/ids.js';
import { PartitionStore } from '../partition-store.js';
import { PartitionHandoff, type HandoffHost, type HandoffPeers } from '../partition-handoff.js';
import { GrpcHandoffPeers, partitionHandoffGrpcService } from '../partition-handoff-grpc.js';
import { shardGrpcService } from '../shard-grpc-service.js';
import { ShardNode } from '../shard-node.js';
import { doc, quietLogger, refOf, rejection, titleOf } from './helpers.js';
import { SearchHost } from '../search/search-host.js';
import { indexPartId } from '../index-keys.js';
import { encodeEvents, type EngagementEvent } from '../../node/runtime/engagement-event.js';

const P = 4;
const A = NodeId('node-a');
const B = NodeId('node-b');
const C = NodeId('node-c');

interface Running {
  id: NodeId;
  node: ShardNode;
  server: GrpcServer;
  dir: string;
}

describe('partition hand-off between shard nodes', () => {
  let root: string;
  let backend: EmbeddedBackend;
  let coordinator: MetadataCoordinator;
  const addresses = new Map<string, string>();
  let peers: GrpcHandoffPeers;
  let nodes: Map<string, Running>;
  const unwatch: (() => void)[] = [];

  async function start(id: NodeId): Promise<Running> {
    const dir = path.join(root, id);
    const node = new ShardNode({ nodeId: id, dataDir: dir, partitions: P, logger: quietLogger, handoff: { coordinator, peers, dropGraceMs: 200, retryDelayMs: 100, snapshotBatchBytes: 2048 } });
    const server = await startGrpcServer({ host: '127.0.0.1', port: 0, shard: shardGrpcService(node, quietLogger), services: [partitionHandoffGrpcService(node.handoff!, quietLogger)] });
    addresses.set(id, `127.0.0.1:${server.port}`);
    unwatch.push(await coordinator.watchPlacement((t) => node.setPlacement(t)));
    const r = { id, node, server, dir };
    nodes.set(id, r);
    return r;
  }

  beforeEach(async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'suggest-handoff-'));
    backend = await EmbeddedBackend.open(path.join(root, 'meta'));
    coordinator = new MetadataCoordinator(backend, { ownsBackend: false });
    peers = new GrpcHandoffPeers({ resolve: (id) => addresses.get(id), replicateDeadlineMs: 2_000 });
    nodes = new Map();
  });
  afterEach(async () => {
    for (const u of unwatch.splice(0)) u();
    for (const r of nodes.values()) {
      await r.node.close();
      r.server.forceShutdown();
    }
    peers.close();
    addresses.clear();
    await coordinator.close();
    await backend.close();
    rmSync(root, { recursive: true, force: true });
  });

  const ref = refOf('acme', 'products', { partitions: P });
  const p = ref.partition;

  async function put(table: Omit<PlacementTable, 'epoch' | 'partitions'>): Promise<PlacementTable> {
    const cur = await coordinator.getPlacement();
    const next = { epoch: (cur?.epoch ?? 0) + 1, partitions: P, ...table };
    expect(await coordinator.putPlacement(next, cur?.epoch ?? 0)).toBe(true);
    return next;
  }

  const placed = (owners: NodeId[], moves: PlacementTable['moves'] = []) => ({
    nodes: Array.from({ length: P }, (_, i) => (i === p ? owners : [A])),
    moves,
  });

  async function until(what: string, probe: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await probe())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Nodes A and B, each answering queries from a SearchHost of its own (engines built in place). */
  async function startSearching(): Promise<{ a: Running; b: Running; hosts: SearchHost[] }> {
    const a = await start(A);
    const b = await start(B);
    const hosts = [a, b].map((r) => {
      const host = new SearchHost({ dataDir: r.dir, log: quietLogger, pool: null, engineIdleMs: 0 });
      r.node.setQueryHandler(host);
      r.node.onChange(host.onChange);
      return host;
    });
    return { a, b, hosts };
  }

  /** Writes like a router: to the primary of the current table, retrying wrong_owner. */
  async function routedWrite(fn: (node: ShardNode, ref: pb.IndexRef) => Promise<unknown>): Promise<void> {
    for (let attempt = 0; attempt < 200; attempt++) {
      const t = (await coordinator.getPlacement())!;
      const primary = nodes.get(t.nodes[p]![0]!)!.node;
      try {
        await fn(primary, { ...ref, epoch: t.epoch });
        return;
      } catch (err) {
        if (err instanceof SuggestError && err.code === 'wrong_owner') {
          await new Promise((r) => setTimeout(r, 10));
          continue;
        }
        throw err;
      }
    }
    throw new Error('write kept landing on the wrong owner');
  }

  async function contents(node: ShardNode): Promise<Map<string, string>> {
    const t = node.placement!;
    const out = new Map<string, string>();
    const list = await node.listDocuments({ ref: { ...ref, epoch: t.epoch }, afterId: '', limit: 10_000, offset: 0 });
    for (const d of list.documents) out.set(d.id, titleOf(d.body)!);
    expect(list.total).toBe(out.size);
    return out;
  }

  it('moves a partition under concurrent writes: the target holds exactly what was acknowledged, the old owner refuses and drops its copy', async () => {
    const a = await start(A);
    const b = await start(B);
    await put(placed([A]));
    await until('A has the table', () => a.node.placement?.epoch === 1 && b.node.placement?.epoch === 1);
    const expected = new Map<string, string>();
    for (let i = 0; i < 3_000; i += 500) {
      const batch = Array.from({ length: 500 }, (_, j) => doc(`d${i + j}`, `v0 ${i + j}`));
      await routedWrite((n, r) => n.upsert({ ref: r, documents: batch, maxDocuments: 0 }));
      for (const d of batch) expected.set(d.id, titleOf(d.body)!);
    }

    // writers keep overwriting, adding and deleting while the move runs
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      for (let k = 0; writing; k++) {
        const id = `d${(k * 7) % 4_000}`;
        if (k % 5 === 4) {
          await routedWrite((n, r) => n.deleteDocument({ ref: r, docId: id }));
          expected.delete(id);
        } else {
          await routedWrite((n, r) => n.upsert({ ref: r, documents: [doc(id, `v${k} ${id}`)], maxDocuments: 0 }));
          expected.set(id, `v${k} ${id}`);
        }
        writes++;
      }
    })();
    await new Promise((r) => setTimeout(r, 50));
    await put(placed([A], [{ partition: p, to: B, replaces: A, started_at: new Date().toISOString() }]));
    await until('the move to complete', async () => {
      const t = await coordinator.getPlacement();
      return t!.nodes[p]![0] === B && (t!.moves ?? []).length === 0;
    });
    await new Promise((r) => setTimeout(r, 100));
    writing = false;
    await writer;
    expect(writes).toBeGreaterThan(10);

    const got = await contents(b.node);
    expect(got.size).toBe(expected.size);
    expect(Object.fromEntries(got)).toEqual(Object.fromEntries(expected));
    expect((await b.node.indexStats({ ref: { ...ref, epoch: b.node.placement!.epoch } })).documentCount).toBe(expected.size);
    expect(a.node.handoff!.totals.movesCompleted).toBe(1);

    // the old owner refuses writes and reads of the partition, then deletes its copy
    const old = await rejection(a.node.upsert({ ref: { ...ref, epoch: 1 }, documents: [doc('late')], maxDocuments: 0 }));
    expect(old.code).toBe('wrong_owner');
    await until('the old copy to go', () => !existsSync(PartitionStore.location(a.dir, p)));
  });

  it('loads the engine of a moved index part on the target before the switch, and it follows the writes forwarded meanwhile', async () => {
    const { a, b, hosts } = await startSearching();
    const targetHost = hosts[1]!;
    await put(placed([A]));
    await until('tables', () => a.node.placement?.epoch === 1 && b.node.placement?.epoch === 1);
    // a part large enough to be loaded ahead (2,000 documents or more), and another as large in
    // the same partition that nobody queries
    const idle = Array.from({ length: 200 }, (_, i) => refOf('acme', `idle-${i}`, { partitions: P })).find((r) => r.partition === p)!;
    for (let i = 0; i < 2_400; i += 400) {
      await routedWrite((n, r) => n.upsert({ ref: r, documents: Array.from({ length: 400 }, (_, j) => doc(`d${i + j}`, `Wombat Kettle ${i + j}`)), maxDocuments: 0 }));
      await a.node.upsert({ ref: idle, documents: Array.from({ length: 400 }, (_, j) => doc(`i${i + j}`, `Idle Lamp ${i + j}`)), maxDocuments: 0 });
    }
    const loadedOn = (host: SearchHost) => (host.indexStats({ store: undefined as never, ref }) as { loaded: boolean }).loaded;
    const titles = async (node: ShardNode, query: string) =>
      ((await node.queryValue({ ref: { ...ref, epoch: node.placement!.epoch }, kind: 'typeahead', payload: { query, limit: 10 } })) as { suggestions: { title: string }[] }).suggestions.map((x) => x.title);
    expect((await titles(a.node, 'wombat kettle 23')).length).toBeGreaterThan(0);

    let writing = true;
    let written = 0;
    const writer = (async () => {
      for (let k = 0; writing; k++) {
        await routedWrite((n, r) => n.upsert({ ref: r, documents: [doc(`m${k}`, `Numbat Lamp ${k}`)], maxDocuments: 0 }));
        written = k + 1;
      }
    })();
    // writes acknowledged while the loaded engine waits for the switch: forwarded, and followed
    const warm = targetHost.warmPartition.bind(targetHost);
    const forwarded: number[] = [];
    targetHost.warmPartition = async (...args) => {
      const loaded = await warm(...args);
      const from = written;
      await until('writes forwarded to the loaded copy', () => written >= from + 3);
      forwarded.push(from, written - 1);
      return loaded;
    };
    await new Promise((r) => setTimeout(r, 30));
    await put(placed([A], [{ partition: p, to: B, replaces: A, started_at: new Date().toISOString() }]));
    await until('the move to complete', async () => {
      const t = await coordinator.getPlacement();
      return t!.nodes[p]![0] === B && (t!.moves ?? []).length === 0;
    });
    // loaded before any query reached the new owner; the part nobody queried is not
    expect(targetHost.warmLoads).toBe(1);
    expect(loadedOn(targetHost)).toBe(true);
    expect(targetHost.loadedParts(p)).toEqual([indexPartId(ref.tenantId, ref.physicalIndexId, ref.part)]);
    await until('writes after the switch', () => written > 5);
    writing = false;
    await writer;
    // every write, those forwarded while the engine loaded included, with no build at the query
    expect(forwarded).toHaveLength(2);
    for (const k of [0, ...forwarded, written - 1]) expect(await titles(b.node, `numbat lamp ${k}`)).toContain(`Numbat Lamp ${k}`);
    expect(targetHost.engineBuilds.eventLoop + targetHost.engineBuilds.pool).toBe(1);
  });

  it('replicates each write to the follower before acknowledging it; a dead follower is evicted first', async () => {
    const a = await start(A);
    const b = await start(B);
    await put(placed([A, B]));
    await until('tables', () => a.node.placement?.epoch === 1 && b.node.placement?.epoch === 1);
    await a.node.upsert({ ref, documents: [doc('1', 'one'), doc('2', 'two')], maxDocuments: 0 });
    await a.node.deleteDocument({ ref, docId: '1' });
    // the follower has it the moment the primary answered, counters included
    expect([...(await contents(b.node)).entries()]).toEqual([['2', 'two']]);
    expect((await b.node.indexStats({ ref })).documentCount).toBe(1);

    b.server.forceShutdown();
    await b.node.close();
    nodes.delete(B);
    addresses.delete(B);
    const res = await a.node.upsert({ ref, documents: [doc('3', 'three')], maxDocuments: 0 });
    expect(res.documentCount).toBe(2);
    const t = (await coordinator.getPlacement())!;
    expect(t.nodes[p]).toEqual([A]);
    expect(t.epoch).toBe(2);
    expect(a.node.handoff!.totals.followersEvicted).toBe(1);
  });

  it("serves reads on a follower from an engine that follows the primary's writes as they are replicated", async () => {
    const { a, b, hosts } = await startSearching();
    const followerHost = hosts[1]!;
    await put(placed([A, B]));
    await until('tables', () => a.node.placement?.epoch === 1 && b.node.placement?.epoch === 1);
    const titles = async (node: ShardNode, query: string) =>
      ((await node.queryValue({ ref, kind: 'typeahead', payload: { query, limit: 10 } })) as { suggestions: { title: string }[] }).suggestions.map((s) => s.title);
    const loaded = () => (followerHost.indexStats({ store: undefined as never, ref }) as { loaded: boolean }).loaded;

    await a.node.upsert({ ref, documents: [doc('1', 'Wombat Kettle'), doc('2', 'Wombat Toaster')], maxDocuments: 0 });
    // the follower's first read builds its engine from its store
    expect(await titles(b.node, 'wombat')).toEqual(expect.arrayContaining(['Wombat Kettle', 'Wombat Toaster']));
    expect(loaded()).toBe(true);
    // then every acknowledged write is in its answers at once, and the engine stays loaded
    for (let i = 0; i < 5; i++) {
      await a.node.upsert({ ref, documents: [doc(`n${i}`, `Numbat Lamp ${i}`)], maxDocuments: 0 });
      expect(loaded()).toBe(true);
      expect(await titles(b.node, `numbat lamp ${i}`)).toContain(`Numbat Lamp ${i}`);
    }
    await a.node.deleteDocument({ ref, docId: '2' });
    expect(await titles(b.node, 'wombat')).not.toContain('Wombat Toaster');
    await a.node.upsert({ ref, documents: [doc('1', 'Quokka Kettle')], maxDocuments: 0 });
    expect(await titles(b.node, 'quokka')).toContain('Quokka Kettle');
    expect(await titles(b.node, 'wombat')).not.toContain('Wombat Kettle');
    expect(loaded()).toBe(true);
    // engagement events reach the follower's behaviour model too
    const behavior = () => (followerHost.indexStats({ store: undefined as never, ref }) as { behavior: { events: number } | null }).behavior?.events ?? 0;
    const before = behavior();
    await a.node.recordEvents({ ref, events: encodeEvents([0, 1, 2].map((i) => ({ doc_id: '1', query: 'quokka', type: 'click', position: 1, user_id: `u${i}`, session_id: `s${i}`, ts: Date.now() })) as EngagementEvent[]) });
    expect(behavior()).toBe(before + 3);
    expect(loaded()).toBe(true);
    // writes it cannot read as changes drop the engine instead; the next read builds it again
    b.node.replicaWritten(p, [{ type: 'put', key: Buffer.from([0x7f, 1, 2]), value: Buffer.alloc(0) }]);
    expect(loaded()).toBe(false);
    expect(await titles(b.node, 'numbat')).toEqual(expect.arrayContaining([0, 1, 2, 3, 4].map((i) => `Numbat Lamp ${i}`)));
    expect(loaded()).toBe(true);
    // a dropped index leaves the follower with no engine for it
    await a.node.dropIndex({ ref });
    expect(loaded()).toBe(false);
  });

  it('deletes a stale copy found at start-up when the table no longer gives it this node, and keeps the ones it holds', async () => {
    for (const part of [p, (p + 1) % P]) {
      const stale = await PartitionStore.open(path.join(root, C), part);
      await stale.upsert({ tenantId: 'acme', physicalIndexId: 'old', part: 0, parts: 1 }, [doc('x')]);
      await stale.close();
    }
    await put({ nodes: Array.from({ length: P }, (_, i) => (i === p ? [A] : [C])), moves: [] });
    const c = await start(C);
    await until('the stale copy to go', () => !existsSync(PartitionStore.location(c.dir, p)));
    expect(existsSync(PartitionStore.location(c.dir, (p + 1) % P))).toBe(true);
  });

  it('refuses hostile or stale hand-off calls with catalogue errors', async () => {
    const a = await start(A);
    const c = await start(C);
    await put(placed([A]));
    await until('tables', () => c.node.placement?.epoch === 1);
    const api = peers.client(C);
    // unknown move
    expect((await rejection(api.replicate({ partition: p, epoch: 1, fromNode: A, moveId: 'nope', ops: [] }))).code).toBe('conflict');
    // a partition that does not exist
    expect((await rejection(api.beginTransfer({ partition: 99, moveId: 'm', fromNode: A, epoch: 1, loadedParts: [] }))).code).toBe('bad_request');
    // a replica write to a node that is not a follower at that epoch
    expect((await rejection(api.replicate({ partition: p, epoch: 1, fromNode: A, moveId: '', ops: [{ key: Buffer.from('x'), value: Buffer.from('y'), delete: false }] }))).code).toBe('wrong_owner');
    // a deposed primary (older epoch, not the primary in C's table) is fenced off
    await put(placed([A, C]));
    await until('C follows A', () => c.node.placement?.epoch === 2);
    expect((await rejection(api.replicate({ partition: p, epoch: 1, fromNode: B, moveId: '', ops: [] }))).code).toBe('wrong_owner');
    // a snapshot for a move that was never begun
    async function* chunks() {
      yield { partition: p, moveId: 'never-begun', entries: [] };
    }
    expect((await rejection(api.sendSnapshot(chunks()))).code).toBe('conflict');
    // a snapshot whose sender fails mid-stream is not taken as complete
    await put(placed([A], [{ partition: p, to: C, replaces: null, started_at: new Date().toISOString() }]));
    await until('the move completes', async () => (await coordinator.getPlacement())!.nodes[p]!.includes(C));
    const begun = await api.beginTransfer({ partition: (p + 1) % P, moveId: 'm2', fromNode: A, epoch: 99, loadedParts: [] });
    expect(begun.nodeId).toBe(C);
    async function* broken() {
      yield { partition: (p + 1) % P, moveId: 'm2', entries: [{ key: Buffer.from('k'), value: Buffer.from('v'), delete: false }] };
      throw new Error('sender died');
    }
    expect(await rejection(api.sendSnapshot(broken()))).toBeInstanceOf(Error);
    void a;
  });
});

describe('engines and placement changes', () => {
  // a host that only records what the hand-off asks of it (the engine side is all this checks)
  function handoffWith(self: NodeId) {
    const forgotten: number[] = [];
    const host = {
      nodeId: self,
      partitions: 3,
      placement: undefined,
      storedPartitions: () => [],
      forgetEngine: (p: number) => forgotten.push(p),
    } as unknown as HandoffHost;
    const peers = { client: () => Promise.reject(new Error('no peers here')), close: () => undefined } as unknown as HandoffPeers;
    const handoff = new PartitionHandoff(host, { coordinator: {} as never, peers, log: quietLogger, dropGraceMs: 60_000 });
    return { handoff, forgotten };
  }
  const table = (nodes: NodeId[][], epoch: number): PlacementTable => ({ epoch, partitions: nodes.length, nodes, moves: [] });

  it('drops the engines of every partition it does not lead on its first table, then of each it stops leading', () => {
    const { handoff, forgotten } = handoffWith(A);
    // primary of 0, follower of 1, nothing of 2: what it built before the start is not trusted
    const first = table([[A, B], [B, A], [C]], 1);
    handoff.onPlacement(first, undefined);
    expect(forgotten.sort()).toEqual([1, 2]);
    forgotten.length = 0;
    // no role change: nothing dropped
    const same = table([[A, B], [B, A], [C]], 2);
    handoff.onPlacement(same, first);
    expect(forgotten).toEqual([]);
    // 0 is handed to B: its engine would miss B's writes
    handoff.onPlacement(table([[B, A], [B, A], [C]], 3), same);
    expect(forgotten).toEqual([0]);
    handoff.close();
  });
});
