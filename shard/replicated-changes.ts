// What a batch of raw key operations replicated from a partition's primary changes, as the change
// events the primary's own writes produce (ShardNode.onChange): a follower feeds them to its
// search engines, so that reads sent to it see every write it acknowledged to the primary. The
// primary ships each write as the key operations it applied (partition-store.ts, `ship`): a
// document put is an upsert, a document delete a delete, an event put an engagement event, the
// meta key's delete the end of an index part's drop; the rest (counters, event deletes of a
// drop, the format key) changes nothing an engine holds.
import type * as pb from '../proto/gen/shard.js';
import { decodeEvent, type EngagementEvent } from '../node/runtime/engagement-event.js';
import { readKey } from './index-keys.js';
import type { BatchOp } from './rocks-db.js';
import type { ChangeEvent } from './shard-node.js';

/**
 * The change events of `ops` in their order, consecutive operations of one kind on one index part
 * merged into one event; null when some key or stored event cannot be read (the caller then
 * drops what it built from the partition instead).
 */
export function replicatedChanges(partition: number, epoch: number, ops: readonly BatchOp[]): ChangeEvent[] | null {
  const out: ChangeEvent[] = [];
  let last: ChangeEvent | null = null;
  let lastPart = '';
  for (const op of ops) {
    const k = readKey(op.key);
    if (k === null) return null;
    if (k.kind === 'format') continue;
    const type: ChangeEvent['type'] | null =
      k.kind === 'doc' ? (op.type === 'put' ? 'upsert' : 'delete') : k.kind === 'event' ? (op.type === 'put' ? 'events' : null) : op.type === 'del' ? 'drop' : null;
    if (type === null) continue;
    let event: EngagementEvent | null = null;
    if (type === 'events') {
      event = decodeEvent((op as { value: Buffer }).value);
      if (event === null) return null;
    }
    const part = `${k.tenantId.length}:${k.tenantId}\0${k.physicalIndexId}\0${k.part}`;
    const joins =
      last !== null && part === lastPart && last.type === type && type !== 'drop' && (type !== 'events' || (last.firstSeq ?? 0) + (last.events?.length ?? 0) === k.seq);
    if (!joins) {
      const ref: pb.IndexRef = { tenantId: k.tenantId, physicalIndexId: k.physicalIndexId, part: k.part, parts: 0, partition, epoch };
      last = { type, ref, ids: [], ...(type === 'upsert' ? { documents: [] } : {}), ...(type === 'events' ? { events: [], firstSeq: k.seq } : {}) };
      lastPart = part;
      out.push(last);
    }
    const e = last!;
    if (type === 'upsert') {
      (e.ids as string[]).push(k.docId);
      (e.documents as pb.EncodedDocument[]).push({ id: k.docId, body: (op as { value: Buffer }).value });
    } else if (type === 'delete') {
      (e.ids as string[]).push(k.docId);
    } else if (type === 'events') {
      (e.ids as string[]).push(event!.doc_id);
      (e.events as EngagementEvent[]).push(event!);
    }
  }
  return out;
}
