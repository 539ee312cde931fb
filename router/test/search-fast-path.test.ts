// The synchronous hot path of GET typeahead / autocomplete (answered inside the uWS callback when
// key, tenant, index and answer are at hand): it must answer exactly what the ordinary pipeline
// answers, never serve an answer older than the last write, and leave every error to the
// pipeline even when all caches are warm.
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { SuggestError } from '../../node/runtime/errors.js';
import { SuggestEngine } from '../../shard/engine/engine.js';
import { QueryPool } from '../../shard/search/query-pool.js';
import { SearchService } from '../search-service.js';
import { startRouter, type TestRouter } from './harness.js';

interface Body {
  took_ms: number;
  suggestions: { id: string; title: string; score: number }[];
  [k: string]: unknown;
}
interface Err {
  detail: unknown;
  code?: string;
}

const TITLES = [
  'Samsung Galaxy S24 Ultra',
  'Samsung Galaxy Tab S9',
  'Samsung Galaxy Buds Pro',
  'Apple iPhone 15 Pro',
  'Apple iPad Air',
  'Sony WH-1000XM5 Headphones',
  'Sony Bravia 65in TV',
  'LG OLED 55in TV',
  'Dewalt 20V Drill Driver',
  'Dewalt Impact Driver Kit',
  'Café Crème Espresso Machine — 日本語 エディション 🍵',
];

const withoutTook = (b: Body) => {
  const { took_ms: _took, ...rest } = b;
  return rest;
};

