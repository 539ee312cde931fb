// Keeps one SuggestEngine per index part this node stores and answers the node's queries from
// it. Engines are built on first use from the partition's documents (or loaded from a snapshot
// written beside the partition at close, when the snapshot still matches the stored data), and
// follow every applied write through the node's change events, so a query after an
// acknowledged write sees it (during a bulk load, after a short wait, it is answered from the
// documents already searchable, marked so that it is not cached). Beside each engine, a
// BehaviorModel learned from the part's engagement events (replayed from the event log on load,
// then fed each new event) re-ranks
// what the engine returns (behavior-ranking.ts). Builds run on the segment pool when there is one
// (first loads, large write batches, merges); the EngineRefresher publishes fresh writes within
// its interval and makes a query wait, briefly, only for documents it must see that are still
// being built.
import { closeSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type * as pb from '../../proto/gen/shard.js';
import { decodeDocument, releaseDecoderSource, type SuggestDocument } from '../../node/runtime/document.js';
import { fail, invalid, validationError } from '../../node/runtime/errors.js';
import type { Logger } from '../../node/runtime/log.js';
import { decodeEvent, type EngagementEvent } from '../../node/runtime/engagement-event.js';
import { BehaviorModel, conceptKeys } from '../engine/behavior.js';
import { behaviorSettings, candidatePool, rankAutocomplete, rankTypeahead, type DocumentSource } from '../engine/behavior-ranking.js';
import { docFields } from '../engine/doc-fields.js';
import { MAX_LIMIT, SuggestEngine } from '../engine/engine.js';
import { ENGINE_FORMAT_VERSION, INTERIM_READABLE_VERSION, SnapshotFormatError } from '../engine/engine-format.js';
import { embeddingProviderFromEnv, type EmbeddingProvider } from '../engine/embedding-provider.js';
import { rerankWithProvider, VectorCache } from './provider-rerank.js';
import { predictCandidates, type PredictRequest } from '../engine/predict.js';
import { validateFilters } from '../engine/filters.js';
import { parseRankingPayload } from '../engine/ranking-rules.js';
import { round3 } from '../engine/stage-clock.js';
import { withTimeout } from '../../node/runtime/timeout.js';
import { AUTOCOMPLETE_MODES, VECTOR_BACKENDS, type AutocompleteMode, type AutocompleteRequest, type AutocompleteResult, type EngineProfile, type TypeaheadRequest, type TypeaheadResult, type VectorBackend } from '../engine/types.js';
import type { IndexContext, QueryContext, QueryHandler, UnloadState, WarmRequest, WarmState } from '../query-handler.js';
import { indexPartId } from '../index-keys.js';
import type { PartitionStore } from '../partition-store.js';
import type { ChangeEvent } from '../shard-node.js';
import type { Segment } from '../engine/segment.js';
import { EngineRefresher, type EngineRefresherOptions } from './engine-refresher.js';
import type { SegmentPool } from './segment-pool.js';
import type { QueryPool } from './query-pool.js';

export interface SearchHostOptions {
  dataDir: string;
  log?: Logger;
  /** worker threads for segment builds and merges; without one, everything is built in place */
  pool?: SegmentPool | null;
  /**
   * ANN graphs built on the pool's graph thread (default, with a pool); false: in 4 ms slices on
   * the event loop (no second copy of a graph in memory while it is handed over)
   */
  graphsOnPool?: boolean;
  /** refresher settings (interval, in-place and pooled batch sizes) */
  refresh?: Omit<EngineRefresherOptions, 'pool' | 'log'>;
  /** the node's embeddings endpoint for fts_rerank (default: from SUGGEST_EMBEDDINGS_*; null: none) */
  embeddings?: EmbeddingProvider | null;
  /** worker threads that answer autocomplete; without one, autocomplete runs on the event loop */
  queryPool?: QueryPool | null;
  /** typeahead on the query pool too (default: on the event loop) */
  typeaheadOnThreads?: boolean;
  /**
   * A part's engine nobody has queried for this long is unloaded (its snapshot written first, so
   * the next query loads it back without tokenizing): memory follows the indexes in use, not all
   * the indexes a node holds. 0: never. Default 30 minutes.
   */
  engineIdleMs?: number;
  /**
   * Engines with more segment memory than this are unloaded, and read back, off the event loop
   * (default SYNC_SNAPSHOT_MAX_BYTES); smaller ones on it, in slices
   */
  syncSnapshotMaxBytes?: number;
  /**
   * A part of WARM_AFTER_WRITES_MIN_DOCUMENTS or more that is not loaded and has no snapshot (a
   * new index filled through the document routes) is loaded once its writes pause this long, so
   * that its first query does not wait for the build (see noteWrite). Default 0: never.
   */
  warmAfterWritesMs?: number;
  /**
   * How long a query waits for its part's engine to load (read back from its snapshot, or built
   * from the stored documents: seconds for a large index after its first ingestion or an
   * upgrade) before it is answered from no documents, with `indexing` the part's document count
   * (never cached; the next query waits again, and the load goes on). Default: as long as the
   * load takes.
   */
  loadWaitMs?: number;
  /** documents a held snapshot may fall behind by (default HELD_MAX_DOCUMENTS; see beforeWrite) */
  heldMaxDocuments?: number;
  /** called once an asynchronous unload has written its files, before it decides (tests pause or act here) */
  onUnloadWritten?: (ref: pb.IndexRef) => Promise<void> | void;
  /** called once the build in place of an interim engine is done, before it takes over (tests act here) */
  onRebuilt?: (ref: pb.IndexRef) => Promise<void> | void;
}

const DEFAULT_ENGINE_IDLE_MS = 30 * 60_000;
/**
 * Small engines are unloaded on the event loop: in slices of this many milliseconds, with a pause
 * between them for the queries.
 */
const UNLOAD_SLICE_MS = 5;
const UNLOAD_PAUSE_MS = 20;
/**
 * Engines with more segment memory than this (about 2,000 documents) are unloaded one at a time
 * with their files written and read back on libuv's threads and their hashing in slices: on the
 * event loop, a 100k-document engine's snapshot (185 MB) took 185-330 ms to serialize and 190-600
 * ms to write (BENCHMARKS.md "Many small indexes on one node"). Below it, the few syscalls of a
 * synchronous write cost less than the hops of an asynchronous one.
 */
const SYNC_SNAPSHOT_MAX_BYTES = 4 * 1024 * 1024;

/**
 * Documents a part's held snapshot may fall behind by (see beforeWrite), and all held snapshots
 * together: past them, the writes' bodies would cost more memory than the rebuild they save is
 * worth, and the snapshot goes as a small part's does.
 */
const HELD_MAX_DOCUMENTS = 20_000;
const HELD_TOTAL_MAX_DOCUMENTS = 200_000;
/** Stored documents per segment when a first load builds on the pool (larger parts get several, merged later). */
const LOAD_CHUNK = 100_000;
/**
 * Parts of at most this many documents are built in place on first load: about 0.2 ms of the
 * event loop a document once warm (Best Buy), so a dozen milliseconds. Larger ones go to the
 * pool, where a build holds up neither the node's other queries nor its membership lease: built
 * in place up to 5,000 documents, a first query to a part of 1,000 stalled every other request
 * of the node for 210 ms, and one of 3,291 for 660 ms (BENCHMARKS.md "First loads off the event
 * loop"). The pool costs the first query a worker's start after a quiet minute instead.
 */
const LOAD_IN_PLACE_MAX = 64;
/** Parts with fewer documents are left to their first query by the warm-up after writes (see noteWrite). */
const WARM_AFTER_WRITES_MIN_DOCUMENTS = 2_000;
/** Beside the snapshots: the parts whose engines were in memory at the last stop (see SearchHost.lastRunParts). */
const LAST_RUN_FILE = 'loaded-at-stop.json';
/** Stored documents read at once when a held snapshot's writes from before a stop are read back. */
const READ_BACK_BATCH = 256;
/** Minimum support of mined phrases: the engines' default, which pooled builds must use too. */
const MIN_SUPPORT = 2;

interface Entry {
  engine: SuggestEngine | null;
  behavior: BehaviorModel | null;
  loading: Promise<Loaded> | null;
  /** writes that arrived while the engine was loading, applied once it is there */
  backlog: ChangeEvent[];
  partition: number;
  ref: pb.IndexRef;
  /** queried since the last idle sweep */
  used: boolean;
  /** idle sweeps in a row without a query */
  idleSweeps: number;
  /** changes that reached the part since it was loaded (an unload in progress gives up when this moves) */
  changes: number;
  /** while the part is built again in place of an interim engine (see rebuildInterim) */
  rebuild: Rebuild | null;
}

/** The writes that reached a part since its build in place of an interim engine began. */
interface Rebuild {
  changes: ChangeEvent[];
  documents: number;
  /** more documents than a held snapshot may fall behind by: the build starts again */
  overflow: boolean;
}

/**
 * The snapshot of a part not loaded, kept through writes (see beforeWrite): the file as it matched
 * the store before them, and the writes since, in order, for the engine read from it.
 */
interface Held {
  file: string;
  documents: number;
  storedBytes: number;
  changes: ChangeEvent[];
  /**
   * documents written before the last stop (see HELD_IDS_SUFFIX): the load reads their stored
   * state, which is also the state of any of them written again since
   */
  before: readonly string[];
  /** documents in `changes` and `before` */
  behind: number;
}

/**
 * Written at a stop beside each held snapshot: the ids of the documents written since it matched
 * the store, and its header. The next start holds the snapshot again with them (it removes a held
 * snapshot without one: the process stopped without writing it, so writes may be missing).
 */
const HELD_IDS_SUFFIX = '.ids';

/** The held snapshot's header, and the ids. */
interface HeldIds extends SnapshotHeader {
  ids: string[];
}

interface Loaded {
  engine: SuggestEngine;
  behavior: BehaviorModel;
  /** events with this sequence number and later were not in the replayed log */
  eventsFrom: number;
}

const SNAPSHOT_VERSION = 1;

interface SnapshotHeader {
  v: number;
  documents: number;
  stored_bytes: number;
}

const keyOf = (ref: Pick<pb.IndexRef, 'partition' | 'tenantId' | 'physicalIndexId' | 'part'>) => `${ref.partition}\0${ref.tenantId}\0${ref.physicalIndexId}\0${ref.part}`;

export class SearchHost implements QueryHandler {
  private readonly entries = new Map<string, Entry>();
  private readonly stores = new Map<number, PartitionStore>();

  private readonly refresher: EngineRefresher;
  private unseenAnswers = 0;
  private answersWhileLoading = 0;
  /** answers queries whose part's engine is still loading (see `loadWaitMs`); never written to */
  private empty: SuggestEngine | null = null;
  /** parts not loaded whose snapshot a write has already removed (see onChange) */
  private readonly snapshotsDropped = new Set<string>();
  /** parts not loaded whose snapshot is kept through writes (see beforeWrite) */
  private readonly held = new Map<string, Held>();
  /** documents in every Held's changes */
  private heldDocuments = 0;
  private warmLoadsStarted = 0;
  /** parts written while unloaded with no snapshot, by key: when last written (see noteWrite) */
  private readonly written = new Map<string, { store: PartitionStore; ref: pb.IndexRef; at: number }>();
  private writtenSweeper: NodeJS.Timeout | null = null;
  private readonly pool: SegmentPool | null;
  private readonly embeddings: EmbeddingProvider | null;
  private readonly titleVectors = new VectorCache();

  private readonly idleSweeper: NodeJS.Timeout | null = null;
  private readonly sweepsToUnload: number = 0;
  private unloads = 0;
  /** engines built from stored documents (no snapshot to read), by the thread that tokenized them */
  private readonly builds = { eventLoop: 0, pool: 0 };
  /** interim engines replaced by a build from the stored documents */
  private rebuilt = 0;
  /** queries refused while their engine loaded (see query) */
  private deferredLoads = 0;
  /**
   * Builds in place of interim engines, one at a time: after an upgrade every part read back at
   * the start has one, and each build holds a second engine of its part until it takes over.
   */
  private rebuilds: Promise<void> = Promise.resolve();
  /** the engine each behaviour model reads documents from (a build replaces an interim engine) */
  private readonly documentsOf = new WeakMap<BehaviorModel, { engine: SuggestEngine }>();
  /** parts found idle, waiting to be unloaded */
  private readonly idle = new Set<string>();
  private unloading: NodeJS.Timeout | null = null;
  /** idle parts too large to unload on the event loop, waiting for `unloadingLarge` */
  private readonly largeIdle = new Set<string>();
  private unloadingLarge: Promise<void> | null = null;
  /** set by close: an unload in progress leaves the engine to close's snapshot */
  private closing = false;
  private readonly syncSnapshotMaxBytes: number;

  constructor(private readonly opts: SearchHostOptions) {
    this.pool = opts.pool ?? null;
    this.refresher = new EngineRefresher({ ...opts.refresh, pool: this.pool, log: opts.log });
    this.embeddings = opts.embeddings === undefined ? embeddingProviderFromEnv() : opts.embeddings;
    this.syncSnapshotMaxBytes = opts.syncSnapshotMaxBytes ?? SYNC_SNAPSHOT_MAX_BYTES;
    this.resumeHeld(removePartialUnloads(path.join(opts.dataDir, 'engine')));
    const idleMs = opts.engineIdleMs ?? DEFAULT_ENGINE_IDLE_MS;
    if (idleMs > 0) {
      // a part is unloaded between idleMs and idleMs + one sweep after its last query
      const sweepMs = Math.min(60_000, Math.max(250, Math.floor(idleMs / 4)));
      this.sweepsToUnload = Math.max(1, Math.ceil(idleMs / sweepMs));
      this.idleSweeper = setInterval(() => this.unloadIdle(), sweepMs);
      this.idleSweeper.unref();
    }
  }

  /** Engines loaded now (parts queried recently, or being loaded). */
  get enginesLoaded(): number {
    return this.entries.size;
  }

  /** Engines unloaded after going unqueried for `engineIdleMs`. */
  get engineUnloads(): number {
    return this.unloads;
  }

  /** Unloaded parts whose snapshot is held through writes, and the documents kept beside them (see beforeWrite). */
  get heldSnapshots(): { parts: number; documents: number } {
    return { parts: this.held.size, documents: this.heldDocuments };
  }

  /** Loads started by a `warm` query (see warm). */
  get warmLoads(): number {
    return this.warmLoadsStarted;
  }

  /** Engines built from stored documents since start: in place on the event loop, or on the segment pool. */
  get engineBuilds(): { eventLoop: number; pool: number } {
    return { ...this.builds };
  }

  /** Interim engines (snapshots of an older format) replaced by a build from the stored documents since start. */
  get interimEnginesReplaced(): number {
    return this.rebuilt;
  }

  /**
   * Finds the parts not queried for `engineIdleMs` and unloads their engines (see `unloadSome`).
   */
  private unloadIdle(): void {
    for (const [key, entry] of this.entries) {
      if (entry.used) {
        entry.used = false;
        entry.idleSweeps = 0;
      } else if (++entry.idleSweeps >= this.sweepsToUnload) {
        this.idle.add(key);
      }
    }
    if (this.idle.size > 0 && this.unloading === null) this.unloadSome();
  }

  /**
   * Unloads idle engines for at most UNLOAD_SLICE_MS of the event loop, then yields and goes on:
   * each engine's snapshot is written (the next query reads it back, graphs included) and the
   * engine, its behaviour model and the query threads' views of it are let go. A part queried
   * again meanwhile, or with documents still being indexed, stays; one larger than
   * `syncSnapshotMaxBytes` is unloaded by `unloadLarge`.
   */
  private unloadSome(): void {
    this.unloading = null;
    const started = performance.now();
    let unloaded = 0;
    for (const key of this.idle) {
      if (performance.now() - started > UNLOAD_SLICE_MS) break;
      this.idle.delete(key);
      const entry = this.entries.get(key);
      const engine = entry?.engine ?? null;
      if (!entry || entry.used || engine === null || !this.refresher.ready(engine)) continue;
      if (segmentBytes(engine) > this.syncSnapshotMaxBytes) {
        this.largeIdle.add(key);
        continue;
      }
      if (!this.saveSnapshot(entry, engine, 'engine snapshot failed; the engine stays loaded')) continue;
      this.release(key, entry);
      // a snapshot exists again: the next write before a query must remove it (see onChange)
      this.snapshotsDropped.delete(key);
      this.unloads++;
      unloaded++;
    }
    if (unloaded > 0) this.opts.log?.info('idle engines unloaded', { engines: unloaded, loaded: this.entries.size, waiting: this.idle.size });
    if (this.idle.size > 0) {
      this.unloading = setTimeout(() => this.unloadSome(), UNLOAD_PAUSE_MS);
      this.unloading.unref();
    }
    this.unloadNextLarge();
  }

  /** Starts the next large unload when none is running. */
  private unloadNextLarge(): void {
    if (this.unloadingLarge !== null) return;
    for (const key of this.largeIdle) {
      this.largeIdle.delete(key);
      const entry = this.entries.get(key);
      const engine = entry?.engine ?? null;
      if (!entry || entry.used || engine === null || !this.refresher.ready(engine)) continue;
      this.unloadingLarge = this.unloadLarge(key, entry, engine).finally(() => {
        this.unloadingLarge = null;
        this.unloadNextLarge();
      });
      return;
    }
  }

  /**
   * Unloads a large idle engine: its snapshot and graphs are written beside their places off the
   * event loop (`SuggestEngine.serializePieces`, `saveGraphsAsync`), and put in place, with the
   * engine let go, only if nothing reached the part meanwhile: no query, no write, no drop.
   * Otherwise the files go and the engine stays, as it would have without the attempt.
   */
  private async unloadLarge(key: string, entry: Entry, engine: SuggestEngine): Promise<void> {
    const store = this.stores.get(entry.partition);
    if (!store || store.isClosed || engine.snapshotFormat !== ENGINE_FORMAT_VERSION) return;
    const changes = entry.changes;
    const file = this.snapshotPath(entry.ref);
    const partial = `${file}.unloading`;
    const partialGraphs = `${graphsDir(file)}.unloading`;
    const started = performance.now();
    const discard = () => {
      rmSync(partial, { force: true });
      rmSync(partialGraphs, { recursive: true, force: true });
    };
    try {
      const header = snapshotHeader(store, entry.ref);
      const pieces = [snapshotHead(header), ...engine.serializePieces()];
      await mkdir(path.dirname(file), { recursive: true });
      const out = await open(partial, 'w');
      try {
        const { bytesWritten } = await out.writev(pieces);
        if (bytesWritten !== pieces.reduce((n, p) => n + p.byteLength, 0)) throw new Error('engine snapshot write was cut short');
      } finally {
        await out.close();
      }
      const graphs = await engine.saveGraphsAsync(partialGraphs);
      await this.opts.onUnloadWritten?.(entry.ref);
      if (this.closing || this.entries.get(key) !== entry || entry.engine !== engine || entry.used || entry.changes !== changes || store.isClosed) {
        discard();
        return;
      }
      rmSync(graphsDir(file), { recursive: true, force: true });
      if (graphs > 0) renameSync(partialGraphs, graphsDir(file));
      renameSync(partial, file);
      this.release(key, entry);
      // a snapshot exists again: the next write before a query must remove it (see onChange)
      this.snapshotsDropped.delete(key);
      this.unloads++;
      this.opts.log?.info('idle engine unloaded', { index: entry.ref.physicalIndexId, part: entry.ref.part, documents: header.documents, graphs, ms: Math.round(performance.now() - started), loaded: this.entries.size });
    } catch (err) {
      discard();
      this.opts.log?.warn('engine snapshot failed; the engine stays loaded', { err, index: entry.ref.physicalIndexId });
    }
  }

  /** Engine options: with a pool, the refresher decides when and where buffered writes are built. */
  private get engineOptions() {
    return this.pool === null ? { autoMerge: true } : { autoMerge: false, maxPending: Number.MAX_SAFE_INTEGER };
  }

  /**
   * A write about to reach a part whose engine is not loaded but whose snapshot is on disk (it
   * went idle, or the node restarted), a large one (over `syncSnapshotMaxBytes`, about 2,000
   * documents), which still matches the store: the snapshot is held (moved aside, so that a
   * restart never reads it against the newer store) and the part's writes from here on are kept
   * beside it, in order (see onChange). The next query reads the engine back from it and applies
   * them: a fraction of a second for 100k documents, where a build from the stored documents
   * takes seconds and rebuilds the ANN graphs. The write itself waits for nothing (a header read
   * and a rename). Otherwise the write removes the snapshot (see onChange) and the next query
   * builds the engine from the stored documents: well under a second for a small part. Called by
   * the primary for its own writes and by a follower for the ones it applies from its primary.
   */
  beforeWrite(store: PartitionStore, ref: pb.IndexRef, replica = false): void {
    const key = keyOf(ref);
    if (this.closing || this.entries.has(key) || this.held.has(key)) return;
    const file = this.snapshotPath(ref);
    let bytes: number;
    try {
      bytes = this.snapshotsDropped.has(key) ? -1 : statSync(file).size;
    } catch {
      bytes = -1;
    }
    if (bytes < 0) {
      // no snapshot: a build at the first query, unless the writes pause first
      if (!replica) this.noteWrite(key, store, ref);
      return;
    }
    if (bytes <= this.syncSnapshotMaxBytes) return;
    const stats = store.stats(ref);
    if (!this.snapshotMatches(ref, stats)) return;
    const heldFile = `${file}.held`;
    try {
      rmSync(graphsDir(heldFile), { recursive: true, force: true });
      renameSync(file, heldFile);
      try {
        renameSync(graphsDir(file), graphsDir(heldFile));
      } catch {
        // no graphs saved with it
      }
    } catch (err) {
      this.opts.log?.warn('engine snapshot could not be held through a write; it goes', { err, index: ref.physicalIndexId });
      return;
    }
    this.held.set(key, { file: heldFile, documents: stats.documentCount, storedBytes: stats.storedBytes, changes: [], before: [], behind: 0 });
  }

  /**
   * The snapshots held at the last stop, each with the ids written since it matched the store
   * (see HELD_IDS_SUFFIX), held again: the first query reads the engine back and those documents
   * from the store, where a rolling restart would otherwise leave every large index written while
   * idle to a build from its stored documents. The ids are kept in memory from here on (a stop
   * writes them again); a held snapshot whose ids cannot be read goes.
   */
  private resumeHeld(files: string[]): void {
    for (const file of files) {
      const idsFile = `${file}${HELD_IDS_SUFFIX}`;
      let saved: HeldIds | null = null;
      try {
        const parsed = JSON.parse(readFileSync(idsFile, 'utf8')) as HeldIds;
        const header = readHeaderSync(file);
        const valid = parsed?.v === SNAPSHOT_VERSION && Array.isArray(parsed.ids) && parsed.ids.every((id) => typeof id === 'string') && headerMatches(header, parsed.documents, parsed.stored_bytes);
        if (valid && this.heldDocuments + parsed.ids.length <= HELD_TOTAL_MAX_DOCUMENTS) saved = parsed;
      } catch {
        // none (the process did not stop in order), or unreadable: the snapshot goes
      }
      rmSync(idsFile, { force: true });
      const ref = heldRef(file);
      if (saved === null || ref === null) {
        rmSync(file, { force: true });
        rmSync(graphsDir(file), { recursive: true, force: true });
        continue;
      }
      this.held.set(keyOf(ref), { file, documents: saved.documents, storedBytes: saved.stored_bytes, changes: [], before: saved.ids, behind: saved.ids.length });
      this.heldDocuments += saved.ids.length;
    }
    if (this.held.size > 0) this.opts.log?.info('engine snapshots held through writes before the stop, kept', { parts: this.held.size, documents: this.heldDocuments });
  }

  /** At a stop: the ids written since each held snapshot matched the store, beside it (see resumeHeld). */
  private saveHeldIds(): void {
    for (const held of this.held.values()) {
      const ids = new Set(held.before);
      for (const ev of held.changes) for (const id of ev.ids) ids.add(id);
      const file = `${held.file}${HELD_IDS_SUFFIX}`;
      try {
        const out: HeldIds = { v: SNAPSHOT_VERSION, documents: held.documents, stored_bytes: held.storedBytes, ids: [...ids] };
        writeFileSync(`${file}.tmp`, JSON.stringify(out));
        renameSync(`${file}.tmp`, file);
      } catch (err) {
        this.opts.log?.warn('the writes behind a held engine snapshot could not be listed; the next start lets it go', { err, file: held.file });
      }
    }
  }

  /**
   * A write of this node's own to a part that is not loaded and has no snapshot: with
   * `warmAfterWritesMs`, once the part's writes pause that long, a part of
   * WARM_AFTER_WRITES_MIN_DOCUMENTS or more is loaded (a new index filled through the document
   * routes: its first query would otherwise wait seconds for the build). Not while writes go on:
   * an engine in memory follows every write, at about half the ingestion throughput. Parts with a
   * snapshot are read back by their first query in a fraction of a second, and are not loaded
   * here (a feed touching many idle indexes would otherwise bring them all back).
   */
  private noteWrite(key: string, store: PartitionStore, ref: pb.IndexRef): void {
    const quietMs = this.opts.warmAfterWritesMs ?? 0;
    if (quietMs <= 0) return;
    this.written.set(key, { store, ref, at: performance.now() });
    if (this.writtenSweeper !== null) return;
    this.writtenSweeper = setInterval(() => {
      const now = performance.now();
      for (const [k, w] of this.written) {
        if (now - w.at < quietMs) continue;
        this.written.delete(k);
        if (this.closing || w.store.isClosed || this.entries.has(k) || this.held.has(k)) continue;
        if (w.store.stats(w.ref).documentCount < WARM_AFTER_WRITES_MIN_DOCUMENTS) continue;
        try {
          statSync(this.snapshotPath(w.ref));
          continue; // a snapshot came back (an unload): the first query reads it
        } catch {
          // none: load it
        }
        this.startWarmLoad(w.store, w.ref);
      }
      if (this.written.size === 0 && this.writtenSweeper !== null) {
        clearInterval(this.writtenSweeper);
        this.writtenSweeper = null;
      }
    }, Math.max(50, Math.min(1_000, quietMs / 2)));
    this.writtenSweeper.unref();
  }

  /** The part has a snapshot on disk, of this format, that matches its store's `stats` (as they are now). */
  private snapshotMatches(ref: pb.IndexRef, stats: { documentCount: number; storedBytes: number }): boolean {
    let header: SnapshotHeader | null;
    try {
      header = readHeaderSync(this.snapshotPath(ref));
    } catch {
      return false; // no snapshot
    }
    return headerMatches(header, stats.documentCount, stats.storedBytes);
  }

  /** Takes a part's held snapshot out of the held ones (for a load, or to let it go). */
  private takeHeld(key: string): Held | undefined {
    const held = this.held.get(key);
    if (held) {
      this.held.delete(key);
      this.heldDocuments -= held.behind;
    }
    return held;
  }

  /** Lets a held snapshot go (too far behind, its part dropped or moved away): its files, and its writes. */
  private dropHeld(key: string): void {
    const held = this.takeHeld(key);
    if (!held) return;
    rmSync(held.file, { force: true });
    rmSync(`${held.file}${HELD_IDS_SUFFIX}`, { force: true });
    rmSync(graphsDir(held.file), { recursive: true, force: true });
  }

  /** Feed for ShardNode.onChange. */
  readonly onChange = (event: ChangeEvent): void => {
    const key = keyOf(event.ref);
    const entry = this.entries.get(key);
    if (event.type === 'drop') {
      if (entry) this.release(key, entry);
      this.dropHeld(key);
      this.written.delete(key);
      rmSync(this.snapshotPath(event.ref), { force: true });
      rmSync(graphsDir(this.snapshotPath(event.ref)), { recursive: true, force: true });
      return;
    }
    const held = entry ? undefined : this.held.get(key);
    if (held !== undefined) {
      // engagement events are in the store's log, which a load replays whole
      if (event.type !== 'upsert' && event.type !== 'delete') return;
      if (this.closing) {
        // after the stop listed its writes: the list would miss this one
        this.dropHeld(key);
        return;
      }
      const n = event.documents?.length ?? event.ids.length;
      held.changes.push(event);
      held.behind += n;
      this.heldDocuments += n;
      if (held.behind > (this.opts.heldMaxDocuments ?? HELD_MAX_DOCUMENTS) || this.heldDocuments > HELD_TOTAL_MAX_DOCUMENTS) {
        this.dropHeld(key);
        this.snapshotsDropped.add(key);
      }
      return;
    }
    if (!entry) {
      // the pause a warm-up after writes waits for counts from the end of the last write
      const w = this.written.get(key);
      if (w !== undefined) w.at = performance.now();
      // Not loaded: the first query loads it from the store, which has the write. A snapshot of
      // the engine written before (at the last stop) is older than this write, and a write that
      // keeps the part's document count and stored bytes (an update of the same size) would not
      // show in the snapshot's check: it goes now. Once per part: no snapshot is written again
      // before the engine is loaded.
      if ((event.type === 'upsert' || event.type === 'delete') && !this.snapshotsDropped.has(key)) {
        this.snapshotsDropped.add(key);
        const file = this.snapshotPath(event.ref);
        rmSync(file, { force: true });
        rmSync(graphsDir(file), { recursive: true, force: true });
      }
      return;
    }
    entry.changes++;
    const rebuild = entry.rebuild;
    if (rebuild !== null && !rebuild.overflow && (event.type === 'upsert' || event.type === 'delete')) {
      rebuild.documents += event.ids.length;
      rebuild.changes.push(event);
      if (rebuild.documents > (this.opts.heldMaxDocuments ?? HELD_MAX_DOCUMENTS)) {
        rebuild.overflow = true;
        rebuild.changes = [];
      }
    }
    if (!entry.engine || !entry.behavior) {
      entry.backlog.push(event);
      return;
    }
    apply(entry.engine, entry.behavior, event, 0);
    if (event.type === 'upsert' || event.type === 'delete') this.refresher.touch(entry.engine);
  };

  /** Synchronous once the part's engine is loaded (the in-process hot path relies on it). */
  query(ctx: QueryContext): unknown {
    if (ctx.kind === 'warm') return this.warm(ctx);
    if (ctx.kind === 'unload') return this.unloadNow(ctx);
    const loaded = this.loadedFor(ctx.store, ctx.ref);
    if (!(loaded instanceof Promise)) return this.answer(loaded, ctx);
    if ((ctx.payload as { defer_loading?: unknown } | undefined)?.defer_loading === true) {
      // A follower's turn (the router asks the primary instead): the load goes on for the next
      // one, and this query does not wait for it. Its failure is the next query's to see.
      loaded.catch(() => undefined);
      this.deferredLoads++;
      fail('unavailable', { reason: `The search engine of index part ${ctx.ref.part} is loading on this replica` });
    }
    return this.afterLoad(loaded, ctx);
  }

  /** Queries refused at once (`defer_loading`) because their part's engine was loading here. */
  get queriesDeferred(): number {
    return this.deferredLoads;
  }

  /**
   * A query that found its part's engine loading: answered once it is there, or, past
   * `loadWaitMs`, from no documents (a first load of a large part takes seconds, a minute for a
   * million documents: clients and a cluster router's deadline give up long before).
   */
  private afterLoad(loading: Promise<Loaded>, ctx: QueryContext): Promise<unknown> {
    const waiting = performance.now();
    const limit = this.opts.loadWaitMs ?? Infinity;
    const waited = Number.isFinite(limit) ? withTimeout(loading, limit, () => new LoadWaitOver()) : loading;
    return waited.then(
      (l) => mapAnswer(this.answer(l, ctx), (r) => withWait(r, 'load_wait_ms', performance.now() - waiting)),
      (err: unknown) => {
        if (!(err instanceof LoadWaitOver)) throw err;
        this.unseenAnswers++;
        this.answersWhileLoading++;
        return withWait(withIndexing(this.answerEmpty(ctx), ctx.store.stats(ctx.ref).documentCount), 'load_wait_ms', performance.now() - waiting);
      },
    );
  }

  /** The answer of a part with no documents, on the event loop (the request still checked as usual). */
  private answerEmpty(ctx: QueryContext): unknown {
    this.empty ??= new SuggestEngine(this.engineOptions);
    const payload = (ctx.payload ?? {}) as Record<string, unknown>;
    switch (ctx.kind) {
      case 'typeahead':
        return onEventLoop(this.empty.typeahead(typeaheadRequest(payload)));
      case 'autocomplete':
        return onEventLoop(this.empty.autocomplete(autocompleteRequest(payload)));
      case 'predict':
        return this.empty.predict(predictRequest(payload));
      default:
        return fail('not_implemented', { feature: `Query kind '${ctx.kind}'` });
    }
  }

  /** Queries answered from no documents because their part's engine was still loading (see `loadWaitMs`). */
  get answersDuringLoad(): number {
    return this.answersWhileLoading;
  }

  /**
   * Brings a part's engine into memory ahead of its first query, and answers at once with where
   * it stands (QueryKind `warm`): after an ingestion job into a new index, and before a physical
   * index is promoted, the first queries would otherwise wait for a build from the stored
   * documents (about 8 s for 58k documents, BENCHMARKS.md "Warm before the swap"). The load is
   * the one a query would start (the pool's threads for all but the smallest parts, a snapshot
   * read back when there is one), and queries arriving meanwhile wait for it as they would.
   */
  private warm(ctx: QueryContext): WarmState {
    const key = keyOf(ctx.ref);
    const entry = this.entries.get(key);
    if (entry?.engine) return { state: 'ready', documents: entry.engine.documentCount };
    const stats = ctx.store.stats(ctx.ref);
    const documents = stats.documentCount;
    if (entry?.loading) return { state: 'loading', documents };
    const req = ctx.payload as WarmRequest | undefined;
    if (typeof req?.min_documents === 'number' && documents < req.min_documents) return { state: 'skipped', documents };
    if (req?.snapshot_only === true && !this.held.has(key) && !this.snapshotMatches(ctx.ref, stats)) return { state: 'skipped', documents };
    return this.startWarmLoad(ctx.store, ctx.ref) !== null ? { state: 'loading', documents } : { state: 'ready', documents };
  }

  /**
   * Starts the load a query would start, for no query (a warm-up); false when the engine was
   * loaded at once. A failure is logged: the next query or warm-up tries again.
   */
  /**
   * Starts the load of a part not loaded yet: whether it succeeded (a failure is logged), or null
   * when the part is loaded or loading.
   */
  private startWarmLoad(store: PartitionStore, ref: pb.IndexRef): Promise<boolean> | null {
    const loaded = this.loadedFor(store, ref);
    if (!(loaded instanceof Promise)) return null;
    this.warmLoadsStarted++;
    return loaded.then(
      () => true,
      (err: unknown) => {
        this.opts.log?.warn('engine warm-up failed', { err, index: ref.physicalIndexId, part: ref.part });
        return false;
      },
    );
  }

  /**
   * Lets a part's engine go ahead of its idle time (QueryKind `unload`): the physical index a
   * promotion swapped away from, which would otherwise hold its memory beside the new one's until
   * `engineIdleMs` passed. The unload is an idle unload's (its snapshot written, so that a
   * promotion back reads it in a fraction of a second), and like one it gives up if a query or a
   * write reaches the part meanwhile, or documents are still being indexed.
   */
  private unloadNow(ctx: QueryContext): UnloadState {
    const key = keyOf(ctx.ref);
    const entry = this.entries.get(key);
    if (!entry?.engine || this.closing) return { state: 'not_loaded' };
    entry.used = false;
    this.idle.add(key);
    if (this.unloading === null) this.unloadSome();
    return { state: 'unloading' };
  }

  /**
   * At once, unless documents this query must see are still being indexed: then once they are,
   * or, past the refresher's short wait (a bulk load), from the documents searchable by then. Such
   * an answer carries `indexing`, the documents written before it that it did not see: the router
   * does not cache it.
   */
  private answer(loaded: Loaded, ctx: QueryContext): unknown {
    if (this.refresher.ready(loaded.engine)) return this.run(loaded, ctx);
    const waiting = performance.now();
    return this.refresher.settle(loaded.engine).then((unseen) => {
      const waited = performance.now() - waiting;
      if (unseen === 0) return mapAnswer(this.run(loaded, ctx), (r) => withWait(r, 'fresh_wait_ms', waited));
      this.unseenAnswers++;
      const result = loaded.engine.published(() => this.run(loaded, ctx));
      return mapAnswer(result, (r) => withWait(withIndexing(r, unseen), 'fresh_wait_ms', waited));
    });
  }

  /** Queries answered before every document written ahead of them was searchable (see `answer`). */
  get answersDuringIndexing(): number {
    return this.unseenAnswers;
  }

  /** The loaded engines of each partition: how many, their segments and the bytes they hold (see `SuggestEngine.memory`). */
  engineMemory(): Map<number, { engines: number; segments: number; segmentBytes: number; graphBytes: number }> {
    const out = new Map<number, { engines: number; segments: number; segmentBytes: number; graphBytes: number }>();
    for (const entry of this.entries.values()) {
      if (entry.engine === null) continue;
      const m = entry.engine.memory();
      let p = out.get(entry.partition);
      if (p === undefined) out.set(entry.partition, (p = { engines: 0, segments: 0, segmentBytes: 0, graphBytes: 0 }));
      p.engines++;
      p.segments += m.segments;
      p.segmentBytes += m.segmentBytes;
      p.graphBytes += m.graphBytes;
    }
    return out;
  }

  /** Documents written to the loaded engines that queries cannot find yet (buffered or being built). */
  documentsIndexing(): number {
    let n = 0;
    for (const entry of this.entries.values()) if (entry.engine) n += entry.engine.indexingCount;
    return n;
  }

  /** Autocomplete of one part's engine: on the query pool when there is one. */
  private autocomplete(ctx: QueryContext, engine: SuggestEngine, req: AutocompleteRequest): AutocompleteResult | Promise<AutocompleteResult> {
    return this.opts.queryPool ? this.opts.queryPool.autocomplete(keyOf(ctx.ref), engine, req) : engine.autocomplete(req);
  }

  private run(loaded: Loaded, ctx: QueryContext): unknown {
    const result = this.runQuery(loaded, ctx);
    return (ctx.payload as { profile?: unknown } | undefined)?.profile === true ? mapAnswer(result, onEventLoop) : result;
  }

  private runQuery({ engine, behavior }: Loaded, ctx: QueryContext): unknown {
    const payload = (ctx.payload ?? {}) as Record<string, unknown>;
    const settings = behaviorSettings(payload.behavior);
    const learned = settings.enabled && !behavior.isEmpty;
    const userId = typeof payload.user_id === 'string' && payload.user_id.length > 0 ? payload.user_id : undefined;
    switch (ctx.kind) {
      case 'typeahead': {
        const req = typeaheadRequest(payload);
        const rank = (result: TypeaheadResult) => (learned ? rankTypeahead(result, { model: behavior, query: req.query, userId, settings }, (req.limit ?? 10) + (req.spare ?? 0)) : result);
        if (this.opts.queryPool && this.opts.typeaheadOnThreads === true) return this.opts.queryPool.typeahead(keyOf(ctx.ref), engine, req).then(rank);
        return rank(engine.typeahead(req));
      }
      case 'autocomplete': {
        const req = autocompleteRequest(payload);
        // behaviour ranking, when it applies, re-ranks the lexical pool itself and takes precedence
        if (!learned && req.mode === 'fts_rerank' && this.embeddings !== null) return rerankWithProvider(engine, req, this.embeddings, this.titleVectors);
        if (!learned) return this.autocomplete(ctx, engine, req);
        // a wider lexical pool, so that behaviour can lift documents from below the cut (documents
        // chosen after the query are added even from outside it)
        const limit = req.limit ?? 10;
        const rank = (result: AutocompleteResult): AutocompleteResult => {
          const suggestions = rankAutocomplete(result.suggestions, visible(engine, req.ranking), { model: behavior, query: req.query, userId, settings }, limit, !req.filters);
          return { ...result, suggestions };
        };
        const pooled = this.autocomplete(ctx, engine, { ...req, limit: candidatePool(behavior, req.query, userId, limit, MAX_LIMIT) });
        return pooled instanceof Promise ? pooled.then(rank) : rank(pooled);
      }
      case 'predict': {
        const req = predictRequest(payload);
        if (!learned) return engine.predict(req);
        // the same behaviour ranking under predict's candidate sources; a document whose score
        // engagement did not change carries no behaviour signal (no `behavioral_boost` reason)
        const ctxFor = (query: string) => ({ model: behavior, query, userId, settings });
        return predictCandidates(
          {
            typeahead: (r) => rankTypeahead(engine.typeahead(r), ctxFor(r.query), r.limit ?? 10),
            autocomplete: (r) => {
              const result = engine.autocomplete({ ...r, limit: candidatePool(behavior, r.query, userId, r.limit ?? 10, MAX_LIMIT) });
              const ranked = rankAutocomplete(result.suggestions, visible(engine, r.ranking), ctxFor(r.query), r.limit ?? 10, !r.filters);
              return { ...result, suggestions: ranked.map((s) => (s.metadata.behavior && s.metadata.behavior.boost <= 1 ? { ...s, metadata: { ...s.metadata, behavior: undefined } } : s)) };
            },
            get: (id) => engine.get(id),
          },
          req,
        );
      }
      default:
        return fail('not_implemented', { feature: `Query kind '${ctx.kind}'` });
    }
  }

  /**
   * Engine statistics of a part whose engine is loaded. Stats never build an engine: document
   * counts (which every write's limit check asks for) must stay cheap for parts nobody queries.
   */
  indexStats(ctx: IndexContext): unknown {
    const key = keyOf(ctx.ref);
    const entry = this.entries.get(key);
    if (entry?.engine) return { loaded: true, ...entry.engine.stats({ refresh: false }), behavior: entry.behavior?.stats() ?? null };
    // a part being loaded, or about to be (its writes just paused): none of its documents is searchable yet
    const loading = entry?.loading != null;
    if (!loading && !this.written.has(key)) return { loaded: false };
    const documents = ctx.store.stats(ctx.ref).documentCount;
    if (!loading && documents < WARM_AFTER_WRITES_MIN_DOCUMENTS) return { loaded: false };
    return { loaded: false, loading, indexing: documents };
  }

  /** A follower's replicated write, applied like the primary's own (QueryHandler.replicaChanged). */
  replicaChanged(event: ChangeEvent): void {
    this.onChange(event);
  }

  /**
   * Writes replicated from the partition's primary that could not be read as changes reached the
   * store of this follower, not its engines: an engine a read built here would answer without
   * them, now and once this node leads the partition, so it goes. A scan of the loaded parts per
   * such batch (a few microseconds per thousand).
   */
  replicaWritten(partition: number): void {
    if (this.entries.size === 0) return;
    for (const entry of this.entries.values()) {
      if (entry.partition === partition) {
        this.forgetPartition(partition);
        return;
      }
    }
  }

  /**
   * The engines of a partition's parts of WARM_AFTER_WRITES_MIN_DOCUMENTS or more, loaded one at a
   * time (QueryHandler.warmPartition): a copy that arrived by a move, whose first queries would
   * otherwise wait for the build and, past `loadWaitMs`, answer from no documents. Smaller parts
   * build at their first query in a fraction of a second. Resolves with the parts loaded here.
   */
  async warmPartition(store: PartitionStore, partition: number, epoch: number, parts: ReadonlySet<string>): Promise<number> {
    let loaded = 0;
    for (const info of [...store.indexParts()]) {
      if (this.closing || store.isClosed) break;
      if (info.documentCount < WARM_AFTER_WRITES_MIN_DOCUMENTS || !parts.has(indexPartId(info.tenantId, info.physicalIndexId, info.part))) continue;
      const ref: pb.IndexRef = { tenantId: info.tenantId, physicalIndexId: info.physicalIndexId, part: info.part, parts: info.parts, partition, epoch };
      if (await this.startWarmLoad(store, ref)) loaded++;
    }
    return loaded;
  }

  /** Index parts of the partition whose engines are loaded (or loading) here. */
  loadedParts(partition: number): string[] {
    const out: string[] = [];
    for (const entry of this.entries.values()) if (entry.partition === partition) out.push(indexPartId(entry.ref.tenantId, entry.ref.physicalIndexId, entry.ref.part));
    return out;
  }

  /** The partition's data was replaced (a copy arrived) or left this node: its engines are stale. */
  forgetPartition(partition: number): void {
    for (const [key, entry] of this.entries) {
      if (entry.partition === partition) this.release(key, entry);
    }
    for (const key of this.held.keys()) if (key.startsWith(`${partition}\0`)) this.dropHeld(key);
    for (const key of this.written.keys()) if (key.startsWith(`${partition}\0`)) this.written.delete(key);
    this.stores.delete(partition);
    rmSync(path.join(this.opts.dataDir, 'engine', `p${partition}`), { recursive: true, force: true });
  }

  /** Writes a snapshot of every loaded engine, so the next start does not re-tokenize. */
  async close(): Promise<void> {
    if (this.idleSweeper) clearInterval(this.idleSweeper);
    if (this.unloading) clearTimeout(this.unloading);
    if (this.writtenSweeper) clearInterval(this.writtenSweeper);
    this.written.clear();
    this.closing = true;
    this.idle.clear();
    this.largeIdle.clear();
    await this.unloadingLarge;
    await this.refresher.close();
    this.saveHeldIds();
    const saved: pb.IndexRef[] = [];
    for (const entry of this.entries.values()) if (entry.engine && this.saveSnapshot(entry, entry.engine, 'engine snapshot failed')) saved.push(entry.ref);
    for (const entry of this.entries.values()) entry.engine?.close();
    this.entries.clear();
    this.empty?.close();
    // the parts in memory at the stop, for the next start to read back (see lastRunParts)
    try {
      mkdirSync(path.join(this.opts.dataDir, 'engine'), { recursive: true });
      writeFileSync(this.lastRunFile, JSON.stringify(saved.map((r) => ({ tenantId: r.tenantId, physicalIndexId: r.physicalIndexId, part: r.part, parts: r.parts, partition: r.partition }))));
    } catch (err) {
      this.opts.log?.warn('the list of loaded engines could not be written; the next start reads none back ahead of queries', { err });
    }
  }

  private get lastRunFile(): string {
    return path.join(this.opts.dataDir, 'engine', LAST_RUN_FILE);
  }

  /**
   * The index parts whose engines were in memory when the process last stopped (their snapshots
   * written then), in the order their engines were loaded. Read once: the list is removed as it
   * is read.
   */
  lastRunParts(): Omit<pb.IndexRef, 'epoch'>[] {
    let refs: unknown;
    try {
      refs = JSON.parse(readFileSync(this.lastRunFile, 'utf8'));
    } catch {
      return [];
    } finally {
      rmSync(this.lastRunFile, { force: true });
    }
    if (!Array.isArray(refs)) return [];
    return refs.filter(
      (r): r is Omit<pb.IndexRef, 'epoch'> =>
        typeof r === 'object' && r !== null && typeof r.tenantId === 'string' && typeof r.physicalIndexId === 'string' && Number.isInteger(r.part) && Number.isInteger(r.parts) && Number.isInteger(r.partition),
    );
  }

  /**
   * Lets go of a part's engine: the refresher's, the query threads' and this host's hold on it;
   * closing it stops its graph builds and removes their files (a query in flight still answers).
   */
  private release(key: string, entry: Entry): void {
    if (entry.engine) this.refresher.forget(entry.engine);
    entry.engine?.close();
    this.entries.delete(key);
    this.opts.queryPool?.forget(key);
    releaseDecoderSource();
  }

  /**
   * Writes the snapshot of a part's engine, stamped with its store's document count and bytes;
   * false (logged with `failure`) when the store is closed or the write failed.
   */
  private saveSnapshot(entry: Entry, engine: SuggestEngine, failure: string): boolean {
    const store = this.stores.get(entry.partition);
    // an interim engine reads text as an older build did: the next load builds instead
    if (!store || store.isClosed || engine.snapshotFormat !== ENGINE_FORMAT_VERSION) return false;
    try {
      this.writeSnapshot(entry.ref, engine, snapshotHeader(store, entry.ref));
      return true;
    } catch (err) {
      this.opts.log?.warn(failure, { err, index: entry.ref.physicalIndexId });
      return false;
    }
  }

  private loadedFor(store: PartitionStore, ref: pb.IndexRef): Promise<Loaded> | Loaded {
    const key = keyOf(ref);
    let entry = this.entries.get(key);
    if (entry?.engine && entry.behavior) {
      entry.used = true;
      return { engine: entry.engine, behavior: entry.behavior, eventsFrom: 0 };
    }
    if (entry?.loading) return entry.loading;
    this.stores.set(ref.partition, store);
    // a held snapshot's writes reach the engine read from it first (a build from the store, if
    // the snapshot fails, has them already: upserts by id and deletes apply again harmlessly)
    const held = this.takeHeld(key);
    entry = { engine: null, behavior: null, loading: null, backlog: held?.changes ?? [], partition: ref.partition, ref: { ...ref }, used: true, idleSweeps: 0, changes: 0, rebuild: null };
    this.entries.set(key, entry);
    const e = entry;
    e.loading = this.load(store, ref, held).then(
      (loaded) => {
        for (const ev of e.backlog) apply(loaded.engine, loaded.behavior, ev, loaded.eventsFrom);
        if (e.backlog.length > 0) this.refresher.touch(loaded.engine);
        e.backlog = [];
        e.loading = null;
        if (this.entries.get(key) !== e) {
          // released while it loaded (its partition's data replaced or gone, or the host closed):
          // the queries that waited answer from it, and nothing keeps it or its background work
          this.refresher.forget(loaded.engine);
          loaded.engine.close();
          return loaded;
        }
        e.engine = loaded.engine;
        e.behavior = loaded.behavior;
        if (loaded.engine.snapshotFormat !== ENGINE_FORMAT_VERSION) {
          this.rebuilds = this.rebuilds
            .then(() => this.rebuildInterim(key, e, store))
            .catch((err: unknown) => this.opts.log?.warn('building a part again in place of an older snapshot format failed; the interim engine goes on answering', { err, index: ref.physicalIndexId, part: ref.part }));
        }
        return loaded;
      },
      (err: unknown) => {
        // a load that began before a release must not drop the entry of the load after it
        if (this.entries.get(key) === e) this.entries.delete(key);
        throw err;
      },
    );
    return e.loading;
  }

  private async load(store: PartitionStore, ref: pb.IndexRef, held: Held | undefined): Promise<Loaded> {
    const engine = await this.loadEngine(store, ref, held);
    this.useGraphBuilder(engine);
    const documents = { engine };
    const behavior = new BehaviorModel((id) => {
      const doc = documents.engine.get(id);
      if (!doc) return null;
      const f = docFields(doc);
      return conceptKeys(f.brand, f.categories);
    });
    this.documentsOf.set(behavior, documents);
    // the log up to here is replayed; later events reach the backlog (see apply)
    const eventsFrom = store.eventCount(ref);
    if (eventsFrom > 0) {
      const started = Date.now();
      for await (const batch of store.scanEvents(ref, eventsFrom)) {
        const events: EngagementEvent[] = [];
        for (const bytes of batch) {
          const e = decodeEvent(bytes);
          if (e) events.push(e);
        }
        behavior.apply(events);
      }
      this.opts.log?.info('engagement events replayed', { index: ref.physicalIndexId, part: ref.part, events: behavior.events, ms: Date.now() - started });
    }
    return { engine, behavior, eventsFrom };
  }

  /**
   * ANN graphs are built on the pool's graph thread, not in slices on the event loop; with query
   * threads, which answer every vector query, the engine does not hold an hnswlib copy itself.
   */
  private useGraphBuilder(engine: SuggestEngine): void {
    if (this.pool !== null && this.opts.graphsOnPool !== false) engine.useGraphBuilder(this.pool, { deferReads: this.opts.queryPool != null });
  }

  private async loadEngine(store: PartitionStore, ref: pb.IndexRef, held: Held | undefined): Promise<SuggestEngine> {
    const stats = store.stats(ref);
    // a held snapshot matched the store as it was before the writes kept beside it
    const fromSnapshot = held ? await this.readSnapshot(ref, held.documents, held.storedBytes, held.file) : await this.readSnapshot(ref, stats.documentCount, stats.storedBytes);
    if (fromSnapshot) {
      if (held !== undefined && held.before.length > 0) await this.readBack(store, ref, fromSnapshot, held.before);
      this.refresher.touch(fromSnapshot); // merges the policy wants
      return fromSnapshot;
    }
    return this.buildFromStore(store, ref);
  }

  /** A new engine of the part's stored documents. */
  private async buildFromStore(store: PartitionStore, ref: pb.IndexRef): Promise<SuggestEngine> {
    const stats = store.stats(ref);
    const started = Date.now();
    let engine: SuggestEngine;
    // small parts in place, larger ones on the pool (see LOAD_IN_PLACE_MAX)
    const pool = stats.documentCount > LOAD_IN_PLACE_MAX ? this.pool : null;
    if (pool !== null) {
      this.builds.pool++;
      // tokenizing on the pool: the event loop only reads the stored bodies
      const builds: Promise<Segment>[] = [];
      let chunk: Uint8Array[] = [];
      for await (const batch of store.scan(ref, 2000)) {
        for (const d of batch) chunk.push(d.body);
        if (chunk.length >= LOAD_CHUNK) {
          builds.push(pool.fromBodies(chunk, MIN_SUPPORT));
          chunk = [];
        }
      }
      if (chunk.length > 0) builds.push(pool.fromBodies(chunk, MIN_SUPPORT));
      engine = SuggestEngine.fromSegments(await Promise.all(builds), this.engineOptions);
      this.refresher.touch(engine);
    } else {
      this.builds.eventLoop++;
      engine = new SuggestEngine(this.engineOptions);
      for await (const batch of store.scan(ref, 2000)) {
        const docs: SuggestDocument[] = batch.map((d) => decodeDocument(d.body));
        engine.upsert(docs);
      }
      engine.optimize();
    }
    this.opts.log?.info('engine built from stored documents', { index: ref.physicalIndexId, part: ref.part, documents: engine.documentCount, ms: Date.now() - started });
    return engine;
  }

  /**
   * After an upgrade, a part's snapshot of an older format (same layout, older reading of text)
   * is read as an interim engine, which answers the part's queries, and follows its writes, while
   * the part is built again from its stored documents; the new engine then takes its place, with
   * the writes that arrived meanwhile applied in order (the build may have read some of them:
   * upserts by id and deletes apply again harmlessly). Queries never wait for the build, as they
   * would for a first load (seconds for 100k documents, minutes for millions). More writes
   * meanwhile than a held snapshot may fall behind by start the build again; a failed build
   * leaves the interim engine answering (logged); the interim engine is never written as a
   * snapshot (see saveSnapshot), so the part's next load builds.
   */
  private async rebuildInterim(key: string, entry: Entry, store: PartitionStore): Promise<void> {
    const interim = entry.engine;
    const gone = () => this.closing || store.isClosed || this.entries.get(key) !== entry || entry.engine !== interim;
    while (interim !== null && !gone()) {
      const rebuild: Rebuild = { changes: [], documents: 0, overflow: false };
      entry.rebuild = rebuild;
      const started = Date.now();
      let built: SuggestEngine;
      try {
        built = await this.buildFromStore(store, entry.ref);
        await this.opts.onRebuilt?.(entry.ref);
      } catch (err) {
        entry.rebuild = null;
        // logged by the caller, unless the part went meanwhile
        if (gone()) return;
        throw err;
      }
      if (entry.rebuild === rebuild) entry.rebuild = null;
      if (gone() || rebuild.overflow) {
        this.refresher.forget(built);
        built.close();
        if (rebuild.overflow) this.opts.log?.info('writes outran the build in place of an older snapshot format; building again', { index: entry.ref.physicalIndexId, part: entry.ref.part, documents: rebuild.documents });
        continue;
      }
      this.useGraphBuilder(built);
      for (const ev of rebuild.changes) apply(built, entry.behavior as BehaviorModel, ev, 0);
      this.refresher.forget(interim);
      interim.close();
      this.opts.queryPool?.forget(key);
      entry.engine = built;
      const documents = entry.behavior ? this.documentsOf.get(entry.behavior) : undefined;
      if (documents) documents.engine = built;
      this.refresher.touch(built);
      this.rebuilt++;
      this.opts.log?.info('part built again in place of its older snapshot format', { index: entry.ref.physicalIndexId, part: entry.ref.part, documents: built.documentCount, writes_meanwhile: rebuild.documents, ms: Date.now() - started });
      return;
    }
  }

  /** Brings the documents `ids` to their stored state in an engine read from a held snapshot: upserted, or removed when gone. */
  private async readBack(store: PartitionStore, ref: pb.IndexRef, engine: SuggestEngine, ids: readonly string[]): Promise<void> {
    const started = Date.now();
    const gone: string[] = [];
    for (let i = 0; i < ids.length; i += READ_BACK_BATCH) {
      const found = await Promise.all(ids.slice(i, i + READ_BACK_BATCH).map((id) => store.get(ref, id)));
      const docs: SuggestDocument[] = [];
      found.forEach((r, j) => {
        if (r.found && r.document) docs.push(decodeDocument(r.document.body));
        else gone.push(ids[i + j]!);
      });
      if (docs.length > 0) engine.upsert(docs);
    }
    if (gone.length > 0) engine.remove(gone);
    this.opts.log?.info('documents written before the stop read into a held engine snapshot', { index: ref.physicalIndexId, part: ref.part, documents: ids.length, removed: gone.length, ms: Date.now() - started });
  }

  private snapshotPath(ref: pb.IndexRef): string {
    const name = Buffer.from(`${ref.tenantId}\0${ref.physicalIndexId}\0${ref.part}`).toString('base64url');
    return path.join(this.opts.dataDir, 'engine', `p${ref.partition}`, `${name}.snap`);
  }

  /**
   * The part's engine from its snapshot, or null when there is none or it does not match the
   * stored data exactly (a snapshot is used once either way: it is removed as it is read). Large
   * snapshots are read off the event loop, straight into shared memory.
   */
  private async readSnapshot(ref: pb.IndexRef, documents: number, storedBytes: number, file = this.snapshotPath(ref)): Promise<SuggestEngine | null> {
    let source: FileHandle | Buffer;
    try {
      source = statSync(file).size > this.syncSnapshotMaxBytes ? await open(file, 'r') : readFileSync(file);
    } catch {
      rmSync(graphsDir(file), { recursive: true, force: true });
      return null;
    }
    rmSync(file, { force: true }); // an open handle still reads it
    try {
      // the header: its length (u32 LE), then JSON (see snapshotHead)
      const read = (position: number, length: number) => (Buffer.isBuffer(source) ? source.subarray(position, position + length) : readAt(source, position, length));
      const headerLength = (await read(0, 4)).readUInt32LE(0);
      const header = JSON.parse((await read(4, headerLength)).toString('utf8')) as SnapshotHeader;
      if (!headerMatches(header, documents, storedBytes)) return null;
      // ANN graphs saved with the snapshot (read only onto the same vectors; the rest rebuild)
      let engine: SuggestEngine;
      let graphs: number;
      // an older format of this layout is read too, as an interim engine (see rebuildInterim)
      if (Buffer.isBuffer(source)) {
        engine = SuggestEngine.deserialize(source.subarray(4 + headerLength), this.engineOptions, INTERIM_READABLE_VERSION);
        graphs = engine.loadGraphs(graphsDir(file));
      } else {
        engine = await SuggestEngine.readFrom(source, 4 + headerLength, this.engineOptions, INTERIM_READABLE_VERSION);
        // the graph files are then held as the graph thread's are (see VectorGraphs.loadAsync)
        this.useGraphBuilder(engine);
        graphs = await engine.loadGraphsAsync(graphsDir(file));
      }
      if (engine.snapshotFormat !== ENGINE_FORMAT_VERSION) {
        this.opts.log?.info('engine snapshot of an older format; it answers while the part is built again from its documents', { index: ref.physicalIndexId, part: ref.part, documents, format: engine.snapshotFormat, reads: ENGINE_FORMAT_VERSION });
      } else this.opts.log?.info('engine loaded from snapshot', { index: ref.physicalIndexId, part: ref.part, documents, graphs });
      return engine;
    } catch (err) {
      if (err instanceof SnapshotFormatError) {
        // written by another build (an upgrade): a cache of the documents, built again from them
        this.opts.log?.info('engine snapshot of another format; rebuilding from the documents', { index: ref.physicalIndexId, part: ref.part, format: err.version, reads: ENGINE_FORMAT_VERSION });
      } else this.opts.log?.warn('engine snapshot unreadable; rebuilding', { err, file });
      return null;
    } finally {
      if (!Buffer.isBuffer(source)) await source.close();
      rmSync(graphsDir(file), { recursive: true, force: true });
    }
  }

  private writeSnapshot(ref: pb.IndexRef, engine: SuggestEngine, header: SnapshotHeader): void {
    const file = this.snapshotPath(ref);
    mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, Buffer.concat([snapshotHead(header), ...engine.serializePieces()]));
    renameSync(tmp, file);
    // complete ANN graphs too, so vector queries after a restart need not wait for a rebuild
    const graphs = engine.saveGraphs(graphsDir(file));
    if (graphs > 0) this.opts.log?.info('engine graphs saved', { index: ref.physicalIndexId, part: ref.part, graphs });
  }
}

