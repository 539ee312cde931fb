// The key layout of a partition's RocksDB, for one part of one physical index. Many tenants'
// indexes share a partition, so every key starts with the index part's identity, written with
// length prefixes so that no tenant, index or document id can be read as part of another:
//
//   0x00 "format"                                       -> format version (ASCII digits)
//   0x01 len(T) T len(P) P part(u32 BE) doc_id          -> document body (msgpack, stored as sent)
//   0x02 len(T) T len(P) P part(u32 BE)                 -> index part meta (see encodeMeta)
//   0x03 len(T) T len(P) P part(u32 BE) seq(u64 BE)     -> engagement event (msgpack), in arrival order
//   0x04 len(T) T len(P) P part(u32 BE)                 -> the part was dropped (empty value): later
//                                                          writes to it are refused
//
// T (tenant id) and P (physical index id) are UTF-8 with a one-byte length (1..255 bytes);
// doc_id is the raw UTF-8 tail of the key, so documents of one part sort by id (UTF-8 byte
// order, which is Unicode code point order) and one range scan lists them.
import { fail } from '../node/runtime/errors.js';

export const FORMAT_KEY = Buffer.from('\x00format', 'latin1');
export const FORMAT_VERSION = '1';
export const DOC_TAG = 0x01;
export const META_TAG = 0x02;
export const EVENT_TAG = 0x03;
export const DROPPED_TAG = 0x04;
/** every dropped-part key lies in [DROPPED_START, DROPPED_END) */
export const DROPPED_START = Buffer.from([DROPPED_TAG]);
export const DROPPED_END = Buffer.from([DROPPED_TAG + 1]);
/** every meta key lies in [META_START, META_END) */
export const META_START = Buffer.from([META_TAG]);
export const META_END = Buffer.from([META_TAG + 1]);

/** Longest accepted document id, in UTF-8 bytes: ids are keys, and keys are kept small. */
export const MAX_DOC_ID_BYTES = 4096;
const MAX_NAME_BYTES = 255;
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Meta value: count (f64), stored bytes (f64), parts (u32), then events appended so far (f64,
 * the next event sequence number). Doubles are exact up to 2^53. A 20-byte value (written before
 * events existed) reads as zero events.
 */
const META_BYTES = 20;
const META_BYTES_WITH_EVENTS = 28;

export interface IndexMeta {
  count: number;
  bytes: number;
  parts: number;
  /** engagement events appended to this part so far (0 when absent) */
  events?: number;
}

export function encodeMeta(meta: IndexMeta): Buffer {
  const b = Buffer.allocUnsafe(META_BYTES_WITH_EVENTS);
  b.writeDoubleBE(meta.count, 0);
  b.writeDoubleBE(meta.bytes, 8);
  b.writeUInt32BE(meta.parts >>> 0, 16);
  b.writeDoubleBE(meta.events ?? 0, 20);
  return b;
}

export function decodeMeta(value: Buffer): IndexMeta {
  if (value.length < META_BYTES) throw new Error(`index meta value has ${value.length} bytes, expected ${META_BYTES}`);
  const events = value.length >= META_BYTES_WITH_EVENTS ? value.readDoubleBE(20) : 0;
  return { count: value.readDoubleBE(0), bytes: value.readDoubleBE(8), parts: value.readUInt32BE(16), events };
}

/**
 * In-memory identity of an index part, unambiguous for any strings: the tenant's length comes
 * first, and the part number after the last '/' cannot contain one.
 */
export function indexPartId(tenantId: string, physicalIndexId: string, part: number): string {
  return `${tenantId.length}:${tenantId}/${physicalIndexId}/${part}`;
}

function nameBytes(what: string, s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  if (b.length === 0 || b.length > MAX_NAME_BYTES) fail('bad_request', { reason: `${what} must be 1 to ${MAX_NAME_BYTES} bytes long` });
  if (LONE_SURROGATE.test(s)) fail('bad_request', { reason: `${what} must be valid Unicode` });
  return b;
}

/** Smallest key greater than every key that starts with `prefix`. */
function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  throw new Error('a key prefix of only 0xff bytes has no upper bound');
}

/** Key builders for one index part; built once per part and kept with its counters. */
export class IndexKeys {
  /** prefix of every document key of this part */
  readonly docPrefix: Buffer;
  /** exclusive upper bound of the document range */
  readonly docEnd: Buffer;
  readonly metaKey: Buffer;
  /** written when the part is dropped (see PartitionStore.drop) */
  readonly droppedKey: Buffer;
  /** prefix of every event key of this part, and the exclusive upper bound of that range */
  readonly eventPrefix: Buffer;
  readonly eventEnd: Buffer;

