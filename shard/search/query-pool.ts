// QueryPool: the piscina pool (SUGGEST_QUERY_THREADS threads) that answers autocomplete beside
// the event loop. A query carries its part's engine version; the view of that version (the
// shared memory of its segments: SharedArrayBuffer arenas and tombstones, nothing copied) goes
// only to a thread that answers that it lacks it, once per thread and version. The thread then
// answers exactly what the owning engine would answer now, and reads see writes as they do on
// the event loop. ANN graphs are built once, for the owning engine; every thread reads each
// complete graph from a file (query-worker.ts): the one the engine's graph thread wrote, else one
// written here; `debug.vector.graph` reports the owner's build progress. Typeahead and predict
// stay on the event loop: they take tens of microseconds, less than a hand-off costs.
//
// Each thread is a piscina pool of its own (a lane) and queries wait in one queue here: a thread
// that frees up takes the oldest waiting query of its own (by the query's first letters) among
// the first few, else the oldest. The keystrokes of one typing session ("dr", "dri" ... "drill
// bits") so meet the memos they filled on that thread (expansions, two-word heads, ranked
// postings) instead of filling them again on every thread, and one queue keeps the tail of a
// shared one: a slow query holds up one thread, not the queries that would wait behind it. Each
// thread is given the next queries before it finishes the one it runs, so it does not wait for this
// event loop between queries.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { THREAD_LOAD_WAIT_MS, workerFile } from './worker-file.js';
import { withTimeout } from '../../node/runtime/timeout.js';
import { suggestError } from '../../node/runtime/errors.js';
import { FNV_PRIME, fnv1aUnits } from '../../node/runtime/hash.js';
import type { Logger } from '../../node/runtime/log.js';
import type { SuggestEngine } from '../engine/engine.js';
import type { Segment } from '../engine/segment.js';
import { DEFAULT_AUTOCOMPLETE_MODE, VECTOR_BACKENDS, type AutocompleteRequest, type AutocompleteResult, type TypeaheadRequest, type TypeaheadResult, type VectorBackend } from '../engine/types.js';
import { DEFAULT_VECTOR_BACKEND } from '../engine/vector-index.js';
import type { MemoBudgetStats } from '../engine/memo.js';
import { round3 } from '../engine/stage-clock.js';
import { clockMs, QUERY_POOL_CHANNEL, THREAD_STATS, type ThreadStat, type ForgetMessage, type QueryAnswer, type QueryPart, type QuerySegment, type QueryTask, type QueryWorkerData } from './query-worker.js';

export interface QueryPoolOptions {
  /** worker threads (default 2; the node's default: one per core beyond two) */
  threads?: number;
  /** where graph files are written for the threads (emptied at start and close) */
  graphDir: string;
  /** each thread's memo budget (the engines' lookup memos), in bytes */
  memoBudgetBytes?: number;
  /**
   * queries that may wait for a thread (default 256 per thread); past it a query is refused at
   * once with 503 and Retry-After instead of queueing behind seconds of work
   */
  maxQueue?: number;
  /**
   * how often parts whose segments were merged away are looked for (default 5 s): the threads'
   * mirrors of them are dropped, so memory of retired segments is not held until the next query
   */
  sweepMs?: number;
  log?: Logger;
}

/** Per segment: its id for the threads and its graph files (the object every view holds). */
interface SegmentShare {
  uid: number;
  graphs: QuerySegment['graphs'];
  /** files the owning engine holds (written by its graph builder): never written nor removed here */
  borrowed: Set<VectorBackend>;
  /** graph files being written, by library */
  saving: Map<VectorBackend, Promise<void>>;
  /** after a failed write: not before this time (ms) again */
  retryAt: Partial<Record<VectorBackend, number>>;
}

/**
 * Queries handed to a thread at once: the one it runs and the next two. A thread that finds its
 * next query already posted does not sleep between queries, and each wake-up of a sleeping thread
 * costs tens of microseconds of CPU on a virtual machine: three at once answered 8-9 % more
 * `hybrid` and `fts_only` queries per second than two, with a lower p99 (four: no better).
 */
const LANE_DEPTH = 3;
/** A thread that frees up looks this far into the queue for a query of its own. */
const AFFINITY_WINDOW = 8;
/** A waiting query is passed over by at most this many later ones (a stuck thread starves none). */
const MAX_PASSED = 8;

interface Waiting {
  task: QueryTask;
  /** the lane of the query's first letters */
  lane: number;
  /** later queries taken before this one */
  passed: number;
  resolve: (a: QueryAnswer) => void;
  reject: (err: unknown) => void;
}

