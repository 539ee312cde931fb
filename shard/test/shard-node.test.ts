import { existsSync } from 'node:fs';
import { pack, unpack } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type * as pb from '../../proto/gen/shard.js';
import type { PlacementTable } from '../../coordinator/coordinator.js';
import { NodeId } from '../../node/runtime/ids.js';
import { PartitionStore } from '../partition-store.js';
import type { QueryHandler } from '../query-handler.js';
import { ShardNode, type ChangeEvent } from '../shard-node.js';
import { doc, quietLogger, refOf, rejection, tempDir, titleOf } from './helpers.js';

const ME = NodeId('node-a');
const OTHER = NodeId('node-b');
const P = 8;

/** Placement where `me` is primary of the listed partitions, follower of `followed`, absent elsewhere. */
function table(epoch: number, primaryOf: number[], followed: number[] = []): PlacementTable {
  return {
    epoch,
    partitions: P,
    nodes: Array.from({ length: P }, (_, p) => (primaryOf.includes(p) ? [ME, OTHER] : followed.includes(p) ? [OTHER, ME] : [OTHER])),
  };
}

describe('ShardNode', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let node: ShardNode;

  beforeEach(async () => {
    ({ dir, remove } = await tempDir());
    node = new ShardNode({ nodeId: ME, dataDir: dir, partitions: P, logger: quietLogger });
  });
  afterEach(async () => {
    await node.close();
    await remove();
  });

  const upsertReq = (ref: pb.IndexRef, docs: pb.EncodedDocument[], maxDocuments = 0): pb.UpsertRequest => ({ ref, documents: docs, maxDocuments });

  it('answers unavailable before it has a placement table', async () => {
    const err = await rejection(node.upsert(upsertReq(refOf('acme', 'products'), [doc('1')])));
    expect(err.code).toBe('unavailable');
  });

  it('serves writes and reads of the partitions it owns, opening them lazily', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    expect(existsSync(PartitionStore.location(dir, ref.partition))).toBe(false);
    expect(await node.upsert(upsertReq(ref, [doc('1', 'tv'), doc('2', 'radio')]))).toEqual({ upserted: 2, created: 2, documentCount: 2 });
    expect(existsSync(PartitionStore.location(dir, ref.partition))).toBe(true);
    const got = await node.getDocument({ ref, docId: '1' });
    expect(titleOf(got.document?.body)).toBe('tv');
    const list = await node.listDocuments({ ref, afterId: '', limit: 10, offset: 0 });
    expect(list.total).toBe(2);
    expect(list.documents.map((d) => d.id)).toEqual(['1', '2']);
    expect(await node.listDocuments({ ref, afterId: '1', limit: 10, offset: 0 })).toMatchObject({ documents: [{ id: '2' }], total: 2 });
    expect(await node.deleteDocument({ ref, docId: '1' })).toEqual({ deleted: true, documentCount: 1 });
    const stats = await node.indexStats({ ref });
    expect(stats.documentCount).toBe(1);
    expect(stats.storedBytes).toBeGreaterThan(0);
    expect(stats.engine.length).toBe(0);
    expect(await node.dropIndex({ ref })).toEqual({ removed: 1 });
    expect((await node.indexStats({ ref })).documentCount).toBe(0);
  });

  it('refuses writes to partitions it is not primary of, and reads of partitions it does not hold', async () => {
    const owned = refOf('acme', 'products');
    let followedRef = refOf('acme', 'other');
    for (let i = 0; followedRef.partition === owned.partition; i++) followedRef = refOf('acme', `other${i}`);
    let foreign = refOf('acme', 'third');
    for (let i = 0; foreign.partition === owned.partition || foreign.partition === followedRef.partition; i++) foreign = refOf('acme', `third${i}`);
    node.setPlacement(table(1, [owned.partition], [followedRef.partition]));

    await node.upsert(upsertReq(owned, [doc('1')]));
    const notPrimary = await rejection(node.upsert(upsertReq(followedRef, [doc('1')])));
    expect(notPrimary.code).toBe('wrong_owner');
    expect(notPrimary.message).toContain(`Partition ${followedRef.partition}`);
    expect(notPrimary.message).toContain('epoch 1');
    expect((await rejection(node.deleteDocument({ ref: followedRef, docId: '1' }))).code).toBe('wrong_owner');
    expect((await rejection(node.dropIndex({ ref: followedRef }))).code).toBe('wrong_owner');
    // a follower serves reads
    expect(await node.getDocument({ ref: followedRef, docId: '1' })).toEqual({ found: false, document: undefined });
    // a node that does not hold the partition serves nothing
    expect((await rejection(node.getDocument({ ref: foreign, docId: '1' }))).code).toBe('wrong_owner');
    expect((await rejection(node.query({ ref: foreign, kind: 'typeahead', payload: Buffer.alloc(0) }))).code).toBe('wrong_owner');

    // the partition moves away at epoch 2: writes stop being accepted
    expect(node.setPlacement(table(2, [], [owned.partition]))).toBe(true);
    expect((await rejection(node.upsert(upsertReq({ ...owned, epoch: 2 }, [doc('2')])))).code).toBe('wrong_owner');
    // an older table arriving late is ignored
    expect(node.setPlacement(table(1, [owned.partition]))).toBe(false);
    expect(node.placement?.epoch).toBe(2);
    expect((await node.getDocument({ ref: owned, docId: '1' })).found).toBe(true);
  });

  it('refuses a write routed with a newer epoch than its table (it may have lost the partition)', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P, 3));
    const ref = refOf('acme', 'products', { epoch: 4 });
    expect((await rejection(node.upsert(upsertReq(ref, [doc('1')])))).code).toBe('wrong_owner');
    expect((await node.getDocument({ ref, docId: '1' })).found).toBe(false);
    expect((await node.upsert(upsertReq({ ...ref, epoch: 3 }, [doc('1')]))).created).toBe(1);
  });

  it('reads the placement again for a request routed with a newer epoch, and serves the retry', async () => {
    const ref = refOf('acme', 'products');
    // the coordinator's table is at epoch 2, where this node became the partition's primary; the
    // node's own (its watch lagging) is at epoch 1, where it was not in the partition at all
    let reads = 0;
    let answer: () => void = () => undefined;
    const own = await tempDir();
    const lagging = new ShardNode({
      nodeId: ME,
      dataDir: own.dir,
      partitions: P,
      logger: quietLogger,
      readPlacement: () => {
        reads++;
        return new Promise((resolve) => (answer = () => resolve(table(2, [ref.partition]))));
      },
    });
    try {
      lagging.setPlacement(table(1, []));
      const newer = { ...ref, epoch: 2 };
      // refused, and refused again at once: one read of the table for both
      expect((await rejection(lagging.getDocument({ ref: newer, docId: '1' }))).code).toBe('wrong_owner');
      expect((await rejection(lagging.upsert(upsertReq(newer, [doc('1')])))).code).toBe('wrong_owner');
      expect(reads).toBe(1);
      answer();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(lagging.placement?.epoch).toBe(2);
      // the caller's retry is served
      expect((await lagging.upsert(upsertReq(newer, [doc('1')]))).created).toBe(1);
      expect((await lagging.getDocument({ ref: newer, docId: '1' })).found).toBe(true);
      // a refused request routed with the node's own epoch or an older one reads nothing
      let foreign = refOf('acme', 'elsewhere', { epoch: 2 });
      for (let i = 0; foreign.partition === ref.partition; i++) foreign = refOf('acme', `elsewhere${i}`, { epoch: 2 });
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect((await rejection(lagging.upsert(upsertReq(foreign, [doc('1')])))).code).toBe('wrong_owner');
      expect(reads).toBe(1);
    } finally {
      await lagging.close();
      await own.remove();
    }
  });

  it('refuses refs that do not match the shared placement hash or are malformed', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    const misrouted = { ...ref, partition: (ref.partition + 1) % P };
    expect((await rejection(node.upsert(upsertReq(misrouted, [doc('1')])))).code).toBe('bad_request');
    expect((await rejection(node.getDocument({ ref: { ...ref, partition: P }, docId: '1' }))).code).toBe('bad_request');
    expect((await rejection(node.getDocument({ ref: { ...ref, part: 1, parts: 1 }, docId: '1' }))).code).toBe('bad_request');
    expect((await rejection(node.getDocument({ ref: undefined, docId: '1' }))).code).toBe('bad_request');
    expect(() => node.setPlacement({ epoch: 9, partitions: 4, nodes: [] })).toThrow(/4 partitions/);
  });

  it('applies concurrent writes to one index in arrival order', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    const other = refOf('acme', 'other');
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      // same id every time: only strict ordering leaves the last body in place
      writes.push(node.upsert(upsertReq(ref, [doc('hot', `v${i}`), doc(`d${i}`)])));
      if (i % 3 === 0) writes.push(node.deleteDocument({ ref, docId: `d${i}` }));
      writes.push(node.upsert(upsertReq(other, [doc('hot', `o${i}`)])));
    }
    const results = await Promise.all(writes);
    expect(titleOf((await node.getDocument({ ref, docId: 'hot' })).document?.body)).toBe('v59');
    expect(titleOf((await node.getDocument({ ref: other, docId: 'hot' })).document?.body)).toBe('o59');
    // every delete ran after the upsert that preceded it
    expect(results.filter((r) => (r as pb.DeleteDocumentResponse).deleted === true)).toHaveLength(20);
    expect((await node.indexStats({ ref })).documentCount).toBe(1 + 60 - 20);
  });

  it('enforces max_documents for the whole batch', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    await node.upsert(upsertReq(ref, [doc('1'), doc('2')], 3));
    const err = await rejection(node.upsert(upsertReq(ref, [doc('3'), doc('4')], 3)));
    expect(err.code).toBe('document_limit');
    expect((await node.indexStats({ ref })).documentCount).toBe(2);
  });

  it('notifies change listeners after each applied write, in order', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    const events: ChangeEvent[] = [];
    const off = node.onChange((e) => events.push(e));
    node.onChange(() => {
      throw new Error('a broken listener must not fail the write');
    });
    await Promise.all([
      node.upsert(upsertReq(ref, [doc('1'), doc('2')])),
      node.deleteDocument({ ref, docId: '1' }),
      node.deleteDocument({ ref, docId: 'missing' }),
      node.dropIndex({ ref }),
    ]);
    expect(events.map((e) => [e.type, e.ids])).toEqual([
      ['upsert', ['1', '2']],
      ['delete', ['1']],
      ['drop', []],
    ]);
    expect(events[0]?.documents?.map((d) => d.id)).toEqual(['1', '2']);
    expect(events[0]?.ref).toEqual(ref);
    off();
    await node.upsert(upsertReq(refOf('acme', 'products-2'), [doc('3')]));
    expect(events).toHaveLength(3);
  });

  it('routes queries to the attached QueryHandler and refuses them without one', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    const req = { ref, kind: 'typeahead', payload: pack({ q: 'tel' }) };
    const missing = await rejection(node.query(req));
    expect(missing.code).toBe('not_implemented');
    expect(missing.message).toBe('Search on shard nodes is not available in this build yet.');

    await node.upsert(upsertReq(ref, [doc('1', 'television')]));
    const handler: QueryHandler = {
      async query({ store, ref: r, kind, payload }) {
        const { q } = payload as { q: string };
        const hits: string[] = [];
        for await (const batch of store.scan(r)) for (const d of batch) if ((titleOf(d.body) ?? '').startsWith(q)) hits.push(d.id);
        return { kind, hits };
      },
      indexStats: () => ({ segments: 0 }),
    };
    node.setQueryHandler(handler);
    expect(unpack((await node.query(req)).result)).toEqual({ kind: 'typeahead', hits: ['1'] });
    expect(unpack((await node.indexStats({ ref })).engine)).toEqual({ segments: 0 });
    expect((await rejection(node.query({ ...req, kind: 'bogus' }))).code).toBe('bad_request');
    expect((await rejection(node.query({ ...req, payload: Buffer.from([0x92, 0x01]) }))).code).toBe('bad_request');
  });

  it('reports per-partition document and index counts', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const a = refOf('acme', 'products');
    const b = refOf('acme', 'products', { part: 1, parts: 2 });
    await node.upsert(upsertReq(a, [doc('1'), doc('2')]));
    await node.upsert(upsertReq(b, [doc('3')]));
    const stats = await node.partitionStats({});
    expect(stats.nodeId).toBe(ME);
    expect(stats.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const count = (p: number) => stats.partitions.find((s) => s.partition === p);
    if (a.partition === b.partition) {
      expect(count(a.partition)).toEqual({ partition: a.partition, documentCount: 3, indexCount: 2 });
    } else {
      expect(count(a.partition)).toEqual({ partition: a.partition, documentCount: 2, indexCount: 1 });
      expect(count(b.partition)).toEqual({ partition: b.partition, documentCount: 1, indexCount: 1 });
    }
    expect(stats.partitions.reduce((n, p) => n + p.documentCount, 0)).toBe(3);
  });

  it('answers unavailable while a partition cannot be opened, and opens it on a later request', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    await node.upsert(upsertReq(ref, [doc('1')]));
    // a second process on the same directory: RocksDB's lock keeps it out
    const intruder = new ShardNode({ nodeId: ME, dataDir: dir, partitions: P, logger: quietLogger });
    intruder.setPlacement(ShardNode.soloPlacement(ME, P));
    try {
      const err = await rejection(intruder.getDocument({ ref, docId: '1' }));
      expect(err.code).toBe('unavailable');
      expect(err.message).toContain(`Partition ${ref.partition} could not be opened`);
      await node.close();
      expect((await intruder.getDocument({ ref, docId: '1' })).found).toBe(true);
    } finally {
      await intruder.close();
    }
  });

  it('finishes accepted writes on close, then refuses new requests', async () => {
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    const ref = refOf('acme', 'products');
    const writes = Array.from({ length: 20 }, (_, i) => node.upsert(upsertReq(ref, [doc(`d${i}`)])));
    const closed = node.close();
    expect((await rejection(node.getDocument({ ref, docId: 'd0' }))).code).toBe('unavailable');
    const results = await Promise.all(writes);
    expect(results.at(-1)?.documentCount).toBe(20);
    await closed;

    node = new ShardNode({ nodeId: ME, dataDir: dir, partitions: P, logger: quietLogger });
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    expect((await node.indexStats({ ref })).documentCount).toBe(20);
  });
});
