// Large idle engines are unloaded off the event loop: the snapshot and graphs are written on
// libuv's threads and the engine is let go only if nothing reached its part meanwhile. A write
// or a query that arrives while the files are written keeps the engine (with the write), and no
// partial file stays behind; a later unload then succeeds and the snapshot read back (also off
// the event loop) answers as the engine did. A real shard node on RocksDB in a temporary
// directory, a real segment pool; `syncSnapshotMaxBytes: 0` sends every engine the large way.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type * as pb from '../../../proto/gen/shard.js';
import { encodeDocument, type SuggestDocument } from '../../../node/runtime/document.js';
import { PartitionStore } from '../../partition-store.js';
import type { BatchOp } from '../../rocks-db.js';
import { ShardNode } from '../../shard-node.js';
import { quietLogger, refOf, tempDir } from '../../test/helpers.js';
import { ENGINE_FORMAT_VERSION, INTERIM_READABLE_VERSION } from '../../engine/engine-format.js';
import { restoreEngines } from '../restore-engines.js';
import { SearchHost } from '../search-host.js';
import { SegmentPool } from '../segment-pool.js';
import { smallCatalog as catalog } from './small-catalog.js';

interface Answer {
  suggestions: { id: string; title: string }[];
}

let dir: { dir: string; remove: () => Promise<void> };
let pool: SegmentPool;
let shard: ShardNode;
let host: SearchHost;
/** what the host calls once an unload's files are written (replaced per test) */
let onWritten: (ref: pb.IndexRef) => Promise<void> | void;
/** what the host calls once the build in place of an interim engine is done (replaced per test) */
let onRebuilt: (ref: pb.IndexRef) => Promise<void> | void;
const LARGE = refOf('t1', 'large', { partitions: 1 });
/** The index part the helpers below write and query (a test may move on to another after a drop). */
let ref = LARGE;

beforeEach(async () => {
  ref = LARGE;
  dir = await tempDir('unload-large-');
  pool = new SegmentPool({ threads: 1, graphDir: path.join(dir.dir, 'graph-builds') });
  shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
  shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
  onWritten = () => {};
  onRebuilt = () => {};
  host = new SearchHost({
    dataDir: dir.dir,
    pool,
    engineIdleMs: 300,
    syncSnapshotMaxBytes: 0,
    onUnloadWritten: (r) => onWritten(r),
    onRebuilt: (r) => onRebuilt(r),
    refresh: { intervalMs: 10, inlineMaxDocs: 64, maxDocsPerBuild: 5000 },
  });
  shard.setQueryHandler(host);
  shard.onChange(host.onChange);
  await upsert(catalog(3000));
});

afterEach(async () => {
  await shard.close();
  await pool.close();
  await dir.remove();
});

const upsert = (docs: SuggestDocument[]) => shard.upsert({ ref, documents: docs.map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 });
const query = async (kind: 'typeahead' | 'autocomplete', q: string) =>
  ((await shard.queryValue({ ref, kind, payload: { query: q, limit: 10, ...(kind === 'autocomplete' ? { mode: 'fts_only' } : {}) } })) as Answer).suggestions;