/** A failed graph write (a full disk) is tried again after this long. */
const GRAPH_RETRY_MS = 60_000;

interface PartState {
  engine: SuggestEngine;
  part: QueryPart;
  segments: readonly Segment[];
  /** graph files written for this part so far: a thread that has fewer gets the view again */
  stamp: number;
}

export class QueryPool {
  /** one single-thread pool per query thread */
  private readonly lanes: Piscina<QueryTask, QueryAnswer>[];
  /** queries handed to each lane and not answered yet (at most LANE_DEPTH) */
  private readonly inFlight: number[];
  /** queries no lane has room for yet, oldest first */
  private waiting: Waiting[] = [];
  private readonly maxQueue: number;
  private readonly channel = new BroadcastChannel(QUERY_POOL_CHANNEL);
  private readonly parts = new Map<string, PartState>();
  private readonly shares = new WeakMap<Segment, SegmentShare>();
  private nextUid = 1;
  private closed = false;
  /** tasks sent again with their part's view (a thread lacked the version) */
  private viewsSent = 0;
  /** queries refused because the queue was full */
  private refused = 0;
  /** queries answered on another thread than their own (theirs was busy) */
  private rebalanced = 0;
  private readonly threadStats: SharedArrayBuffer;
  private readonly sweeper: NodeJS.Timeout;
  /** every thread's first answer: its modules are loaded (see close) */
  private readonly loaded: Promise<void>;

  constructor(private readonly opts: QueryPoolOptions) {
    const threads = Math.max(1, opts.threads ?? 2);
    rmSync(opts.graphDir, { recursive: true, force: true });
    mkdirSync(opts.graphDir, { recursive: true });
    // slots for threads that replace dead ones too
    this.threadStats = new SharedArrayBuffer(8 + threads * 4 * THREAD_STATS.length * 8);
    this.maxQueue = Math.max(1, opts.maxQueue ?? threads * 256);
    this.inFlight = new Array<number>(threads).fill(0);
    this.lanes = Array.from(
      { length: threads },
      () =>
        new Piscina<QueryTask, QueryAnswer>({
          filename: workerFile('query-worker.js'),
          minThreads: 1,
          maxThreads: 1,
          concurrentTasksPerWorker: LANE_DEPTH,
          idleTimeout: Number.POSITIVE_INFINITY,
          // 'async': an idle thread's event loop still runs, so it hears forgotten parts on the channel
          atomics: 'async',
          workerData: { memoBudgetBytes: opts.memoBudgetBytes ?? null, threadStats: this.threadStats } satisfies QueryWorkerData,
        }),
    );
    this.sweeper = setInterval(() => this.sweep(), opts.sweepMs ?? 5_000);
    this.sweeper.unref();
    // a query of a part no thread holds (keys name a tenant's index part; '' names none) is
    // answered `missing` at once, as soon as the thread has loaded the engine's modules
    const nothing: QueryTask = { kind: 'typeahead', key: '', version: -1, stamp: -1, request: {} as TypeaheadRequest };
    this.loaded = Promise.all(this.lanes.map((lane) => lane.run(nothing))).then(
      () => undefined,
      () => undefined,
    );
  }

  get threads(): number {
    return this.lanes.reduce((sum, lane) => sum + lane.threads.length, 0);
  }

  /**
   * For /metrics: queries waiting for a thread, tasks run (in all and per thread), views sent,
   * queries refused, share of thread time busy, and queries answered on another thread than
   * their own.
   */
  statistics(): { queued: number; completed: number; completedPerThread: number[]; viewsSent: number; refused: number; utilization: number; rebalanced: number } {
    const completedPerThread = this.lanes.map((lane) => lane.completed);
    return {
      queued: this.waiting.length,
      completed: completedPerThread.reduce((a, b) => a + b, 0),
      completedPerThread,
      viewsSent: this.viewsSent,
      refused: this.refused,
      utilization: this.lanes.reduce((sum, lane) => sum + lane.utilization, 0) / this.lanes.length,
      rebalanced: this.rebalanced,
    };
  }

  /** What every thread publishes (every 200 ms), summed over the threads. */
  private threadSums(): Record<ThreadStat, number> {
    const slots = new Float64Array(this.threadStats, 8);
    const sum = Object.fromEntries(THREAD_STATS.map((f) => [f, 0])) as Record<ThreadStat, number>;
    for (let at = 0; at + THREAD_STATS.length <= slots.length; at += THREAD_STATS.length) {
      THREAD_STATS.forEach((f, i) => (sum[f] += slots[at + i] ?? 0));
    }
    return sum;
  }

