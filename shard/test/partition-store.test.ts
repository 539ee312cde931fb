import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SuggestError } from '../../node/runtime/errors.js';
import { FORMAT_KEY, IndexKeys } from '../index-keys.js';
import { PartitionStore, type IndexPartRef } from '../partition-store.js';
import { RocksDb } from '../rocks-db.js';
import { doc, rejection, tempDir, titleOf } from './helpers.js';

const ref = (tenantId: string, physicalIndexId: string, part = 0, parts = 1): IndexPartRef => ({ tenantId, physicalIndexId, part, parts });

describe('PartitionStore', () => {
  let dir: string;
  let remove: () => Promise<void>;
  let store: PartitionStore;

  beforeEach(async () => {
    ({ dir, remove } = await tempDir());
    store = await PartitionStore.open(dir, 3);
  });
  afterEach(async () => {
    await store.close();
    await remove();
  });

  const idsOf = async (r: IndexPartRef) => (await store.list(r, { limit: 10_000 })).documents.map((d) => d.id);

  it('creates, replaces, reads and deletes documents with correct counts', async () => {
    const r = ref('acme', 'products');
    expect(await store.upsert(r, [doc('1', 'tv'), doc('2', 'radio'), doc('3', 'phone')])).toEqual({ upserted: 3, created: 3, documentCount: 3 });
    expect(await store.upsert(r, [doc('2', 'radio v2'), doc('4', 'laptop')])).toEqual({ upserted: 2, created: 1, documentCount: 4 });

    const got = await store.get(r, '2');
    expect(got.found).toBe(true);
    expect(got.document?.id).toBe('2');
    expect(titleOf(got.document?.body)).toBe('radio v2');
    expect(await store.get(r, 'missing')).toEqual({ found: false, document: undefined });

    expect(await store.delete(r, '1')).toEqual({ deleted: true, documentCount: 3 });
    expect(await store.delete(r, '1')).toEqual({ deleted: false, documentCount: 3 });
    expect((await store.get(r, '1')).found).toBe(false);
    expect(store.stats(r).documentCount).toBe(3);
    expect(store.totals()).toMatchObject({ partition: 3, documentCount: 3, indexCount: 1 });
  });

  it('counts a repeated id in one batch once and keeps the last body', async () => {
    const r = ref('acme', 'products');
    expect(await store.upsert(r, [doc('a', 'first'), doc('b'), doc('a', 'second')])).toEqual({ upserted: 3, created: 2, documentCount: 2 });
    expect(titleOf((await store.get(r, 'a')).document?.body)).toBe('second');
    expect(await idsOf(r)).toEqual(['a', 'b']);
  });

  it('tracks stored bytes as key + value bytes through replace, delete and drop', async () => {
    const r = ref('acme', 'products');
    const keys = new IndexKeys('acme', 'products', 0);
    const d1 = doc('1', 'short');
    const d2 = doc('2', 'another');
    await store.upsert(r, [d1, d2]);
    const size = (d: typeof d1) => keys.docKey(d.id).length + d.body.length;
    expect(store.stats(r).storedBytes).toBe(size(d1) + size(d2));
    const d1b = doc('1', 'a much longer title than before');
    await store.upsert(r, [d1b]);
    expect(store.stats(r).storedBytes).toBe(size(d1b) + size(d2));
    await store.delete(r, '2');
    expect(store.stats(r).storedBytes).toBe(size(d1b));
    expect(store.totals().storedBytes).toBe(size(d1b));
    await store.drop(r);
    expect(store.totals()).toMatchObject({ documentCount: 0, indexCount: 0, storedBytes: 0 });
  });

  describe('document limit', () => {
    it('refuses a batch that would pass max_documents and writes nothing of it', async () => {
      const r = ref('acme', 'products');
      await store.upsert(r, [doc('1'), doc('2'), doc('3')], 4);
      const err = await rejection(store.upsert(r, [doc('2', 'changed'), doc('4'), doc('5')], 4));
      expect(err).toBeInstanceOf(SuggestError);
      expect(err.code).toBe('document_limit');
      expect(err.status).toBe(409);
      expect(err.message).toContain('limit of 4');
      // nothing of the refused batch, not even the replacement, was applied
      expect(await idsOf(r)).toEqual(['1', '2', '3']);
      expect(titleOf((await store.get(r, '2')).document?.body)).toBe('title of 2');
      expect(store.stats(r).documentCount).toBe(3);
    });

    it('accepts a batch that reaches the limit exactly, and replacements at the limit', async () => {
      const r = ref('acme', 'products');
      expect((await store.upsert(r, [doc('1'), doc('2')], 3)).documentCount).toBe(2);
      expect((await store.upsert(r, [doc('3')], 3)).documentCount).toBe(3);
      expect(await store.upsert(r, [doc('1', 'replaced')], 3)).toMatchObject({ created: 0, documentCount: 3 });
      expect((await rejection(store.upsert(r, [doc('4')], 3))).code).toBe('document_limit');
    });

    it('leaves no trace of a refused first batch of a new index', async () => {
      const r = ref('acme', 'fresh');
      expect((await rejection(store.upsert(r, [doc('1'), doc('2')], 1))).code).toBe('document_limit');
      expect(store.totals().indexCount).toBe(0);
      expect([...store.indexParts()]).toEqual([]);
      await store.close();
      store = await PartitionStore.open(dir, 3);
      expect(store.totals()).toMatchObject({ documentCount: 0, indexCount: 0 });
    });
  });

  it('lists in id order with offset, limit and after_id', async () => {
    const r = ref('acme', 'products');
    const ids = Array.from({ length: 25 }, (_, i) => `doc-${String(i).padStart(2, '0')}`);
    // insert out of order: listing order must not depend on write order
    await store.upsert(r, [...ids].reverse().map((id) => doc(id)));
    const page = async (offset: number, limit: number) => (await store.list(r, { offset, limit })).documents.map((d) => d.id);
    expect(await page(0, 10)).toEqual(ids.slice(0, 10));
    expect(await page(10, 10)).toEqual(ids.slice(10, 20));
    expect(await page(20, 10)).toEqual(ids.slice(20));
    expect(await page(25, 10)).toEqual([]);
    expect(await page(100, 10)).toEqual([]);
    expect((await store.list(r, { offset: 20, limit: 10 })).total).toBe(25);
    const after = await store.list(r, { afterId: 'doc-07', limit: 3 });
    expect(after.documents.map((d) => d.id)).toEqual(['doc-08', 'doc-09', 'doc-10']);
    // after_id need not exist; offset applies after it
    expect((await store.list(r, { afterId: 'doc-07x', offset: 2, limit: 2 })).documents.map((d) => d.id)).toEqual(['doc-10', 'doc-11']);
    expect(titleOf((await store.list(r, { limit: 1 })).documents[0]?.body)).toBe('title of doc-00');
    // 0 means the default page
    expect((await store.list(r, { limit: 0 })).documents).toHaveLength(25);
  });

  it('lists non-ASCII and control-character ids in code point order', async () => {
    const r = ref('acme', 'products');
    const ids = ['z', 'é', 'a\u0000b', 'a', '日本', '😀', 'a\u00ffb', 'A'];
    await store.upsert(r, ids.map((id) => doc(id)));
    const byCodePoint = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(await idsOf(r)).toEqual(byCodePoint);
    for (const id of ids) expect((await store.get(r, id)).document?.id).toBe(id);
  });

  it('drops every document of one index part in atomic chunks and leaves the rest alone', async () => {
    await store.close();
    store = await PartitionStore.open(dir, 3, { dropChunk: 7 });
    const victim = ref('acme', 'products');
    const neighbour = ref('acme', 'products2');
    const otherPart = ref('acme', 'products', 1, 2);
    await store.upsert(victim, Array.from({ length: 20 }, (_, i) => doc(`v${i}`)));
    await store.upsert(neighbour, [doc('v1'), doc('n1')]);
    await store.upsert(otherPart, [doc('v2')]);

    expect(await store.drop(victim)).toBe(20);
    expect(await idsOf(victim)).toEqual([]);
    expect(store.stats(victim)).toEqual({ documentCount: 0, storedBytes: 0 });
    expect(await idsOf(neighbour)).toEqual(['n1', 'v1']);
    expect(await idsOf(otherPart)).toEqual(['v2']);
    expect(store.totals()).toMatchObject({ documentCount: 3, indexCount: 2 });
    expect(await store.drop(victim)).toBe(0);

    // a write that arrives after the drop does not bring the part back (physical ids are never reused)
    expect((await rejection(store.upsert(victim, [doc('late')]))).code).toBe('index_not_found');
    await store.upsert(neighbour, [doc('n2')]);
    await store.close();
    store = await PartitionStore.open(dir, 3);
    expect(store.totals()).toMatchObject({ documentCount: 4, indexCount: 2 });
    expect(await idsOf(victim)).toEqual([]);
    expect((await rejection(store.upsert(victim, [doc('later')]))).code).toBe('index_not_found');
  });

  it('marks a part dropped before its first write, and passes the mark to a copy of the partition', async () => {
    const never = ref('acme', 'never-written');
    expect(await store.drop(never)).toBe(0);
    expect((await rejection(store.upsert(never, [doc('1')]))).code).toBe('index_not_found');
    const written = ref('acme', 'written');
    await store.upsert(written, [doc('1')]);
    await store.drop(written);
    // a replica or a move's target fed the raw keys refuses the late write too
    const { dir: otherDir, remove: removeOther } = await tempDir();
    const copy = await PartitionStore.open(otherDir, 3);
    try {
      for await (const batch of store.scanRaw()) await copy.applyRaw(batch.map((e) => ({ type: 'put' as const, key: e.key, value: e.value })));
      expect((await rejection(copy.upsert(never, [doc('1')]))).code).toBe('index_not_found');
      expect((await rejection(copy.upsert(written, [doc('2')]))).code).toBe('index_not_found');
      expect(copy.totals()).toMatchObject({ documentCount: 0, indexCount: 0 });
      expect(await copy.upsert(ref('acme', 'alive'), [doc('1')])).toMatchObject({ created: 1 });
    } finally {
      await copy.close();
      await removeOther();
    }
  });

  it('keeps the same doc id apart across tenants, indexes and parts', async () => {
    const refs = [ref('a', 'x'), ref('a', 'y'), ref('b', 'x'), ref('a', 'x', 1, 2)];
    for (const [i, r] of refs.entries()) await store.upsert(r, [doc('same', `owner ${i}`), doc(`only-${i}`)]);
    for (const [i, r] of refs.entries()) {
      expect(titleOf((await store.get(r, 'same')).document?.body)).toBe(`owner ${i}`);
      expect(await idsOf(r)).toEqual([`only-${i}`, 'same']);
      expect(store.stats(r).documentCount).toBe(2);
    }
    await store.delete(refs[0]!, 'same');
    for (const r of refs.slice(1)) expect((await store.get(r, 'same')).found).toBe(true);
    expect(store.totals()).toMatchObject({ documentCount: 7, indexCount: 4 });
  });

  it('cannot be fooled by ids that concatenate to the same bytes', async () => {
    // without length prefixes these pairs would share a key prefix or a whole key
    const pairs: [IndexPartRef, IndexPartRef][] = [
      [ref('a', 'bc'), ref('ab', 'c')],
      [ref('a', 'b\u0000c'), ref('a\u0000b', 'c')],
      [ref('t', 'p'), ref('t', 'p\u0000\u0000\u0000\u0000')],
      [ref('t', 'p', 0), ref('t', 'p', 256)],
    ];
    for (const [r1, r2] of pairs) {
      await store.upsert(r1, [doc('d', 'one'), doc('\u0000\u0000\u0000\u0001d', 'tricky')]);
      await store.upsert(r2, [doc('d', 'two')]);
      expect(titleOf((await store.get(r1, 'd')).document?.body)).toBe('one');
      expect(titleOf((await store.get(r2, 'd')).document?.body)).toBe('two');
      expect(await idsOf(r2)).toEqual(['d']);
      expect(await idsOf(r1)).toEqual(['\u0000\u0000\u0000\u0001d', 'd']);
    }
    // a tenant whose name is a prefix of another's lists only its own documents
    await store.upsert(ref('ten', 'idx'), [doc('1')]);
    await store.upsert(ref('tenant', 'idx'), [doc('2')]);
    expect(await idsOf(ref('ten', 'idx'))).toEqual(['1']);
  });

  it('rejects ids it cannot store faithfully', async () => {
    const r = ref('acme', 'products');
    expect((await rejection(store.upsert(r, [doc('')]))).code).toBe('bad_request');
    expect((await rejection(store.upsert(r, [doc('ok'), doc('bad\ud800')]))).code).toBe('bad_request');
    expect((await rejection(store.upsert(r, [doc('x'.repeat(5000))]))).code).toBe('bad_request');
    expect((await rejection(store.upsert(ref('', 'products'), [doc('x')]))).code).toBe('bad_request');
    expect((await rejection(store.upsert(ref('t'.repeat(256), 'products'), [doc('x')]))).code).toBe('bad_request');
    expect(store.totals().documentCount).toBe(0);
  });

  it('refuses overlapping writes to one index part (they must come through the mailbox)', async () => {
    const r = ref('acme', 'products');
    await store.upsert(r, [doc('seed')]);
    const first = store.upsert(r, [doc('1')]);
    await expect(store.upsert(r, [doc('2')])).rejects.toThrow(/overlapping writes/);
    await first;
    // different parts may write concurrently
    await Promise.all([store.upsert(ref('acme', 'a'), [doc('1')]), store.upsert(ref('acme', 'b'), [doc('1')])]);
  });

  it('keeps documents and rebuilds counters across close and reopen', async () => {
    const a = ref('acme', 'products');
    const b = ref('other', 'catalog', 2, 4);
    await store.upsert(a, Array.from({ length: 50 }, (_, i) => doc(`a${i}`)));
    await store.upsert(b, [doc('b1'), doc('b2')]);
    await store.delete(a, 'a7');
    const before = { a: store.stats(a), b: store.stats(b), totals: store.totals() };
    await store.close();

    store = await PartitionStore.open(dir, 3);
    expect(store.stats(a)).toEqual(before.a);
    expect(store.stats(b)).toEqual(before.b);
    expect(store.totals()).toEqual(before.totals);
    expect(store.totals()).toMatchObject({ documentCount: 51, indexCount: 2 });
    expect([...store.indexParts()].sort((x, y) => x.tenantId.localeCompare(y.tenantId))).toEqual([
      { tenantId: 'acme', physicalIndexId: 'products', part: 0, parts: 1, documentCount: 49, storedBytes: before.a.storedBytes },
      { tenantId: 'other', physicalIndexId: 'catalog', part: 2, parts: 4, documentCount: 2, storedBytes: before.b.storedBytes },
    ]);
    expect((await store.get(a, 'a49')).found).toBe(true);
    expect((await store.get(a, 'a7')).found).toBe(false);
  });

  it('scans a part in id order in batches', async () => {
    const r = ref('acme', 'products');
    await store.upsert(r, Array.from({ length: 23 }, (_, i) => doc(`d${String(i).padStart(2, '0')}`)));
    const batches: string[][] = [];
    for await (const batch of store.scan(r, 10)) batches.push(batch.map((d) => d.id));
    expect(batches.map((b) => b.length)).toEqual([10, 10, 3]);
    expect(batches.flat()).toEqual(await idsOf(r));
    const none: unknown[] = [];
    for await (const batch of store.scan(ref('acme', 'nothing'))) none.push(batch);
    expect(none).toEqual([]);
  });

  it('writes every acknowledged batch with a synced WAL', async () => {
    const spy = vi.spyOn(RocksDb.prototype, 'write');
    try {
      const r = ref('acme', 'products');
      await store.upsert(r, [doc('1'), doc('2')]);
      await store.delete(r, '1');
      await store.drop(r);
      expect(spy).toHaveBeenCalledTimes(3);
      for (const call of spy.mock.calls) expect(call[1]).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('answers unavailable once closed', async () => {
    await store.close();
    expect((await rejection(store.get(ref('acme', 'products'), '1'))).code).toBe('unavailable');
    store = await PartitionStore.open(dir, 3);
  });

  it('refuses to open a partition written in another storage format', async () => {
    await store.close();
    const db = await RocksDb.open(PartitionStore.location(dir, 3));
    await db.write([{ type: 'put', key: FORMAT_KEY, value: Buffer.from('999') }], true);
    await db.close();
    await expect(PartitionStore.open(dir, 3)).rejects.toThrow(/format 999/);
    // the failed open released the RocksDB lock
    const db2 = await RocksDb.open(PartitionStore.location(dir, 3));
    await db2.write([{ type: 'put', key: FORMAT_KEY, value: Buffer.from('1') }], true);
    await db2.close();
    store = await PartitionStore.open(dir, 3);
  });
});
