// One partition = one RocksDB instance at `${dataDir}/partitions/p${N}`, holding the documents of
// every index part placed on it (key layout: index-keys.ts). Owns durability and the per-part
// counters: every acknowledged write is one atomic RocksDB batch written with a synced WAL, and
// the part's document count and stored bytes are rewritten in that same batch, so the counters
// on disk always agree with the documents on disk, even after a SIGKILL. The counters are also
// kept in memory (rebuilt from the meta keys on open) so counts and stats never touch the disk.
//
// Writes to one index part must not overlap (the shard node runs them through IndexMailbox);
// an overlapping write is a programming error and is refused. Reads may run at any time and see
// the last acknowledged write.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type * as pb from '../proto/gen/shard.js';
import { fail } from '../node/runtime/errors.js';
import { RocksDb, type BatchOp, type Entry, type RocksDbOptions, type RocksIterator } from './rocks-db.js';
import {
  DROPPED_END,
  DROPPED_START,
  DROPPED_TAG,
  FORMAT_KEY,
  FORMAT_VERSION,
  IndexKeys,
  META_END,
  META_START,
  META_TAG,
  decodeMeta,
  encodeMeta,
  indexPartId,
} from './index-keys.js';

const EMPTY_VALUE = Buffer.alloc(0);

/** The fields of an IndexRef the store uses; the partition and epoch are the node's business. */
export type IndexPartRef = Pick<pb.IndexRef, 'tenantId' | 'physicalIndexId' | 'part' | 'parts'>;

export interface PartitionStoreOptions extends RocksDbOptions {
  /** documents removed per atomic batch when dropping an index part */
  dropChunk?: number;
  /** fsync the WAL before acknowledging a write (default true; never turn off in production) */
  sync?: boolean;
  /**
   * Called with every write batch once it is durable here; the write is acknowledged only when
   * the returned promise resolves (replication to followers: shard/partition-handoff.ts).
   */
  replicate?: (partition: number, ops: readonly BatchOp[]) => Promise<void>;
}

export interface IndexPartInfo {
  tenantId: string;
  physicalIndexId: string;
  part: number;
  parts: number;
  documentCount: number;
  storedBytes: number;
}

export interface PartitionTotals {
  partition: number;
  documentCount: number;
  indexCount: number;
  storedBytes: number;
}

export interface ListOptions {
  /** only ids strictly after this one (UTF-8 byte order) */
  afterId?: string;
  offset?: number;
  /** 0 or absent: DEFAULT_LIST_LIMIT; capped at MAX_LIST_LIMIT */
  limit?: number;
}

export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 10_000;
const DEFAULT_DROP_CHUNK = 10_000;

interface PartState {
  readonly keys: IndexKeys;
  count: number;
  bytes: number;
  parts: number;
  /** engagement events appended so far: the sequence number of the next one */
  events: number;
  /** meta key exists on disk; false only while the first write of a new part is in flight */
  persisted: boolean;
  /** a write of this part is in flight (guards the single-writer rule) */
  writing: boolean;
}

export class PartitionStore {
  private readonly parts = new Map<string, PartState>();
  /**
   * Index parts dropped here (`indexPartId`), kept for good on disk: a write that reaches a part
   * after its drop (sent by a router before it learned of the delete, or queued behind it) is
   * refused instead of bringing the part back as documents no index holds. Physical index ids
   * are never reused.
   */
  private readonly dropped = new Set<string>();
  private documentCount = 0;
  private storedBytes = 0;
  private indexCount = 0;
  private closed = false;
  private readonly sync: boolean;
  private readonly dropChunk: number;
  private readonly replicate: PartitionStoreOptions['replicate'];

  private constructor(
    readonly partition: number,
    private readonly db: RocksDb,
    options: PartitionStoreOptions,
  ) {
    this.sync = options.sync ?? true;
    this.dropChunk = Math.max(1, options.dropChunk ?? DEFAULT_DROP_CHUNK);
    this.replicate = options.replicate;
  }

