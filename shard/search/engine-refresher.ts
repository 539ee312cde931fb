// EngineRefresher: publishes the fresh writes of every engine within the refresh interval and
// keeps its segments merged, without making queries pay for it. A few buffered documents are
// indexed in place (a small segment costs well under a millisecond); larger batches (bulk
// ingestion) and every merge are built on the segment pool, one build and one merge per engine
// at a time, while queries keep answering from the published segments. An engine whose writes
// have stopped gets its segments merged into one (compaction). A query only waits when
// documents it must see are in a build that has not been published yet, and only briefly: during
// a bulk load it is answered from the documents already searchable.
import type { Logger } from '../../node/runtime/log.js';
import { withTimeout } from '../../node/runtime/timeout.js';
import type { MergePlan, SuggestEngine } from '../engine/engine.js';
import type { SegmentPool } from './segment-pool.js';

export interface EngineRefresherOptions {
  /** segment pool for large batches and merges; null: everything is built in place */
  pool: SegmentPool | null;
  /** how often buffered writes are published (default 20 ms) */
  intervalMs?: number;
  /** buffered documents indexed in place, on the timer or by a query (default 256) */
  inlineMaxDocs?: number;
  /** documents per pooled build (default 5000) */
  maxDocsPerBuild?: number;
  /**
   * how long a query waits at most for the documents written before it to be indexed (default
   * 250 ms); past it, it is answered from the documents already searchable (a bulk load)
   */
  freshWaitMs?: number;
  /** minimum support of mined phrases, as the engines use (default 2) */
  minSupport?: number;
  /**
   * An engine without writes for this long has its segments merged into one on the pool
   * (default 1000 ms), when the segments besides the largest hold `compactMinShare` of its
   * documents (default 0.1) and it holds at most `compactMaxDocs` (default 2,000,000: the merged
   * copy is built beside the segments it replaces). Queries over one segment cost about half
   * those over three.
   */
  compactAfterMs?: number;
  compactMinShare?: number;
  compactMaxDocs?: number;
  log?: Logger | undefined;
}

interface Work {
  building: Promise<void> | null;
  /** when the build in flight started, and its documents */
  buildStarted: number;
  buildDocs: number;
  /** this engine's running time per document of a pooled build (null until one is measured) */
  msPerDoc: number | null;
  merging: Promise<void> | null;
}

/**
 * After this many pooled builds a query no longer chases writes that keep arriving: a rest of at
 * most LATE_IN_PLACE_DOCS is indexed in place (tens of milliseconds), as the timer would.
 */
const PATIENT_WAITS = 4;
const LATE_IN_PLACE_DOCS = 512;
/**
 * Work (`indexingWork`) per document allowed in place: typical catalogue documents are 5 to 10;
 * past it a handful of documents is still a build of seconds (one with 100,000 tags) and goes
 * to the pool like a large batch.
 */
const IN_PLACE_WORK_PER_DOC = 16;
/**
 * What a pooled build costs per document until one is measured (about 120 µs of building on
 * these cores, BENCHMARKS.md "Ingestion throughput"), and the weight of each measured build in
 * the running estimate; builds of fewer documents are not measured (fixed costs dominate).
 */
const FIRST_MS_PER_DOC = 0.15;
const MS_PER_DOC_WEIGHT = 0.3;
const MEASURED_BUILD_DOCS = 200;

export class EngineRefresher {
  private readonly pool: SegmentPool | null;
  private readonly intervalMs: number;
  private readonly inlineMaxDocs: number;
  private readonly maxDocsPerBuild: number;
  private readonly freshWaitMs: number;
  private readonly minSupport: number;
  private readonly compactAfterMs: number;
  private readonly compactMinShare: number;
  private readonly compactMaxDocs: number;
  /** when each engine last changed (writes, or a build or merge ending), until it is compacted or found not worth it */
  private readonly lastWrite = new Map<SuggestEngine, number>();
  private readonly work = new Map<SuggestEngine, Work>();
  private readonly dirty = new Set<SuggestEngine>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /**
   * running estimate of a pooled build's wall time per document, pool queueing included, over
   * every engine: for an engine none of whose builds was measured yet
   */
  private msPerDoc = FIRST_MS_PER_DOC;