  /** The memo statistics of every thread, summed. */
  memoStatistics(): MemoBudgetStats {
    const t = this.threadSums();
    return { bytes: t.memoBytes, limitBytes: t.memoLimitBytes, memos: t.memos, evictions: t.memoEvictions };
  }

  /**
   * Memory of the ANN graphs the threads hold, summed over them, by library: each thread reads its
   * own copy of an hnswlib graph, and maps a usearch one from the owner's file (shared pages).
   */
  graphStatistics(): Record<VectorBackend, number> {
    const t = this.threadSums();
    return { hnswlib: t.hnswlibBytes, usearch: t.usearchBytes };
  }

  /** The answer of `engine` (the part `key`) to `req`, computed on a pool thread. */
  autocomplete(key: string, engine: SuggestEngine, req: AutocompleteRequest): Promise<AutocompleteResult> {
    if (this.closed) return Promise.reject(new Error('the query pool is closed'));
    const state = this.stateOf(key, engine);
    const mode = req.mode ?? DEFAULT_AUTOCOMPLETE_MODE;
    // the modes that search graphs (fts_rerank only reads stored vectors)
    if (mode === 'vector_only' || mode === 'hybrid' || req.benchmark === true) {
      const backends = req.benchmark === true ? VECTOR_BACKENDS : [req.vectorBackend ?? DEFAULT_VECTOR_BACKEND];
      const writing = backends.flatMap((backend) => this.shareGraphs(key, engine, state, backend));
      // the task is made after the writes, with the stamp they moved
      if (writing.length > 0) return Promise.all(writing).then(() => this.dispatch(key, this.parts.get(key) ?? state, req));
    }
    return this.dispatch(key, state, req);
  }

  /** The typeahead answer of `engine` (the part `key`) to `req`, computed on a pool thread. */
  typeahead(key: string, engine: SuggestEngine, req: TypeaheadRequest): Promise<TypeaheadResult> {
    if (this.closed) return Promise.reject(new Error('the query pool is closed'));
    const state = this.stateOf(key, engine);
    return this.ask(key, state, { kind: 'typeahead', request: req }) as Promise<TypeaheadResult>;
  }

  /**
   * Runs a query on the lane of its first letters, against the part's current version, with the
   * part's view when the thread lacks it.
   */
  private ask(key: string, state: PartState, query: { kind: 'autocomplete'; request: AutocompleteRequest } | { kind: 'typeahead'; request: TypeaheadRequest }): Promise<AutocompleteResult | TypeaheadResult> {
    const task: QueryTask = { ...query, key, version: state.part.version, stamp: state.stamp };
    const lane = affinityLane(key, task.request.query, this.lanes.length);
    const sent = task.request.profile === true ? clockMs() : 0;
    const answered = this.run(lane, task).then((a): QueryAnswer | Promise<QueryAnswer> => {
      if ('result' in a) return a;
      this.viewsSent++;
      return this.run(lane, { ...task, part: state.part }).then((b): QueryAnswer => ('result' in b ? { ...b, viewSent: true } : b));
    });
    return answered.then((a) => (task.request.profile === true ? withPoolTimings(a, sent) : resultOf(a)));
  }

  private dispatch(key: string, state: PartState, req: AutocompleteRequest): Promise<AutocompleteResult> {
    const answered = this.ask(key, state, { kind: 'autocomplete', request: req }) as Promise<AutocompleteResult>;
    if (req.debug !== true && req.benchmark !== true) return answered;
    // a thread holds only complete graphs: the build progress to report is the owner's
    return answered.then((r) => {
      const vector = r.debug?.vector;
      if (vector !== undefined) vector.graph = state.engine.graphStatus(vector.backend);
      return r;
    });
  }

  /**
   * Hands `task` to its own lane when that has room, else to another with room, else queues it
   * (refused with 503 past the queue's bound).
   */
  private run(lane: number, task: QueryTask): Promise<QueryAnswer> {
    if (this.closed) return Promise.reject(new Error('the query pool is closed'));
    if (this.inFlight[lane]! < LANE_DEPTH) return this.post(lane, lane, task);
    const free = this.inFlight.findIndex((n) => n < LANE_DEPTH);
    if (free >= 0) return this.post(free, lane, task);
    if (this.waiting.length >= this.maxQueue) {
      this.refused++;
      const reason = `Every query thread of this node is busy (${this.waiting.length} queries waiting)`;
      return Promise.reject(suggestError('unavailable', { reason }, { headers: { 'retry-after': '1' } }));
    }
    return new Promise((resolve, reject) => this.waiting.push({ task, lane, passed: 0, resolve, reject }));
  }

