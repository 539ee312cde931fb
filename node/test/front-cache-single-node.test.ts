// The response cache's front (router/front-cache.ts) on a real single node over HTTP: a request
// identical to one answered from the cache is answered again without being parsed, and only
// while nothing it rests on changed. Each case asks the same raw request before and after a
// change, so a front that served the remembered answer would fail it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, waitFor } from './api-client.js';

interface Answer {
  suggestions: { id: string; title: string }[];
}

const doc = (id: string, title: string) => ({ id, title, desc: '', manufacturer: 'Acme', raw: { category: 'Things' } });

describe('response cache front (single node)', () => {
  let node: SingleNode;
  let api: ApiClient;
  let keyA: string;
  let keyB: string;

  const hits = () => metricValue(api, 'suggest_cache_lookups_total\\{cache="search_response",result="hit"\\}').catch(() => 0);
  const ask = async (key: string, path: string, headers: Record<string, string> = {}) => {
    const r = await api.call<Answer>('GET', path, { key, headers });
    return { status: r.status, ids: r.status === 200 ? r.body.suggestions.map((s) => s.id) : [] };
  };
  /** the same request twice, the second from the cache (and its front) */
  const askTwice = async (key: string, path: string) => {
    const first = await ask(key, path);
    const before = await hits();
    const second = await ask(key, path);
    expect(second).toEqual(first);
    expect(await hits()).toBeGreaterThan(before);
    return second;
  };

  beforeAll(async () => {
    node = await startSingleNode();
    api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    keyA = await tenantKey(api, node.adminKey, { tenant_id: 'fronta', name: 'A', plan: 'pro' });
    keyB = await tenantKey(api, node.adminKey, { tenant_id: 'frontb', name: 'B', plan: 'pro' });
    for (const [key, docs] of [
      [keyA, [doc('a1', 'Zephyr lamp alpha'), doc('a2', 'Zephyr lamp beta'), doc('a3', 'Zephyr desk')]],
      [keyB, [doc('b1', 'Zephyr kettle'), doc('b2', 'Zephyr toaster')]],
    ] as const) {
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'shop', name: 'Shop' } })).status).toBe(200);
      expect((await api.call('POST', '/v1/indexes/shop/documents', { key, body: { documents: docs } })).status).toBe(200);
    }
  }, 120_000);

  afterAll(async () => {
    await node?.stop();
  });

  it('answers each tenant with its own index, for the same raw request under two keys', async () => {
    const path = '/v1/typeahead?index=shop&query=zeph&limit=10';
    const a = await askTwice(keyA, path);
    const b = await askTwice(keyB, path);
    expect(a.ids.filter((id) => !id.startsWith('q:')).every((id) => id.startsWith('a'))).toBe(true);
    expect(b.ids.filter((id) => !id.startsWith('q:')).every((id) => id.startsWith('b'))).toBe(true);
    expect(a.ids).toContain('a1');
    expect(b.ids).toContain('b1');
    // and again, alternating: neither takes the other's remembered answer
    expect((await ask(keyA, path)).ids).toEqual(a.ids);
    expect((await ask(keyB, path)).ids).toEqual(b.ids);
    // the remembered answer is the whole answer, its time written into it
    const bodies = await Promise.all([0, 1, 2].map(async () => (await api.call<Record<string, unknown>>('GET', path, { key: keyA })).body));
    const bypassed = (await api.call<Record<string, unknown>>('GET', path, { key: keyA, headers: { 'X-Bypass-Cache': 'true' } })).body;
    for (const body of bodies) {
      expect(typeof body.took_ms).toBe('number');
      expect(body.took_ms as number).toBeGreaterThanOrEqual(0);
      expect({ ...body, took_ms: 0 }).toEqual({ ...bypassed, took_ms: 0 });
    }
  });

  it('answers the same query string on typeahead and autocomplete each from its own front', async () => {
    const frontHits = () => metricValue(api, 'suggest_cache_lookups_total\\{cache="search_front",result="hit"\\}').catch(() => 0);
    const qs = '?index=shop&query=zephyr%20d&limit=10';
    const typeahead = await ask(keyA, `/v1/typeahead${qs}`);
    const autocomplete = await ask(keyA, `/v1/autocomplete${qs}`);
    expect(typeahead.ids).toContain('a3');
    expect(autocomplete.ids).toContain('a3');
    // once each is answered (and remembered), each route is answered from its own front
    await ask(keyA, `/v1/typeahead${qs}`);
    await ask(keyA, `/v1/autocomplete${qs}`);
    const before = await frontHits();
    for (let i = 0; i < 3; i++) {
      expect(await ask(keyA, `/v1/typeahead${qs}`)).toEqual(typeahead);
      expect(await ask(keyA, `/v1/autocomplete${qs}`)).toEqual(autocomplete);
    }
    expect((await frontHits()) - before).toBe(6);
  });

  it('shows a write on the next identical request', async () => {
    const path = '/v1/typeahead?index=shop&query=zephyr%20q&limit=10';
    expect((await askTwice(keyA, path)).ids).not.toContain('a9');
    expect((await api.call('POST', '/v1/indexes/shop/documents', { key: keyA, body: { documents: [doc('a9', 'Zephyr quokka')] } })).status).toBe(200);
    await waitFor(async () => (await ask(keyA, path)).ids.includes('a9'), 5_000, 'the written document');
  });

  it('applies a merchandising change on the next identical request', async () => {
    const path = '/v1/typeahead?index=shop&query=zephyr%20lamp&limit=10';
    const shown = await askTwice(keyA, path);
    expect(shown.ids).toContain('a1');
    const put = await api.call('PUT', '/v1/indexes/shop/merchandising', { key: keyA, body: { rules: [{ id: 'no-a1', action: 'hide', target: { ids: ['a1'] } }] } });
    expect(put.status).toBe(200);
    await waitFor(async () => !(await ask(keyA, path)).ids.includes('a1'), 5_000, 'the hide rule');
    expect((await api.call('PUT', '/v1/indexes/shop/merchandising', { key: keyA, body: { rules: [] } })).status).toBe(200);
    await waitFor(async () => (await ask(keyA, path)).ids.includes('a1'), 5_000, 'the rule removed');
  });

  it('applies a scheduled rule when its window opens, with nothing written meanwhile', async () => {
    const path = '/v1/typeahead?index=shop&query=zephyr%20desk&limit=10';
    const startsAt = Date.now() + 2_500;
    const rules = [{ id: 'later', action: 'hide', target: { ids: ['a3'] }, starts_at: new Date(startsAt).toISOString() }];
    expect((await api.call('PUT', '/v1/indexes/shop/merchandising', { key: keyA, body: { rules } })).status).toBe(200);
    await waitFor(async () => (await ask(keyA, path)).status === 200, 5_000, 'the index');
    if (Date.now() < startsAt - 500) expect((await askTwice(keyA, path)).ids).toContain('a3');
    await new Promise((r) => setTimeout(r, Math.max(0, startsAt - Date.now()) + 100));
    expect((await ask(keyA, path)).ids).not.toContain('a3');
    expect((await api.call('PUT', '/v1/indexes/shop/merchandising', { key: keyA, body: { rules: [] } })).status).toBe(200);
  });

  it('refuses a revoked key on a request it had answered from the cache', async () => {
    const created = await api.call<{ key: string; id: string }>('POST', '/v1/admin/tenants/fronta/keys', { key: node.adminKey, body: { kind: 'public', name: 'browser' } });
    expect(created.status).toBe(200);
    const path = '/v1/typeahead?index=shop&query=zephyr%20l&limit=10';
    expect((await askTwice(created.body.key, path)).status).toBe(200);
    expect((await api.call('DELETE', `/v1/admin/tenants/fronta/keys/${created.body.id}`, { key: node.adminKey })).status).toBe(200);
    await waitFor(async () => (await ask(created.body.key, path)).status === 401, 5_000, 'the revocation');
  });

  it('does not answer from the cache when it is bypassed by header, and answers 404 once the index is gone', async () => {
    const path = '/v1/typeahead?index=shop&query=zephyr%20t&limit=10';
    const cached = await askTwice(keyB, path);
    const before = await hits();
    expect(await ask(keyB, path, { 'X-Bypass-Cache': 'true' })).toEqual(cached);
    expect(await hits()).toBe(before);
    expect((await api.call('DELETE', '/v1/indexes/shop', { key: keyB })).status).toBe(200);
    await waitFor(async () => (await ask(keyB, path)).status === 404, 5_000, 'the deletion');
  });
});
