// The engagement event log of a partition: events stored beside their documents under their
// own key tag, in arrival order, only for documents the part holds, surviving a reopen, gone
// with the index; and through a shard node with the search host: learned on arrival, replayed
// on open, so a restart ranks exactly as before.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decodeEvent, encodeEvent, encodeEvents, type EngagementEvent } from '../../node/runtime/engagement-event.js';
import { NodeId } from '../../node/runtime/ids.js';
import { encodeMeta, IndexKeys, indexPartId } from '../index-keys.js';
import { PartitionStore, type IndexPartRef } from '../partition-store.js';
import { RocksDb } from '../rocks-db.js';
import { SearchHost } from '../search/search-host.js';
import { ShardNode } from '../shard-node.js';
import { pack, unpack } from 'msgpackr';
import { doc, refOf, rejection, tempDir } from './helpers.js';

const ref: IndexPartRef = { tenantId: 'acme', physicalIndexId: 'p1', part: 0, parts: 1 };
const ev = (doc_id: string, query = '', extra: Partial<EngagementEvent> = {}): EngagementEvent => ({
  doc_id,
  type: 'click',
  query,
  position: 1,
  user_id: '',
  session_id: '',
  ts: 1_700_000_000_000,
  ...extra,
});

async function allEvents(store: PartitionStore, r: IndexPartRef): Promise<EngagementEvent[]> {
  const out: EngagementEvent[] = [];
  for await (const batch of store.scanEvents(r, undefined, 2)) out.push(...batch.map((b) => decodeEvent(b)!));
  return out;
}

describe('PartitionStore event log', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let store: PartitionStore;

  beforeEach(async () => {
    ({ dir, remove } = await tempDir());
    store = await PartitionStore.open(dir, 0, { sync: false });
    await store.upsert(ref, [doc('a'), doc('b')]);
  });
  afterEach(async () => {
    await store.close();
    await remove();
  });

  it('appends events of known documents in order and returns the unknown ids once', async () => {
    const events = [ev('a', 'q1'), ev('x'), ev('b', 'q2'), ev('x'), ev('y'), ev('a', 'q3')];
    const res = await store.appendEvents(
      ref,
      events.map((e) => e.doc_id),
      events.map(encodeEvent),
    );
    expect(res).toEqual({ accepted: 3, unknown: ['x', 'y'], stored: [0, 2, 5], firstSeq: 0 });
    const again = await store.appendEvents(ref, ['b'], [encodeEvent(ev('b', 'q4'))]);
    expect(again.firstSeq).toBe(3);
    expect((await allEvents(store, ref)).map((e) => e.query)).toEqual(['q1', 'q2', 'q3', 'q4']);
    expect(store.eventCount(ref)).toBe(4);
    // a bounded scan stops before the given sequence number
    const bounded: string[] = [];
    for await (const b of store.scanEvents(ref, 2)) bounded.push(...b.map((x) => decodeEvent(x)!.query));
    expect(bounded).toEqual(['q1', 'q2']);
    // the documents are untouched: events live under their own key tag
    expect((await store.list(ref)).documents.map((d) => d.id)).toEqual(['a', 'b']);
    expect(store.stats(ref).documentCount).toBe(2);
  });

  it('stores nothing for an index part that does not exist', async () => {
    const other = { ...ref, physicalIndexId: 'p2' };
    expect(await store.appendEvents(other, ['a'], [encodeEvent(ev('a'))])).toEqual({ accepted: 0, unknown: ['a'], stored: [], firstSeq: 0 });
    expect(await allEvents(store, other)).toEqual([]);
  });

  it('keeps events and their sequence across a reopen, and reads a meta value written before events existed', async () => {
    await store.appendEvents(ref, ['a', 'b'], [encodeEvent(ev('a', 'one')), encodeEvent(ev('b', 'two'))]);
    await store.close();
    store = await PartitionStore.open(dir, 0, { sync: false });
    expect(store.eventCount(ref)).toBe(2);
    await store.appendEvents(ref, ['a'], [encodeEvent(ev('a', 'three'))]);
    expect((await allEvents(store, ref)).map((e) => e.query)).toEqual(['one', 'two', 'three']);

    // an old 20-byte meta value reads as zero events
    await store.close();
    const db = await RocksDb.open(PartitionStore.location(dir, 0));
    const keys = new IndexKeys(ref.tenantId, ref.physicalIndexId, ref.part);
    await db.write([{ type: 'put', key: keys.metaKey, value: encodeMeta({ count: 2, bytes: 0, parts: 1 }).subarray(0, 20) }], true);
    await db.close();
    store = await PartitionStore.open(dir, 0, { sync: false });
    expect(store.stats(ref).documentCount).toBe(2);
    expect(store.eventCount(ref)).toBe(0);
  });

  it('drops the events with the index part', async () => {
    await store.appendEvents(ref, ['a', 'b'], [encodeEvent(ev('a')), encodeEvent(ev('b'))]);
    expect(await store.drop(ref)).toBe(2);
    expect(store.eventCount(ref)).toBe(0);
    expect(await allEvents(store, ref)).toEqual([]);
    // nor do events arrive after it
    expect(await store.appendEvents(ref, ['a'], [encodeEvent(ev('a'))])).toMatchObject({ accepted: 0 });
    await store.close();
    const db = await RocksDb.open(PartitionStore.location(dir, 0));
    const keys = new IndexKeys(ref.tenantId, ref.physicalIndexId, ref.part);
    const it = db.iterate({ gte: keys.eventPrefix, lt: keys.eventEnd });
    expect(await it.take(10)).toEqual([]);
    await it.end();
    await db.close();
    store = await PartitionStore.open(dir, 0, { sync: false });
  });
});