  static location(dataDir: string, partition: number): string {
    return path.join(dataDir, 'partitions', `p${partition}`);
  }

  static async open(dataDir: string, partition: number, options: PartitionStoreOptions = {}): Promise<PartitionStore> {
    const location = PartitionStore.location(dataDir, partition);
    // RocksDB creates the last directory only
    await mkdir(path.dirname(location), { recursive: true });
    const db = await RocksDb.open(location, options);
    try {
      const store = new PartitionStore(partition, db, options);
      await store.load();
      return store;
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
  }

  /** Checks the format version and rebuilds the in-memory counters from the meta keys. */
  private async load(): Promise<void> {
    const format = await this.db.get(FORMAT_KEY);
    if (format === undefined) {
      await this.db.write([{ type: 'put', key: FORMAT_KEY, value: Buffer.from(FORMAT_VERSION) }], true);
    } else if (format.toString() !== FORMAT_VERSION) {
      throw new Error(`partition ${this.partition} has storage format ${format.toString()}; this build reads format ${FORMAT_VERSION}`);
    }
    const marks = this.db.iterate({ gte: DROPPED_START, lt: DROPPED_END, values: false });
    try {
      for (;;) {
        const batch = await marks.take(1024);
        for (const { key } of batch) this.dropped.add(IndexKeys.droppedPartId(key));
        if (marks.exhausted || batch.length < 1024) break;
      }
    } finally {
      await marks.end();
    }
    const it = this.db.iterate({ gte: META_START, lt: META_END });
    try {
      for (;;) {
        const batch = await it.take(1024);
        for (const { key, value } of batch) {
          const keys = IndexKeys.fromMetaKey(key);
          const meta = decodeMeta(value);
          this.parts.set(indexPartId(keys.tenantId, keys.physicalIndexId, keys.part), {
            keys,
            count: meta.count,
            bytes: meta.bytes,
            parts: meta.parts,
            events: meta.events ?? 0,
            persisted: true,
            writing: false,
          });
          this.documentCount += meta.count;
          this.storedBytes += meta.bytes;
          this.indexCount++;
        }
        if (it.exhausted) break;
      }
    } finally {
      await it.end();
    }
  }

  // ---- writes (one at a time per index part) ----

  /**
   * Creates or replaces a batch of documents, all or nothing. A repeated id in one batch is
   * applied in order (the last body wins) and counted once. With `maxDocuments` > 0, a batch
   * that would take the part past it is refused with `document_limit` and nothing is written.
   */
  async upsert(ref: IndexPartRef, documents: readonly pb.EncodedDocument[], maxDocuments = 0): Promise<pb.UpsertResponse> {
    this.open();
    if (this.dropped.has(indexPartId(ref.tenantId, ref.physicalIndexId, ref.part))) {
      fail('index_not_found', { index: ref.physicalIndexId, tenant: ref.tenantId });
    }
    const state = this.stateFor(ref);
    this.beginWrite(state);
    try {
      const n = documents.length;
      if (n === 0) return { upserted: 0, created: 0, documentCount: state.count };
      const keys = new Array<Buffer>(n);
      for (let i = 0; i < n; i++) keys[i] = state.keys.docKey(documents[i]!.id);

      // indexes of the documents to write: all of them unless an id repeats
      let order: number[] | undefined;
      if (n > 1) {
        const last = new Map<string, number>();
        for (let i = 0; i < n; i++) last.set(documents[i]!.id, i);
        if (last.size < n) order = [...last.values()].sort((a, b) => a - b);
      }
      const uniqueKeys = order ? order.map((i) => keys[i]!) : keys;
      const previous = await this.db.getMany(uniqueKeys);

      let created = 0;
      let bytesDelta = 0;
      const ops = new Array<BatchOp>(uniqueKeys.length + 1);
      for (let j = 0; j < uniqueKeys.length; j++) {
        const key = uniqueKeys[j]!;
        const body = documents[order ? order[j]! : j]!.body;
        const old = previous[j];
        if (old === undefined) created++;
        else bytesDelta -= key.length + old.length;
        bytesDelta += key.length + body.length;
        ops[j] = { type: 'put', key, value: body };
      }
      if (maxDocuments > 0 && created > 0 && state.count + created > maxDocuments) {
        fail('document_limit', { scope: 'Index', limit: maxDocuments, count: state.count, adding: created });
      }
      const parts = Math.max(1, ref.parts);
      ops[uniqueKeys.length] = {
        type: 'put',
        key: state.keys.metaKey,
        value: encodeMeta({ count: state.count + created, bytes: state.bytes + bytesDelta, parts, events: state.events }),
      };
      await this.db.write(ops, this.sync);
      const shipped = this.ship(ops);

      state.count += created;
      state.bytes += bytesDelta;
      state.parts = parts;
      this.documentCount += created;
      this.storedBytes += bytesDelta;
      this.markPersisted(state);
      await shipped;
      return { upserted: n, created, documentCount: state.count };
    } finally {
      this.endWrite(state);
    }
  }

  async delete(ref: IndexPartRef, docId: string): Promise<pb.DeleteDocumentResponse> {
    this.open();
    const state = this.existing(ref);
    if (!state) return { deleted: false, documentCount: 0 };
    this.beginWrite(state);
    try {
      const key = state.keys.docKey(docId);
      const old = await this.db.get(key);
      if (old === undefined) return { deleted: false, documentCount: state.count };
      const freed = key.length + old.length;
      const ops: BatchOp[] = [
        { type: 'del', key },
        { type: 'put', key: state.keys.metaKey, value: encodeMeta({ count: state.count - 1, bytes: state.bytes - freed, parts: state.parts, events: state.events }) },
      ];
      await this.db.write(ops, this.sync);
      const shipped = this.ship(ops);
      state.count--;
      state.bytes -= freed;
      this.documentCount--;
      this.storedBytes -= freed;
      await shipped;
      return { deleted: true, documentCount: state.count };
    } finally {
      this.endWrite(state);
    }
  }

  /**
   * Appends engagement events, all or nothing, after checking that each one's document is
   * stored in this part; events on other documents are left out and their ids returned (once
   * each, in order). `docIds[i]` is the document of `events[i]` (msgpack bodies, stored as sent).
   */
  async appendEvents(ref: IndexPartRef, docIds: readonly string[], events: readonly Buffer[]): Promise<{ accepted: number; unknown: string[]; stored: number[]; firstSeq: number }> {
    this.open();
    if (docIds.length !== events.length) throw new Error('appendEvents: one document id per event');
    const state = this.existing(ref);
    if (!state) return { accepted: 0, unknown: [...new Set(docIds)], stored: [], firstSeq: 0 };
    this.beginWrite(state);
    try {
      const distinct = [...new Set(docIds)];
      const found = await this.db.getMany(distinct.map((id) => state.keys.docKey(id)));
      const known = new Set(distinct.filter((_, i) => found[i] !== undefined));
      const ops: BatchOp[] = [];
      const stored: number[] = [];
      const firstSeq = state.events;
      let seq = firstSeq;
      for (let i = 0; i < events.length; i++) {
        if (!known.has(docIds[i]!)) continue;
        ops.push({ type: 'put', key: state.keys.eventKey(seq++), value: events[i]! });
        stored.push(i);
      }
      if (ops.length > 0) {
        ops.push({ type: 'put', key: state.keys.metaKey, value: encodeMeta({ count: state.count, bytes: state.bytes, parts: state.parts, events: seq }) });
        await this.db.write(ops, this.sync);
        const shipped = this.ship(ops);
        state.events = seq;
        await shipped;
      }
      return { accepted: stored.length, unknown: distinct.filter((id) => !known.has(id)), stored, firstSeq };
    } finally {
      this.endWrite(state);
    }
  }

  /**
   * The stored events of a part with sequence numbers below `upTo` (default: all so far), in
   * arrival order, `batchSize` at a time (msgpack bodies).
   */
  async *scanEvents(ref: IndexPartRef, upTo?: number, batchSize = 5000): AsyncGenerator<Buffer[]> {
    this.open();
    const state = this.existing(ref);
    const end = upTo ?? state?.events ?? 0;
    if (!state || end <= 0) return;
    const it = this.db.iterate({ gte: state.keys.eventPrefix, lt: state.keys.eventKey(end), keys: false, highWaterMark: 256 * 1024 });
    try {
      for (;;) {
        const entries = await it.take(batchSize);
        if (entries.length > 0) yield entries.map((e) => e.value);
        if (it.exhausted || entries.length < batchSize) return;
      }
    } finally {
      await it.end();
    }
  }

  /** Events appended to a part so far. */
  eventCount(ref: IndexPartRef): number {
    return this.existing(ref)?.events ?? 0;
  }

  /**
   * Removes every document and the meta of an index part; returns how many documents it removed.
   * Each chunk of `dropChunk` documents is one atomic batch that also rewrites the counters, so a
   * crash midway leaves a smaller but consistent part, and dropping again finishes the job. The
   * last batch marks the part dropped (see `dropped`); so does the drop of a part never written.
   */
  async drop(ref: IndexPartRef): Promise<number> {
    this.open();
    const id = indexPartId(ref.tenantId, ref.physicalIndexId, ref.part);
    const state = this.existing(ref);
    if (!state) {
      if (!this.dropped.has(id)) {
        const ops: BatchOp[] = [{ type: 'put', key: new IndexKeys(ref.tenantId, ref.physicalIndexId, ref.part).droppedKey, value: EMPTY_VALUE }];
        await this.db.write(ops, this.sync);
        this.dropped.add(id);
        await this.ship(ops);
      }
      return 0;
    }
    this.beginWrite(state);
    let removed = 0;
    let it: RocksIterator | undefined;
    try {
      // events first: while the meta key exists a crash here is finished by dropping again
      it = this.db.iterate({ gte: state.keys.eventPrefix, lt: state.keys.eventEnd, values: false, highWaterMark: 256 * 1024 });
      for (;;) {
        const entries = await it.take(this.dropChunk);
        if (entries.length > 0) {
          const ops = entries.map((e): BatchOp => ({ type: 'del', key: e.key }));
          await this.db.write(ops, this.sync);
          await this.ship(ops);
        }
        if (it.exhausted || entries.length < this.dropChunk) break;
      }
      await it.end();
      state.events = 0;
      it = this.db.iterate({ gte: state.keys.docPrefix, lt: state.keys.docEnd, highWaterMark: 256 * 1024 });
      for (;;) {
        const entries = await it.take(this.dropChunk);
        const last = it.exhausted || entries.length < this.dropChunk;
        const ops = new Array<BatchOp>(entries.length + (last ? 2 : 1));
        let freed = 0;
        for (let i = 0; i < entries.length; i++) {
          const e = entries[i]!;
          freed += e.key.length + e.value.length;
          ops[i] = { type: 'del', key: e.key };
        }
        ops[entries.length] = last
          ? { type: 'del', key: state.keys.metaKey }
          : { type: 'put', key: state.keys.metaKey, value: encodeMeta({ count: state.count - entries.length, bytes: state.bytes - freed, parts: state.parts, events: 0 }) };
        if (last) ops[entries.length + 1] = { type: 'put', key: state.keys.droppedKey, value: EMPTY_VALUE };
        await this.db.write(ops, this.sync);
        if (last) this.dropped.add(id);
        const shipped = this.ship(ops);
        state.count -= entries.length;
        state.bytes -= freed;
        this.documentCount -= entries.length;
        this.storedBytes -= freed;
        removed += entries.length;
        await shipped;
        if (last) break;
      }
      // whatever the meta said, the part is gone; drift would only come from a corrupted counter
      this.documentCount -= state.count;
      this.storedBytes -= state.bytes;
      this.parts.delete(id);
      this.indexCount--;
      return removed;
    } finally {
      await it?.end().catch(() => undefined);
      this.endWrite(state);
    }
  }

  // ---- reads ----

  async get(ref: IndexPartRef, docId: string): Promise<pb.GetDocumentResponse> {
    this.open();
    const state = this.existing(ref);
    if (!state) return { found: false, document: undefined };
    const body = await this.db.get(state.keys.docKey(docId));
    return body === undefined ? { found: false, document: undefined } : { found: true, document: { id: docId, body } };
  }

  /** A page of documents in id order, with the part's total document count. */
  async list(ref: IndexPartRef, options: ListOptions = {}): Promise<pb.ListDocumentsResponse> {
    this.open();
    const state = this.existing(ref);
    if (!state) return { documents: [], total: 0 };
    const limit = Math.min(options.limit && options.limit > 0 ? options.limit : DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const offset = Math.max(0, options.offset ?? 0);
    const total = state.count;
    let after = options.afterId ? state.keys.docKey(options.afterId) : undefined;

    if (offset > 0) {
      if (offset >= total) return { documents: [], total };
      // skip with a keys-only cursor: no value is copied out of RocksDB for skipped documents
      const skip = this.db.iterate({ ...this.range(state.keys, after), values: false, limit: offset, highWaterMark: 256 * 1024 });
      try {
        const skipped = await skip.take(offset);
        if (skipped.length < offset) return { documents: [], total };
        after = skipped[skipped.length - 1]!.key;
      } finally {
        await skip.end();
      }
    }

    const it = this.db.iterate({ ...this.range(state.keys, after), limit });
    try {
      const entries = await it.take(limit);
      const documents = new Array<pb.EncodedDocument>(entries.length);
      for (let i = 0; i < entries.length; i++) {
        const e = entries[i]!;
        documents[i] = { id: state.keys.docId(e.key), body: e.value };
      }
      return { documents, total };
    } finally {
      await it.end();
    }
  }

  /** Every document of a part in id order, `batchSize` at a time (engine builds, exports, handoff). */
  async *scan(ref: IndexPartRef, batchSize = 1000): AsyncGenerator<pb.EncodedDocument[]> {
    this.open();
    const state = this.existing(ref);
    if (!state) return;
    const it = this.db.iterate({ gte: state.keys.docPrefix, lt: state.keys.docEnd, highWaterMark: 256 * 1024 });
    try {
      for (;;) {
        const entries = await it.take(batchSize);
        if (entries.length > 0) yield entries.map((e) => ({ id: state.keys.docId(e.key), body: e.value }));
        if (it.exhausted || entries.length < batchSize) return;
      }
    } finally {
      await it.end();
    }
  }

  // ---- whole-partition copies (moves and replication: shard/partition-handoff.ts) ----

  /**
   * Every key and value of the partition, raw, about `batchBytes` at a time. The iterator reads
   * one RocksDB snapshot, so writes during the scan are not seen (they travel separately).
   */
  async *scanRaw(batchBytes = 1 << 20): AsyncGenerator<Entry[]> {
    this.open();
    const it = this.db.iterate({ highWaterMark: 256 * 1024 });
    try {
      for (;;) {
        const batch: Entry[] = [];
        let bytes = 0;
        while (bytes < batchBytes) {
          const entries = await it.take(256);
          for (const e of entries) {
            batch.push(e);
            bytes += e.key.length + e.value.length;
          }
          if (it.exhausted || entries.length < 256) break;
        }
        if (batch.length > 0) yield batch;
        if (it.exhausted || bytes < batchBytes) return;
      }
    } finally {
      await it.end();
    }
  }

  /**
   * Applies a batch written by another node's store (a follower's copy of the primary's write,
   * or a snapshot piece) atomically, and refreshes the in-memory counters from the meta keys it
   * carries, so a follower promoted to primary counts exactly what it stores.
   */
  async applyRaw(ops: readonly BatchOp[]): Promise<void> {
    this.open();
    if (ops.length === 0) return;
    await this.db.write(ops as BatchOp[], this.sync);
    for (const op of ops) {
      if (op.key[0] === DROPPED_TAG && op.type === 'put') this.dropped.add(IndexKeys.droppedPartId(op.key));
      if (op.key.length === 0 || op.key[0] !== META_TAG) continue;
      const keys = IndexKeys.fromMetaKey(op.key);
      const id = indexPartId(keys.tenantId, keys.physicalIndexId, keys.part);
      const before = this.parts.get(id);
      if (before?.persisted) {
        this.documentCount -= before.count;
        this.storedBytes -= before.bytes;
        this.indexCount--;
        this.parts.delete(id);
      }
      if (op.type === 'put') {
        const meta = decodeMeta(op.value);
        this.parts.set(id, { keys, count: meta.count, bytes: meta.bytes, parts: meta.parts, events: meta.events ?? 0, persisted: true, writing: false });
        this.documentCount += meta.count;
        this.storedBytes += meta.bytes;
        this.indexCount++;
      }
    }
  }

  stats(ref: IndexPartRef): { documentCount: number; storedBytes: number } {
    const state = this.existing(ref);
    return state ? { documentCount: state.count, storedBytes: state.bytes } : { documentCount: 0, storedBytes: 0 };
  }

  totals(): PartitionTotals {
    return { partition: this.partition, documentCount: this.documentCount, indexCount: this.indexCount, storedBytes: this.storedBytes };
  }

  /** Index parts stored in this partition (those with at least one acknowledged write). */
  *indexParts(): IterableIterator<IndexPartInfo> {
    for (const s of this.parts.values()) {
      if (!s.persisted) continue;
      yield { tenantId: s.keys.tenantId, physicalIndexId: s.keys.physicalIndexId, part: s.keys.part, parts: s.parts, documentCount: s.count, storedBytes: s.bytes };
    }
  }

  /** A RocksDB property of this instance (e.g. `rocksdb.estimate-num-keys`), for metrics. */
  property(name: string): string | undefined {
    return this.closed ? undefined : this.db.property(name);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }

  // ---- internals ----

  /** Hands a durable batch to the replication hook; never rejects before it is awaited. */
  private ship(ops: readonly BatchOp[]): Promise<void> {
    if (!this.replicate) return Promise.resolve();
    const p = this.replicate(this.partition, ops);
    p.catch(() => undefined);
    return p;
  }

  private open(): void {
    if (this.closed) fail('unavailable', { reason: `Partition ${this.partition} is closed on this node` });
  }

  private range(keys: IndexKeys, after: Buffer | undefined): { gt?: Buffer; gte?: Buffer; lt: Buffer } {
    return after ? { gt: after, lt: keys.docEnd } : { gte: keys.docPrefix, lt: keys.docEnd };
  }

  private existing(ref: IndexPartRef): PartState | undefined {
    const s = this.parts.get(indexPartId(ref.tenantId, ref.physicalIndexId, ref.part));
    return s?.persisted ? s : undefined;
  }

  private stateFor(ref: IndexPartRef): PartState {
    const id = indexPartId(ref.tenantId, ref.physicalIndexId, ref.part);
    let s = this.parts.get(id);
    if (!s) {
      s = { keys: new IndexKeys(ref.tenantId, ref.physicalIndexId, ref.part), count: 0, bytes: 0, parts: Math.max(1, ref.parts), events: 0, persisted: false, writing: false };
      this.parts.set(id, s);
    }
    return s;
  }

  private beginWrite(state: PartState): void {
    if (state.writing) {
      throw new Error(
        `overlapping writes to index part ${state.keys.tenantId}/${state.keys.physicalIndexId}/${state.keys.part}; writes must go through the index mailbox`,
      );
    }
    state.writing = true;
  }

  private endWrite(state: PartState): void {
    state.writing = false;
    // a refused first write leaves nothing on disk, so nothing stays in memory either
    if (!state.persisted) this.parts.delete(indexPartId(state.keys.tenantId, state.keys.physicalIndexId, state.keys.part));
  }

  private markPersisted(state: PartState): void {
    if (state.persisted) return;
    state.persisted = true;
    this.indexCount++;
  }
}
