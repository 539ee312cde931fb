// Proxy mode end to end: a tenant switched to proxy mode is answered by its connected search API
// (a real HTTP server on 127.0.0.1), never by hosted answers cached before the switch, while a
// hosted tenant on the same router is untouched; every failure of the API is a 502 with a detail
// that says what went wrong and never shows the api_key.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter, type TestRouter } from './harness.js';

interface Suggestion {
  id: string;
  type: string;
  title: string;
  score: number;
  [k: string]: unknown;
}
interface Body {
  mode: string;
  query: string;
  corrected_query: string | null;
  index: string;
  suggestions: Suggestion[];
  debug: unknown;
}
interface Err {
  detail: string;
  code: string;
}

const API_KEY = 'sk-live-do-not-leak-7f3a9c';

const UPSTREAM_PRODUCTS = [
  { objectID: 'u1', name: 'Upstream Galaxy Phone', url: 'https://shop.example/u1', image_url: 'https://img.example/u1.jpg', price: '199.50', currency: 'eur', brand: 'Acme' },
  { id: 7, title: 'Upstream Galaxy Tablet', link: 'https://shop.example/u2', price: 349, category: ['Tablets'] },
  { _id: 'u3', _source: { title: 'Upstream Galaxy Watch', thumbnail: 'https://img.example/u3.jpg' } },
  { sku: 'no-title' },
  { id: 'u5', title: 'Upstream Galaxy Buds' },
];

interface Seen {
  path: string;
  params: URLSearchParams;
  headers: http.IncomingHttpHeaders;
}