  constructor(
    readonly tenantId: string,
    readonly physicalIndexId: string,
    readonly part: number,
  ) {
    const t = nameBytes('tenant_id', tenantId);
    const p = nameBytes('physical_index_id', physicalIndexId);
    const body = Buffer.allocUnsafe(1 + t.length + 1 + p.length + 4);
    let o = 0;
    body[o++] = t.length;
    o += t.copy(body, o);
    body[o++] = p.length;
    o += p.copy(body, o);
    body.writeUInt32BE(part >>> 0, o);
    this.docPrefix = Buffer.concat([Buffer.from([DOC_TAG]), body]);
    this.metaKey = Buffer.concat([Buffer.from([META_TAG]), body]);
    this.droppedKey = Buffer.concat([Buffer.from([DROPPED_TAG]), body]);
    this.docEnd = prefixEnd(this.docPrefix);
    this.eventPrefix = Buffer.concat([Buffer.from([EVENT_TAG]), body]);
    this.eventEnd = prefixEnd(this.eventPrefix);
  }

  /** Key of the event with sequence number `seq` (events of a part sort in arrival order). */
  eventKey(seq: number): Buffer {
    const key = Buffer.allocUnsafe(this.eventPrefix.length + 8);
    this.eventPrefix.copy(key, 0);
    key.writeBigUInt64BE(BigInt(seq), this.eventPrefix.length);
    return key;
  }

  docKey(docId: string): Buffer {
    const n = Buffer.byteLength(docId, 'utf8');
    if (n === 0) fail('bad_request', { reason: 'A document id must not be empty' });
    if (n > MAX_DOC_ID_BYTES) fail('bad_request', { reason: `A document id must be at most ${MAX_DOC_ID_BYTES} bytes long` });
    // a lone surrogate would be stored as U+FFFD, so two different ids could share one key
    if (LONE_SURROGATE.test(docId)) fail('bad_request', { reason: 'A document id must be valid Unicode (it has a lone surrogate)' });
    const key = Buffer.allocUnsafe(this.docPrefix.length + n);
    this.docPrefix.copy(key, 0);
    key.write(docId, this.docPrefix.length, 'utf8');
    return key;
  }

  docId(key: Buffer): string {
    return key.toString('utf8', this.docPrefix.length);
  }

  /** Reads the identity back from a meta key (used when rebuilding counters on open). */
  static fromMetaKey(key: Buffer): IndexKeys {
    const k = readKey(key);
    if (k === null || k.kind !== 'meta') throw new Error('not an index meta key');
    return new IndexKeys(k.tenantId, k.physicalIndexId, k.part);
  }

  /** The identity (`indexPartId`) of the part a dropped-part key names. */
  static droppedPartId(key: Buffer): string {
    const k = readKey(key);
    if (k === null || k.kind !== 'dropped') throw new Error('not a dropped-part key');
    return indexPartId(k.tenantId, k.physicalIndexId, k.part);
  }
}

/** What a key of the layout above names; the format key is `format`. */
export type StoredKey =
  | { kind: 'format' }
  | { kind: 'doc' | 'meta' | 'event' | 'dropped'; tenantId: string; physicalIndexId: string; part: number; docId: string; seq: number };

/**
 * Reads a key of the layout above back (a replica learns from the keys it is sent what changed);
 * null for bytes that are not one. `docId` is set for documents, `seq` for events ('' and -1
 * otherwise).
 */
export function readKey(key: Buffer): StoredKey | null {
  if (key.equals(FORMAT_KEY)) return { kind: 'format' };
  const tag = key[0];
  const kind = tag === DOC_TAG ? 'doc' : tag === META_TAG ? 'meta' : tag === EVENT_TAG ? 'event' : tag === DROPPED_TAG ? 'dropped' : null;
  if (kind === null || key.length < 2) return null;
  let o = 1;
  const tl = key[o++]!;
  if (tl === 0 || o + tl + 1 > key.length) return null;
  const tenantId = key.toString('utf8', o, o + tl);
  o += tl;
  const pl = key[o++]!;
  if (pl === 0 || o + pl + 4 > key.length) return null;
  const physicalIndexId = key.toString('utf8', o, o + pl);
  o += pl;
  const part = key.readUInt32BE(o);
  o += 4;
  const rest = key.length - o;
  if ((kind === 'meta' || kind === 'dropped') && rest !== 0) return null;
  if (kind === 'event' && rest !== 8) return null;
  if (kind === 'doc' && rest === 0) return null;
  return {
    kind,
    tenantId,
    physicalIndexId,
    part,
    docId: kind === 'doc' ? key.toString('utf8', o) : '',
    seq: kind === 'event' ? Number(key.readBigUInt64BE(o)) : -1,
  };
}
