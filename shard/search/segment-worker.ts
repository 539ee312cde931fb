// Runs on the segment pool's worker threads (piscina): builds one immutable segment and hands
// back its shared memory, so indexing a batch, merging segments and loading an index from its
// stored documents never run on the event loop that answers queries. Everything in and out is
// plain data: documents (or their stored msgpack bodies), or the shared memory of the segments
// to merge with the tombstones the merge was planned with.
import { decodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { Segment, type SharedSegment } from '../engine/segment.js';
import { SegmentBuilder } from '../engine/segment-builder.js';

export type SegmentTask =
  | { kind: 'documents'; documents: SuggestDocument[]; minSupport: number }
  | { kind: 'bodies'; bodies: Uint8Array[]; minSupport: number }
  | { kind: 'merge'; segments: SharedSegment[]; tombstones: Uint8Array[]; minSupport: number };

export default function buildSegment(task: SegmentTask): SharedSegment {
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