const answers = async () => ({ typeahead: await query('typeahead', 'dewalt im'), autocomplete: await query('autocomplete', 'makita saw 11') });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(done: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
/** The node stopped and started again on the same data and pool, its host with `options` (no idle unloads). */
async function restartWith(options: { syncSnapshotMaxBytes: number; engineIdleMs?: number; heldMaxDocuments?: number }, whileStopped?: () => void): Promise<void> {
  await shard.close();
  whileStopped?.();
  shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
  shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
  host = new SearchHost({ dataDir: dir.dir, pool, engineIdleMs: 0, onRebuilt: (r) => onRebuilt(r), refresh: { intervalMs: 10, inlineMaxDocs: 64, maxDocsPerBuild: 5000 }, ...options });
  shard.setQueryHandler(host);
  shard.onChange(host.onChange);
}
/** Files of the engine directory, partial ones included. */
const engineFiles = () => readdirSync(path.join(dir.dir, 'engine', `p${ref.partition}`));

describe('unloading a large engine', () => {
  it('writes its snapshot and graphs off the event loop, lets it go, and reads them back with the same answers', async () => {
    // an ANN graph, built on the pool's graph thread (asked for again until ready, which keeps the engine in use)
    const graph = async () => ((await shard.queryValue({ ref, kind: 'autocomplete', payload: { query: 'bosch blender', limit: 10, mode: 'vector_only', debug: true } })) as Answer & { debug: { vector: { method: string; graph: { ready: boolean } } } });
    for (let ready = false; !ready; ready = (await graph()).debug.vector.graph.ready) await sleep(50);
    const vectorBefore = (await graph()).suggestions;
    expect((await graph()).debug.vector.method).toBe('ann');
    const before = await answers();
    expect(before.typeahead.length).toBeGreaterThan(0);
    expect(before.autocomplete.length).toBeGreaterThan(0);
    expect(host.enginesLoaded).toBe(1);
    // counted from here: on a loaded machine, a pause of the polling above can already have let
    // the engine go idle, unload, and come back at the next query
    const unloads = host.engineUnloads;
    let written = 0;
    onWritten = () => void written++;
    await until(() => host.engineUnloads === unloads + 1, 'the unload');
    expect(written).toBe(1);
    expect(host.enginesLoaded).toBe(0);
    const files = engineFiles();
    expect(files.some((f) => f.endsWith('.snap'))).toBe(true);
    expect(files.filter((f) => f.includes('.unloading'))).toEqual([]);
    expect(await answers()).toEqual(before);
    expect(host.enginesLoaded).toBe(1);
    // the graph came back with it, held as the graph thread's files are: answered by it at once
    const after = await graph();
    expect(after.debug.vector).toMatchObject({ method: 'ann', graph: { ready: true } });
    expect(after.suggestions).toEqual(vectorBefore);
    expect(readdirSync(path.join(dir.dir, 'graph-builds')).length).toBeGreaterThan(0);
    // read back and used: the snapshot is gone until the next unload
    expect(engineFiles().some((f) => f.endsWith('.snap'))).toBe(false);
  }, 30_000);

  it('keeps the engine, with the write, when a write arrives while the snapshot is written', async () => {
    await answers();
    let attempts = 0;
    onWritten = async () => {
      if (attempts++ > 0) return;
      // the same size as before (a title of the same length): only the change count tells
      const d0 = catalog(1)[0]!;
      await upsert([{ ...d0, title: 'Quokka'.padEnd(d0.title.length, 'x') }]);
    };
    await until(() => attempts >= 1, 'an unload attempt');
    await sleep(50);
    expect(host.engineUnloads).toBe(0);
    expect(host.enginesLoaded).toBe(1);
    expect(engineFiles().filter((f) => f.includes('.unloading') || f.endsWith('.snap'))).toEqual([]);
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('d0');
    // idle again: this time it goes, and the snapshot has the write
    await until(() => host.engineUnloads === 1, 'the second unload');
    expect(attempts).toBe(2);
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('d0');
    expect((await query('autocomplete', 'quokka')).map((s) => s.id)).toContain('d0');
  }, 30_000);

  it('holds an unloaded engine\'s snapshot through writes and reads it back with them at the next query, instead of rebuilding', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    const builds = host.engineBuilds;
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    await upsert([{ id: 'later', title: 'Quokka Milk Frother', desc: '', manufacturer: 'Quokka', raw: {} }]);
    // the writes loaded nothing: the snapshot is set aside, their documents kept beside it
    expect(host.enginesLoaded).toBe(0);
    expect(engineFiles().filter((f) => f.endsWith('.snap.held'))).toHaveLength(1);
    expect(host.heldSnapshots).toEqual({ parts: 1, documents: 2 });
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toEqual(expect.arrayContaining(['late', 'later']));
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect((await query('autocomplete', 'quokka espresso')).map((s) => s.id)).toContain('late');
    expect((await answers()).typeahead.length).toBeGreaterThan(0);
    expect(engineFiles().filter((f) => f.includes('.held'))).toEqual([]);
    // idle again, then a delete: held too, and the document is gone
    await until(() => host.engineUnloads === 2, 'the second unload');
    expect((await shard.deleteDocument({ ref, docId: 'late' })).deleted).toBe(true);
    expect(host.enginesLoaded).toBe(0);
    const after = (await query('typeahead', 'quokka')).map((s) => s.id);
    expect(after).toContain('later');
    expect(after).not.toContain('late');
    // never tokenized again from the stored documents
    expect(host.engineBuilds).toEqual(builds);
  }, 30_000);

  it('builds from the stored documents, writes included, when a held snapshot turns out unreadable', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    const held = engineFiles().find((f) => f.endsWith('.snap.held'));
    expect(held).toBeDefined();
    // the header still matches; what follows it does not
    const file = path.join(dir.dir, 'engine', `p${ref.partition}`, held!);
    const bytes = readFileSync(file);
    const headerEnd = 4 + bytes.readUInt32LE(0);
    writeFileSync(file, Buffer.concat([bytes.subarray(0, headerEnd), Buffer.from('not an engine')]));
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('late');
    expect((await query('typeahead', 'dewalt im')).length).toBeGreaterThan(0);
    expect(host.engineBuilds.pool).toBe(2);
  }, 30_000);

  it("declines a follower's turn at once while the part's engine loads, and answers it once loaded", async () => {
    const before = await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    const deferring = () => shard.queryValue({ ref, kind: 'typeahead', payload: { query: 'dewalt im', limit: 10, defer_loading: true } }) as Promise<Answer> | Answer;
    const started = Date.now();
    await expect(Promise.resolve().then(deferring)).rejects.toMatchObject({ code: 'unavailable' });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(host.queriesDeferred).toBe(1);
    // the load it started goes on: a later turn is answered, with no other load begun
    const loads = host.engineBuilds.pool + host.engineUnloads;
    await sleep(500);
    let answered: Answer | null = null;
    for (let i = 0; i < 100 && answered === null; i++) {
      try {
        answered = await deferring();
      } catch {
        await sleep(50);
      }
    }
    expect(answered?.suggestions).toEqual(before.typeahead);
    expect(host.engineBuilds.pool + host.engineUnloads).toBe(loads);
  }, 30_000);

  /** The unloaded part's snapshot, stamped with engine format `version`; a log that keeps what the host says. */
  async function unloadedAs(version: number): Promise<{ file: string; logged: { level: string; msg: string; fields: Record<string, unknown> }[] }> {
    await until(() => host.engineUnloads === 1, 'the unload');
    const snap = engineFiles().find((f) => f.endsWith('.snap'));
    expect(snap).toBeDefined();
    const file = path.join(dir.dir, 'engine', `p${ref.partition}`, snap!);
    const bytes = readFileSync(file);
    // the engine bytes follow the host's header: "SGEN", then the format version
    bytes.writeUInt32LE(version, 4 + bytes.readUInt32LE(0) + 4);
    writeFileSync(file, bytes);
    const logged: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
    const capture = (level: string) => (msg: string, fields: Record<string, unknown> = {}) => void logged.push({ level, msg, fields });
    (host as unknown as { opts: { log: unknown } }).opts.log = { ...quietLogger, info: capture('info'), warn: capture('warn') };
    return { file, logged };
  }
  const formatOf = (file: string) => {
    const bytes = readFileSync(file);
    return bytes.readUInt32LE(4 + bytes.readUInt32LE(0) + 4);
  };

  it('answers from a snapshot of an older format of the same layout (an upgrade) at once, while the part is built again with the writes of meanwhile', async () => {
    const before = await answers();
    const { file, logged } = await unloadedAs(ENGINE_FORMAT_VERSION - 1);
    // the build waits here until the test lets it go
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let built = false;
    onRebuilt = async () => {
      built = true;
      await released;
    };
    const builds = host.engineBuilds.pool;
    // answered by the interim engine, the build under way
    expect(await answers()).toEqual(before);
    await until(() => built, 'the build');
    expect(host.interimEnginesReplaced).toBe(0);
    // writes while the build is done: the interim engine has them, and so will the new one
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    const gone = before.autocomplete[0]!.id;
    await shard.deleteDocument({ ref, docId: gone });
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('late');
    expect((await query('autocomplete', 'makita saw 11')).map((s) => s.id)).not.toContain(gone);
    // an idle unload does not write the interim engine as a snapshot of this format
    expect(engineFiles().filter((f) => f.endsWith('.snap'))).toEqual([]);
    release();
    await until(() => host.interimEnginesReplaced === 1, 'the new engine');
    expect(host.engineBuilds.pool).toBe(builds + 1);
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('late');
    expect((await query('autocomplete', 'makita saw 11')).map((s) => s.id)).not.toContain(gone);
    expect(logged.filter((l) => l.level === 'warn')).toEqual([]);
    expect(logged.find((l) => l.msg.includes('older format'))?.fields).toMatchObject({ format: ENGINE_FORMAT_VERSION - 1, reads: ENGINE_FORMAT_VERSION });
    expect(logged.find((l) => l.msg.includes('in place of its older'))?.fields).toMatchObject({ writes_meanwhile: 2 });
    // the new engine is written in this build's format
    await until(() => host.engineUnloads === 2, 'the next unload');
    expect(formatOf(file)).toBe(ENGINE_FORMAT_VERSION);
  }, 30_000);

  it('builds the parts of interim engines one at a time', async () => {
    const other = refOf('t1', 'other', { partitions: 1 });
    await shard.upsert({ ref: other, documents: catalog(2500).map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 });
    const ask = (r: pb.IndexRef) => shard.queryValue({ ref: r, kind: 'typeahead', payload: { query: 'dewalt im', limit: 10 } }) as Promise<Answer>;
    await ask(ref);
    await ask(other);
    await until(() => host.engineUnloads === 2, 'both unloads');
    for (const f of engineFiles().filter((name) => name.endsWith('.snap'))) {
      const file = path.join(dir.dir, 'engine', `p${ref.partition}`, f);
      const bytes = readFileSync(file);
      bytes.writeUInt32LE(ENGINE_FORMAT_VERSION - 1, 4 + bytes.readUInt32LE(0) + 4);
      writeFileSync(file, bytes);
    }
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const built: string[] = [];
    onRebuilt = async (r) => {
      built.push(r.physicalIndexId);
      await released;
    };
    const builds = host.engineBuilds.pool;
    expect((await ask(ref)).suggestions.length).toBeGreaterThan(0);
    expect((await ask(other)).suggestions.length).toBeGreaterThan(0);
    await until(() => built.length === 1, 'the first build');
    await sleep(300);
    // the second waits for the first to take over
    expect(host.engineBuilds.pool).toBe(builds + 1);
    release();
    await until(() => host.interimEnginesReplaced === 2, 'both new engines');
    expect(built.sort()).toEqual(['large', 'other']);
    expect(host.engineBuilds.pool).toBe(builds + 2);
  }, 30_000);

  it('never writes an interim engine as a snapshot: a stop during its build leaves the part to be built at the next start', async () => {
    await answers();
    await unloadedAs(ENGINE_FORMAT_VERSION - 1);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    onRebuilt = () => released;
    await answers();
    await restartWith({ syncSnapshotMaxBytes: 0 });
    release();
    expect(engineFiles().filter((f) => f.endsWith('.snap'))).toEqual([]);
    const builds = host.engineBuilds.pool;
    expect((await query('typeahead', 'dewalt im')).length).toBeGreaterThan(0);
    expect(host.engineBuilds.pool).toBe(builds + 1);
    expect(host.interimEnginesReplaced).toBe(0);
  }, 30_000);

  it('builds from the stored documents when the snapshot is of an older layout, and says so without a warning', async () => {
    const before = await answers();
    const { logged } = await unloadedAs(INTERIM_READABLE_VERSION - 1);
    const builds = host.engineBuilds.pool;
    expect(await answers()).toEqual(before);
    expect(host.engineBuilds.pool).toBe(builds + 1);
    expect(host.interimEnginesReplaced).toBe(0);
    expect(logged.filter((l) => l.level === 'warn')).toEqual([]);
    expect(logged.find((l) => l.msg.includes('another format'))?.fields).toMatchObject({ format: INTERIM_READABLE_VERSION - 1, reads: ENGINE_FORMAT_VERSION });
  }, 30_000);

  it('holds a snapshot again after an orderly restart, and reads it back with the writes from before and after the stop', async () => {
    await upsert([{ id: 'gone', title: 'Wombat Kettle', desc: '', manufacturer: 'Wombat', raw: {} }]);
    expect((await query('typeahead', 'wombat')).map((s) => s.id)).toContain('gone');
    await until(() => host.engineUnloads === 1, 'the unload');
    // the same size as a stored document (a title of the same length): only the held state tells
    const d0 = catalog(1)[0]!;
    await upsert([{ ...d0, title: 'Quokka'.padEnd(d0.title.length, 'x') }]);
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    expect((await shard.deleteDocument({ ref, docId: 'gone' })).deleted).toBe(true);
    expect(host.heldSnapshots).toEqual({ parts: 1, documents: 3 });
    await restartWith({ syncSnapshotMaxBytes: 0 }, () => {
      // the stop listed the writes beside the held snapshot
      expect(engineFiles().filter((f) => f.includes('.held'))).toEqual(expect.arrayContaining([expect.stringMatching(/\.snap\.held$/), expect.stringMatching(/\.snap\.held\.ids$/)]));
    });
    // held again, the list in memory only from here on (a stop that does not write it again loses it)
    expect(host.heldSnapshots).toEqual({ parts: 1, documents: 3 });
    expect(engineFiles().filter((f) => f.endsWith('.ids'))).toEqual([]);
    // a write after the start, to a document written before the stop too
    await upsert([{ id: 'late', title: 'Quokka Burr Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    expect(host.heldSnapshots).toEqual({ parts: 1, documents: 4 });
    const quokka = (await query('typeahead', 'quokka')).map((s) => s.id);
    expect(quokka).toEqual(expect.arrayContaining(['d0', 'late']));
    expect((await query('autocomplete', 'quokka burr')).map((s) => s.id)).toContain('late');
    expect((await query('autocomplete', 'quokka espresso')).find((s) => s.id === 'late')?.title).toBe('Quokka Burr Grinder');
    expect((await query('typeahead', 'wombat')).map((s) => s.id)).not.toContain('gone');
    expect((await query('autocomplete', 'wombat kettle')).map((s) => s.id)).not.toContain('gone');
    // read back, not tokenized again from the stored documents
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 0 });
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect(engineFiles().filter((f) => f.includes('.held'))).toEqual([]);
  }, 30_000);

  it('never reads a held snapshot whose writes the stop did not list: the store may have moved past it', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    const d0 = catalog(1)[0]!;
    await upsert([{ ...d0, title: 'Quokka'.padEnd(d0.title.length, 'x') }]);
    expect(engineFiles().filter((f) => f.endsWith('.snap.held'))).toHaveLength(1);
    // as a process that ends without its orderly stop leaves it: the held snapshot, no list
    await restartWith({ syncSnapshotMaxBytes: 0 }, () => {
      for (const f of engineFiles()) if (f.endsWith('.ids')) rmSync(path.join(dir.dir, 'engine', `p${ref.partition}`, f));
    });
    expect(engineFiles().filter((f) => f.includes('.held') || f.endsWith('.snap'))).toEqual([]);
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('d0');
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);

  it('lets a held snapshot go when a write reaches it after the stop listed its writes', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    await shard.close();
    expect(engineFiles().filter((f) => f.includes('.held'))).toHaveLength(2);
    const later = { id: 'later', title: 'Quokka Milk Frother', desc: '', manufacturer: 'Quokka', raw: {} };
    host.onChange({ type: 'upsert', ref, ids: ['later'], documents: [{ id: 'later', body: encodeDocument(later) }] });
    expect(engineFiles().filter((f) => f.includes('.held'))).toEqual([]);
    await restartWith({ syncSnapshotMaxBytes: 0 });
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
  }, 30_000);

  it('reads a held snapshot back for a warm query, and lets held snapshots go with their index or partition', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    const late = { id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} };
    await upsert([late]);
    expect(host.heldSnapshots).toEqual({ parts: 1, documents: 1 });
    // a warm query reads it back with the write, as a query would
    expect((shard.queryValue({ ref, kind: 'warm', payload: {} }) as { state: string }).state).toBe('loading');
    await until(() => (shard.queryValue({ ref, kind: 'warm', payload: {} }) as { state: string }).state === 'ready', 'the warm-up');
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('late');
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
    // held again, then the index is dropped: the held files and writes go with it
    await until(() => host.engineUnloads === 2, 'the second unload');
    await upsert([{ ...late, id: 'later' }]);
    expect(host.heldSnapshots.parts).toBe(1);
    await shard.dropIndex({ ref });
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect(engineFiles().filter((f) => f.includes('.held') || f.endsWith('.snap'))).toEqual([]);
    // and with a partition that moves away (another index: a dropped part takes no more writes)
    ref = refOf('t1', 'large-2', { partitions: 1 });
    await upsert(catalog(3000));
    await answers();
    await until(() => host.engineUnloads === 3, 'the third unload');
    await upsert([late]);
    expect(host.heldSnapshots.parts).toBe(1);
    host.forgetPartition(ref.partition);
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
  }, 30_000);

  it('lets a held snapshot go once it falls too far behind', async () => {
    await restartWith({ syncSnapshotMaxBytes: 0, engineIdleMs: 300, heldMaxDocuments: 5 });
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    await upsert(catalog(3).map((d) => ({ ...d, id: `${d.id}-a`, title: `Quokka ${d.title}` })));
    expect(engineFiles().filter((f) => f.endsWith('.snap.held'))).toHaveLength(1);
    await upsert(catalog(3).map((d) => ({ ...d, id: `${d.id}-b`, title: `Quokka ${d.title}` })));
    expect(engineFiles().filter((f) => f.includes('.held') || f.endsWith('.snap'))).toEqual([]);
    expect(host.heldSnapshots).toEqual({ parts: 0, documents: 0 });
    expect((await query('typeahead', 'quokka')).length).toBeGreaterThan(0);
    expect(host.engineBuilds.pool).toBe(2);
  }, 30_000);

  it('leaves a small idle part unloaded on a write: the snapshot goes, the next query builds it', async () => {
    await answers();
    await until(() => host.engineUnloads === 1, 'the unload');
    // the same data on a node for which every engine is small
    await restartWith({ syncSnapshotMaxBytes: 1e12 });
    expect(engineFiles().some((f) => f.endsWith('.snap'))).toBe(true);
    await upsert([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
    expect(host.enginesLoaded).toBe(0);
    expect(engineFiles().some((f) => f.endsWith('.snap') || f.includes('.held'))).toBe(false);
    expect((await query('typeahead', 'quokka')).map((s) => s.id)).toContain('late');
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 1 });
  }, 30_000);

  it('keeps the engine when it is queried while the snapshot is written', async () => {
    const before = await answers();
    let attempts = 0;
    onWritten = async () => {
      if (attempts++ === 0) await query('typeahead', 'sony');
    };
    await until(() => attempts >= 1, 'an unload attempt');
    await sleep(50);
    expect(host.engineUnloads).toBe(0);
    expect(host.enginesLoaded).toBe(1);
    expect(engineFiles().filter((f) => f.includes('.unloading') || f.endsWith('.snap'))).toEqual([]);
    expect(await answers()).toEqual(before);
  }, 30_000);

  it('removes the partial files of an unload a stopped process left behind when it starts', async () => {
    await answers();
    // what a process killed while an unload wrote leaves: a partial snapshot and graph directory
    const engineDir = path.join(dir.dir, 'engine', `p${ref.partition}`);
    mkdirSync(path.join(engineDir, 'x.snap.graphs.unloading'), { recursive: true });
    writeFileSync(path.join(engineDir, 'x.snap.graphs.unloading', '0.hnswlib'), 'partial');
    writeFileSync(path.join(engineDir, 'x.snap.unloading'), 'partial');
    writeFileSync(path.join(engineDir, 'kept.snap'), 'a snapshot');
    const again = new SearchHost({ dataDir: dir.dir, engineIdleMs: 0 });
    expect(engineFiles().sort()).toEqual(['kept.snap']);
    await again.close();
  });

  it('writes a whole snapshot at close while an unload is in progress', async () => {
    const before = await answers();
    let release: () => void = () => {};
    let paused = false;
    onWritten = () => {
      paused = true;
      return new Promise<void>((r) => (release = r));
    };
    await until(() => paused, 'an unload attempt');
    // close waits for the unload, which then finds the host closing and keeps the engine for close to write
    const closing = shard.close();
    release();
    await closing;
    expect(host.engineUnloads).toBe(0);
    expect(engineFiles().filter((f) => f.includes('.unloading'))).toEqual([]);
    expect(engineFiles().some((f) => f.endsWith('.snap'))).toBe(true);
    // a new node on the same data reads it back
    await pool.close();
    pool = new SegmentPool({ threads: 1 });
    shard = new ShardNode({ nodeId: 'n1' as never, dataDir: dir.dir, partitions: 1, logger: quietLogger });
    shard.setPlacement(ShardNode.soloPlacement('n1' as never, 1));
    host = new SearchHost({ dataDir: dir.dir, pool, engineIdleMs: 0, syncSnapshotMaxBytes: 0 });
    shard.setQueryHandler(host);
    shard.onChange(host.onChange);
    expect(await answers()).toEqual(before);
  }, 30_000);
});