  constructor(private readonly opts: EngineRefresherOptions) {
    this.pool = opts.pool;
    this.intervalMs = opts.intervalMs ?? 20;
    this.inlineMaxDocs = opts.inlineMaxDocs ?? 256;
    this.maxDocsPerBuild = opts.maxDocsPerBuild ?? 5000;
    this.freshWaitMs = opts.freshWaitMs ?? 250;
    this.minSupport = opts.minSupport ?? 2;
    this.compactAfterMs = opts.compactAfterMs ?? 1000;
    this.compactMinShare = opts.compactMinShare ?? 0.1;
    this.compactMaxDocs = opts.compactMaxDocs ?? 2_000_000;
  }

  /** Whether merges run on the pool (engines are then made with `autoMerge: false`). */
  get pooled(): boolean {
    return this.pool !== null;
  }

  /** `engine` received writes: they are published within the interval. */
  touch(engine: SuggestEngine): void {
    if (this.closed) return;
    this.dirty.add(engine);
    if (this.pool !== null) this.lastWrite.set(engine, performance.now());
    this.timer ??= setInterval(() => this.tick(), this.intervalMs).unref();
  }

  /** Stops following an engine (its index part was dropped or moved). */
  forget(engine: SuggestEngine): void {
    this.dirty.delete(engine);
    this.lastWrite.delete(engine);
    const w = this.work.get(engine);
    if (w !== undefined && w.building === null && w.merging === null) this.work.delete(engine);
  }

  /**
   * Whether a query may run on `engine` now: no published-later build holds documents, and what
   * is buffered is few enough for the engine to index in place before answering.
   */
  ready(engine: SuggestEngine): boolean {
    return engine.inflightCount === 0 && this.fitsInPlace(engine, this.inlineMaxDocs);
  }

  /** Whether what `engine` buffers is few and light enough to index on this thread. */
  private fitsInPlace(engine: SuggestEngine, maxDocs: number): boolean {
    return engine.pendingCount <= maxDocs && engine.pendingWorkWithin(maxDocs * IN_PLACE_WORK_PER_DOC);
  }

  /**
   * Resolves once a query may run on `engine`, with the number of documents written before it
   * that it will not see: 0 when they are all searchable (every build it waits for runs on the
   * pool, so the event loop goes on meanwhile). A query waits at most `freshWaitMs` for them,
   * and not at all when the builds ahead of it are estimated to take longer (the engine's recent
   * pooled builds' time per document, the node's before it has one); past it (writes arriving
   * faster than the pool indexes them: a bulk load), the caller answers from the published
   * segments (`SuggestEngine.published`) and must not cache that answer. After PATIENT_WAITS
   * builds a small rest is indexed in place rather than chased.
   *
   * It used to wait up to 10 s and answer 503 past it: during a bulk load the loading index's own
   * queries took seconds, and through a cluster router (whose deadline is 5 s) many failed.
   */
  async settle(engine: SuggestEngine): Promise<number> {
    const deadline = performance.now() + this.freshWaitMs;
    for (let waits = 0; !this.ready(engine); waits++) {
      if (waits >= PATIENT_WAITS && engine.inflightCount === 0 && this.fitsInPlace(engine, LATE_IN_PLACE_DOCS)) return 0;
      // the build runs even when the query does not wait for it
      let building = this.work.get(engine)?.building ?? null;
      if (building === null) {
        if (!this.startBuild(engine)) return 0;
        building = this.workOf(engine).building;
      }
      const left = deadline - performance.now();
      // no waiting for what will not be indexed within the wait anyway (a bulk load in full swing)
      if (left <= 0 || building === null || this.untilReady(engine) > left) return engine.indexingCount;
      await withTimeout(building, left).catch(() => undefined); // built, or the wait is over
    }
    return 0;
  }