/** The header of a snapshot of `ref`'s engine: the store's document count and bytes, which a read checks. */
function snapshotHeader(store: PartitionStore, ref: pb.IndexRef): SnapshotHeader {
  const stats = store.stats(ref);
  return { v: SNAPSHOT_VERSION, documents: stats.documentCount, stored_bytes: stats.storedBytes };
}

/** A snapshot file starts with its header's length (u32 LE) and the header (JSON); the engine's bytes follow. */
function snapshotHead(header: SnapshotHeader): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const head = Buffer.alloc(4 + json.length);
  head.writeUInt32LE(json.length, 0);
  json.copy(head, 4);
  return head;
}

/** The header of a snapshot file, read synchronously; null when it cannot be read as one. */
/** A snapshot header of this format, stamped with these document count and stored bytes. */
function headerMatches(header: SnapshotHeader | null, documents: number, storedBytes: number): boolean {
  return header !== null && header.v === SNAPSHOT_VERSION && header.documents === documents && header.stored_bytes === storedBytes;
}

function readHeaderSync(file: string): SnapshotHeader | null {
  const fd = openSync(file, 'r');
  try {
    const length = Buffer.alloc(4);
    if (readSync(fd, length, 0, 4, 0) !== 4) return null;
    const n = length.readUInt32LE(0);
    if (n > 4096) return null;
    const json = Buffer.alloc(n);
    if (readSync(fd, json, 0, n, 4) !== n) return null;
    return JSON.parse(json.toString('utf8')) as SnapshotHeader;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const out = Buffer.alloc(length);
  const { bytesRead } = await file.read(out, 0, length, position);
  if (bytesRead !== length) throw new Error('engine snapshot is truncated');
  return out;
}

/**
 * Removes the files of unloads a stopped process left half written (see `unloadLarge`), and
 * returns the snapshots it held through writes (see `beforeWrite`), for `resumeHeld`.
 */
function removePartialUnloads(engineDir: string): string[] {
  let partitions: string[];
  try {
    partitions = readdirSync(engineDir).filter((d) => /^p\d+$/.test(d));
  } catch {
    return []; // no engine directory yet
  }
  const held: string[] = [];
  for (const p of partitions) {
    let names: string[];
    try {
      names = readdirSync(path.join(engineDir, p));
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(engineDir, p, name);
      if (name.endsWith('.unloading') || name.endsWith('.tmp')) rmSync(file, { recursive: true, force: true });
      else if (name.endsWith('.held')) held.push(file);
      else if ((name.endsWith('.held.graphs') || name.endsWith(`.held${HELD_IDS_SUFFIX}`)) && !names.includes(name.slice(0, name.lastIndexOf('.')))) rmSync(file, { recursive: true, force: true });
    }
  }
  return held;
}

/** The part a held snapshot's file belongs to (see snapshotPath), or null for a name it does not make. */
function heldRef(file: string): Pick<pb.IndexRef, 'partition' | 'tenantId' | 'physicalIndexId' | 'part'> | null {
  const partition = /^p(\d+)$/.exec(path.basename(path.dirname(file)));
  const name = path.basename(file);
  if (!partition || !name.endsWith('.snap.held')) return null;
  const fields = Buffer.from(name.slice(0, -'.snap.held'.length), 'base64url').toString('utf8').split('\0');
  if (fields.length !== 3 || !/^\d+$/.test(fields[2]!)) return null;
  return { partition: Number(partition[1]), tenantId: fields[0]!, physicalIndexId: fields[1]!, part: Number(fields[2]) };
}

function segmentBytes(engine: SuggestEngine): number {
  return engine.currentSegments.reduce((n, seg) => n + seg.arena.layout.byteLength, 0);
}

/** The live documents that hide rules let through: what behaviour ranking may add to a list. */
function visible(engine: SuggestEngine, ranking: AutocompleteRequest['ranking']): DocumentSource {
  return { get: (id) => (engine.hiddenBy(ranking, id) ? null : engine.get(id)) };
}

/** Applies a change; events with a sequence number below `eventsFrom` were already replayed from the log. */
function apply(engine: SuggestEngine, behavior: BehaviorModel, event: ChangeEvent, eventsFrom: number): void {
  if (event.type === 'upsert' && event.documents) engine.upsert(event.documents.map((d) => decodeDocument(d.body)));
  else if (event.type === 'delete') engine.remove(event.ids);
  else if (event.type === 'events' && event.events) {
    const first = event.firstSeq ?? 0;
    behavior.apply(event.events.filter((_, i) => first + i >= eventsFrom));
  }
}

function limitOf(payload: Record<string, unknown>): number {
  const limit = payload.limit ?? 10;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > 50) invalid(['query', 'limit'], 'limit must be an integer from 1 to 50', 'value_error.range');
  return limit;
}