describe('a follower', () => {
  it("holds an unloaded engine's snapshot through the writes it applies from its primary", async () => {
    // a primary's store: each of its writes reaches this node as a follower's writes do, as the
    // key operations it shipped, applied the way PartitionHandoff.replicate applies them
    const primaryDir = await tempDir('unload-primary-');
    const shipped: BatchOp[][] = [];
    const primary = await PartitionStore.open(primaryDir.dir, ref.partition, { sync: false, replicate: async (_p, ops) => void shipped.push([...ops]) });
    const replica = refOf('t1', 'replicated', { partitions: 1 });
    const write = async (docs: SuggestDocument[]) => {
      await primary.upsert(replica, docs.map((d) => ({ id: d.id, body: encodeDocument(d) })));
      const store = await shard.store(ref.partition);
      for (const ops of shipped.splice(0)) {
        shard.beforeReplicaWrite(ref.partition, ops);
        await store.applyRaw(ops);
        shard.replicaWritten(ref.partition, ops);
      }
    };
    const ask = async (q: string) => ((await shard.queryValue({ ref: replica, kind: 'typeahead', payload: { query: q, limit: 10 } })) as Answer).suggestions.map((s) => s.id);
    try {
      await write(catalog(3000));
      expect((await ask('dewalt im')).length).toBeGreaterThan(0);
      await until(() => host.engineUnloads === 1, 'the unload');
      const builds = host.engineBuilds;
      await write([{ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }]);
      expect(host.enginesLoaded).toBe(0);
      expect(engineFiles().filter((f) => f.endsWith('.snap.held'))).toHaveLength(1);
      expect(await ask('quokka')).toContain('late');
      expect(host.engineBuilds).toEqual(builds);
    } finally {
      await primary.close();
      await primaryDir.remove();
    }
  }, 30_000);
});

