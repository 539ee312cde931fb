// Hostile input on the integration, proxy-mode (connected search API), engagement-event and
// prediction routes, over a real socket: each refusal has the specified status and a detail a
// person can act on, and nothing of another tenant is reachable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter, type TestRouter } from './harness.js';

type Err = { detail: string; code: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };
type Tenant = { id: string; pub: string; priv: string };

let r: TestRouter;
let a: Tenant;
let b: Tenant;

beforeAll(async () => {
  r = await startRouter({ eventsPerSecond: 1000, eventsBurst: 1000 });
  a = await r.tenant('hostile-a', 'pro');
  b = await r.tenant('hostile-b', 'pro');
  expect((await r.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'shop', name: 'shop' } })).status).toBe(200);
  expect((await r.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'b-only', name: 'b-only' } })).status).toBe(200);
  expect((await r.call('POST', '/v1/indexes/shop/documents', { key: a.priv, body: { documents: [{ id: 'd1', title: 'Red shoes' }] } })).status).toBe(200);
});
afterAll(async () => {
  await r?.close();
});

describe('engagement events carrying control characters', () => {
  const click = (body: unknown) => r.call<{ accepted: number; detail: Issue[] }>('POST', '/v1/events/click', { key: a.pub, body });

  it('refuses a query with escape or NUL characters with 422 at the field: it would become a typeahead completion', async () => {
    const res = await click({ index: 'shop', doc_id: 'd1', query: 'red \u001b[2J\u0000evil', session_id: 's1' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.loc).toEqual(['body', 'query']);
    expect(res.body.detail[0]!.msg).toMatch(/control characters/);
  });

  it('refuses control characters and unpaired surrogates in user_id and session_id, also inside a batch', async () => {
    const single = await click({ index: 'shop', doc_id: 'd1', user_id: 'u\r\nx', session_id: '\ud800' });
    expect(single.status).toBe(422);
    expect(single.body.detail.map((i) => i.loc)).toEqual([
      ['body', 'user_id'],
      ['body', 'session_id'],
    ]);
    const batch = await click({ events: [{ index: 'shop', doc_id: 'd1' }, { index: 'shop', doc_id: 'd1', query: '\u0007' }] });
    expect(batch.status).toBe(422);
    expect(batch.body.detail[0]!.loc).toEqual(['body', 'events', 1, 'query']);
  });

  it('still takes tabs, line breaks and characters outside the Basic Multilingual Plane', async () => {
    const res = await click({ index: 'shop', doc_id: 'd1', query: 'red\tshoes\n😀 ü', user_id: 'user-😀', session_id: 's2' });
    expect(res.status).toBe(200);
    expect(res.body.accepted).toBe(1);
  });

  it('says what an index id may contain instead of quoting a regular expression', async () => {
    const res = await click({ index: '../shop', doc_id: 'd1' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.msg).toBe('Use 1 to 128 letters, digits, dashes or underscores.');
  });
});

describe('integrations', () => {
  it("answers 404 for another tenant's index named in the body or the query, not 501", async () => {
    const created = await r.call<Err>('POST', '/v1/integrations', { key: a.priv, body: { index_id: 'b-only', kind: 'feed' } });
    expect(created.status).toBe(404);
    expect(created.body.code).toBe('index_not_found');
    const listed = await r.call<Err>('GET', '/v1/integrations?index_id=b-only', { key: a.priv });
    expect(listed.status).toBe(404);
    expect(listed.body.code).toBe('index_not_found');
    // the tenant's own index passes that check
    expect((await r.call('POST', '/v1/integrations', { key: a.priv, body: { index_id: 'shop', kind: 'feed' } })).status).toBe(501);
  });

  it('refuses control characters in kind and name, and misspelt fields, with 422', async () => {
    const kind = await r.call<{ detail: Issue[] }>('POST', '/v1/integrations', { key: a.priv, body: { index_id: 'shop', kind: 'feed\u0000\u001b' } });
    expect(kind.status).toBe(422);
    expect(kind.body.detail[0]).toMatchObject({ loc: ['body', 'kind'], msg: expect.stringMatching(/without control characters/) });
    const extra = await r.call<{ detail: Issue[] }>('POST', '/v1/integrations', { key: a.priv, body: { index_id: 'shop', kind: 'feed', confg: {} } });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ loc: ['body', 'confg'], type: 'extra_forbidden' });
    const patch = await r.call<{ detail: Issue[] }>('PATCH', '/v1/integrations/i1', { key: a.priv, body: { name: 'x\r\ny' } });
    expect(patch.status).toBe(422);
    expect(patch.body.detail[0]!.loc).toEqual(['body', 'name']);
  });

  it('keeps keys and tenants apart, and says what an integration id may contain', async () => {
    expect((await r.call<Err>('GET', '/v1/integrations', { key: a.pub })).body.code).toBe('forbidden_key_kind');
    expect((await r.call<Err>('GET', `/v1/integrations?tenant_id=${b.id}`, { key: a.priv })).status).toBe(403);
    const tricky = await r.call<{ detail: Issue[] }>('GET', '/v1/integrations/..%2F..%2Fadmin', { key: a.priv });
    expect(tricky.status).toBe(422);
    expect(tricky.body.detail[0]).toMatchObject({ loc: ['path', 'integration_id'], msg: 'Use 1 to 128 letters, digits, dashes or underscores.' });
  });
});