  private post(lane: number, own: number, task: QueryTask): Promise<QueryAnswer> {
    if (lane !== own) this.rebalanced++;
    this.inFlight[lane]!++;
    const done = (): void => {
      this.inFlight[lane]!--;
      this.next(lane);
    };
    const answered = (this.lanes[lane] as Piscina<QueryTask, QueryAnswer>).run(task);
    answered.then(done, done);
    return answered;
  }

  /** Lane `lane` has room: it takes the query `pickWaiting` chooses. */
  private next(lane: number): void {
    const waiting = this.waiting;
    if (waiting.length === 0 || this.closed) return;
    const at = pickWaiting(waiting, lane);
    for (let i = 0; i < at; i++) (waiting[i] as Waiting).passed++;
    const w = waiting.splice(at, 1)[0] as Waiting;
    this.post(lane, w.lane, w.task).then(w.resolve, w.reject);
  }

  /** The part's engine is gone: threads drop their mirror, and its graph files go. */
  forget(key: string): void {
    const state = this.parts.get(key);
    if (state !== undefined) this.drop(key, state, new Set());
  }

  /** Drops the parts some of whose segments the engine no longer has (merged or compacted away). */
  sweep(): void {
    for (const [key, state] of this.parts) {
      const now = new Set(state.engine.currentSegments);
      if (state.segments.some((s) => !now.has(s))) this.drop(key, state, now);
    }
  }

  /** Threads forget the part; graph files of its segments not in `keep` go. */
  private drop(key: string, state: PartState, keep: Set<Segment>): void {
    this.parts.delete(key);
    this.removeGraphFiles(state.segments, keep);
    this.channel.postMessage({ forget: key } satisfies ForgetMessage);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    this.channel.close();
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) w.reject(new Error('the query pool is closed'));
    // A thread terminated while Node still loads its modules can fail a Node assertion and abort
    // the whole process (SIGABRT instead of its exit status: a node refused its port stops a
    // second after its start, its threads still loading on a busy machine). The loads are waited
    // for, up to the process's own shutdown limit.
    await withTimeout(this.loaded, THREAD_LOAD_WAIT_MS).catch(() => undefined);
    await Promise.all(this.lanes.map((lane) => lane.destroy()));
    this.parts.clear();
    removeFile(this.opts.graphDir);
  }

  private stateOf(key: string, engine: SuggestEngine): PartState {
    const view = engine.view();
    let state = this.parts.get(key);
    if (state !== undefined && state.part.version === view.version) return state;
    const segments = [...view.segments];
    const shared = segments.map((s): QuerySegment => {
      const { uid, graphs } = this.shareOf(s);
      return { uid, shared: s.toShared(), graphs };
    });
    const part: QueryPart = { key, version: view.version, options: view.options, segments: shared };
    if (state !== undefined) this.removeGraphFiles(state.segments, new Set(segments));
    state = { engine, part, segments, stamp: 0 };
    this.parts.set(key, state);
    return state;
  }

  /**
   * Starts the owner's graph builds for `backend` and gives the threads a file of each graph that
   * is complete: the file the engine's graph thread wrote when there is one, otherwise one written
   * here once per segment and library (hnswlib writes off the event loop). The part's stamp moves
   * once a file is there, so every thread reads it. Returns the writes in progress: a query waits
   * for them rather than scan while a graph is there.
   */
  private shareGraphs(key: string, engine: SuggestEngine, state: PartState, backend: VectorBackend): Promise<void>[] {
    engine.prepareVectors(backend);
    const writing: Promise<void>[] = [];
    for (const seg of state.segments) {
      const share = this.shareOf(seg);
      const inProgress = share.saving.get(backend);
      if (inProgress !== undefined) writing.push(inProgress);
      if (share.graphs[backend] !== undefined || inProgress !== undefined || Date.now() < (share.retryAt[backend] ?? 0)) continue;
      const graph = engine.completeGraph(seg, backend);
      if (graph === null) continue;
      // the engine's graph thread already wrote it: the threads read that file
      const built = engine.graphFile(seg, backend);
      if (built !== null) {
        share.graphs[backend] = built;
        share.borrowed.add(backend);
        state.stamp++;
        continue;
      }
      const file = path.join(this.opts.graphDir, `${share.uid}.${backend}`);
      const started = performance.now();
      // written beside, then renamed: a thread never sees a partial file (usearch crashes the
      // process on one instead of reporting it)
      const partial = `${file}.partial`;
      const saved = graph
        .saveAsync(partial)
        .then(() => {
          renameSync(partial, file);
          share.saving.delete(backend);
          const current = this.parts.get(key);
          if (this.closed || current === undefined || !current.segments.includes(seg)) {
            removeFile(file); // retired while it was written
            return;
          }
          share.graphs[backend] = file;
          current.stamp++;
          this.opts.log?.info('ANN graph shared with the query threads', { backend, documents: seg.docCount, ms: Math.round(performance.now() - started) });
        })
        .catch((err: unknown) => {
          share.saving.delete(backend);
          share.retryAt[backend] = Date.now() + GRAPH_RETRY_MS;
          removeFile(partial);
          removeFile(file);
          this.opts.log?.warn('ANN graph not shared with the query threads; they scan exactly until a retry succeeds', { err, backend, retry_in_ms: GRAPH_RETRY_MS });
        });
      share.saving.set(backend, saved);
      writing.push(saved);
    }
    return writing;
  }

  private shareOf(seg: Segment): SegmentShare {
    let share = this.shares.get(seg);
    if (share === undefined) {
      share = { uid: this.nextUid++, graphs: {}, borrowed: new Set(), saving: new Map(), retryAt: {} };
      this.shares.set(seg, share);
    }
    return share;
  }

  private removeGraphFiles(segments: readonly Segment[], keep: Set<Segment>): void {
    for (const seg of segments) {
      if (keep.has(seg)) continue;
      const share = this.shares.get(seg);
      if (share === undefined) continue;
      for (const backend of VECTOR_BACKENDS) {
        const file = share.graphs[backend];
        if (file !== undefined && !share.borrowed.has(backend)) removeFile(file);
        delete share.graphs[backend];
        share.borrowed.delete(backend);
      }
    }
  }
}

