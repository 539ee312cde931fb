// A part's first load with no snapshot to read builds its engine from the stored documents: in
// place on the event loop only for a few dozen documents, on the segment pool for anything larger
// (a build of thousands held every other query of the node up for most of a second). The pooled
// engine answers exactly as one built in place, and writes that arrive while it is being built
// are in it. A real shard node on RocksDB in a temporary directory, a real segment pool.
import path from 'node:path';
import { unpack } from 'msgpackr';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as pb from '../../../proto/gen/shard.js';
import { encodeDocument, type SuggestDocument } from '../../../node/runtime/document.js';
import { SuggestEngine } from '../../engine/engine.js';
import { ShardNode } from '../../shard-node.js';
import { quietLogger, refOf, tempDir } from '../../test/helpers.js';
import { SearchHost } from '../search-host.js';
import { SegmentPool } from '../segment-pool.js';
import { smallCatalog as catalog } from './small-catalog.js';

const QUERIES = ['sam', 'dewalt im', 'makita saw 11', 'oled t', 'bosch blender', 'phil', 'drill'];

let dir: { dir: string; remove: () => Promise<void> };
let pool: SegmentPool;
let shard: ShardNode;
let host: SearchHost;

beforeEach(async () => {
  dir = await tempDir('first-load-');
  pool = new SegmentPool({ threads: 1, graphDir: path.join(dir.dir, 'graph-builds') });
  shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
  shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
  host = new SearchHost({ dataDir: dir.dir, pool, refresh: { intervalMs: 10 } });
  shard.setQueryHandler(host);
  shard.onChange(host.onChange);
});

afterEach(async () => {
  await shard.close();
  await pool.close();
  await dir.remove();
});

const upsert = (ref: pb.IndexRef, docs: SuggestDocument[]) => shard.upsert({ ref, documents: docs.map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 });
const ids = async (ref: pb.IndexRef, kind: 'typeahead' | 'autocomplete', query: string) =>
  ((await shard.queryValue({ ref, kind, payload: { query, limit: 10, ...(kind === 'autocomplete' ? { mode: 'fts_only' } : {}) } })) as { suggestions: { id: string }[] }).suggestions.map((s) => s.id);

function builtInPlace(docs: SuggestDocument[]): SuggestEngine {
  const engine = new SuggestEngine({});
  engine.upsert(docs);
  engine.optimize();
  return engine;
}

