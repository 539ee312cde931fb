// The auth matrix over a real socket: missing/unknown keys, key kinds against route kinds,
// tenant selection by query and header, admin keys, plan gates, revocation through the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../node/runtime/api-keys.js';
import { startRouter, type TestRouter } from './harness.js';

type Err = { detail: string; code: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };

describe('auth matrix', () => {
  let r: TestRouter;
  let a: { id: string; pub: string; priv: string };
  let b: { id: string; pub: string; priv: string };
  let free: { id: string; pub: string; priv: string };

  beforeAll(async () => {
    r = await startRouter();
    a = await r.tenant('alpha', 'pro');
    b = await r.tenant('beta', 'pro');
    free = await r.tenant('gratis', 'free');
    expect((await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'default', name: 'Default' } })).status).toBe(200);
  });
  afterAll(async () => {
    await r?.close();
  });

  it('401 missing_api_key without a key, unknown_api_key for a wrong one', async () => {
    const none = await r.call<Err>('GET', '/v1/indexes');
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('missing_api_key');
    expect(none.body.detail).toMatch(/x-api-key/);
    for (const key of ['sk_nope', 'x'.repeat(5000), a.priv.slice(0, -1) + (a.priv.endsWith('A') ? 'B' : 'A')]) {
      const bad = await r.call<Err>('GET', '/v1/indexes', { key });
      expect(bad.status).toBe(401);
      expect(bad.body.code).toBe('unknown_api_key');
    }
  });

  it('routes without a key stay open', async () => {
    for (const p of ['/healthz', '/readyz', '/metrics', '/openapi.yaml', '/.well-known/openapi.json']) expect((await r.call('GET', p)).status, p).toBe(200);
  });

  it('public keys reach search routes only', async () => {
    const search = await r.call<Err>('GET', '/v1/typeahead?query=tv', { key: a.pub });
    expect(search.status).toBe(501);
    const auto = await r.call<Err>('GET', '/v1/autocomplete?query=tv', { key: a.pub });
    expect(auto.status).toBe(501);
    const predict = await r.call<Err>('POST', '/v1/predict', { key: a.pub, body: { query: 'tv' } });
    expect(predict.status).toBe(501);
    // past the key check: the document is unknown
    const click = await r.call<Err>('POST', '/v1/events/click', { key: a.pub, body: { doc_id: 'd1' } });
    expect(click.status).toBe(404);
    expect(click.body.code).toBe('document_not_found');
    for (const [method, p, body] of [
      ['GET', '/v1/indexes', undefined],
      ['POST', '/v1/indexes', { index_id: 'x', name: 'x' }],
      ['GET', '/v1/indexes/default/documents', undefined],
      ['GET', '/v1/ingestion-jobs', undefined],
      ['GET', '/v1/admin/tenants', undefined],
    ] as const) {
      const res = await r.call<Err>(method, p, { key: a.pub, body });
      expect(res.status, `${method} ${p}`).toBe(403);
      expect(res.body.code).toBe('forbidden_key_kind');
    }
  });

  it('private keys act for their own tenant only, by query or header', async () => {
    expect((await r.call('GET', '/v1/indexes', { key: a.priv })).status).toBe(200);
    expect((await r.call('GET', `/v1/indexes?tenant_id=${a.id}`, { key: a.priv, headers: { 'x-tenant-id': a.id } })).status).toBe(200);
    const q = await r.call<Err>('GET', `/v1/indexes?tenant_id=${b.id}`, { key: a.priv });
    expect(q.status).toBe(403);
    expect(q.body.code).toBe('forbidden_tenant');
    const h = await r.call<Err>('GET', '/v1/indexes', { key: a.priv, headers: { 'x-tenant-id': b.id } });
    expect(h.status).toBe(403);
    expect(h.body.code).toBe('forbidden_tenant');
    const pub = await r.call<Err>('GET', `/v1/typeahead?query=tv&tenant_id=${b.id}`, { key: a.pub });
    expect(pub.status).toBe(403);
    const admin = await r.call<Err>('GET', '/v1/admin/tenants', { key: a.priv });
    expect(admin.status).toBe(403);
    expect(admin.body.code).toBe('forbidden_key_kind');
    const requeue = await r.call<Err>('POST', '/v1/ingestion-jobs/j1/requeue', { key: a.priv });
    expect(requeue.status).toBe(403);
  });

  it('422 when query and header name different tenants', async () => {
    const res = await r.call<{ detail: Issue[] }>('GET', `/v1/indexes?tenant_id=${a.id}`, { key: r.adminKey, headers: { 'x-tenant-id': b.id } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.type).toBe('tenant_mismatch');
    const body = await r.call<{ detail: Issue[] }>('POST', `/v1/predict?tenant_id=${a.id}`, { key: a.pub, body: { query: 'tv', tenant_id: b.id } });
    expect(body.status).toBe(422);
    expect(body.body.detail[0]!.loc).toEqual(['body', 'tenant_id']);
  });

  it('admin keys act for any named tenant, must name one, and get 404 for an unknown one', async () => {
    expect((await r.call('GET', `/v1/indexes?tenant_id=${b.id}`, { key: r.adminKey })).status).toBe(200);
    expect((await r.call('GET', '/v1/indexes', { key: r.adminKey, headers: { 'x-tenant-id': a.id } })).status).toBe(200);
    const none = await r.call<{ detail: Issue[] }>('GET', '/v1/indexes', { key: r.adminKey });
    expect(none.status).toBe(422);
    expect(none.body.detail[0]!.loc).toEqual(['query', 'tenant_id']);
    const unknown = await r.call<Err>('GET', '/v1/indexes?tenant_id=nobody', { key: r.adminKey });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('tenant_not_found');
    const bad = await r.call<{ detail: Issue[] }>('GET', '/v1/indexes?tenant_id=no%20body', { key: r.adminKey });
    expect(bad.status).toBe(422);
  });

  it('requeue is administrator-only and admin keys pass to the route', async () => {
    const res = await r.call<Err>('POST', `/v1/ingestion-jobs/j1/requeue?tenant_id=${a.id}`, { key: r.adminKey });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('job_not_found');
  });

  it('gates paid features with 403 plan_required', async () => {
    expect((await r.call('POST', '/v1/indexes', { key: free.priv, body: { index_id: 'default', name: 'x' } })).status).toBe(200);
    const merch = await r.call<Err>('PUT', '/v1/indexes/default/merchandising', { key: free.priv, body: { rules: [] } });
    expect(merch.status).toBe(403);
    expect(merch.body.code).toBe('plan_required');
    const integ = await r.call<Err>('GET', '/v1/integrations', { key: free.priv });
    expect(integ.status).toBe(403);
    expect(integ.body.code).toBe('plan_required');
    const personal = await r.call<Err>('GET', '/v1/autocomplete?query=tv&user_id=u1', { key: free.pub });
    expect(personal.status).toBe(403);
    expect(personal.body.code).toBe('plan_required');
    const anonymous = await r.call<Err>('GET', '/v1/autocomplete?query=tv', { key: free.pub });
    expect(anonymous.status).toBe(501);
    expect((await r.call('GET', '/v1/integrations', { key: a.priv })).status).toBe(501);
    expect((await r.call('PUT', '/v1/indexes/default/merchandising', { key: a.priv, body: { rules: [] } })).status).toBe(200);
  });

  it('a revoked key stops working at once; a new key works at once', async () => {
    const created = await r.call<{ id: string; key: string; kind: string }>('POST', `/v1/admin/tenants/${a.id}/keys`, { key: r.adminKey, body: { kind: 'private', name: 'temp' } });
    expect(created.status).toBe(200);
    expect(created.body.key).toMatch(/^sk_live_private_/);
    expect((await r.call('GET', '/v1/indexes', { key: created.body.key })).status).toBe(200);
    const list = await r.call<{ id: string }[]>('GET', `/v1/admin/tenants/${a.id}/keys`, { key: r.adminKey });
    expect(list.body.some((k) => k.id === created.body.id)).toBe(true);
    expect(JSON.stringify(list.body)).not.toContain(created.body.key);
    expect(JSON.stringify(list.body)).not.toMatch(/hash/);
    const del = await r.call('DELETE', `/v1/admin/tenants/${a.id}/keys/${created.body.id}`, { key: r.adminKey });
    expect(del.status).toBe(200);
    expect((await r.call<Err>('GET', '/v1/indexes', { key: created.body.key })).status).toBe(401);
    const again = await r.call<Err>('DELETE', `/v1/admin/tenants/${a.id}/keys/${created.body.id}`, { key: r.adminKey });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('key_not_found');
    // a key revoked on another router arrives through the coordinator's key events
    const other = await r.key('private', a.id);
    expect((await r.call('GET', '/v1/indexes', { key: other })).status).toBe(200);
    const rec = await r.coordinator.getKeyByHash(hashApiKey(other));
    await r.coordinator.deleteKey(rec!.id);
    await new Promise((res) => setTimeout(res, 50));
    expect((await r.call('GET', '/v1/indexes', { key: other })).status).toBe(401);
  });
});