function queryOf(payload: Record<string, unknown>): string {
  if (typeof payload.query !== 'string' || payload.query.length === 0) invalid(['query', 'query'], 'query must be a non-empty string', 'value_error.missing');
  return payload.query;
}

function typeaheadRequest(payload: Record<string, unknown>): TypeaheadRequest {
  const spare = payload.spare ?? 0;
  if (typeof spare !== 'number' || !Number.isInteger(spare) || spare < 0 || spare > 50) invalid(['query', 'spare'], 'spare must be an integer from 0 to 50', 'value_error.range');
  return { query: queryOf(payload), limit: limitOf(payload), ...(spare > 0 ? { spare } : {}), ranking: parseRankingPayload(payload.ranking), ...(payload.profile === true ? { profile: true } : {}) };
}

function autocompleteRequest(payload: Record<string, unknown>): AutocompleteRequest {
  const req: AutocompleteRequest = { query: queryOf(payload), limit: limitOf(payload), ranking: parseRankingPayload(payload.ranking), debug: payload.debug === true };
  if (payload.mode !== undefined) {
    if (!AUTOCOMPLETE_MODES.includes(payload.mode as AutocompleteMode)) invalid(['query', 'mode'], `mode must be one of ${AUTOCOMPLETE_MODES.join(', ')}`, 'value_error.enum');
    req.mode = payload.mode as AutocompleteMode;
  }
  if (payload.vector_backend !== undefined) {
    if (!VECTOR_BACKENDS.includes(payload.vector_backend as VectorBackend)) invalid(['query', 'vector_backend'], `vector_backend must be one of ${VECTOR_BACKENDS.join(', ')}`, 'value_error.enum');
    req.vectorBackend = payload.vector_backend as VectorBackend;
  }
  if (payload.benchmark === true) req.benchmark = true;
  if (payload.debug === true) req.debug = true;
  if (payload.profile === true) req.profile = true;
  if (payload.filters !== undefined && payload.filters !== null) {
    const checked = validateFilters(payload.filters);
    if (checked.problems.length > 0) throw validationError(checked.problems.map((p) => ({ ...p, loc: ['query', ...p.loc] })));
    req.filters = checked.filters;
  }
  return req;
}