describe("a part's first load", () => {
  it('builds a part of hundreds of documents on the segment pool, with the answers of an engine built in place', async () => {
    const ref = refOf('t1', 'large', { partitions: 1 });
    const docs = catalog(600);
    await upsert(ref, docs);
    expect(host.enginesLoaded).toBe(0);
    // in the store's order (by id), which decides ties
    const reference = builtInPlace([...docs].sort((a, b) => (a.id < b.id ? -1 : 1)));
    for (const q of QUERIES) {
      expect(await ids(ref, 'typeahead', q)).toEqual(reference.typeahead({ query: q, limit: 10 }).suggestions.map((s) => s.id));
      expect(await ids(ref, 'autocomplete', q)).toEqual(reference.autocomplete({ query: q, limit: 10, mode: 'fts_only' }).suggestions.map((s) => s.id));
    }
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);

  it('builds a part of a few dozen documents in place', async () => {
    const ref = refOf('t1', 'small', { partitions: 1 });
    await upsert(ref, catalog(40));
    expect((await ids(ref, 'typeahead', 'sam')).length).toBeGreaterThan(0);
    expect(host.engineBuilds).toEqual({ eventLoop: 1, pool: 0 });
  });

  it('lets an engine go when its partition is released while the pool builds it', async () => {
    const ref = refOf('t1', 'moving', { partitions: 1 });
    await upsert(ref, catalog(600));
    const close = vi.spyOn(SuggestEngine.prototype, 'close');
    try {
      const first = ids(ref, 'typeahead', 'sam');
      // the partition's data is replaced (a copy arrived) while the first load is on the pool
      host.forgetPartition(ref.partition);
      expect((await first).length).toBeGreaterThan(0);
      expect(host.enginesLoaded).toBe(0);
      expect(close).toHaveBeenCalledTimes(1);
      // the next query loads it again, and that engine stays
      expect((await ids(ref, 'typeahead', 'sam')).length).toBeGreaterThan(0);
      expect(host.enginesLoaded).toBe(1);
      expect(host.engineBuilds.pool).toBe(2);
      expect(close).toHaveBeenCalledTimes(1);
    } finally {
      close.mockRestore();
    }
  }, 30_000);

  it('holds the writes that arrive while the pool builds it', async () => {
    const ref = refOf('t1', 'busy', { partitions: 1 });
    await upsert(ref, catalog(600));
    // the first query starts the build; the write lands before it is done
    const first = ids(ref, 'typeahead', 'sam');
    await upsert(ref, [{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    expect((await first).length).toBeGreaterThan(0);
    expect(await ids(ref, 'typeahead', 'quokka')).toContain('late');
    expect(await ids(ref, 'autocomplete', 'quokka espresso')).toContain('late');
    expect(host.engineBuilds.pool).toBe(1);
  }, 30_000);
});

describe('a query while its part loads', () => {
  const replace = async (opts: ConstructorParameters<typeof SearchHost>[0]) => {
    await shard.close();
    shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
    shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
    host = new SearchHost(opts);
    shard.setQueryHandler(host);
    shard.onChange(host.onChange);
  };
  const engineStats = async (ref: pb.IndexRef) => unpack((await shard.indexStats({ ref })).engine) as { loaded: boolean; loading?: boolean; indexing?: number };
  const answer = (ref: pb.IndexRef, kind: 'typeahead' | 'autocomplete' | 'predict', payload: Record<string, unknown>) =>
    shard.queryValue({ ref, kind, payload }) as Promise<{ suggestions?: unknown[]; candidates?: unknown[]; indexing?: number; profile?: { load_wait_ms?: number } }>;

  it('is answered from no documents once loadWaitMs has passed, says how many it did not see, and finds them once the part is loaded', async () => {
    await replace({ dataDir: dir.dir, pool, refresh: { intervalMs: 10 }, loadWaitMs: 1 });
    const ref = refOf('t1', 'loading', { partitions: 1 });
    await upsert(ref, catalog(600));
    expect(await engineStats(ref)).toEqual({ loaded: false });
    const first = await answer(ref, 'typeahead', { query: 'sam', limit: 10, profile: true });
    expect(first.suggestions).toEqual([]);
    expect(first.indexing).toBe(600);
    expect(first.profile?.load_wait_ms).toBeGreaterThanOrEqual(1);
    expect(await engineStats(ref)).toEqual({ loaded: false, loading: true, indexing: 600 });
    const auto = await answer(ref, 'autocomplete', { query: 'samsung', limit: 10, mode: 'hybrid' });
    expect(auto).toMatchObject({ suggestions: [], indexing: 600 });
    const predict = await answer(ref, 'predict', { query: 'samsung' });
    expect(predict).toMatchObject({ suggestions: [], candidates: [], indexing: 600 });
    // the request is still checked
    await expect(answer(ref, 'typeahead', { query: 'sam', limit: 500 })).rejects.toThrow(/limit/);
    expect(host.answersDuringLoad).toBeGreaterThanOrEqual(3);
    // one load, not one per query
    await vi.waitFor(() => expect(host.enginesLoaded).toBe(1), { timeout: 20_000, interval: 20 });
    await vi.waitFor(async () => expect((await engineStats(ref)).loaded).toBe(true), { timeout: 20_000, interval: 20 });
    const later = await answer(ref, 'typeahead', { query: 'sam', limit: 10 });
    expect(later.suggestions?.length).toBeGreaterThan(0);
    expect(later.indexing).toBeUndefined();
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);

  it('waits for a load that ends within loadWaitMs, and by default for as long as the load takes', async () => {
    for (const loadWaitMs of [20_000, undefined]) {
      await replace({ dataDir: dir.dir, pool, refresh: { intervalMs: 10 }, ...(loadWaitMs !== undefined ? { loadWaitMs } : {}) });
      const ref = refOf('t1', `waits-${loadWaitMs ?? 'default'}`, { partitions: 1 });
      await upsert(ref, catalog(600));
      const first = await answer(ref, 'typeahead', { query: 'sam', limit: 10, profile: true });
      expect(first.suggestions?.length).toBeGreaterThan(0);
      expect(first.indexing).toBeUndefined();
      expect(first.profile?.load_wait_ms).toBeGreaterThan(0);
      expect(host.answersDuringLoad).toBe(0);
    }
  }, 60_000);

  it('counts a large part whose writes just paused as indexing before its warm-up starts, and a small one not', async () => {
    await replace({ dataDir: dir.dir, pool, refresh: { intervalMs: 10 }, warmAfterWritesMs: 60_000 });
    const big = refOf('t1', 'fresh', { partitions: 1 });
    const small = refOf('t1', 'few', { partitions: 1 });
    await upsert(big, catalog(2_000));
    await upsert(small, catalog(100));
    expect(await engineStats(big)).toEqual({ loaded: false, loading: false, indexing: 2_000 });
    expect(await engineStats(small)).toEqual({ loaded: false });
  }, 30_000);
});

describe('a warm query', () => {
  const warm = (ref: pb.IndexRef, payload?: unknown) => shard.queryValue({ ref, kind: 'warm', payload }) as { state: string; documents: number };

  it('starts the load without a search and answers at once; the first query then builds nothing', async () => {
    const ref = refOf('t1', 'staged', { partitions: 1 });
    await upsert(ref, catalog(600));
    expect(warm(ref)).toEqual({ state: 'loading', documents: 600 });
    // asked again while it loads: the same load, not a second one
    expect(warm(ref)).toEqual({ state: 'loading', documents: 600 });
    await vi.waitFor(() => expect(warm(ref).state).toBe('ready'), { timeout: 20_000, interval: 20 });
    expect(warm(ref)).toEqual({ state: 'ready', documents: 600 });
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
    expect(host.enginesLoaded).toBe(1);
    expect(host.warmLoads).toBe(1);
    expect((await ids(ref, 'typeahead', 'sam')).length).toBeGreaterThan(0);
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);

  it('leaves a part under min_documents to its first query', async () => {
    const ref = refOf('t1', 'few', { partitions: 1 });
    await upsert(ref, catalog(40));
    expect(warm(ref, { min_documents: 41 })).toEqual({ state: 'skipped', documents: 40 });
    expect(host.enginesLoaded).toBe(0);
    expect(warm(ref, { min_documents: 40 }).state).toBe('loading');
    await vi.waitFor(() => expect(warm(ref).state).toBe('ready'), { timeout: 20_000, interval: 20 });
    // once loaded, it is ready whatever the threshold
    expect(warm(ref, { min_documents: 1_000 })).toEqual({ state: 'ready', documents: 40 });
  }, 30_000);

  it('is refused for a part this node does not own, like any query', async () => {
    const ref = { ...refOf('t1', 'elsewhere', { partitions: 1 }), partition: 5 };
    expect(() => warm(ref)).toThrow();
    expect(host.enginesLoaded).toBe(0);
  });
});

describe('the warm-up after writes', () => {
  it('loads a large part with no snapshot once its writes pause, not while they go on, and leaves small parts alone', async () => {
    // a host that warms parts a second after their last write
    await shard.close();
    shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
    shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
    host = new SearchHost({ dataDir: dir.dir, pool, refresh: { intervalMs: 10 }, warmAfterWritesMs: 1_000 });
    shard.setQueryHandler(host);
    shard.onChange(host.onChange);
    const big = refOf('t1', 'feed', { partitions: 1 });
    const small = refOf('t1', 'tiny', { partitions: 1 });
    const docs = catalog(2_400);
    // writes 100 ms apart: never quiet for a second
    for (let i = 0; i < docs.length; i += 400) {
      await upsert(big, docs.slice(i, i + 400));
      await new Promise((r) => setTimeout(r, 100));
      expect(host.enginesLoaded).toBe(0);
    }
    await upsert(small, catalog(100));
    await vi.waitFor(() => expect(host.enginesLoaded).toBe(1), { timeout: 10_000, interval: 20 });
    expect(host.warmLoads).toBe(1);
    await vi.waitFor(() => expect((shard.queryValue({ ref: big, kind: 'warm', payload: {} }) as { state: string }).state).toBe('ready'), { timeout: 20_000, interval: 20 });
    // the small part is still left to its first query
    await new Promise((r) => setTimeout(r, 1_500));
    expect(host.enginesLoaded).toBe(1);
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
    expect((await ids(big, 'typeahead', 'sam')).length).toBeGreaterThan(0);
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);
});
