// POST /v1/events/click over a real socket against a real shard node: every field, default and
// status of the route, hostile bodies, the per-key rate limit, and what reaches the event log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeEvent } from '../../node/runtime/engagement-event.js';
import { partitionOf } from '../../node/runtime/hash.js';
import { startRouter, type TestRouter } from './harness.js';

type Err = { detail: string; code: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };
type Result = { accepted: number; ignored: number; unknown_document_ids: string[] };

describe('POST /v1/events/click', () => {
  let r: TestRouter;
  let t: { id: string; pub: string; priv: string };
  let other: { id: string; pub: string; priv: string };

  const click = (body: unknown, key = t.pub, headers?: Record<string, string>) => r.call<Result & Err & { detail: Issue[] }>('POST', '/v1/events/click', { key, body, ...(headers ? { headers } : {}) });

  /** The events stored for the index's only part, decoded. */
  async function stored(index: string) {
    const list = await r.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key: t.priv });
    const physical = list.body.find((v) => v.index_id === index)!.physical_index_id;
    const partition = partitionOf(t.id, physical, 0, r.config.partitions);
    const store = await r.shard.store(partition);
    const ref = { tenantId: t.id, physicalIndexId: physical, part: 0, parts: 1 };
    const out = [];
    for await (const batch of store.scanEvents(ref)) out.push(...batch.map((b) => decodeEvent(b)!));
    return out;
  }

  beforeAll(async () => {
    r = await startRouter({ eventsPerSecond: 1000, eventsBurst: 1000 });
    t = await r.tenant('clicks', 'pro');
    other = await r.tenant('others', 'pro');
    for (const [key, index] of [
      [t.priv, 'default'],
      [t.priv, 'shop'],
      [other.priv, 'default'],
    ] as const) {
      expect((await r.call('POST', '/v1/indexes', { key, body: { index_id: index, name: index } })).status).toBe(200);
    }
    const documents = ['d1', 'd2', 'd3'].map((id) => ({ id, title: `Product ${id}`, manufacturer: 'Acme', raw: { category: 'Tools' } }));
    expect((await r.call('POST', '/v1/indexes/default/documents', { key: t.priv, body: { documents } })).status).toBe(200);
    expect((await r.call('POST', '/v1/indexes/shop/documents', { key: t.priv, body: { documents: [{ id: 's1', title: 'Shop item' }] } })).status).toBe(200);
    expect((await r.call('POST', '/v1/indexes/default/documents', { key: other.priv, body: { documents: [{ id: 'o1', title: 'Other' }] } })).status).toBe(200);
  });
  afterAll(async () => {
    await r?.close();
  });

  it('stores one event with every field, and fills the defaults', async () => {
    const ts = Date.now() - 60_000;
    const full = await click({ index: 'default', doc_id: 'd1', query: 'Power  Drill', position: 2, user_id: 'u1', session_id: 's1', type: 'purchase', timestamp: ts });
    expect(full.status).toBe(200);
    expect(full.body).toEqual({ accepted: 1, ignored: 0, unknown_document_ids: [] });
    const bare = await click({ doc_id: 'd2' }, t.priv);
    expect(bare.status).toBe(200);
    expect(bare.body.accepted).toBe(1);
    const events = await stored('default');
    expect(events[0]).toEqual({ doc_id: 'd1', type: 'purchase', query: 'Power  Drill', position: 2, user_id: 'u1', session_id: 's1', ts });
    // defaults: index `default`, type click, no query / position / user / session, arrival time
    expect(events[1]).toMatchObject({ doc_id: 'd2', type: 'click', query: '', position: 0, user_id: '', session_id: '' });
    expect(Math.abs(events[1]!.ts - Date.now())).toBeLessThan(10_000);
  });

  it('takes a batch of up to 100 and reports unknown documents instead of failing', async () => {
    const events = [
      { doc_id: 'd1', query: 'drill', type: 'click' },
      { doc_id: 'nope', query: 'drill' },
      { doc_id: 'd3', type: 'add_to_cart' },
      { doc_id: 'nope' },
      { index: 'shop', doc_id: 's1', query: 'item' },
    ];
    const res = await click({ events });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 3, ignored: 2, unknown_document_ids: ['nope'] });
    expect((await stored('shop')).map((e) => e.doc_id)).toEqual(['s1']);
    const max = await click({ events: Array.from({ length: 100 }, (_, i) => ({ doc_id: `d${(i % 3) + 1}` })) });
    expect(max.status).toBe(200);
    expect(max.body.accepted).toBe(100);
  });

  it('answers 404 for an unknown document or index, and stores nothing from such a batch', async () => {
    const doc = await click({ doc_id: 'missing' });
    expect(doc.status).toBe(404);
    expect(doc.body.code).toBe('document_not_found');
    expect(doc.body.detail).toContain("'missing'");
    const idx = await click({ index: 'nowhere', doc_id: 'd1' });
    expect(idx.status).toBe(404);
    expect(idx.body.code).toBe('index_not_found');
    const before = (await stored('default')).length;
    const batch = await click({ events: [{ doc_id: 'd1' }, { index: 'nowhere', doc_id: 'd1' }] });
    expect(batch.status).toBe(404);
    expect((await stored('default')).length).toBe(before);
  });

  it('keeps tenants apart: a document of another tenant is unknown, another tenant is forbidden', async () => {
    const res = await click({ doc_id: 'o1' });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('document_not_found');
    const forbidden = await click({ doc_id: 'o1', tenant_id: other.id });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe('forbidden_tenant');
    const header = await click({ doc_id: 'd1' }, t.pub, { 'x-tenant-id': other.id });
    expect(header.status).toBe(403);
  });

  it('refuses bad bodies with 422 and the field at fault', async () => {
    const cases: [unknown, (string | number)[]][] = [
      [{}, ['body', 'doc_id']],
      [{ doc_id: '' }, ['body', 'doc_id']],
      [{ doc_id: 'd1', type: 'view' }, ['body', 'type']],
      [{ doc_id: 'd1', position: 0 }, ['body', 'position']],
      [{ doc_id: 'd1', position: 1.5 }, ['body', 'position']],
      [{ doc_id: 'd1', position: '3' }, ['body', 'position']],
      [{ doc_id: 'd1', query: 'x'.repeat(513) }, ['body', 'query']],
      [{ doc_id: 'd1', user_id: '' }, ['body', 'user_id']],
      [{ doc_id: 'd1', session_id: 's'.repeat(257) }, ['body', 'session_id']],
      [{ doc_id: 'd1', index: 'bad index!' }, ['body', 'index']],
      [{ doc_id: 'd1', timestamp: Date.now() + 3_600_000 }, ['body', 'timestamp']],
      [{ doc_id: 'd1', timestamp: 12 }, ['body', 'timestamp']],
      [{ doc_id: 'd1', document_id: 'd1' }, ['body', 'document_id']],
      [{ doc_id: 'd1\u0000x' }, ['body', 'doc_id']],
      [{ events: [] }, ['body', 'events']],
      [{ events: Array.from({ length: 101 }, () => ({ doc_id: 'd1' })) }, ['body', 'events']],
      [{ events: [{ doc_id: 'd1' }, { query: 'no doc' }] }, ['body', 'events', 1, 'doc_id']],
      [{ events: [{ doc_id: 'd1' }], doc_id: 'd2' }, ['body', 'doc_id']],
      [{ events: 'd1' }, ['body', 'events']],
      [[{ doc_id: 'd1' }], ['body']],
    ];
    for (const [body, loc] of cases) {
      const res = await click(body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(res.body.detail.map((d) => d.loc), JSON.stringify(body).slice(0, 80)).toContainEqual(loc);
    }
    const json = await r.call<{ detail: Issue[] }>('POST', '/v1/events/click', { key: t.pub, raw: '{"doc_id": "d1",', headers: { 'content-type': 'application/json' } });
    expect(json.status).toBe(422);
    const huge = await r.call<Err>('POST', '/v1/events/click', { key: t.pub, raw: JSON.stringify({ doc_id: 'd1', query: 'x'.repeat(r.config.maxJsonBody) }), headers: { 'content-type': 'application/json' } });
    expect(huge.status).toBe(413);
  });

  it('needs a key; public, private and admin keys may send events', async () => {
    expect((await r.call<Err>('POST', '/v1/events/click', { body: { doc_id: 'd1' } })).status).toBe(401);
    expect((await click({ doc_id: 'd1' }, t.priv)).status).toBe(200);
    expect((await click({ doc_id: 'd1', tenant_id: t.id }, r.adminKey)).status).toBe(200);
  });
});

