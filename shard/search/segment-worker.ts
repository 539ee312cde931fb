// Runs on the segment pool's worker threads (piscina): builds one immutable segment and hands
// back its shared memory, so indexing a batch, merging segments and loading an index from its
// stored documents never run on the event loop that answers queries. Everything in and out is
// plain data: documents (or their stored msgpack bodies), or the shared memory of the segments
// to merge with the tombstones the merge was planned with. `buildGraph` (the graph pool's
// function) builds a segment's ANN graph from its shared vectors and writes it to a file.
import { rmSync } from 'node:fs';
import { decodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { Segment, type SharedSegment } from '../engine/segment.js';
import { SegmentBuilder } from '../engine/segment-builder.js';
import { createGraph, type GraphParams, type VectorBackend } from '../engine/vector-index.js';

export type SegmentTask =
  | { kind: 'documents'; documents: SuggestDocument[]; minSupport: number }
  | { kind: 'bodies'; bodies: Uint8Array[]; minSupport: number }
  | { kind: 'merge'; segments: SharedSegment[]; tombstones: Uint8Array[]; minSupport: number };

/**
 * Failure point for tests (SUGGEST_FAILPOINT_BUILD_DELAY_MS): every build of written or stored
 * documents first sleeps this long, so a test can keep a bulk load in progress for as long as it
 * needs, however fast the machine. Unset (0) in every real deployment.
 */
const BUILD_DELAY_MS = Math.max(0, Number(process.env.SUGGEST_FAILPOINT_BUILD_DELAY_MS ?? 0) || 0);
const sleeper = new Int32Array(new SharedArrayBuffer(4));

export default function buildSegment(task: SegmentTask): SharedSegment {
  if (BUILD_DELAY_MS > 0 && task.kind !== 'merge') Atomics.wait(sleeper, 0, 0, BUILD_DELAY_MS);
  const builder = new SegmentBuilder({ minSupport: task.minSupport });
  switch (task.kind) {
    case 'documents':
      builder.addAll(task.documents);
      break;
    case 'bodies':
      builder.addAll(task.bodies.map((b) => decodeDocument(b)));
      break;
    case 'merge':
      task.segments.forEach((shared, i) => {
        const seg = Segment.fromShared(shared);
        const dead = task.tombstones[i] as Uint8Array;
        for (let ord = 0; ord < seg.docCount; ord++) if (dead[ord] === 0) builder.add(seg.document(ord));
      });
      break;
  }
  return builder.build().toShared();
}

export interface GraphTask {
  /** the segment's vectors (shared memory: not copied) */
  vectors: Float32Array;
  dims: number;
  backend: VectorBackend;
  params: GraphParams;
  /** where the graph is written (the owner reads it once the task is done) */
  file: string;
}

export function buildGraph(task: GraphTask): string {
  const graph = createGraph(task.backend, task.vectors, task.dims, task.params);
  graph.buildUntil(Infinity);
  try {
    graph.save(task.file);
  } catch (err) {
    rmSync(task.file, { force: true });
    throw err;
  }
  return task.file;
}
