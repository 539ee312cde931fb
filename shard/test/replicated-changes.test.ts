// Replicated key operations read back as change events (what a follower's engines follow), and
// the key reader they rest on, against the key builders of index-keys.ts.
import { describe, expect, it } from 'vitest';
import { encodeEvent, type EngagementEvent } from '../../node/runtime/engagement-event.js';
import { FORMAT_KEY, IndexKeys, encodeMeta, readKey } from '../index-keys.js';
import { replicatedChanges } from '../replicated-changes.js';
import type { BatchOp } from '../rocks-db.js';

const ev = (doc_id: string): EngagementEvent => ({ doc_id, type: 'click', query: 'q', position: 1, user_id: 'u', session_id: 's', ts: 1_700_000_000_000 });
const put = (key: Buffer, value: Buffer): BatchOp => ({ type: 'put', key, value });
const del = (key: Buffer): BatchOp => ({ type: 'del', key });

describe('readKey', () => {
  it('reads back every kind of key the builders make, for awkward names and ids', () => {
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const alphabet = ['a', 'Z', '0', '/', ':', '\u0000', '\u00ff', 'é', '東', '😀', ' ', '\\'];
    const word = (min: number) => Array.from({ length: min + rnd(12) }, () => alphabet[rnd(alphabet.length)]).join('');
    for (let i = 0; i < 500; i++) {
      const tenant = word(1);
      const physical = word(1);
      const part = rnd(3) === 0 ? 0xffffffff : rnd(64);
      const keys = new IndexKeys(tenant, physical, part);
      const id = word(1);
      const seq = rnd(1_000_000_000);
      const same = { tenantId: tenant, physicalIndexId: physical, part };
      expect(readKey(keys.docKey(id))).toEqual({ kind: 'doc', ...same, docId: id, seq: -1 });
      expect(readKey(keys.metaKey)).toEqual({ kind: 'meta', ...same, docId: '', seq: -1 });
      expect(readKey(keys.eventKey(seq))).toEqual({ kind: 'event', ...same, docId: '', seq });
      expect(IndexKeys.fromMetaKey(keys.metaKey).docPrefix.equals(keys.docPrefix)).toBe(true);
    }
    expect(readKey(FORMAT_KEY)).toEqual({ kind: 'format' });
  });

  it('answers null for bytes that are not a key of the layout', () => {
    const keys = new IndexKeys('acme', 'products', 1);
    const bad = [
      Buffer.alloc(0),
      Buffer.from([0x01]),
      Buffer.from([0x7f, 1, 0x61]),
      keys.docPrefix, // a document key without an id
      keys.docPrefix.subarray(0, keys.docPrefix.length - 2), // cut inside the part number
      Buffer.concat([keys.metaKey, Buffer.from([0])]), // a meta key with a tail
      Buffer.concat([keys.eventPrefix, Buffer.alloc(7)]), // an event key with a short sequence
      Buffer.from([0x01, 0, 1, 0x61, 0, 0, 0, 0, 0x62]), // an empty tenant
      Buffer.from([0x01, 200, 0x61]), // a tenant longer than the key
    ];
    for (const key of bad) expect(readKey(key), key.toString('hex')).toBeNull();
  });
});

describe('replicatedChanges', () => {
  const a = new IndexKeys('acme', 'products', 0);
  const b = new IndexKeys('beta', 'catalog', 2);
  const body = (title: string) => Buffer.from(title);

  it('reads documents, deletes, events and drops in their order, one event per run of one kind on one part', () => {
    const ops: BatchOp[] = [
      put(FORMAT_KEY, Buffer.from('1')),
      put(a.docKey('1'), body('one')),
      put(a.docKey('2'), body('two')),
      put(a.metaKey, encodeMeta({ count: 2, bytes: 6, parts: 1 })),
      put(b.docKey('x'), body('ex')),
      del(a.docKey('1')),
      put(a.eventKey(5), encodeEvent(ev('2'))),
      put(a.eventKey(6), encodeEvent(ev('2'))),
      put(a.eventKey(9), encodeEvent(ev('1'))), // not the next sequence number: an event of its own
      del(b.eventKey(1)), // a drop deletes the part's events first: nothing an engine holds
      del(b.docKey('x')),
      del(b.metaKey),
    ];
    const changes = replicatedChanges(3, 12, ops)!;
    const ref = (k: IndexKeys) => ({ tenantId: k.tenantId, physicalIndexId: k.physicalIndexId, part: k.part, parts: 0, partition: 3, epoch: 12 });
    expect(changes).toEqual([
      { type: 'upsert', ref: ref(a), ids: ['1', '2'], documents: [{ id: '1', body: body('one') }, { id: '2', body: body('two') }] },
      { type: 'upsert', ref: ref(b), ids: ['x'], documents: [{ id: 'x', body: body('ex') }] },
      { type: 'delete', ref: ref(a), ids: ['1'] },
      { type: 'events', ref: ref(a), ids: ['2', '2'], events: [ev('2'), ev('2')], firstSeq: 5 },
      { type: 'events', ref: ref(a), ids: ['1'], events: [ev('1')], firstSeq: 9 },
      { type: 'delete', ref: ref(b), ids: ['x'] },
      { type: 'drop', ref: ref(b), ids: [] },
    ]);
  });

  it('answers null when a key or a stored event cannot be read, so that the caller drops what it built', () => {
    expect(replicatedChanges(0, 1, [put(a.docKey('1'), body('one')), put(Buffer.from([0x7f]), body('?'))])).toBeNull();
    expect(replicatedChanges(0, 1, [put(a.eventKey(1), Buffer.from([0xc1]))])).toBeNull();
    expect(replicatedChanges(0, 1, [])).toEqual([]);
  });
});