describe('POST /v1/events/click rate limit', () => {
  let r: TestRouter;
  let t: { id: string; pub: string; priv: string };
  beforeAll(async () => {
    r = await startRouter({ eventsPerSecond: 2, eventsBurst: 5 });
    t = await r.tenant('limited', 'free');
    expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'default', name: 'd' } })).status).toBe(200);
    expect((await r.call('POST', '/v1/indexes/default/documents', { key: t.priv, body: { documents: [{ id: 'd1', title: 'One' }] } })).status).toBe(200);
  });
  afterAll(async () => {
    await r?.close();
  });

  it('answers 429 rate_limited with Retry-After once a key has used its burst, per key', async () => {
    const batch = await r.call<Result>('POST', '/v1/events/click', { key: t.pub, body: { events: Array.from({ length: 4 }, () => ({ doc_id: 'd1' })) } });
    expect(batch.status).toBe(200);
    expect((await r.call('POST', '/v1/events/click', { key: t.pub, body: { doc_id: 'd1' } })).status).toBe(200);
    const limited = await r.call<Err>('POST', '/v1/events/click', { key: t.pub, body: { doc_id: 'd1' } });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body.detail).toMatch(/retry after \d+ seconds/);
    // another key of the same tenant has its own bucket
    expect((await r.call('POST', '/v1/events/click', { key: t.priv, body: { doc_id: 'd1' } })).status).toBe(200);
    // the user_id field is recorded on any plan (personalized ranking itself needs a paid plan)
    await new Promise((res) => setTimeout(res, 1100));
    expect((await r.call('POST', '/v1/events/click', { key: t.pub, body: { doc_id: 'd1', user_id: 'u' } })).status).toBe(200);
  });
});
