// Runs on the query pool's worker threads (piscina): answers autocomplete (and typeahead, when the
// node sends it here) over the same segment
// memory the owning thread queries (SharedArrayBuffer arenas, shared tombstones), so the heavy
// query path runs beside the event loop instead of on it. Each thread keeps, per index part, a
// mirror engine for the owner's current version and the segment wrappers it was made of (their
// lookup memos and adopted ANN graphs survive the next version); the owner writes each complete
// graph to a file once and every thread reads it from there.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import { releaseDecoderSource } from '../../node/runtime/document.js';
import { SuggestEngine, type EngineOptions } from '../engine/engine.js';
import { memoBudget } from '../engine/memo.js';
import { Segment, type SharedSegment } from '../engine/segment.js';
import type { AutocompleteRequest, AutocompleteResult, TypeaheadRequest, TypeaheadResult, VectorBackend } from '../engine/types.js';
import { VectorGraphs } from '../engine/vector-graphs.js';

/** One segment of a part as the owner sees it now. */
export interface QuerySegment {
  /** the owner's id for this segment (never reused in the owner's process) */
  uid: number;
  shared: SharedSegment;
  /** files of the complete graphs the owner wrote, by library */
  graphs: Partial<Record<VectorBackend, string>>;
}

/** The part to query: the owner's engine as of `version`. */
export interface QueryPart {
  key: string;
  version: number;
  options: EngineOptions;
  segments: QuerySegment[];
}

/**
 * A query of the part `key` as of `version`, with `stamp` graph files shared so far. The part's
 * view (segment memory and layouts: some tens of microseconds to copy) travels only when the
 * thread answered `missing`, i.e. once per thread and version.
 */
export type QueryTask = QueryTaskOf<'autocomplete', AutocompleteRequest> | QueryTaskOf<'typeahead', TypeaheadRequest>;

interface QueryTaskOf<K extends string, R> {
  kind: K;
  key: string;
  version: number;
  stamp: number;
  request: R;
  part?: QueryPart;
}

/**
 * With profile=true, an answer also says when the thread started on it (`clockMs`) and which
 * thread it is; `viewSent` is set by the pool.
 */
export type QueryAnswer = { result: AutocompleteResult | TypeaheadResult; startedAt?: number; thread?: number; viewSent?: boolean } | { missing: true };

/** Broadcast by the owner when a part's engine is gone (dropped, moved away, closed). */
export interface ForgetMessage {
  forget: string;
}

export const QUERY_POOL_CHANNEL = 'suggest-query-pool';

/** Milliseconds on a clock every thread of the process reads alike. */
export function clockMs(): number {
  return performance.timeOrigin + performance.now();
}

interface Mirror {
  version: number;
  stamp: number;
  engine: SuggestEngine;
  graphs: VectorGraphs;
  uids: number[];
}

const mirrors = new Map<string, Mirror>();
const segments = new Map<number, { segment: Segment; graphs: Set<string> }>();

const channel = new BroadcastChannel(QUERY_POOL_CHANNEL);
channel.unref();
channel.onmessage = (event) => {
  const data = (event as { data?: Partial<ForgetMessage> }).data;
  if (typeof data?.forget === 'string' && mirrors.delete(data.forget)) {
    releaseDecoderSource();
    released += collectSegments();
    if (released >= COLLECT_AFTER_BYTES) collectSoon();
  }
};

/**
 * A part's segments are shared memory: it is returned only once every thread that viewed it has
 * collected its garbage, and a query thread allocates little (an idle one nothing), so its next
 * full collection could be hours away while the node unloads idle engines (search-host.ts). Once
 * the segments it let go add up to COLLECT_AFTER_BYTES, a thread collects, a second later (one
 * collection for a run of them); smaller amounts wait for its own collections, so that a pause
 * comes only when it returns that much. The collector is reached the way `--expose-gc` offers
 * it, for this thread's new contexts only.
 */
const COLLECT_AFTER_BYTES = 32 * 1024 * 1024;
let released = 0;
let collect: (() => void) | null | undefined;
let collecting: NodeJS.Timeout | null = null;
function collectSoon(): void {
  if (collecting !== null) return;
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const gc: unknown = runInNewContext('gc');
      collect = typeof gc === 'function' ? (gc as () => void) : null;
    } catch {
      collect = null;
    }
  }
  if (collect === null) return;
  const run = collect;
  collecting = setTimeout(() => {
    collecting = null;
    released = 0;
    run();
  }, 1_000);
  collecting.unref();
}

