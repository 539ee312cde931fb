// SegmentPool: the piscina pool (2 threads by default) that builds segments off the event loop:
// batches of fresh writes, merges of existing segments, and the first load of an index from its
// stored documents. Segments come back as shared memory (SharedArrayBuffer arenas), so the
// event loop only wraps them; queries never wait for a build unless they need its documents.
// Merges run on a thread of their own, and ANN graphs on another (one at most each), so a long
// merge or graph build never holds up the segment builds that make writes visible (builds of a
// bulk load used to queue behind merges of 50,000 documents: 9-11 s for a 5,000-document build
// on a busy node); graphs come back as files.
import { mkdirSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Piscina } from 'piscina';
import { THREAD_LOAD_WAIT_MS, workerFile } from './worker-file.js';
import type { Logger } from '../../node/runtime/log.js';
import { withTimeout } from '../../node/runtime/timeout.js';
import type { SuggestDocument } from '../../node/runtime/document.js';
import type { MergePlan } from '../engine/engine.js';
import { Segment, type SharedSegment } from '../engine/segment.js';
import type { GraphTask, SegmentTask } from './segment-worker.js';
import type { GraphBuilder } from '../engine/vector-graphs.js';
import type { GraphParams, VectorBackend } from '../engine/vector-index.js';

export interface SegmentPoolOptions {
  /** worker threads (default 2) */
  threads?: number;
  /** where graph files are written for their owners (emptied at start and close; default: a new temporary directory) */
  graphDir?: string;
  log?: Logger;
}

/** What the graph thread has done since start (for /metrics). */
export interface GraphBuildStats {
  /** builds waiting for the thread or running */
  inProgress: number;
  built: number;
  failed: number;
  /** wall time of the finished builds, waiting included */
  seconds: number;
}

export class SegmentPool implements GraphBuilder {
  private readonly pool: Piscina<SegmentTask, SharedSegment>;
  private readonly graphPool: Piscina<GraphTask, string>;
  private readonly mergePool: Piscina<SegmentTask, SharedSegment>;
  private readonly graphDir: Promise<string>;
  private nextGraph = 1;
  private closed = false;
  private readonly graphStats: GraphBuildStats = { inProgress: 0, built: 0, failed: 0, seconds: 0 };
  /** the first thread loading the engine's modules (see close) */
  private readonly warming: Promise<void>;

  constructor(private readonly options: SegmentPoolOptions = {}) {
    const threads = Math.max(1, options.threads ?? 2);
    // Build threads go a minute after their last build: a thread keeps what it last built and last
    // read (its result's shared memory, the stored documents of a first load) reachable until it
    // runs again, so a thread kept for good would hold a large engine's segment after the engine
    // was unloaded (193 MB for 100k documents, measured). Builds of up to 256 documents run in
    // place on the event loop; only a larger batch after a quiet minute waits for a thread to start.
    this.pool = new Piscina({ filename: workerFile('segment-worker.js'), minThreads: 0, maxThreads: threads, idleTimeout: 60_000 });
    // the merge thread goes a minute after its last merge
    this.mergePool = new Piscina({ filename: workerFile('segment-worker.js'), minThreads: 0, maxThreads: 1, idleTimeout: 60_000 });
    // the thread, and the graph library's memory it held, goes when no graph is being built
    this.graphPool = new Piscina({ filename: workerFile('segment-worker.js'), name: 'buildGraph', minThreads: 0, maxThreads: 1, idleTimeout: 5_000 });
    const dir = options.graphDir;
    if (dir !== undefined) {
      rmSync(dir, { recursive: true, force: true });
      mkdirSync(dir, { recursive: true });
    }
    this.graphDir = dir !== undefined ? Promise.resolve(dir) : mkdtemp(path.join(tmpdir(), 'suggest-graphs-'));
    this.graphDir.catch(() => undefined);
    // load the engine's modules on a thread now, not when the first real build is waited for
    this.warming = this.pool.run({ kind: 'documents', documents: [], minSupport: 2 }).then(
      () => undefined,
      () => undefined,
    );
  }

  /** A segment of `documents` (in order: a later copy of an id wins, as in the engine). */
  build(documents: SuggestDocument[], minSupport: number): Promise<Segment> {
    return this.run({ kind: 'documents', documents, minSupport });
  }

  /** A segment of stored document bodies (msgpack), decoded on the worker. */
  fromBodies(bodies: Uint8Array[], minSupport: number): Promise<Segment> {
    return this.run({ kind: 'bodies', bodies, minSupport });
  }

  /** The merged segment of a merge plan, read from the planned segments' shared memory. */
  merge(plan: MergePlan, minSupport: number): Promise<Segment> {
    return this.run({ kind: 'merge', segments: plan.segments.map((s) => s.toShared()), tombstones: [...plan.tombstones], minSupport }, this.mergePool);
  }

  /** A fresh path in the directory of the graph files this pool writes. */
  async keepFile(backend: VectorBackend): Promise<string> {
    return path.join(await this.graphDir, `${this.nextGraph++}.${backend}`);
  }

  /** Builds the ANN graph of `seg` on the graph thread; resolves to the file it was written to (the caller removes it). */
  async buildGraph(seg: Segment, backend: VectorBackend, params: GraphParams): Promise<string> {
    if (this.closed) throw new Error('the segment pool is closed');
    const file = await this.keepFile(backend);
    const started = performance.now();
    const done = (ok: boolean) => {
      const ms = performance.now() - started;
      this.graphStats.inProgress--;
      this.graphStats.seconds += ms / 1000;
      if (ok) this.graphStats.built++;
      else this.graphStats.failed++;
      return Math.round(ms);
    };
    this.graphStats.inProgress++;
    try {
      const written = await this.graphPool.run({ vectors: seg.vectors, dims: seg.meta.vectorDims, backend, params, file });
      const ms = done(true);
      this.options.log?.info('ANN graph built on the graph thread', { backend, documents: seg.docCount, ms });
      return written;
    } catch (err) {
      const ms = done(false);
      if (!this.closed) this.options.log?.warn('ANN graph build failed on the graph thread; it is built on the event loop instead', { err, backend, documents: seg.docCount, ms });
      throw err;
    }
  }

  /** Graph builds since start. */
  graphStatistics(): GraphBuildStats {
    return { ...this.graphStats };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // A process that fails to start closes its pool at once: a thread terminated while it still
    // loads its modules could abort the process (see THREAD_LOAD_WAIT_MS).
    await withTimeout(this.warming, THREAD_LOAD_WAIT_MS).catch(() => undefined);
    await Promise.all([this.pool.destroy(), this.mergePool.destroy(), this.graphPool.destroy()]);
    const dir = await this.graphDir.catch(() => null);
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
  }

  private async run(task: SegmentTask, pool = this.pool): Promise<Segment> {
    if (this.closed) throw new Error('the segment pool is closed');
    return Segment.fromShared(await pool.run(task));
  }
}
