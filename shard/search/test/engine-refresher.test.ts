// Engine mechanics around the search host: batches built on the segment pool (real piscina
// worker threads) must give the same answers as batches built in place; documents in a build
// that is not published yet stay correct (overwrites and deletes made meanwhile win); a query
// never sees less than the acknowledged writes, even in the middle of a bulk load, and the
// event loop keeps running while the pool builds; fresh writes get published by the timer. ANN
// graphs built on the pool's graph thread are the graphs a build on the owning thread makes.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeDocument, type SuggestDocument } from '../../../node/runtime/document.js';
import { SuggestEngine } from '../../engine/engine.js';
import { SegmentBuilder } from '../../engine/segment-builder.js';
import { HashedNgramEmbedder } from '../../engine/embedder.js';
import { VectorGraphs, type GraphBuilder } from '../../engine/vector-graphs.js';
import type { VectorBackend } from '../../engine/vector-index.js';
import { ShardNode } from '../../shard-node.js';
import { quietLogger, refOf, tempDir } from '../../test/helpers.js';
import { SearchHost } from '../search-host.js';
import { SegmentPool } from '../segment-pool.js';
import type { TypeaheadSuggestion } from '../../engine/types.js';

const BRANDS = ['Samsung', 'Sony', 'Dewalt', 'Makita', 'Bosch', 'Apple', 'Philips', 'Panasonic'];
const THINGS = ['Drill Driver', 'Impact Wrench', 'OLED TV', 'Soundbar', 'Headphones', 'Circular Saw', 'Blender', 'Toaster Oven'];

function catalog(n: number, prefix = 'd'): SuggestDocument[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `${prefix}${i}`,
    title: `${BRANDS[i % BRANDS.length]} ${THINGS[(i >> 3) % THINGS.length]} ${100 + (i % 97)}`,
    desc: '',
    manufacturer: BRANDS[i % BRANDS.length]!,
    raw: { price: i % 500 },
  }));
}

const ids = (r: { suggestions: { id: string }[] }) => r.suggestions.map((s) => s.id);
const PREFIXES = ['s', 'sam', 'samsung dr', 'dewalt imp', 'sound', 'bosch c', 'phil', 'toaster o', 'mak 1'];

describe('segment pool', () => {
  const pool = new SegmentPool({ threads: 2 });
  afterAll(() => pool.close());

  it('builds, loads and merges segments that answer exactly like segments built in place', async () => {
    const docs = catalog(1200);
    const full = SuggestEngine.fromSegments([new SegmentBuilder().addAll(docs).build()]);
    const fromDocs = SuggestEngine.fromSegments([await pool.build(docs, 2)]);
    const fromBodies = SuggestEngine.fromSegments([await pool.fromBodies(docs.map((d) => encodeDocument(d)), 2)]);
    // two segments with deletes, merged on the pool
    const split = SuggestEngine.fromSegments([await pool.build(docs.slice(0, 600), 2), await pool.build(docs.slice(600), 2)], { autoMerge: false, compactDeleted: 1 });
    split.remove(['d3', 'd700']);
    const plan = split.planMerge();
    expect(plan).not.toBeNull();
    split.remove(['d5']); // deleted while the merge is built: must stay deleted
    expect(split.commitMerge(plan!, await pool.merge(plan!, 2))).toBe(true);
    expect(split.stats().segments).toBe(1);
    // the same steps with the merge built in place
    const local = SuggestEngine.fromSegments([new SegmentBuilder().addAll(docs.slice(0, 600)).build(), new SegmentBuilder().addAll(docs.slice(600)).build()], { autoMerge: false, compactDeleted: 1 });
    local.remove(['d3', 'd700']);
    const localPlan = local.planMerge()!;
    local.remove(['d5']);
    expect(local.commitMerge(localPlan, new SegmentBuilder().addAll(localPlan.documents).build())).toBe(true);
    for (const query of PREFIXES) {
      expect(ids(fromDocs.typeahead({ query, limit: 10 }))).toEqual(ids(full.typeahead({ query, limit: 10 })));
      expect(ids(fromBodies.typeahead({ query, limit: 10 }))).toEqual(ids(fromDocs.typeahead({ query, limit: 10 })));
      expect(ids(split.typeahead({ query, limit: 10 }))).toEqual(ids(local.typeahead({ query, limit: 10 })));
      expect(ids(split.autocomplete({ query, limit: 10, mode: 'fts_only' }))).toEqual(ids(local.autocomplete({ query, limit: 10, mode: 'fts_only' })));
    }
    expect(split.documentCount).toBe(1197);
  });
});