describe('search proxy mode', () => {
  let r: TestRouter;
  let upstream: http.Server;
  let base: string;
  let shop: { id: string; pub: string; priv: string };
  let hosted: { id: string; pub: string; priv: string };
  const seen: Seen[] = [];
  /** every body the router answered, checked for the api_key at the end */
  const answered: string[] = [];

  const get = async <T>(path: string, key: string) => {
    const res = await fetch(r.url + path, { headers: { 'x-api-key': key } });
    const text = await res.text();
    answered.push(text);
    return { status: res.status, body: JSON.parse(text) as T };
  };
  const connect = async (path: string, extra: Record<string, unknown> = {}) => {
    const res = await r.call('PATCH', `/v1/admin/tenants/${shop.id}`, { key: r.adminKey, body: { mode: 'proxy', search_api: { url: base + path, api_key: API_KEY, ...extra } } });
    answered.push(JSON.stringify(res.body));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };

  beforeAll(async () => {
    upstream = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://upstream');
      seen.push({ path: url.pathname, params: url.searchParams, headers: req.headers });
      const json = (status: number, value: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      switch (url.pathname) {
        case '/search':
          return json(200, { total: 5, results: UPSTREAM_PRODUCTS });
        case '/complete':
          return json(200, ['galaxy phone', 'Galaxy Phone', { suggestion: 'galaxy tab' }, { id: 'p9', title: 'Galaxy Phone Case' }, 'galaxy watch']);
        case '/es':
          return json(200, { hits: { total: 1, hits: [{ _id: 'es1', _source: { title: 'Elastic Galaxy', price: 10 } }] } });
        case '/fail':
          return json(500, { error: 'boom' });
        case '/slow':
          setTimeout(() => json(200, []), 1500).unref();
          return;
        case '/html':
          return res.writeHead(200, { 'content-type': 'text/html' }).end('<html>maintenance</html>');
        case '/moved':
          return res.writeHead(302, { location: `${base}/search` }).end();
        case '/nolist':
          return json(200, { total: 0, message: 'ok' });
        default:
          return json(404, {});
      }
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

    r = await startRouter({ proxyAllowPrivate: true, proxyTimeoutMs: 300 }, { search: true });
    shop = await r.tenant('shop');
    hosted = await r.tenant('hosted-shop');
    for (const t of [shop, hosted]) {
      expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'products', name: 'Products' } })).status).toBe(200);
      const documents = ['Hosted Galaxy Phone', 'Hosted Galaxy Tablet', 'Hosted Galaxy Watch'].map((title, i) => ({ id: `h${i}`, title, desc: '', manufacturer: 'Hosted' }));
      expect((await r.call('POST', '/v1/indexes/products/documents', { key: t.priv, body: { documents } })).status).toBe(200);
    }
  }, 60_000);

  afterAll(async () => {
    await r?.close();
    await new Promise<void>((resolve) => (upstream ? upstream.close(() => resolve()) : resolve()));
  });

  it('serves the connected API right after the switch, not hosted answers cached before it', async () => {
    // warmed twice: the second answer comes from the response cache and its front
    for (let i = 0; i < 2; i++) {
      const ta = await get<Body>('/v1/typeahead?query=galaxy&index=products&limit=5', shop.pub);
      expect(ta.status).toBe(200);
      expect(ta.body.suggestions.some((s) => s.title.startsWith('Hosted'))).toBe(true);
      const ac = await get<Body>('/v1/autocomplete?query=galaxy&index=products&limit=3', shop.pub);
      expect(ac.body.suggestions.map((s) => s.title)).toContain('Hosted Galaxy Phone');
    }
    expect(seen).toHaveLength(0);

    await connect('/search?src=suggest&q=stale', { headers: { 'X-Shop-Region': 'eu' } });

    const ac = await get<Body>('/v1/autocomplete?query=galaxy&index=products&limit=3', shop.pub);
    expect(ac.status, JSON.stringify(ac.body)).toBe(200);
    expect(ac.body.mode).toBe('proxy');
    expect(ac.body.corrected_query).toBeNull();
    expect(ac.body.debug).toBeNull();
    expect(ac.body.suggestions.map((s) => s.title)).toEqual(['Upstream Galaxy Phone', 'Upstream Galaxy Tablet', 'Upstream Galaxy Watch']);
    const req = seen.at(-1)!;
    expect(req.path).toBe('/search');
    expect(req.params.get('q')).toBe('galaxy');
    expect(req.params.getAll('q')).toHaveLength(1);
    expect(req.params.get('limit')).toBe('3');
    expect(req.params.get('index')).toBe('products');
    expect(req.params.get('src')).toBe('suggest');
    expect(req.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(req.headers.accept).toBe('application/json');
    expect(req.headers['x-shop-region']).toBe('eu');

    const ta = await get<Body>('/v1/typeahead?query=galaxy&index=products&limit=5', shop.pub);
    expect(ta.status).toBe(200);
    expect(ta.body.mode).toBe('typeahead');
    expect(ta.body.suggestions.every((s) => s.title.startsWith('Upstream'))).toBe(true);
    expect(seen.at(-1)!.params.get('limit')).toBe('5');
  });

  it('maps result objects onto autocomplete suggestions in the API order', async () => {
    const before = seen.length;
    const ac = await get<Body>('/v1/autocomplete?query=gal&index=products&limit=10', shop.pub);
    expect(seen.length).toBe(before + 1);
    expect(ac.body.suggestions).toEqual([
      { id: 'u1', type: 'product', title: 'Upstream Galaxy Phone', subtitle: 'Acme', description: null, url: 'https://shop.example/u1', image: 'https://img.example/u1.jpg', price: 199.5, currency: 'EUR', score: 1, metadata: { concepts: ['Acme'] } },
      { id: '7', type: 'product', title: 'Upstream Galaxy Tablet', subtitle: 'Tablets', description: null, url: 'https://shop.example/u2', image: null, price: 349, currency: null, score: 0.5, metadata: { concepts: ['Tablets'] } },
      { id: 'u3', type: 'product', title: 'Upstream Galaxy Watch', subtitle: null, description: null, url: null, image: 'https://img.example/u3.jpg', price: null, currency: null, score: 0.3333, metadata: { concepts: [] } },
      { id: 'u5', type: 'product', title: 'Upstream Galaxy Buds', subtitle: null, description: null, url: null, image: null, price: null, currency: null, score: 0.25, metadata: { concepts: [] } },
    ]);
  });

  it('forwards every request: proxied answers are not cached', async () => {
    const before = seen.length;
    for (let i = 0; i < 3; i++) expect((await get<Body>('/v1/typeahead?query=galax&index=products', shop.pub)).status).toBe(200);
    expect(seen.length).toBe(before + 3);
    // the index asked for is passed on as it is, whether or not it exists here
    const other = await get<Body>('/v1/autocomplete?query=galaxy&index=elsewhere', shop.pub);
    expect(other.status).toBe(200);
    expect(other.body.index).toBe('elsewhere');
    expect(seen.at(-1)!.params.get('index')).toBe('elsewhere');
    expect(seen.at(-1)!.params.get('limit')).toBe('10');
  });

  it('forwards the QUERY method too', async () => {
    const res = await r.call<Body>('POST', '/v1/autocomplete', { key: shop.pub, body: { query: 'galaxy', index: 'products', limit: 2 }, headers: { 'x-http-method-override': 'QUERY' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.mode).toBe('proxy');
    expect(res.body.suggestions).toHaveLength(2);
    expect(seen.at(-1)!.params.get('limit')).toBe('2');
  });

  it('builds typeahead completions from strings and suggestion fields, deduplicated', async () => {
    await connect('/complete');
    const ta = await get<Body>('/v1/typeahead?query=galaxy&index=products&limit=4', shop.pub);
    expect(ta.status).toBe(200);
    expect(ta.body.suggestions).toEqual([
      { id: 'q:galaxy phone', type: 'query', title: 'galaxy phone', score: 1 },
      { id: 'q:galaxy tab', type: 'query', title: 'galaxy tab', score: 0.5 },
      { id: 'p9', type: 'product', title: 'Galaxy Phone Case', score: 0.3333 },
      { id: 'q:galaxy watch', type: 'query', title: 'galaxy watch', score: 0.25 },
    ]);
    await connect('/es');
    const es = await get<Body>('/v1/autocomplete?query=galaxy&index=products', shop.pub);
    expect(es.body.suggestions.map((s) => [s.id, s.title, s.price])).toEqual([['es1', 'Elastic Galaxy', 10]]);
  });

  it('leaves a hosted tenant on the same router alone', async () => {
    const before = seen.length;
    for (let i = 0; i < 2; i++) {
      const ta = await get<Body>('/v1/typeahead?query=galaxy&index=products&limit=5', hosted.pub);
      expect(ta.status).toBe(200);
      expect(ta.body.suggestions.some((s) => s.title.startsWith('Hosted'))).toBe(true);
      const ac = await get<Body>('/v1/autocomplete?query=galaxy&index=products&limit=3', hosted.pub);
      expect(ac.body.mode).toBe('fts_only');
      expect(ac.body.suggestions.map((s) => s.title)).toContain('Hosted Galaxy Phone');
    }
    expect(seen.length).toBe(before);
  });

  it.each([
    ['/fail', /HTTP 500/],
    ['/slow', /did not answer within 300 ms/],
    ['/html', /not JSON/],
    ['/nolist', /no list of results/],
    ['/moved', /redirect \(HTTP 302\)/],
  ])('answers 502 upstream_unavailable when the API at %s misbehaves', async (path, detail) => {
    await connect(path);
    const before = seen.length;
    for (const route of ['/v1/typeahead', '/v1/autocomplete']) {
      const res = await get<Err>(`${route}?query=galaxy&index=products`, shop.pub);
      expect(res.status, JSON.stringify(res.body)).toBe(502);
      expect(res.body.code).toBe('upstream_unavailable');
      expect(res.body.detail).toMatch(detail);
    }
    // a redirect is not followed: only the two requests themselves reached the API
    expect(seen.slice(before).map((s) => s.path)).toEqual([path, path]);
  });

  it('answers 502 when the API cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const res0 = await r.call('PATCH', `/v1/admin/tenants/${shop.id}`, { key: r.adminKey, body: { search_api: { url: `http://127.0.0.1:${port}/search`, api_key: API_KEY } } });
    expect(res0.status).toBe(200);
    const res = await get<Err>('/v1/autocomplete?query=galaxy&index=products', shop.pub);
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/could not be reached \(ECONNREFUSED\)/);
  });

  it('counts proxied requests by outcome', async () => {
    const text = await (await fetch(`${r.url}/metrics`)).text();
    answered.push(text);
    const value = (kind: string, outcome: string) => Number(new RegExp(`^suggest_proxy_requests_total\\{kind="${kind}",outcome="${outcome}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('autocomplete', 'ok')).toBeGreaterThanOrEqual(4);
    expect(value('typeahead', 'ok')).toBeGreaterThanOrEqual(5);
    expect(value('autocomplete', 'timeout')).toBeGreaterThanOrEqual(1);
    expect(value('typeahead', 'http_error')).toBeGreaterThanOrEqual(1);
    expect(value('autocomplete', 'redirect')).toBeGreaterThanOrEqual(1);
    expect(value('autocomplete', 'unreachable')).toBeGreaterThanOrEqual(1);
  });

  it('goes back to hosted answers when switched back', async () => {
    const res = await r.call('PATCH', `/v1/admin/tenants/${shop.id}`, { key: r.adminKey, body: { mode: 'hosted' } });
    expect(res.status).toBe(200);
    const before = seen.length;
    const ac = await get<Body>('/v1/autocomplete?query=galaxy&index=products&limit=3', shop.pub);
    expect(ac.status).toBe(200);
    expect(ac.body.mode).toBe('fts_only');
    expect(ac.body.suggestions.map((s) => s.title)).toContain('Hosted Galaxy Phone');
    expect(seen.length).toBe(before);
  });

  it('never shows the api_key in any answer', async () => {
    const view = await r.call('GET', `/v1/admin/tenants/${shop.id}`, { key: r.adminKey });
    answered.push(JSON.stringify(view.body));
    expect(answered.length).toBeGreaterThan(20);
    for (const text of answered) expect(text).not.toContain(API_KEY);
  });
});
