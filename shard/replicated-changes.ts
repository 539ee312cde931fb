// What a batch of raw key operations replicated from a partition's primary changes, as the change
// events the primary's own writes produce (ShardNode.onChange): a follower feeds them to its
// search engines, so that reads sent to it see every write it acknowledged to the primary. The
// primary ships each write as the key operations it applied (partition-store.ts, `ship`): a
// document put is an upsert, a document delete a delete, an event put an engagement event, the
// meta key's delete the end of an index part's drop; the rest (counters, event deletes of a
// drop, the dropped-part mark, the format key) changes nothing an engine holds.
import type * as pb from '../proto/gen/shard.js';
import { decodeEvent, type EngagementEvent } from '../node/runtime/engagement-event.js';
import { readKey, type StoredKey } from './index-keys.js';
import type { BatchOp } from './rocks-db.js';
import type { ChangeEvent } from './shard-node.js';

/** What an operation on a key of `kind` changes in an engine; null: nothing. */
function changeOf(kind: StoredKey['kind'], op: BatchOp['type']): ChangeEvent['type'] | null {
  switch (kind) {
    case 'doc':
      return op === 'put' ? 'upsert' : 'delete';
    case 'event':
      // a drop deletes the part's events first; the engine forgets them with the part
      return op === 'put' ? 'events' : null;
    case 'meta':
      // a put is a counter update; the meta key goes last in a drop
      return op === 'del' ? 'drop' : null;
    default:
      return null;
  }
}

/** One change event being put together, with its lists still open. */
interface Building {
  type: ChangeEvent['type'];
  ref: pb.IndexRef;
  part: string;
  ids: string[];
  documents: pb.EncodedDocument[];
  events: EngagementEvent[];
  firstSeq: number;
}

/**
 * The change events of `ops` in their order, consecutive operations of one kind on one index part
 * merged into one event; null when some key or stored event cannot be read (the caller then
 * drops what it built from the partition instead).
 */
export function replicatedChanges(partition: number, epoch: number, ops: readonly BatchOp[]): ChangeEvent[] | null {
  const built: Building[] = [];
  for (const op of ops) {
    const k = readKey(op.key);
    if (k === null) return null;
    if (k.kind === 'format') continue;
    const type = changeOf(k.kind, op.type);
    if (type === null) continue;
    const event = type === 'events' && op.type === 'put' ? decodeEvent(op.value) : null;
    if (type === 'events' && event === null) return null;
    const part = `${k.tenantId.length}:${k.tenantId}\0${k.physicalIndexId}\0${k.part}`;
    let b = built.at(-1);
    // events join only when their sequence numbers follow on (the engine replays from `firstSeq`)
    const joins = b !== undefined && b.part === part && b.type === type && type !== 'drop' && (type !== 'events' || b.firstSeq + b.events.length === k.seq);
    if (b === undefined || !joins) {
      b = { type, ref: { tenantId: k.tenantId, physicalIndexId: k.physicalIndexId, part: k.part, parts: 0, partition, epoch }, part, ids: [], documents: [], events: [], firstSeq: k.seq };
      built.push(b);
    }
    if (op.type === 'put' && type === 'upsert') {
      b.ids.push(k.docId);
      b.documents.push({ id: k.docId, body: op.value });
    } else if (type === 'delete') {
      b.ids.push(k.docId);
    } else if (event !== null) {
      b.ids.push(event.doc_id);
      b.events.push(event);
    }
  }
  return built.map(({ type, ref, ids, documents, events, firstSeq }) => ({
    type,
    ref,
    ids,
    ...(type === 'upsert' ? { documents } : {}),
    ...(type === 'events' ? { events, firstSeq } : {}),
  }));
}
