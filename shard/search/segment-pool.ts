// SegmentPool: the piscina pool (2 threads by default) that builds segments off the event loop:
// batches of fresh writes, merges of existing segments, and the first load of an index from its
// stored documents. Segments come back as shared memory (SharedArrayBuffer arenas), so the
// event loop only wraps them; queries never wait for a build unless they need its documents.
import { Piscina } from 'piscina';
import { workerFile } from './worker-file.js';
import type { SuggestDocument } from '../../node/runtime/document.js';
import type { MergePlan } from '../engine/engine.js';
import { Segment, type SharedSegment } from '../engine/segment.js';
import type { SegmentTask } from './segment-worker.js';

export interface SegmentPoolOptions {
  /** worker threads (default 2) */
  threads?: number;
}

export class SegmentPool {
  private readonly pool: Piscina<SegmentTask, SharedSegment>;
  private closed = false;

  constructor(options: SegmentPoolOptions = {}) {
    const threads = Math.max(1, options.threads ?? 2);
    this.pool = new Piscina({ filename: workerFile('segment-worker.js'), minThreads: 1, maxThreads: threads, idleTimeout: 60_000 });
    // load the engine's modules on a thread now, not when the first real build is waited for
    this.pool.run({ kind: 'documents', documents: [], minSupport: 2 }).catch(() => undefined);
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
    return this.run({ kind: 'merge', segments: plan.segments.map((s) => s.toShared()), tombstones: [...plan.tombstones], minSupport });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }

  private async run(task: SegmentTask): Promise<Segment> {
    if (this.closed) throw new Error('the segment pool is closed');
    return Segment.fromShared(await this.pool.run(task));
  }
}