describe.each([
  { threads: 0, name: 'autocomplete on the event loop' },
  { threads: 2, name: 'autocomplete on a query pool' },
])('search fast path ($name)', ({ threads }) => {
  let r: TestRouter;
  let t: { id: string; pub: string; priv: string };
  let other: { id: string; pub: string; priv: string };
  let fast: MockInstance<SearchService['searchSync']>;
  const answeredFast = () => fast.mock.results.filter((x) => x.type === 'return' && typeof x.value === 'string').length;

  beforeAll(async () => {
    fast = vi.spyOn(SearchService.prototype, 'searchSync');
    r = await startRouter({}, { search: true, queryThreads: threads });
    t = await r.tenant('fast');
    other = await r.tenant('other');
    expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'products', name: 'Products' } })).status).toBe(200);
    const documents = TITLES.map((title, i) => ({ id: `d${i}`, title, desc: '', manufacturer: title.split(' ')[0] }));
    expect((await r.call('POST', '/v1/indexes/products/documents', { key: t.priv, body: { documents } })).status).toBe(200);
  });

  afterAll(async () => {
    fast.mockRestore();
    await r?.close();
  });

  it('answers like the ordinary pipeline, from the engine and from the cache', async () => {
    for (const q of ['sa', 'samsung gal', 'dew', 'sony b', 'ipad', 'galxy', 'tv ', 'café c', '日本']) {
      // QUERY always takes the ordinary pipeline (it has a body); it fills the cache
      const slow = await r.call<Body>('POST', '/v1/typeahead', { key: t.pub, headers: { 'x-http-method-override': 'QUERY' }, body: { index: 'products', query: q, limit: 5 } });
      expect(slow.status).toBe(200);
      const before = answeredFast();
      const cached = await r.call<Body>('GET', `/v1/typeahead?index=products&limit=5&query=${encodeURIComponent(q)}`, { key: t.pub });
      const fresh = await r.call<Body>('GET', `/v1/typeahead?index=products&limit=5&bypass_cache=true&query=${encodeURIComponent(q)}`, { key: t.pub });
      expect(answeredFast() - before).toBe(2);
      expect(cached.status).toBe(200);
      expect(fresh.status).toBe(200);
      expect(cached.headers.get('content-type')).toBe('application/json');
      expect(withoutTook(cached.body)).toEqual(withoutTook(slow.body));
      expect(withoutTook(fresh.body)).toEqual(withoutTook(slow.body));
      if (q === 'café c') expect(cached.body.suggestions.map((s) => s.title)).toContain(TITLES.at(-1));
    }
    const auto = await r.call<Body>('GET', '/v1/autocomplete?index=products&query=dewalt&mode=fts_only', { key: t.pub });
    const autoFresh = await r.call<Body>('GET', '/v1/autocomplete?index=products&query=dewalt&mode=fts_only&bypass_cache=1', { key: t.pub });
    expect(auto.status).toBe(200);
    expect(withoutTook(autoFresh.body)).toEqual(withoutTook(auto.body));
    expect(auto.body.suggestions.map((s) => s.id).sort()).toEqual(['d8', 'd9']);
  });

  it('asks the engine once per autocomplete, answered at once or awaited, exactly like the ordinary pipeline', async () => {
    const pooled = vi.spyOn(QueryPool.prototype, 'autocomplete');
    try {
      for (const q of ['sam', 'samsung galaxy', 'dewalt dr', 'galxy', 'sony bravia 65in']) {
        const slow = await r.call<Body>('POST', '/v1/autocomplete', { key: t.pub, headers: { 'x-http-method-override': 'QUERY' }, body: { index: 'products', query: q, limit: 5 } });
        const calls = pooled.mock.calls.length;
        const before = fast.mock.results.length;
        const fresh = await r.call<Body>('GET', `/v1/autocomplete?index=products&limit=5&bypass_cache=true&query=${encodeURIComponent(q)}`, { key: t.pub });
        expect(fresh.status).toBe(200);
        expect(withoutTook(fresh.body), q).toEqual(withoutTook(slow.body));
        const answer = fast.mock.results.at(-1)!;
        expect(fast.mock.results.length - before).toBe(1);
        // on the pool the fast path hands back the awaited answer; the pipeline never asks again
        expect(answer.value instanceof Promise, q).toBe(threads > 0);
        expect(pooled.mock.calls.length - calls).toBe(threads > 0 ? 1 : 0);
      }
    } finally {
      pooled.mockRestore();
    }
  });

  it('renders a failed query like any handler error, and answers the next one', async () => {
    // failure injected where the engine is asked (a query thread, or the engine on the event
    // loop): real engines and threads do not fail on demand
    const failing = threads > 0 ? vi.spyOn(QueryPool.prototype, 'autocomplete') : vi.spyOn(SuggestEngine.prototype, 'autocomplete');
    const fail = (err: Error) => failing.mockImplementation(() => (threads > 0 ? Promise.reject(err) : (() => { throw err; })()) as never);
    try {
      fail(new SuggestError('unavailable', 'The query threads are restarting; retry shortly.'));
      const busy = await r.call<Err>('GET', '/v1/autocomplete?index=products&query=sam&bypass_cache=true', { key: t.pub });
      expect(busy.status).toBe(503);
      expect(busy.body).toEqual({ detail: 'The query threads are restarting; retry shortly.', code: 'unavailable' });
      fail(new Error('worker exited'));
      const broken = await r.call<Err>('GET', '/v1/autocomplete?index=products&query=sam&bypass_cache=true', { key: t.pub });
      expect(broken.status).toBe(500);
      expect(broken.body.code).toBe('internal');
      expect(String(broken.body.detail)).not.toContain('worker exited');
    } finally {
      failing.mockRestore();
    }
    expect((await r.call('GET', '/v1/autocomplete?index=products&query=sam&bypass_cache=true', { key: t.pub })).status).toBe(200);
  });

  it('never serves an answer older than the last write', async () => {
    const path = '/v1/typeahead?index=products&query=zylo';
    expect((await r.call<Body>('GET', path, { key: t.pub })).body.suggestions).toEqual([]);
    expect((await r.call<Body>('GET', path, { key: t.pub })).body.suggestions).toEqual([]); // now cached
    await r.call('POST', '/v1/indexes/products/documents', { key: t.priv, body: { documents: [{ id: 'z1', title: 'Zylophone Deluxe', desc: '', manufacturer: 'Zylo' }] } });
    const after = await r.call<Body>('GET', path, { key: t.pub });
    expect(after.body.suggestions.map((s) => s.title)).toContain('Zylophone Deluxe');
    await r.call('DELETE', '/v1/indexes/products/documents/z1', { key: t.priv });
    const gone = await r.call<Body>('GET', path, { key: t.pub });
    expect(gone.body.suggestions.map((s) => s.title)).not.toContain('Zylophone Deluxe');
  });

  it('leaves every error to the pipeline while the caches are warm', async () => {
    expect((await r.call('GET', '/v1/typeahead?index=products&query=sam', { key: t.pub })).status).toBe(200);
    const cases: [string, string | undefined, number, string | undefined][] = [
      ['/v1/typeahead?index=products&query=sam&limit=0', t.pub, 422, undefined],
      ['/v1/typeahead?index=products&query=sam&limit=abc', t.pub, 422, undefined],
      ['/v1/typeahead?index=products&query=sam&limit=1&limit=2', t.pub, 422, undefined],
      ['/v1/typeahead?index=products', t.pub, 422, undefined],
      ['/v1/typeahead?index=nope&query=sam', t.pub, 404, 'index_not_found'],
      ['/v1/typeahead?index=products&query=sam', 'pk_not_a_real_key_0000000000000000', 401, 'unknown_api_key'],
      ['/v1/typeahead?index=products&query=sam', undefined, 401, 'missing_api_key'],
      [`/v1/typeahead?index=products&query=sam&tenant_id=${other.id}`, t.pub, 403, 'forbidden_tenant'],
      ['/v1/autocomplete?index=products&query=sam&filters=%7Bbad', t.pub, 422, undefined],
    ];
    for (const [path, key, status, code] of cases) {
      const res = await r.call<Err>('GET', path, key === undefined ? {} : { key });
      expect(res.status, path).toBe(status);
      if (code) expect(res.body.code, path).toBe(code);
      if (status === 422) expect(Array.isArray(res.body.detail), path).toBe(true);
    }
    // the other tenant's public key never reaches this tenant's cached answers
    const foreign = await r.call<Err>('GET', '/v1/typeahead?index=products&query=sam', { key: other.pub });
    expect(foreign.status).toBe(404);
  });

  it('counts fast answers in the request metrics', async () => {
    const count = async () => {
      const text = (await r.call<string>('GET', '/metrics')).body;
      const line = text.split('\n').find((l) => l.startsWith('suggest_http_requests_total{') && l.includes('route="/v1/typeahead"') && l.includes('method="GET"') && l.includes('status="200"'));
      return line ? Number(line.split(' ').pop()) : 0;
    };
    const before = await count();
    for (let i = 0; i < 5; i++) await r.call('GET', '/v1/typeahead?index=products&query=app', { key: t.pub });
    expect((await count()) - before).toBe(5);
  });
});