function predictRequest(payload: Record<string, unknown>): PredictRequest {
  const req: PredictRequest = { query: queryOf(payload), ranking: parseRankingPayload(payload.ranking), suggestRanking: parseRankingPayload(payload.suggest_ranking) };
  if (payload.candidates !== undefined) {
    const n = payload.candidates;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 50) invalid(['body', 'candidates'], 'candidates must be an integer from 1 to 50', 'value_error.range');
    req.candidates = n;
  }
  if (payload.fields !== undefined) {
    const f = payload.fields;
    if (!Array.isArray(f) || f.length > 32 || f.some((x) => typeof x !== 'string' || x.length === 0 || x.length > 128)) invalid(['body', 'fields'], 'fields must be at most 32 field names', 'value_error');
    req.fields = f as string[];
  }
  if (payload.filters !== undefined && payload.filters !== null) {
    const checked = validateFilters(payload.filters);
    if (checked.problems.length > 0) throw validationError(checked.problems.map((p) => ({ ...p, loc: ['body', 'filters', ...p.loc.slice(1)] })));
    req.filters = checked.filters;
  }
  return req;
}

/** Where the ANN graphs of a snapshot file are kept. */
function graphsDir(snapshotFile: string): string {
  return `${snapshotFile}.graphs`;
}