describe('a start', () => {
  it('reads back, from their snapshots only, the engines that were in memory at the stop', async () => {
    const other = refOf('t1', 'other', { partitions: 1 });
    await shard.upsert({ ref: other, documents: catalog(300).map((d) => ({ id: d.id, body: encodeDocument(d) })), maxDocuments: 0 });
    await answers();
    expect((await shard.queryValue({ ref: other, kind: 'typeahead', payload: { query: 'sam', limit: 10 } })) as Answer).toBeDefined();
    expect(host.enginesLoaded).toBe(2);
    // stopped with both in memory; on the new start every snapshot is small, so the write below removes `other`'s
    await restartWith({ syncSnapshotMaxBytes: 1e12 });
    await shard.upsert({ ref: other, documents: [{ id: 'late', body: encodeDocument({ id: 'late', title: 'Quokka Espresso Grinder', desc: '', manufacturer: 'Quokka', raw: {} }) }], maxDocuments: 0 });
    const parts = host.lastRunParts();
    expect(parts.map((p) => p.physicalIndexId).sort()).toEqual(['large', 'other']);
    // read once
    expect(host.lastRunParts()).toEqual([]);
    const gone = { ...ref, physicalIndexId: 'gone', partition: 5 };
    const report = await restoreEngines(shard, [...parts, gone]);
    expect(report).toMatchObject({ restored: 1, skipped: 1, failed: 1 });
    expect(host.enginesLoaded).toBe(1);
    // nothing tokenized from the stored documents: `other` waits for its first query
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 0 });
    expect((await answers()).typeahead.length).toBeGreaterThan(0);
    expect(host.engineBuilds).toEqual({ eventLoop: 0, pool: 0 });
    const late = ((await shard.queryValue({ ref: other, kind: 'typeahead', payload: { query: 'quokka', limit: 10 } })) as Answer).suggestions.map((s) => s.id);
    expect(late).toContain('late');
  }, 30_000);
});
