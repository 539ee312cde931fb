// Tenant and key administration: defaults, conflicts, limit overrides, proxy mode, secrets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter, type TestRouter } from './harness.js';

type Err = { detail: string; code: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };
type TenantView = { tenant_id: string; name: string; plan: string; mode: string; upload_limit_bytes: number | null; limits: Record<string, number>; search_api: unknown };

describe('administration', () => {
  let r: TestRouter;
  beforeAll(async () => {
    r = await startRouter();
  });
  afterAll(async () => {
    await r?.close();
  });

  it('creates a tenant with defaults and refuses a duplicate with 409', async () => {
    const res = await r.call<TenantView>('POST', '/v1/admin/tenants', { key: r.adminKey, body: { tenant_id: 'shop-1', name: 'Shop' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const free = r.config.plans.free;
    expect(res.body).toMatchObject({
      tenant_id: 'shop-1',
      name: 'Shop',
      plan: 'free',
      mode: 'hosted',
      upload_limit_bytes: null,
      limits: { max_indexes: free.max_indexes, max_documents_per_index: free.max_documents_per_index, max_documents_total: free.max_documents_total, upload_limit_bytes: free.upload_limit_bytes },
      search_api: null,
    });
    const dup = await r.call<Err>('POST', '/v1/admin/tenants', { key: r.adminKey, body: { tenant_id: 'shop-1', name: 'Again' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('tenant_exists');
    const bad = await r.call<{ detail: Issue[] }>('POST', '/v1/admin/tenants', { key: r.adminKey, body: { tenant_id: 'no way', name: 'x', plan: 'gold' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d) => d.loc.join('.'))).toEqual(expect.arrayContaining(['body.tenant_id', 'body.plan']));
  });

  it('updates plan, limit overrides (null removes) and the upload limit', async () => {
    const up = await r.call<TenantView>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { plan: 'pro', limits: { max_indexes: 12, max_documents_total: 99 }, upload_limit_bytes: 1000 } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ plan: 'pro', upload_limit_bytes: 1000, limits: { max_indexes: 12, max_documents_total: 99, max_documents_per_index: r.config.plans.pro.max_documents_per_index, upload_limit_bytes: 1000 } });
    const cleared = await r.call<TenantView>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { limits: { max_indexes: null, upload_limit_bytes: null } } });
    expect(cleared.body).toMatchObject({ upload_limit_bytes: null, limits: { max_indexes: r.config.plans.pro.max_indexes, max_documents_total: 99, upload_limit_bytes: r.config.plans.pro.upload_limit_bytes } });
    const conflicting = await r.call<{ detail: Issue[] }>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { upload_limit_bytes: 5, limits: { upload_limit_bytes: 6 } } });
    expect(conflicting.status).toBe(422);
    const unknownField = await r.call<{ detail: Issue[] }>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { colour: 'red' } });
    expect(unknownField.status).toBe(422);
    const missing = await r.call<Err>('PATCH', '/v1/admin/tenants/nobody', { key: r.adminKey, body: { plan: 'pro' } });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('tenant_not_found');
    const got = await r.call<TenantView>('GET', '/v1/admin/tenants/shop-1', { key: r.adminKey });
    expect(got.body.plan).toBe('pro');
    expect((await r.call<Err>('GET', '/v1/admin/tenants/nobody', { key: r.adminKey })).status).toBe(404);
  });

  it('requires a connected search API for proxy mode and never shows its key', async () => {
    const noApi = await r.call<{ detail: Issue[] }>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { mode: 'proxy' } });
    expect(noApi.status).toBe(422);
    expect(noApi.body.detail[0]!.loc).toEqual(['body', 'search_api']);
    const badUrl = await r.call<{ detail: Issue[] }>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { mode: 'proxy', search_api: { url: 'ftp://x' } } });
    expect(badUrl.status).toBe(422);
    const ok = await r.call<TenantView>('PATCH', '/v1/admin/tenants/shop-1', { key: r.adminKey, body: { mode: 'proxy', search_api: { url: 'https://search.example.com/api', api_key: 'very-secret' } } });
    expect(ok.status).toBe(200);
    expect(ok.body.search_api).toEqual({ url: 'https://search.example.com/api', has_api_key: true });
    expect(JSON.stringify(ok.body)).not.toContain('very-secret');
    const list = await r.call<TenantView[]>('GET', '/v1/admin/tenants', { key: r.adminKey });
    expect(list.body.map((t) => t.tenant_id)).toContain('shop-1');
    expect(JSON.stringify(list.body)).not.toContain('very-secret');
  });

  it('creates keys shown once, lists them without secrets, revokes only the tenant\'s own', async () => {
    await r.call('POST', '/v1/admin/tenants', { key: r.adminKey, body: { tenant_id: 'shop-2', name: 'Other' } });
    const pub = await r.call<{ id: string; kind: string; key: string; tenant_id: string }>('POST', '/v1/admin/tenants/shop-1/keys', { key: r.adminKey, body: { kind: 'public' } });
    expect(pub.status).toBe(200);
    expect(pub.body).toMatchObject({ kind: 'public', tenant_id: 'shop-1' });
    expect(pub.body.key).toMatch(/^sk_live_public_/);
    // the public key is accepted: shop-1 is in proxy mode, so typeahead goes to its search API, which is not reachable from here
    expect((await r.call('GET', '/v1/typeahead?query=x', { key: pub.body.key })).status).toBe(502);
    const admin = await r.call<{ detail: Issue[] }>('POST', '/v1/admin/tenants/shop-1/keys', { key: r.adminKey, body: { kind: 'admin' } });
    expect(admin.status).toBe(422);
    expect((await r.call<Err>('POST', '/v1/admin/tenants/nobody/keys', { key: r.adminKey, body: { kind: 'private' } })).status).toBe(404);
    const list = await r.call<{ id: string }[]>('GET', '/v1/admin/tenants/shop-1/keys', { key: r.adminKey });
    expect(list.body.map((k) => k.id)).toContain(pub.body.id);
    expect(JSON.stringify(list.body)).not.toContain(pub.body.key);
    const foreign = await r.call<Err>('DELETE', `/v1/admin/tenants/shop-2/keys/${pub.body.id}`, { key: r.adminKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('key_not_found');
    expect((await r.call('DELETE', `/v1/admin/tenants/shop-1/keys/${pub.body.id}`, { key: r.adminKey })).status).toBe(200);
    expect((await r.call('GET', '/v1/typeahead?query=x', { key: pub.body.key })).status).toBe(401);
  });
});
