// The engagement event as it crosses from router to shard and is stored in a partition's event
// log: one click, add-to-cart or purchase on one document, with the query that led to it. The
// router validates the HTTP body; the shard checks the decoded shape again (it never trusts a
// payload) and stamps the arrival time when the sender gave none.
import { pack, unpack } from 'msgpackr';
import { fail } from './errors.js';

export const ENGAGEMENT_TYPES = ['click', 'add_to_cart', 'purchase'] as const;
export type EngagementType = (typeof ENGAGEMENT_TYPES)[number];

export interface EngagementEvent {
  doc_id: string;
  type: EngagementType;
  /** the query typed when the document was chosen; '' when none (a click from a category page) */
  query: string;
  /** 1-based rank of the document in the list shown; 0 when unknown */
  position: number;
  user_id: string;
  session_id: string;
  /** epoch milliseconds */
  ts: number;
}

const TYPES: ReadonlySet<string> = new Set(ENGAGEMENT_TYPES);

/** msgpack of a batch of events (the RecordEvents payload). */
export function encodeEvents(events: readonly EngagementEvent[]): Buffer {
  return pack(events);
}

/** One stored event (msgpack), as written to the partition's event log. */
export function encodeEvent(event: EngagementEvent): Buffer {
  return pack(event);
}

/** Reads one stored event back; null when the bytes are not an event (never throws). */
export function decodeEvent(bytes: Buffer): EngagementEvent | null {
  try {
    return checkEvent(unpack(bytes), Date.now());
  } catch {
    return null;
  }
}

/** Decodes and checks a RecordEvents payload; `bad_request` when it is not an array of events. */
export function decodeEvents(bytes: Buffer, now = Date.now()): EngagementEvent[] {
  let raw: unknown;
  try {
    raw = unpack(bytes);
  } catch (err) {
    return fail('bad_request', { reason: `The events payload is not valid msgpack: ${(err as Error).message}` }, { cause: err });
  }
  if (!Array.isArray(raw)) return fail('bad_request', { reason: 'The events payload must be an array' });
  return raw.map((e, i) => checkEvent(e, now) ?? fail('bad_request', { reason: `Event ${i} is not an engagement event (doc_id and type are required)` }));
}

function checkEvent(e: unknown, now: number): EngagementEvent | null {
  if (typeof e !== 'object' || e === null) return null;
  const o = e as Record<string, unknown>;
  if (typeof o.doc_id !== 'string' || o.doc_id.length === 0) return null;
  const type = o.type ?? 'click';
  if (typeof type !== 'string' || !TYPES.has(type)) return null;
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  const position = typeof o.position === 'number' && Number.isInteger(o.position) && o.position > 0 ? o.position : 0;
  const ts = typeof o.ts === 'number' && Number.isFinite(o.ts) && o.ts > 0 ? o.ts : now;
  return { doc_id: o.doc_id, type: type as EngagementType, query: str(o.query), position, user_id: str(o.user_id), session_id: str(o.session_id), ts };
}