describe('ANN graphs built on the graph thread', () => {
  const buildDir = mkdtempSync(path.join(tmpdir(), 'graph-builds-'));
  const pool = new SegmentPool({ threads: 1, graphDir: buildDir });
  afterAll(async () => {
    await pool.close();
    rmSync(buildDir, { recursive: true, force: true });
  });
  // 3,000 documents: above the size (2,048) under which a segment is scanned instead
  const seg = new SegmentBuilder().addAll(catalog(3000)).build();
  const queries = ['samsung oled', 'dewalt drill 120', 'bosch saw', 'toaster'].map((q) => new HashedNgramEmbedder().embed([q])[0]!);
  const answers = (graphs: VectorGraphs, backend: VectorBackend) =>
    queries.map((q) => {
      const { index, method } = graphs.indexFor(seg, backend);
      expect(method).toBe('ann');
      return index.search(q, 10);
    });

  it('gives the graphs (hnswlib and usearch) a build on the owning thread gives, and keeps their files while the segment stays', async () => {
    const here = new VectorGraphs({ build: 'sync' });
    const there = new VectorGraphs();
    there.useBuilder(pool);
    await there.whenReady([seg], 'hnswlib');
    expect(there.builtElsewhere).toEqual({ built: 1, failed: 0 });
    expect(pool.graphStatistics()).toMatchObject({ inProgress: 0, built: 1, failed: 0 });
    expect(there.status([seg], 'hnswlib')).toMatchObject({ ready: true, built: 3000, total: 3000 });
    expect(answers(there, 'hnswlib')).toEqual(answers(here, 'hnswlib'));
    await there.whenReady([seg], 'usearch');
    expect(there.builtElsewhere).toEqual({ built: 2, failed: 0 });
    expect(answers(there, 'usearch')).toEqual(answers(here, 'usearch'));
    // the files stay while the segment does (query threads read them), and go with it
    expect(readdirSync(buildDir).sort()).toEqual(['1.hnswlib', '2.usearch']);
    expect(there.fileOf(seg, 'usearch')).toBe(path.join(buildDir, '2.usearch'));
    there.retain([]);
    expect(readdirSync(buildDir)).toEqual([]);
  });

  it('builds in slices on the owning thread when the builder fails or writes a graph that does not fit', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bad-graphs-'));
    const failing: GraphBuilder = { buildGraph: () => Promise.reject(new Error('no thread')) };
    let n = 0;
    const garbage: GraphBuilder = {
      buildGraph: () => {
        const file = path.join(dir, `g${n++}`);
        writeFileSync(file, 'not a graph');
        return Promise.resolve(file);
      },
    };
    const here = new VectorGraphs({ build: 'sync' });
    // (usearch takes down the process on a file that is not a graph rather than report it; the
    // graph thread writes each file whole before it answers, so only a failed build is tried)
    // (a deferred hnswlib file is read, and found bad, at the first search: the next test)
    const cases: [VectorBackend, GraphBuilder, boolean][] = [
      ['hnswlib', failing, false],
      ['hnswlib', failing, true],
      ['hnswlib', garbage, false],
      ['usearch', failing, false],
      ['usearch', failing, true],
    ];
    for (const [backend, builder, deferReads] of cases) {
      const graphs = new VectorGraphs();
      graphs.useBuilder(builder, { deferReads });
      await graphs.whenReady([seg], backend);
      expect(graphs.builtElsewhere, `${backend} deferReads ${deferReads}`).toEqual({ built: 0, failed: 1 });
      expect(answers(graphs, backend)).toEqual(answers(here, backend));
    }
    // the owner removed the file it could not read
    expect(readdirSync(dir)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('defers reading an hnswlib file until the owner searches it, saves it as it is meanwhile, and rebuilds one that does not fit', async () => {
    const here = new VectorGraphs({ build: 'sync' });
    const deferred = new VectorGraphs();
    deferred.useBuilder(pool, { deferReads: true });
    await deferred.whenReady([seg], 'hnswlib');
    // complete, but not held in memory
    expect(deferred.status([seg], 'hnswlib')).toMatchObject({ ready: true, built: 3000, bytes: 0 });
    const saved = mkdtempSync(path.join(tmpdir(), 'saved-graphs-'));
    expect(deferred.save([seg], saved)).toBe(1);
    const restored = new VectorGraphs();
    expect(restored.load([seg], saved)).toBe(1);
    expect(answers(restored, 'hnswlib')).toEqual(answers(here, 'hnswlib'));
    rmSync(saved, { recursive: true, force: true });
    // the first search reads it
    expect(answers(deferred, 'hnswlib')).toEqual(answers(here, 'hnswlib'));
    expect(deferred.status([seg], 'hnswlib').bytes).toBeGreaterThan(0);
    deferred.retain([]);

    // a deferred file that does not fit: the search that finds out scans, and the graph is built again here
    const dir = mkdtempSync(path.join(tmpdir(), 'bad-deferred-'));
    const garbage: GraphBuilder = {
      buildGraph: () => {
        const file = path.join(dir, 'g');
        writeFileSync(file, 'not a graph');
        return Promise.resolve(file);
      },
    };
    const bad = new VectorGraphs();
    bad.useBuilder(garbage, { deferReads: true });
    await bad.whenReady([seg], 'hnswlib');
    expect(bad.indexFor(seg, 'hnswlib').method).toBe('exact');
    expect(bad.builtElsewhere).toEqual({ built: 1, failed: 1 });
    expect(readdirSync(dir)).toEqual([]);
    await bad.whenReady([seg], 'hnswlib');
    expect(answers(bad, 'hnswlib')).toEqual(answers(here, 'hnswlib'));
    rmSync(dir, { recursive: true, force: true });
  });

  it('drops a graph that arrives for a segment the engine no longer has', async () => {
    const graphs = new VectorGraphs();
    graphs.useBuilder(pool);
    graphs.prepare([seg], 'hnswlib');
    graphs.retain([]);
    await new Promise((r) => setTimeout(r, 50));
    await pool.buildGraph(seg, 'hnswlib', {}).then((file) => rmSync(file));
    expect(graphs.builtElsewhere).toEqual({ built: 0, failed: 0 });
    expect(graphs.complete(seg, 'hnswlib')).toBeNull();
  });
});

describe('documents in a build not published yet', () => {
  it('stay correct: overwrites and deletes made meanwhile win, counts and reads agree', () => {
    const e = new SuggestEngine({ autoMerge: false });
    e.upsert(catalog(50));
    e.refresh();
    e.upsert([{ id: 'n1', title: 'Zebra Lamp', desc: '', manufacturer: 'Zebra', raw: {} }, { id: 'n2', title: 'Zebra Chair', desc: '', manufacturer: 'Zebra', raw: {} }, { id: 'n3', title: 'Zebra Desk', desc: '', manufacturer: 'Zebra', raw: {} }]);
    const taken = e.takePending(10);
    expect(taken.map((d) => d.id)).toEqual(['n1', 'n2', 'n3']);
    expect(e.takePending(10)).toEqual([]); // one batch at a time
    expect(e.documentCount).toBe(53);
    // meanwhile: n1 rewritten, n2 deleted
    expect(e.upsert([{ id: 'n1', title: 'Zebra Lantern', desc: '', manufacturer: 'Zebra', raw: {} }]).created).toBe(0);
    expect(e.remove(['n2'])).toBe(1);
    expect(e.remove(['n2'])).toBe(0);
    expect(e.get('n1')?.title).toBe('Zebra Lantern');
    expect(e.get('n2')).toBeNull();
    expect(e.get('n3')?.title).toBe('Zebra Desk');
    expect(e.documentCount).toBe(52);
    e.publish(new SegmentBuilder().addAll(taken).build());
    expect(e.inflightCount).toBe(0);
    const titles = e.autocomplete({ query: 'zebra', limit: 10, mode: 'fts_only' }).suggestions.map((s) => s.title).sort();
    expect(titles).toEqual(['Zebra Desk', 'Zebra Lantern']);
    expect(e.documentCount).toBe(52);
  });

  it('go back to the buffer, ahead of later writes, when their build fails', () => {
    const e = new SuggestEngine({ autoMerge: false });
    e.upsert([{ id: 'a', title: 'Alpha One', desc: '', manufacturer: '', raw: {} }, { id: 'b', title: 'Beta One', desc: '', manufacturer: '', raw: {} }]);
    e.takePending(10);
    e.upsert([{ id: 'b', title: 'Beta Two', desc: '', manufacturer: '', raw: {} }, { id: 'c', title: 'Gamma One', desc: '', manufacturer: '', raw: {} }]);
    e.restorePending();
    expect(e.pendingCount).toBe(3);
    expect(e.get('b')?.title).toBe('Beta Two');
    expect(e.documentCount).toBe(3);
    expect(e.autocomplete({ query: 'beta', limit: 5, mode: 'fts_only' }).suggestions.map((s) => s.title)).toEqual(['Beta Two']);
  });
});

describe('the work buffered', () => {
  it('is kept through overwrites, deletes, batches taken and given back, and refreshes', () => {
    const e = new SuggestEngine({ autoMerge: false });
    const doc = (id: string, tags: number) => ({ id, title: 'T'.repeat(100), desc: '', manufacturer: '', raw: { tags: Array.from({ length: tags }, (_, i) => `t${i}`), color: 'red' } });
    // each: 1 + 2 (100 title characters) + tags + 1
    const expectWork = (work: number) => {
      expect(e.pendingWorkWithin(work)).toBe(true);
      expect(e.pendingWorkWithin(work - 1)).toBe(false);
    };
    e.upsert([doc('a', 10), doc('b', 100)]);
    expectWork(14 + 104);
    e.upsert([doc('a', 1000)]);
    expectWork(1004 + 104);
    e.remove(['b']);
    expectWork(1004);
    e.takePending(10);
    expect(e.pendingWorkWithin(0)).toBe(true);
    e.upsert([doc('c', 5)]);
    e.restorePending();
    expectWork(1004 + 9);
    e.refresh();
    expect(e.pendingWorkWithin(0)).toBe(true);
  });
});

describe('a query while indexing has not caught up', () => {
  type Answer = { suggestions: TypeaheadSuggestion[]; indexing?: number };
  interface BulkHost {
    host: SearchHost;
    upsert(docs: SuggestDocument[]): Promise<unknown>;
    query(kind: 'typeahead' | 'autocomplete', query: string): Promise<Answer>;
  }
  /** A one-partition node on a one-thread pool whose timer waits 1,000 s: only queries start builds. */
  async function withBulkHost(freshWaitMs: number, run: (h: BulkHost) => Promise<void>): Promise<void> {
    const t = await tempDir('refresher-settle-');
    const pool = new SegmentPool({ threads: 1 });
    const shard = new ShardNode({ nodeId: 'n1' as never, dataDir: t.dir, partitions: 1, logger: quietLogger });
    try {
      shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
      const host = new SearchHost({ dataDir: t.dir, pool, refresh: { intervalMs: 1_000_000, inlineMaxDocs: 16, maxDocsPerBuild: 500, freshWaitMs } });
      shard.setQueryHandler(host);
      shard.onChange(host.onChange);
      const ref = refOf('t1', 'p1', { partitions: 1 });
      await run({
        host,
        upsert: (docs) => shard.upsert({ ref, documents: docs.map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 }),
        query: async (kind, query) => (await shard.queryValue({ ref, kind, payload: { query, limit: 10, ...(kind === 'autocomplete' ? { mode: 'fts_only' } : {}) } })) as Answer,
      });
    } finally {
      await shard.close();
      await pool.close();
      await t.remove();
    }
  }

  it('is answered from the searchable documents past its wait, marked with what it did not see, until the load is indexed', () =>
    withBulkHost(0, async ({ host, upsert, query }) => {
      await upsert(catalog(50));
      expect((await query('typeahead', 'samsung')).indexing).toBeUndefined();
      await upsert(catalog(3000, 'x').map((d, i) => ({ ...d, title: i === 2999 ? 'Quokka Espresso Machine' : d.title })));
      // past its wait (none here), from the 50 documents searchable: the 3,000 are not indexed in place
      const during = await query('typeahead', 'quokka');
      expect(during.indexing).toBe(3000);
      expect(during.suggestions).toEqual([]);
      const lexical = await query('autocomplete', 'samsung');
      expect(lexical.indexing).toBeGreaterThan(0);
      expect(lexical.suggestions.length).toBeGreaterThan(0);
      expect(lexical.suggestions.every((s) => s.id.startsWith('d'))).toBe(true);
      expect(host.answersDuringIndexing).toBe(2);
      expect(host.documentsIndexing()).toBeGreaterThan(0);
      // each query started the next build: asking on brings the load in, then answers are whole again
      let after = during;
      for (let i = 0; i < 400 && after.indexing !== undefined; i++) {
        await new Promise((r) => setTimeout(r, 10));
        after = await query('typeahead', 'quokka');
      }
      expect(after.indexing).toBeUndefined();
      expect(after.suggestions.map((s) => s.title)).toContain('Quokka Espresso Machine');
      expect(host.documentsIndexing()).toBe(0);
    }));

  it('is answered at once, not after its wait, when the builds ahead of it would outlast the wait', () =>
    withBulkHost(1000, async ({ upsert, query }) => {
      await upsert(catalog(50));
      await query('typeahead', 'samsung');
      // 13,000 documents: about 2 s of building by the estimate before any build is measured
      // (0.15 ms a document), past the 1 s wait (these short titles build faster: waiting, the
      // query would see all of them after some 1.2 s)
      await upsert(catalog(13_000, 'x'));
      const started = performance.now();
      const answer = await query('typeahead', 'samsung');
      expect(answer.indexing).toBe(13_000);
      expect(performance.now() - started).toBeLessThan(1000);
    }));
});

describe('search host with the pool', () => {
  let shard: ShardNode;
  let host: SearchHost;
  let pool: SegmentPool;
  let removeDir: () => Promise<void>;
  const ref = refOf('t1', 'p1', { partitions: 4 });

  beforeAll(async () => {
    const t = await tempDir('refresher-test-');
    removeDir = t.remove;
    pool = new SegmentPool({ threads: 2 });
    shard = new ShardNode({ nodeId: 'n1' as never, dataDir: t.dir, partitions: 4, logger: quietLogger });
    shard.setPlacement(ShardNode.soloPlacement('n1' as never, 4));
    // queries wait for every acknowledged write, however long its indexing takes
    host = new SearchHost({ dataDir: t.dir, pool, refresh: { intervalMs: 10, inlineMaxDocs: 64, maxDocsPerBuild: 2000, compactAfterMs: 200, freshWaitMs: 600_000 } });
    shard.setQueryHandler(host);
    shard.onChange(host.onChange);
  });

  afterAll(async () => {
    await shard?.close();
    await pool?.close();
    await removeDir?.();
  });

  const stats = () => host.indexStats({ store: undefined as never, ref }) as { loaded: boolean; segments: number; pending: number; documents: number };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  /** Polls until `done` or `ms` have passed; the caller's assertions then say what went wrong. */
  const until = async (done: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!done() && Date.now() < deadline) await sleep(5);
  };
  const typeahead = async (query: string, limit = 10) => (await shard.queryValue({ ref, kind: 'typeahead', payload: { query, limit } })) as { suggestions: TypeaheadSuggestion[] };
  const upsert = (docs: SuggestDocument[]) => shard.upsert({ ref, documents: docs.map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 });
  /** Records the documents of every build done in place (on this thread) until `spy.mockRestore()`. */
  const spyInPlaceBuilds = () => {
    const refresh = SuggestEngine.prototype.refresh;
    const inPlace: number[] = [];
    const spy = vi.spyOn(SuggestEngine.prototype, 'refresh').mockImplementation(function (this: SuggestEngine) {
      inPlace.push(this.pendingCount);
      refresh.call(this);
    });
    return { inPlace, spy };
  };

  it('loads on the pool, answers a query in the middle of a bulk load with every acknowledged write, and keeps the loop running', async () => {
    await upsert(catalog(5500));
    expect((await typeahead('samsung')).suggestions.length).toBeGreaterThan(0); // first load of a part this large: on the pool
    // a bulk write far above the in-place limit, then a query at once
    const bulk = catalog(6000, 'b').map((d, i) => ({ ...d, title: i === 5999 ? 'Quokka Espresso Machine' : d.title }));
    await upsert(bulk);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const pending = shard.queryValue({ ref, kind: 'typeahead', payload: { query: 'quokka', limit: 10 } });
    // too many documents to index in place: the query waits for the pool's builds...
    expect(pending).toBeInstanceOf(Promise);
    const answer = (await pending) as { suggestions: TypeaheadSuggestion[] };
    clearInterval(timer);
    expect(answer.suggestions.map((s) => s.title)).toContain('Quokka Espresso Machine');
    // ...which run off the event loop: it kept turning meanwhile
    expect(ticks).toBeGreaterThan(5);
  });

  it('publishes a small write on the timer, before any query asks', async () => {
    await upsert([{ id: 'w1', title: 'Wombat Kettle', desc: '', manufacturer: 'Wombat', raw: {} }]);
    await until(() => stats().pending === 0, 2000);
    expect(stats().pending).toBe(0);
    expect(stats().documents).toBe(11501);
    expect((await typeahead('wombat')).suggestions.map((s) => s.title)).toContain('Wombat Kettle');
  });

  it('merges its segments into one on the pool once writes stop, answers unchanged in substance', async () => {
    // the bulk load's segments merged as they came; a tenth more documents afterwards is enough
    // for a compaction, the lone small write before was not
    await upsert(catalog(1500, 'late'));
    await until(() => stats().segments <= 1, 10_000);
    expect(stats().segments).toBe(1);
    expect(stats().documents).toBe(13_001);
    expect((await typeahead('quokka')).suggestions.map((s) => s.title)).toContain('Quokka Espresso Machine');
    expect((await typeahead('wombat')).suggestions.map((s) => s.title)).toContain('Wombat Kettle');
    // a single small write afterwards is far below the share that calls for another full merge
    await upsert([{ id: 'w2', title: 'Wombat Teapot', desc: '', manufacturer: 'Wombat', raw: {} }]);
    await until(() => stats().pending === 0, 2000);
    await sleep(400); // past compactAfterMs
    expect(stats().segments).toBe(2);
    expect((await typeahead('wombat t')).suggestions.map((s) => s.title)).toContain('Wombat Teapot');
  });

  it('answers synchronously when nothing it must see is being built', async () => {
    const r = shard.queryValue({ ref, kind: 'typeahead', payload: { query: 'dewalt', limit: 5 } });
    expect(r instanceof Promise).toBe(false);
  });

  it('answers a query in the middle of a bulk load of many builds without indexing any of it on the event loop', async () => {
    // seven builds' worth: a query used to wait for four, then index the rest in place
    await upsert(catalog(100, 'first'));
    await typeahead('samsung'); // the part's engine is loaded: writes go to it as they land
    const bulk = catalog(13_000, 'm').map((d, i) => ({ ...d, title: i === 12_999 ? 'Numbat Waffle Iron' : d.title }));
    await upsert(bulk);
    const { inPlace, spy } = spyInPlaceBuilds();
    try {
      const answer = await typeahead('numbat');
      expect(answer.suggestions.map((s) => s.title)).toContain('Numbat Waffle Iron');
      // the rest a query indexes in place after four builds, at most (the old code: 9,000)
      expect(Math.max(0, ...inPlace)).toBeLessThanOrEqual(512);
    } finally {
      spy.mockRestore();
    }
  });

  it('builds one document with 60,000 tags on the pool, not in place: few documents are not always little work', async () => {
    expect((await typeahead('wombat')).suggestions.length).toBeGreaterThan(0);
    const tags = Array.from({ length: 60_000 }, (_, i) => `tag${i}`);
    const { inPlace, spy } = spyInPlaceBuilds();
    try {
      await upsert([{ id: 'tagged', title: 'Echidna Tag Printer', desc: '', manufacturer: 'Echidna', raw: { tags } }]);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const answer = await typeahead('echidna');
      clearInterval(timer);
      expect(answer.suggestions.map((s) => s.title)).toContain('Echidna Tag Printer');
      expect(inPlace).toEqual([]);
      expect(ticks).toBeGreaterThan(5);
    } finally {
      spy.mockRestore();
    }
  });

  it('drops an engine of its partition when writes replicated from a primary cannot be read as changes, not of another', async () => {
    expect((await typeahead('wombat')).suggestions.length).toBeGreaterThan(0);
    expect(stats().loaded).toBe(true);
    // a follower's store took writes its engine cannot follow (keys of no known kind)
    const unreadable = [{ type: 'put' as const, key: Buffer.from([0x7f, 1, 2]), value: Buffer.alloc(0) }];
    shard.replicaWritten((ref.partition + 1) % 4, unreadable);
    expect(stats().loaded).toBe(true);
    shard.replicaWritten(ref.partition, unreadable);
    expect(stats().loaded).toBe(false);
    // the next query builds it again from the store, writes included
    expect((await typeahead('wombat')).suggestions.map((s) => s.title)).toContain('Wombat Kettle');
    expect(stats().loaded).toBe(true);
  });
});