describe('connected search API of proxy mode', () => {
  const patch = (search_api: unknown) => r.call<{ detail: Issue[]; search_api: unknown }>('PATCH', `/v1/admin/tenants/${a.id}`, { key: r.adminKey, body: { search_api } });

  it('refuses header names and values that would split an HTTP request, and keys with control characters', async () => {
    for (const bad of [
      { url: 'https://search.example.com/', headers: { 'X-A\r\nInjected': 'v' } },
      { url: 'https://search.example.com/', headers: { 'X-A': 'v\r\nSet-Cookie: x' } },
      { url: 'https://search.example.com/', api_key: 'k\u0000\r\n' },
    ]) {
      const res = await patch(bad);
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(res.body.detail[0]!.loc).toEqual(['body', 'search_api']);
      expect(res.body.detail[0]!.msg).toMatch(/headers/);
    }
  });

  it('refuses more than 32 headers instead of storing megabytes in the tenant record', async () => {
    const headers = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`x-h${i}`, 'v']));
    expect((await patch({ url: 'https://search.example.com/', headers })).status).toBe(422);
  });

  it('says which URLs it takes when the scheme is not http or https', async () => {
    for (const url of ['file:///etc/passwd', 'gopher://127.0.0.1:6379/_x']) {
      const res = await patch({ url });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]!.msg).toMatch(/http or https URL/);
    }
  });

  it('refuses credentials inside the URL, which the admin views would show back', async () => {
    const res = await patch({ url: 'https://user:secret@search.example.com/v1' });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.msg).toMatch(/without user:password@/);
    expect(JSON.stringify(res.body)).not.toContain('secret');
  });

  it('refuses a tenant created with a misspelt field instead of ignoring it', async () => {
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/admin/tenants', { key: r.adminKey, body: { tenant_id: 'typo-co', name: 'Typo', plann: 'pro' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.loc).toEqual(['body', 'plann']);
    expect((await r.call('GET', '/v1/admin/tenants/typo-co', { key: r.adminKey })).status).toBe(404);
  });

  it('still takes a well-formed search API with a few headers', async () => {
    const res = await patch({ url: 'https://search.example.com/v1', api_key: 'sk-123', headers: { Authorization: 'Bearer\tabc', 'X-Team': 'shop' } });
    expect(res.status).toBe(200);
    expect(res.body.search_api).toEqual({ url: 'https://search.example.com/v1', has_api_key: true });
  });
});

describe('predict filters', () => {
  it('says what a filter value takes instead of "Expected union value"', async () => {
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/predict', { key: a.pub, body: { index: 'shop', query: 'red', filters: { category: { gte: { $ne: 1 } } } } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'filters', 'category'], msg: expect.stringMatching(/list of exact values .* or a range/) });
  });

  it("does not reach another tenant's index", async () => {
    expect((await r.call<Err>('POST', '/v1/predict', { key: a.pub, body: { index: 'b-only', query: 'x' } })).body.code).toBe('index_not_found');
  });
});
