// Index and document handlers against the real embedded coordinator and a real ShardNode:
// life cycle, paging, partial updates, validation, limits, plans, aliases and multi-part indexes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IndexId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import { startRouter, type TestRouter } from './harness.js';

type Err = { detail: string; code: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };
type Doc = { id: string; title: string; desc: string; manufacturer: string; raw: Record<string, unknown> };
type Page = { items: Doc[]; page: number; page_size: number; total: number };

const docs = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({ id: `sku-${String(from + i).padStart(4, '0')}`, title: `Product ${from + i}`, desc: 'A thing', manufacturer: i % 2 ? 'Acme' : 'Bolt', raw: { category: 'Tools', price: i + 0.5 } }));

describe('indexes and documents', () => {
  let r: TestRouter;
  let a: { id: string; pub: string; priv: string };
  let b: { id: string; pub: string; priv: string };

  beforeAll(async () => {
    r = await startRouter();
    a = await r.tenant('acme', 'pro');
    b = await r.tenant('bolt', 'pro');
  });
  afterAll(async () => {
    await r?.close();
  });

  it('creates, lists, reads, updates, pages and deletes', async () => {
    const created = await r.call<Record<string, unknown>>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Products' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body).toMatchObject({ index_id: 'products', name: 'Products', document_count: 0, status: 'ready' });
    expect(created.body.physical_index_id).toMatch(/^products--[0-9a-f]{12}$/);
    expect(typeof created.body.created_at).toBe('string');

    const dup = await r.call<Err>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Again' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('index_exists');

    const up = await r.call<Record<string, unknown>>('POST', '/v1/indexes/products/documents', { key: a.priv, body: { documents: docs(120) } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toEqual({ index_id: 'products', upserted: 120, failed: 0, errors: [] });

    const one = await r.call<Doc>('GET', '/v1/indexes/products/documents/sku-0007', { key: a.priv });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ id: 'sku-0007', title: 'Product 7', desc: 'A thing', manufacturer: 'Acme', raw: { category: 'Tools', price: 7.5 } });

    const page1 = await r.call<Page>('GET', '/v1/indexes/products/documents', { key: a.priv });
    expect(page1.body).toMatchObject({ page: 1, page_size: 50, total: 120 });
    expect(page1.body.items).toHaveLength(50);
    expect(page1.body.items[0]!.id).toBe('sku-0000');
    const page3 = await r.call<Page>('GET', '/v1/indexes/products/documents?page=3&page_size=50', { key: a.priv });
    expect(page3.body.items.map((d) => d.id)).toEqual(docs(20, 100).map((d) => d.id));
    const beyond = await r.call<Page>('GET', '/v1/indexes/products/documents?page=99', { key: a.priv });
    expect(beyond.body.items).toEqual([]);
    expect(beyond.body.total).toBe(120);

    const patched = await r.call<Doc>('PATCH', '/v1/indexes/products/documents/sku-0007', { key: a.priv, body: { title: 'Renamed', desc: null, raw: { color: 'red', price: 9 } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toEqual({ id: 'sku-0007', title: 'Renamed', desc: '', manufacturer: 'Acme', raw: { category: 'Tools', price: 9, color: 'red' } });
    expect((await r.call<Doc>('GET', '/v1/indexes/products/documents/sku-0007', { key: a.priv })).body.title).toBe('Renamed');
    const wrongId = await r.call<{ detail: Issue[] }>('PATCH', '/v1/indexes/products/documents/sku-0007', { key: a.priv, body: { id: 'other' } });
    expect(wrongId.status).toBe(422);
    expect(wrongId.body.detail[0]!.loc).toEqual(['body', 'id']);
    const unknownField = await r.call<{ detail: Issue[] }>('PATCH', '/v1/indexes/products/documents/sku-0007', { key: a.priv, body: { colour: 'red' } });
    expect(unknownField.status).toBe(422);
    const patchMissing = await r.call<Err>('PATCH', '/v1/indexes/products/documents/nope', { key: a.priv, body: { title: 'x' } });
    expect(patchMissing.status).toBe(404);
    expect(patchMissing.body.code).toBe('document_not_found');

    expect((await r.call('DELETE', '/v1/indexes/products/documents/sku-0007', { key: a.priv })).status).toBe(200);
    const gone = await r.call<Err>('GET', '/v1/indexes/products/documents/sku-0007', { key: a.priv });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('document_not_found');
    expect((await r.call<Err>('DELETE', '/v1/indexes/products/documents/sku-0007', { key: a.priv })).status).toBe(404);

    const stats = await r.call<Record<string, unknown>>('GET', '/v1/indexes/products/stats', { key: a.priv });
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({ index_id: 'products', document_count: 119, status: 'ready' });
    expect(stats.body.parts).toHaveLength(1);

    const list = await r.call<{ index_id: string; document_count: number }[]>('GET', '/v1/indexes', { key: a.priv });
    expect(list.body.find((i) => i.index_id === 'products')?.document_count).toBe(119);

    const dropped = await r.call<Record<string, unknown>>('DELETE', '/v1/indexes/products', { key: a.priv });
    expect(dropped.status).toBe(200);
    expect(dropped.body).toMatchObject({ index_id: 'products', deleted: true, documents_removed: 119 });
    const after = await r.call<Err>('GET', '/v1/indexes/products/documents/sku-0001', { key: a.priv });
    expect(after.status).toBe(404);
    expect(after.body.code).toBe('index_not_found');
    expect((await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Again' } })).status).toBe(200);
    expect((await r.call<Page>('GET', '/v1/indexes/products/documents', { key: a.priv })).body.total).toBe(0);
  });

  it('stores the schema as sent and validates its predict object', async () => {
    const schema = {
      predict: {
        enabled: true,
        default_types: ['product', 'category'],
        action_mappings: { product: { target_field: 'url', label_field: 'title' } },
        intent_rules: [{ intent: 'returns', match_terms: ['return', 'refund'], target: '/returns', label: 'Returns', type: 'workflow' }],
      },
      synonyms: [['tv', 'television']],
    };
    expect((await r.call('GET', '/v1/indexes/products/schema', { key: a.priv })).body).toEqual({});
    const put = await r.call('PUT', '/v1/indexes/products/schema', { key: a.priv, body: schema });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toEqual(schema);
    expect((await r.call('GET', '/v1/indexes/products/schema', { key: a.priv })).body).toEqual(schema);
    const bad = await r.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/schema', {
      key: a.priv,
      body: { predict: { enabled: 'yes', default_types: ['spaceship'], action_mappings: { spaceship: {} }, intent_rules: [{ intent: 'x' }] } },
    });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d) => d.loc.join('.'));
    expect(locs).toContain('body.predict.enabled');
    expect(locs).toContain('body.predict.default_types.0');
    expect(locs.some((l) => l.startsWith('body.predict.action_mappings'))).toBe(true);
    expect(locs.some((l) => l.startsWith('body.predict.intent_rules.0'))).toBe(true);
    expect((await r.call('GET', '/v1/indexes/products/schema', { key: a.priv })).body).toEqual(schema);
    // an intent rule's target is a route or an http(s) URL, and its terms are words
    const rule = (over: Record<string, unknown>) => ({ predict: { intent_rules: [{ intent: 'x', match_terms: ['help'], target: '/help', label: 'Help', type: 'workflow', ...over }] } });
    for (const [over, loc] of [
      [{ target: 'javascript:alert(1)' }, 'body.predict.intent_rules.0.target'],
      [{ target: '//evil.example/x' }, 'body.predict.intent_rules.0.target'],
      [{ match_terms: [''] }, 'body.predict.intent_rules.0.match_terms.0'],
      [{ match_terms: [] }, 'body.predict.intent_rules.0.match_terms'],
    ] as const) {
      const refused = await r.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/schema', { key: a.priv, body: rule(over) });
      expect(refused.status, JSON.stringify(over)).toBe(422);
      expect(refused.body.detail.map((d) => d.loc.join('.'))).toContain(loc);
    }
    for (const target of ['/orders?status=open', 'https://help.example.com/returns']) {
      expect((await r.call('PUT', '/v1/indexes/products/schema', { key: a.priv, body: rule({ target }) })).status, target).toBe(200);
    }
    expect((await r.call('PUT', '/v1/indexes/products/schema', { key: a.priv, body: schema })).status).toBe(200);
  });

  it('stores merchandising rules as sent and validates them', async () => {
    expect((await r.call('GET', '/v1/indexes/products/merchandising', { key: a.priv })).body).toEqual({});
    const rules = { rules: [{ id: 'tv-pin', action: 'pin', target: { ids: ['sku-0001'] }, position: 1, when: { query: 'tv' } }] };
    const put = await r.call('PUT', '/v1/indexes/products/merchandising', { key: a.priv, body: rules });
    expect(put.status).toBe(200);
    expect((await r.call('GET', '/v1/indexes/products/merchandising', { key: a.priv })).body).toEqual(rules);
    const bad = await r.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/merchandising', { key: a.priv, body: { rules: 'all' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]!.loc).toEqual(['body', 'rules']);
    const synonyms = await r.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/schema', { key: a.priv, body: { synonyms: [['tv', '']] } });
    expect(synonyms.status).toBe(422);
    expect(synonyms.body.detail[0]!.loc.slice(0, 3)).toEqual(['body', 'synonyms', 0]);
  });

  it('refuses invalid documents whole, with a loc per document, and writes nothing', async () => {
    await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'strict', name: 'Strict' } });
    const bad = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/strict/documents', {
      key: a.priv,
      body: { documents: [{ id: 'ok', title: 't' }, { title: 'no id' }, { id: '' }, { id: 'x'.repeat(513) }, { id: 'a\u0000b' }, { id: 'n', title: 5 }, { id: 'r', raw: [] }] },
    });
    expect(bad.status).toBe(422);
    const locs = bad.body.detail.map((d) => JSON.stringify(d.loc.slice(0, 4)));
    expect(locs).toContain('["body","documents",1,"id"]');
    expect(locs).toContain('["body","documents",2,"id"]');
    expect(locs).toContain('["body","documents",3,"id"]');
    expect(locs).toContain('["body","documents",4,"id"]');
    expect(locs).toContain('["body","documents",5,"title"]');
    expect(locs).toContain('["body","documents",6,"raw"]');
    expect((await r.call<Page>('GET', '/v1/indexes/strict/documents', { key: a.priv })).body.total).toBe(0);
    for (const body of [{}, { documents: 'x' }, [], { documents: [null] }]) {
      expect((await r.call('POST', '/v1/indexes/strict/documents', { key: a.priv, body })).status, JSON.stringify(body)).toBe(422);
    }
    const empty = await r.call('POST', '/v1/indexes/strict/documents', { key: a.priv, body: { documents: [] } });
    expect(empty.body).toEqual({ index_id: 'strict', upserted: 0, failed: 0, errors: [] });
  });

  it('folds unknown fields into raw, keeps the last duplicate and accepts any unicode id', async () => {
    const res = await r.call('POST', '/v1/indexes/strict/documents', {
      key: a.priv,
      body: { documents: [{ id: 'dup', title: 'first' }, { id: 'dup', title: 'second', price: 10, raw: { price: 12 } }, { id: 'ünï/cødé 𝄞', title: 'u' }] },
    });
    // JSON text, so "__proto__" really is a key of the document and of raw
    const proto = await r.call('POST', '/v1/indexes/strict/documents', {
      key: a.priv,
      raw: '{"documents":[{"id":"__proto__","title":"p","__proto__":{"polluted":true},"raw":{"__proto__":{"polluted":true},"constructor":"c"}}]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(proto.status, JSON.stringify(proto.body)).toBe(200);
    const stored = await r.call<Doc>('GET', '/v1/indexes/strict/documents/__proto__', { key: a.priv });
    expect(stored.status).toBe(200);
    expect(stored.body.raw.constructor).toBe('c');
    expect(res.body).toMatchObject({ upserted: 2, failed: 0 });
    const dup = await r.call<Doc>('GET', '/v1/indexes/strict/documents/dup', { key: a.priv });
    expect(dup.body).toMatchObject({ title: 'second', raw: { price: 12 } });
    const uni = await r.call<Doc>('GET', `/v1/indexes/strict/documents/${encodeURIComponent('ünï/cødé 𝄞')}`, { key: a.priv });
    expect(uni.status).toBe(200);
    expect(uni.body.id).toBe('ünï/cødé 𝄞');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('answers 409 document_limit per index and per account, keeping nothing of the refused batch', async () => {
    await r.coordinator.updateTenant(TenantId(b.id), (t) => ({ ...t, limits: { max_documents_per_index: 5, max_documents_total: 8 } }));
    await new Promise((res) => setTimeout(res, 20));
    await r.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'small', name: 'Small' } });
    await r.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'other', name: 'Other' } });
    expect((await r.call('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: docs(4) } })).status).toBe(200);
    const over = await r.call<Err>('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: docs(2, 10) } });
    expect(over.status).toBe(409);
    expect(over.body.code).toBe('document_limit');
    expect(over.body.detail).toMatch(/Index document limit of 5/);
    expect((await r.call<Page>('GET', '/v1/indexes/small/documents', { key: b.priv })).body.total).toBe(4);
    // replacing existing documents is not adding
    expect((await r.call('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: [...docs(4), ...docs(1, 50)] } })).status).toBe(200);
    // account: 5 stored, 8 allowed
    expect((await r.call('POST', '/v1/indexes/other/documents', { key: b.priv, body: { documents: docs(3, 100) } })).status).toBe(200);
    const account = await r.call<Err>('POST', '/v1/indexes/other/documents', { key: b.priv, body: { documents: docs(1, 200) } });
    expect(account.status).toBe(409);
    expect(account.body.detail).toMatch(/Account document limit of 8/);
    expect((await r.call<Page>('GET', '/v1/indexes/other/documents', { key: b.priv })).body.total).toBe(3);
  });

  it('limits index creation by plan with 403 plan_index_limit', async () => {
    const f = await r.tenant('freebie', 'free');
    const max = r.config.plans.free.max_indexes;
    for (let i = 0; i < max; i++) expect((await r.call('POST', '/v1/indexes', { key: f.priv, body: { index_id: `f${i}`, name: 'x' } })).status).toBe(200);
    const blocked = await r.call<Err>('POST', '/v1/indexes', { key: f.priv, body: { index_id: 'one-too-many', name: 'x' } });
    expect(blocked.status).toBe(403);
    expect(blocked.body.code).toBe('plan_index_limit');
  });

  it('refuses bad index ids with 422 on the body field', async () => {
    for (const id of ['has space', 'dot.dot', '', 'slash/x', 'ü', 'x'.repeat(129)]) {
      const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes', { key: a.priv, body: { index_id: id, name: 'x' } });
      expect(res.status, id).toBe(422);
      expect(res.body.detail[0]!.loc).toEqual(['body', 'index_id']);
    }
    const missing = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'ok-id' } });
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ loc: ['body', 'name'], type: 'missing' });
  });

  it('reports the file-size limit with its source', async () => {
    const plan = await r.call<Record<string, unknown>>('GET', '/v1/indexes/file-size-limit', { key: a.priv });
    expect(plan.body).toEqual({ limit_bytes: r.config.plans.pro.upload_limit_bytes, source: 'plan', presigned_over_bytes: 20 * 1024 * 1024, cloud_required_over_bytes: 50 * 1024 * 1024 });
    const patched = await r.call('PATCH', `/v1/admin/tenants/${a.id}`, { key: r.adminKey, body: { upload_limit_bytes: 12345 } });
    expect(patched.status).toBe(200);
    expect((await r.call<Record<string, unknown>>('GET', '/v1/indexes/file-size-limit', { key: a.priv })).body).toMatchObject({ limit_bytes: 12345, source: 'tenant' });
  });

  it('keeps tenants apart on every route', async () => {
    await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'secret', name: 'Secret' } });
    await r.call('POST', '/v1/indexes/secret/documents', { key: a.priv, body: { documents: [{ id: 'd1', title: 'Hidden' }] } });
    const list = await r.call<{ index_id: string }[]>('GET', '/v1/indexes', { key: b.priv });
    expect(list.body.map((i) => i.index_id)).not.toContain('secret');
    for (const p of ['/v1/indexes/secret/documents/d1', '/v1/indexes/secret/documents', '/v1/indexes/secret/stats', '/v1/indexes/secret/schema', '/v1/indexes/secret/merchandising']) {
      const res = await r.call<Err>('GET', p, { key: b.priv });
      expect(res.status, p).toBe(404);
      expect(res.body.code).toBe('index_not_found');
    }
    expect((await r.call('DELETE', '/v1/indexes/secret', { key: b.priv })).status).toBe(404);
    expect((await r.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'secret', name: 'Mine' } })).status).toBe(200);
    expect((await r.call<Page>('GET', '/v1/indexes/secret/documents', { key: b.priv })).body.total).toBe(0);
    expect((await r.call('GET', '/v1/indexes/secret/documents/d1', { key: a.priv })).status).toBe(200);
    // a physical id of A's index is no way in for B either
    const aSecret = (await r.coordinator.getIndex(TenantId(a.id), IndexId('secret')))!;
    expect((await r.call('GET', `/v1/indexes/${aSecret.physical_index_id}/documents`, { key: b.priv })).status).toBe(404);
  });

  it('allocates a staging physical index, fills it by its id and promotes it', async () => {
    await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'catalog', name: 'Catalog' } });
    await r.call('POST', '/v1/indexes/catalog/documents', { key: a.priv, body: { documents: docs(3) } });
    const alloc = await r.call<{ index_id: string; physical_index_id: string }>('POST', '/v1/indexes/catalog/allocate-physical-id', { key: a.priv });
    expect(alloc.status).toBe(200);
    const staging = alloc.body.physical_index_id;
    expect(staging).toMatch(/^catalog--/);
    expect((await r.call('POST', `/v1/indexes/${staging}/documents`, { key: a.priv, body: { documents: docs(7, 500) } })).status).toBe(200);
    expect((await r.call<Page>('GET', '/v1/indexes/catalog/documents', { key: a.priv })).body.total).toBe(3);
    expect((await r.call<Page>('GET', `/v1/indexes/${staging}/documents`, { key: a.priv })).body.total).toBe(7);
    // the live physical index cannot be deleted by its id (the staging one can: physical-indexes.test.ts)
    const live = (await r.coordinator.getIndex(TenantId(a.id), IndexId('catalog')))!.physical_index_id;
    const viaLive = await r.call<Err>('DELETE', `/v1/indexes/${live}`, { key: a.priv });
    expect(viaLive.status).toBe(409);
    const foreign = await r.call<Err>('POST', '/v1/indexes/products/promote', { key: a.priv, body: { physical_index_id: staging } });
    expect(foreign.status).toBe(409);
    const unknown = await r.call<Err>('POST', '/v1/indexes/catalog/promote', { key: a.priv, body: { physical_index_id: 'nope' } });
    expect(unknown.status).toBe(404);
    const promoted = await r.call<Record<string, unknown>>('POST', '/v1/indexes/catalog/promote', { key: a.priv, body: { physical_index_id: staging } });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    expect(promoted.body).toMatchObject({ index_id: 'catalog', physical_index_id: staging, document_count: 7 });
    expect((await r.call<Page>('GET', '/v1/indexes/catalog/documents', { key: a.priv })).body.total).toBe(7);
    const view = (await r.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key: a.priv })).body.find((i) => i.index_id === 'catalog');
    expect(view?.physical_index_id).toBe(staging);
    const del = await r.call<{ physical_index_ids: string[]; documents_removed: number }>('DELETE', '/v1/indexes/catalog', { key: a.priv });
    expect(del.body.physical_index_ids).toHaveLength(2);
    expect(del.body.documents_removed).toBe(10);
    expect((await r.call('GET', `/v1/indexes/${staging}/documents`, { key: a.priv })).status).toBe(404);
  });

  it('routes documents across the parts of a multi-part index and merges pages in id order', async () => {
    await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'wide', name: 'Wide' } });
    const physical = PhysicalIndexId('wide--parts3');
    await r.coordinator.putPhysicalIndex({ tenant_id: TenantId(a.id), physical_index_id: physical, index_id: IndexId('wide'), parts: 3, created_at: new Date().toISOString() });
    const all = docs(57);
    const up = await r.call<Record<string, unknown>>('POST', `/v1/indexes/${physical}/documents`, { key: a.priv, body: { documents: all } });
    expect(up.body).toMatchObject({ upserted: 57, failed: 0 });
    const stats = await r.call<{ document_count: number; parts: { document_count: number }[] }>('GET', `/v1/indexes/${physical}/stats`, { key: a.priv });
    expect(stats.body.document_count).toBe(57);
    expect(stats.body.parts).toHaveLength(3);
    expect(stats.body.parts.filter((p) => p.document_count > 0).length).toBeGreaterThan(1);
    const seen: string[] = [];
    for (let page = 1; page <= 6; page++) {
      const res = await r.call<Page>('GET', `/v1/indexes/${physical}/documents?page=${page}&page_size=10`, { key: a.priv });
      expect(res.body.total).toBe(57);
      seen.push(...res.body.items.map((d) => d.id));
    }
    expect(seen).toEqual(all.map((d) => d.id));
    for (const d of [all[0]!, all[33]!, all[56]!]) expect((await r.call<Doc>('GET', `/v1/indexes/${physical}/documents/${d.id}`, { key: a.priv })).body.id).toBe(d.id);
  });
});