describe('events through a shard node and its search host', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let node: ShardNode;
  let host: SearchHost;
  const nodeId = NodeId('n1');
  const r = refOf('acme', 'shop', { partitions: 4 });
  const docs = [
    doc('drill-1', 'Cordless Drill 18V', { brand: 'Makita', category: 'Power Tools' }),
    doc('drill-2', 'Cordless Drill Kit 20V', { brand: 'DeWalt', category: 'Power Tools' }),
    doc('drill-3', 'Hammer Drill Corded', { brand: 'Bosch', category: 'Power Tools' }),
    doc('saw-1', 'Circular Saw', { brand: 'Makita', category: 'Saws' }),
  ];

  async function start(): Promise<void> {
    node = new ShardNode({ nodeId, dataDir: dir, partitions: 4, store: { sync: false } });
    node.setPlacement(ShardNode.soloPlacement(nodeId, 4));
    host = new SearchHost({ dataDir: dir });
    node.setQueryHandler(host);
    node.onChange(host.onChange);
  }
  const autocomplete = async (query: string) => unpack((await node.query({ ref: r, kind: 'autocomplete', payload: pack({ query, limit: 3 }) })).result) as { suggestions: { id: string; score: number; metadata: { behavior?: { boost: number } } }[] };
  const typeahead = async (query: string, behavior?: unknown) =>
    unpack((await node.query({ ref: r, kind: 'typeahead', payload: pack({ query, limit: 10, ...(behavior ? { behavior } : {}) }) })).result) as { suggestions: { id: string; type: string; title: string }[] };

  beforeEach(async () => {
    ({ dir, remove } = await tempDir());
    await start();
    await node.upsert({ ref: r, documents: docs, maxDocuments: 0 });
  });
  afterEach(async () => {
    await node.close();
    await remove();
  });

  it('refuses a payload that is not a list of events', async () => {
    expect((await rejection(node.recordEvents({ ref: r, events: Buffer.from([0xc1]) }))).code).toBe('bad_request');
    expect((await rejection(node.recordEvents({ ref: r, events: pack({ doc_id: 'x' }) }))).code).toBe('bad_request');
    expect((await rejection(node.recordEvents({ ref: r, events: pack([{ doc_id: 'x', type: 'view' }]) }))).code).toBe('bad_request');
    expect(await node.recordEvents({ ref: r, events: pack([]) })).toEqual({ accepted: 0, unknownDocumentIds: [] });
  });

  it('learns from events at once and ranks the same after a restart (replayed from the log)', async () => {
    const before = await autocomplete('cordless drill');
    const lastBefore = before.suggestions[1]!.id;
    expect(before.suggestions[0]!.metadata.behavior).toBeUndefined();
    // people who type "cordless drill" buy the one ranked second
    const events = Array.from({ length: 6 }, (_, i) => ev(lastBefore, 'cordless drill', { session_id: `s${i}`, type: 'purchase', ts: Date.now() }));
    const res = await node.recordEvents({ ref: r, events: encodeEvents(events) });
    expect(res.accepted).toBe(6);
    const after = await autocomplete('cordless drill');
    expect(after.suggestions[0]!.id).toBe(lastBefore);
    expect(after.suggestions[0]!.metadata.behavior!.boost).toBeGreaterThan(1);
    // a mined query: typed by 3 sessions, the default minimum
    const mined = Array.from({ length: 3 }, (_, i) => ev('drill-3', 'best drill for concrete', { session_id: `m${i}`, ts: Date.now() }));
    await node.recordEvents({ ref: r, events: encodeEvents(mined) });
    expect((await typeahead('best dr')).suggestions[0]).toEqual({ id: 'q:best drill for concrete', type: 'query', title: 'best drill for concrete', score: expect.any(Number) });
    expect((await typeahead('best dr', { min_query_count: 4 })).suggestions.map((s) => s.id)).not.toContain('q:best drill for concrete');
    expect((await typeahead('best dr', { excluded_queries: ['Best  Drill for CONCRETE'] })).suggestions.map((s) => s.id)).not.toContain('q:best drill for concrete');

    const beforeRestart = await autocomplete('cordless drill');
    await node.close();
    await start();
    const replayed = await autocomplete('cordless drill');
    expect(replayed.suggestions.map((s) => [s.id, s.score])).toEqual(beforeRestart.suggestions.map((s) => [s.id, s.score]));
    // learned events before and after the restart add up
    await node.recordEvents({ ref: r, events: encodeEvents([ev('saw-1', 'cordless drill', { session_id: 'z', ts: Date.now() })]) });
    const stats = (await node.indexStats({ ref: r })).engine;
    expect((unpack(stats) as { behavior: { events: number } }).behavior.events).toBe(10);
  });

  it('forgets events and the engine with the dropped index, which takes no more writes', async () => {
    await node.recordEvents({ ref: r, events: encodeEvents([ev('drill-3', 'drill', { ts: Date.now() })]) });
    expect((await autocomplete('drill')).suggestions[0]!.metadata.behavior).toBeDefined();
    const part = indexPartId(r.tenantId, r.physicalIndexId, r.part);
    expect(host.loadedParts(r.partition)).toContain(part);
    await node.dropIndex({ ref: r });
    expect(host.loadedParts(r.partition)).not.toContain(part);
    expect((await rejection(node.upsert({ ref: r, documents: docs, maxDocuments: 0 }))).code).toBe('index_not_found');
    expect((await node.recordEvents({ ref: r, events: encodeEvents([ev('drill-3', 'drill', { ts: Date.now() })]) })).accepted).toBe(0);
    expect((await autocomplete('drill')).suggestions).toEqual([]);
  });
});