/** What the pool hands every thread. */
export interface QueryWorkerData {
  /** this thread's share of the node's memo budget */
  memoBudgetBytes: number | null;
  /** where threads publish their statistics: a slot of `THREAD_STATS` f64 each, after a claim counter (i32, 8 bytes) */
  threadStats: SharedArrayBuffer;
}

/** What each thread publishes, in this order: its memo figures, then the ANN graph bytes it holds by library. */
export const THREAD_STATS = ['memoBytes', 'memoLimitBytes', 'memos', 'memoEvictions', 'hnswlibBytes', 'usearchBytes'] as const;
export type ThreadStat = (typeof THREAD_STATS)[number];

const data = workerData as QueryWorkerData | undefined;
if (typeof data?.memoBudgetBytes === 'number' && data.memoBudgetBytes > 0) memoBudget.setLimit(data.memoBudgetBytes);
if (data?.threadStats instanceof SharedArrayBuffer) {
  const buffer = data.threadStats;
  const slot = Atomics.add(new Int32Array(buffer, 0, 1), 0, 1);
  const stats = new Float64Array(buffer, 8);
  if ((slot + 1) * THREAD_STATS.length <= stats.length) {
    // a thread that dies (piscina starts another, which claims a new slot) leaves its last figures
    const publish = () => {
      const s = memoBudget.stats();
      const now: Record<ThreadStat, number> = { memoBytes: s.bytes, memoLimitBytes: s.limitBytes, memos: s.memos, memoEvictions: s.evictions, hnswlibBytes: 0, usearchBytes: 0 };
      // hnswlib graphs are read into each thread's own memory; usearch ones are mapped from the owner's file
      for (const m of mirrors.values()) {
        const g = m.graphs.bytes();
        now.hnswlibBytes += g.hnswlib;
        now.usearchBytes += g.usearch;
      }
      stats.set(THREAD_STATS.map((f) => now[f]), slot * THREAD_STATS.length);
    };
    publish();
    setInterval(publish, 200).unref();
  }
}

export default function answer(task: QueryTask): QueryAnswer {
  const startedAt = task.request.profile === true ? clockMs() : 0;
  if (task.part !== undefined) install(task.part, task.stamp);
  const m = mirrors.get(task.key);
  if (m === undefined || m.version !== task.version || m.stamp !== task.stamp) return { missing: true };
  const result = task.kind === 'typeahead' ? m.engine.typeahead(task.request) : m.engine.autocomplete(task.request);
  return task.request.profile === true ? { result, startedAt, thread: threadId } : { result };
}

function install(part: QueryPart, stamp: number): void {
  let m = mirrors.get(part.key);
  if (m === undefined || m.version !== part.version) {
    const graphs = m?.graphs ?? new VectorGraphs({ ...part.options.vectors, build: 'external' });
    const uids = part.segments.map((s) => s.uid);
    const wrapped = part.segments.map((s) => segmentOf(s).segment);
    graphs.retain(wrapped);
    m = { version: part.version, stamp, engine: SuggestEngine.mirror(wrapped, part.options, graphs), graphs, uids };
    mirrors.set(part.key, m);
    collectSegments();
  }
  m.stamp = stamp;
  for (const s of part.segments) {
    const held = segmentOf(s);
    for (const [backend, file] of Object.entries(s.graphs) as [VectorBackend, string][]) {
      // a file that cannot be read (removed with a retired segment) is not tried again
      if (held.graphs.has(backend)) continue;
      held.graphs.add(backend);
      // usearch maps the file: every thread shares one copy of the graph
      m.graphs.adopt(held.segment, backend, file, true);
    }
  }
}

function segmentOf(s: QuerySegment): { segment: Segment; graphs: Set<string> } {
  let held = segments.get(s.uid);
  if (held === undefined) {
    held = { segment: Segment.fromShared(s.shared), graphs: new Set() };
    segments.set(s.uid, held);
  }
  return held;
}

/** Drops the segments no mirror uses any more; returns the bytes of shared memory they held. */
function collectSegments(): number {
  const used = new Set<number>();
  for (const m of mirrors.values()) for (const uid of m.uids) used.add(uid);
  let bytes = 0;
  for (const [uid, entry] of segments) {
    if (used.has(uid)) continue;
    bytes += entry.segment.arena.buffer.byteLength;
    segments.delete(uid);
  }
  return bytes;
}