  /** Waits for builds and merges in flight; nothing new starts afterwards. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const inflight: Promise<void>[] = [];
    for (const w of this.work.values()) {
      if (w.building) inflight.push(w.building);
      if (w.merging) inflight.push(w.merging);
    }
    await Promise.all(inflight);
    this.dirty.clear();
  }

  private tick(): void {
    for (const engine of this.dirty) {
      try {
        this.step(engine);
      } catch (err) {
        this.dirty.delete(engine);
        this.opts.log?.error('engine refresh failed', { err });
      }
    }
    if (this.dirty.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private step(engine: SuggestEngine): void {
    const w = this.workOf(engine);
    if (w.building === null && engine.pendingCount > 0) {
      if (this.pool === null || this.fitsInPlace(engine, this.inlineMaxDocs)) engine.refresh();
      else this.startBuild(engine);
    }
    if (this.pool !== null && w.building === null && w.merging === null) this.startMerge(engine, engine.planMerge());
    if (engine.pendingCount === 0 && w.building === null && w.merging === null) {
      const since = this.lastWrite.get(engine);
      if (since !== undefined && performance.now() - since < this.compactAfterMs) return; // not idle yet
      this.lastWrite.delete(engine);
      if (since !== undefined) this.startMerge(engine, engine.planCompaction(this.compactMinShare, this.compactMaxDocs));
      if (w.merging === null) this.dirty.delete(engine);
    }
  }

  /** Estimated milliseconds until everything written to `engine` is searchable. */
  private untilReady(engine: SuggestEngine): number {
    const w = this.work.get(engine);
    const perDoc = w?.msPerDoc ?? this.msPerDoc;
    const inBuild = w?.building ? Math.max(0, w.buildDocs * perDoc - (performance.now() - w.buildStarted)) : 0;
    return inBuild + engine.pendingCount * perDoc;
  }

  /** Sends the oldest buffered documents to the pool; false when there is nothing to send. */
  private startBuild(engine: SuggestEngine): boolean {
    const pool = this.pool;
    const w = this.workOf(engine);
    if (pool === null || w.building !== null || this.closed) return false;
    const docs = engine.takePending(this.maxDocsPerBuild);
    if (docs.length === 0) return false;
    const started = performance.now();
    w.buildStarted = started;
    w.buildDocs = docs.length;
    w.building = pool.build(docs, this.minSupport).then(
      (segment) => {
        engine.publish(segment);
        if (docs.length >= MEASURED_BUILD_DOCS) {
          // per engine (catalogues differ: long descriptions cost more) and over the node
          const perDoc = (performance.now() - started) / docs.length;
          w.msPerDoc = w.msPerDoc === null ? perDoc : w.msPerDoc + MS_PER_DOC_WEIGHT * (perDoc - w.msPerDoc);
          this.msPerDoc += MS_PER_DOC_WEIGHT * (perDoc - this.msPerDoc);
        }
        this.opts.log?.debug('segment published', { documents: docs.length, ms: Math.round(performance.now() - started) });
      },
      (err: unknown) => {
        engine.restorePending();
        this.opts.log?.error('segment build failed; documents stay buffered', { err, documents: docs.length });
      },
    ).finally(() => {
      w.building = null;
      this.touch(engine); // merge what the new segment made mergeable; publish what came meanwhile
    });
    return true;
  }

  private startMerge(engine: SuggestEngine, plan: MergePlan | null): void {
    const pool = this.pool;
    const w = this.workOf(engine);
    if (plan === null) return;
    if (pool === null || w.merging !== null || this.closed) {
      engine.cancelMerge(plan);
      return;
    }
    const started = performance.now();
    w.merging = pool.merge(plan, this.minSupport).then(
      (segment) => {
        engine.commitMerge(plan, segment);
        this.opts.log?.debug('segments merged', { segments: plan.segments.length, documents: segment.docCount, ms: Math.round(performance.now() - started) });
      },
      (err: unknown) => {
        engine.cancelMerge(plan);
        this.opts.log?.error('segment merge failed', { err });
      },
    ).finally(() => {
      w.merging = null;
      this.touch(engine); // the policy may want another merge
    });
  }

  private workOf(engine: SuggestEngine): Work {
    let w = this.work.get(engine);
    if (w === undefined) {
      w = { building: null, buildStarted: 0, buildDocs: 0, msPerDoc: null, merging: null };
      this.work.set(engine, w);
    }
    return w;
  }
}