/** `f` of a value, or of the value a promise resolves to. */
function mapAnswer(value: unknown, f: (v: unknown) => unknown): unknown {
  return value instanceof Promise ? value.then(f) : f(value);
}

/** A profiled answer computed here says so (one from a query thread already names it). */
function onEventLoop(result: unknown): unknown {
  const p = (result as { profile?: EngineProfile } | null)?.profile;
  if (p !== undefined && p.thread === undefined) p.thread = 'event loop';
  return result;
}

/**
 * A profiled answer that waited says how long: for fresh writes to become searchable
 * (`fresh_wait_ms`) or for its part's engine to load (`load_wait_ms`).
 */
function withWait(result: unknown, field: 'fresh_wait_ms' | 'load_wait_ms', waited: number): unknown {
  const p = (result as { profile?: EngineProfile } | null)?.profile;
  if (p !== undefined) p[field] = round3(waited);
  return result;
}

/** The wait for a part's engine to load is over (see SearchHost.afterLoad). */
class LoadWaitOver extends Error {}

/** A part's answer that did not see `unseen` documents still being indexed (a copy: engines may memoize theirs). */
function withIndexing(result: unknown, unseen: number): unknown {
  return typeof result === 'object' && result !== null ? { ...result, indexing: unseen } : result;
}