/** Removes a file or directory; one that cannot be removed (its directory is gone or broken) is left. */
function removeFile(file: string): void {
  try {
    rmSync(file, { recursive: true, force: true });
  } catch {
    // nothing the query path can do about it
  }
}

/**
 * The waiting query lane `lane` takes: the oldest of its own among the first AFFINITY_WINDOW,
 * unless one before it was passed over MAX_PASSED times already; else the oldest.
 */
export function pickWaiting(waiting: readonly { lane: number; passed: number }[], lane: number): number {
  for (let i = 0; i < waiting.length && i < AFFINITY_WINDOW; i++) {
    const w = waiting[i] as { lane: number; passed: number };
    if (w.lane === lane) return i;
    if (w.passed >= MAX_PASSED) return i;
  }
  return 0;
}

/**
 * The lane of a query: a hash of its part and its first two letters, so every keystroke of a
 * typing session after the first shares a lane (case folded; the first letters of the query as
 * typed, before normalization, which the thread does).
 */
export function affinityLane(key: string, query: string, lanes: number): number {
  if (lanes <= 1) return 0;
  let h = Math.imul(fnv1aUnits(key), FNV_PRIME); // and a separator: part "ab" + query "c" differs from "a" + "bc"
  let letters = 0;
  for (let i = 0; i < query.length && letters < 2; i++) {
    const c = query.charCodeAt(i);
    if (c <= 32) {
      if (letters === 0) continue;
      break;
    }
    h = Math.imul(h ^ (c >= 65 && c <= 90 ? c + 32 : c), FNV_PRIME);
    letters++;
  }
  return (h >>> 0) % lanes;
}

function resultOf(a: QueryAnswer): AutocompleteResult | TypeaheadResult {
  if ('result' in a) return a.result;
  throw new Error('a query thread did not take the view it was sent');
}

/**
 * The answer's profile completed with the hand-off (profile=true): which thread answered, how long
 * the query waited for it (`queue_ms`), and the rest of the round trip beyond the engine's own
 * time (`handoff_ms`: posting the task and the answer, and the view when the thread lacked it).
 */
function withPoolTimings(a: QueryAnswer, sent: number): AutocompleteResult | TypeaheadResult {
  const result = resultOf(a);
  const p = result.profile;
  if (p === undefined || !('result' in a)) return result;
  const total = clockMs() - sent;
  const queue = a.startedAt === undefined ? 0 : Math.max(0, a.startedAt - sent);
  p.thread = a.thread === undefined ? 'query thread' : `query thread ${a.thread}`;
  p.queue_ms = round3(queue);
  p.handoff_ms = round3(Math.max(0, total - queue - p.engine_ms));
  if (a.viewSent === true) p.view_sent = true;
  return result;
}

