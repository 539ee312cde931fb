// End-to-end tests of the engagement loop over real HTTP on real Best Buy products: events sent
// with a public key change what autocomplete and typeahead answer right away (the response
// cache follows), personalization by user_id on paid plans only, the index schema's `events`
// settings (mined query minimum and exclusions), events deleted with their index, every field and
// its 422, the keys that may send events, tenant isolation and the per-key rate limit.
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, untilSearchable, waitFor } from './api-client.js';
import type { SuiteTarget } from './api-suite.js';
import { bestBuyDocuments } from './search-suite.js';

interface Suggestion {
  id: string;
  type: string;
  title: string;
  score: number;
  metadata?: { concepts: string[]; behavior?: { boost: number; popularity: number; personal: number; query: number; injected: boolean } };
}
type Body = { suggestions: Suggestion[]; code?: string; detail?: string | { loc: (string | number)[]; msg: string; type: string }[]; accepted?: number; ignored?: number; unknown_document_ids?: string[] };

export function registerEventsSuite(name: string, target: () => SuiteTarget, opts: { parts: number }): void {
  describe(name, () => {
    let api: ApiClient;
    let key: string;
    let pub: string;
    let freePub: string;
    const tenant = `events-${Math.random().toString(36).slice(2, 8)}`;
    const freeTenant = `${tenant}-free`;
    const index = 'bestbuy';
    const docs = bestBuyDocuments().slice(0, 1500);
    const get = (path: string, k = pub) => api.call<Body>('GET', path, { key: k });
    const click = (body: unknown, k = pub, headers?: Record<string, string>) => api.call<Body>('POST', '/v1/events/click', { key: k, body, ...(headers ? { headers } : {}) });
    let adminKey: string;

    beforeAll(async () => {
      const t = target();
      adminKey = t.adminKey;
      api = new ApiClient(t.urls[0]!);
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      for (const [id, plan] of [
        [tenant, 'pro'],
        [freeTenant, 'free'],
      ] as const) {
        expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: id, name: id, plan } })).status).toBe(200);
      }
      key = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      pub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      const freeKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${freeTenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      freePub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${freeTenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Best Buy', parts: opts.parts } })).status).toBe(200);
      expect((await api.call('POST', '/v1/indexes', { key: freeKey, body: { index_id: index, name: 'Best Buy' } })).status).toBe(200);
      for (let i = 0; i < docs.length; i += 500) {
        expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: docs.slice(i, i + 500) } })).status).toBe(200);
      }
      expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key: freeKey, body: { documents: docs.slice(0, 50) } })).status).toBe(200);
      await untilSearchable(api, key, index);
    }, 120_000);

    it('lifts the product people choose after a query, at once (cache included)', async () => {
      const path = `/v1/autocomplete?index=${index}&query=${encodeURIComponent('headphones')}&limit=10`;
      const before = await get(path);
      expect(before.status).toBe(200);
      expect(before.body.suggestions.length).toBeGreaterThan(5);
      const target = before.body.suggestions[before.body.suggestions.length - 1]!;
      expect(before.body.suggestions[0]!.id).not.toBe(target.id);
      const events = Array.from({ length: 5 }, (_, i) => ({ index, doc_id: target.id, query: 'headphones', position: 10, session_id: `s${i}`, type: 'purchase' }));
      const res = await click({ events });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ accepted: 5, ignored: 0, unknown_document_ids: [] });
      const after = await get(path);
      expect(after.body.suggestions[0]!.id).toBe(target.id);
      expect(after.body.suggestions[0]!.metadata!.behavior!.boost).toBeGreaterThan(1);
      // the prefix leads there too, through the query it continues into (up against strong
      // title matches of "headph", so not necessarily first)
      const prefix = await get(`/v1/autocomplete?index=${index}&query=headph&limit=10`);
      const at = prefix.body.suggestions.findIndex((s) => s.id === target.id);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(at).toBeLessThan(5);
      expect(prefix.body.suggestions[at]!.metadata!.behavior!.query).toBeGreaterThan(0);
      // predict ranks on the same evidence and says so
      const predicted = await api.call<{ debug: { candidates: { key: string; reason_codes: string[] }[] } }>('POST', '/v1/predict', {
        key: pub,
        body: { index, query: 'headphones', include: { debug: true } },
      });
      expect(predicted.status).toBe(200);
      const candidate = predicted.body.debug.candidates.find((c) => c.key === `d:${target.id}`);
      expect(candidate?.reason_codes).toContain('behavioral_boost');
    });

    it('spreads a batch over the parts holding its documents and reports unknown ones', async () => {
      const ids = docs.slice(100, 110).map((d) => d.id);
      const res = await click({ events: [...ids.map((doc_id) => ({ index, doc_id })), { index, doc_id: 'no-such-doc' }] });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ accepted: 10, ignored: 1, unknown_document_ids: ['no-such-doc'] });
      const single = await click({ index, doc_id: 'no-such-doc' });
      expect(single.status).toBe(404);
      expect(single.body.code).toBe('document_not_found');
    });

    it('mines typeahead completions from the queries typed, with the schema minimum and exclusions', async () => {
      const doc = docs.find((d) => /xbox/i.test(d.title)) ?? docs[0]!;
      const events = Array.from({ length: 2 }, (_, i) => ({ index, doc_id: doc.id, query: 'zelda breath of the wild', session_id: `z${i}` }));
      expect((await click({ events })).status).toBe(200);
      const path = `/v1/typeahead?index=${index}&query=zeld`;
      expect((await get(path)).body.suggestions.map((s) => s.id)).not.toContain('q:zelda breath of the wild');
      expect((await click({ index, doc_id: doc.id, query: 'Zelda  breath of the WILD', session_id: 'z3' })).status).toBe(200);
      const mined = await get(path);
      expect(mined.body.suggestions[0]).toMatchObject({ id: 'q:zelda breath of the wild', type: 'query', title: 'zelda breath of the wild' });
      expect(Object.keys(mined.body.suggestions[0]!).sort()).toEqual(['id', 'score', 'title', 'type']);

      const put = await api.call('PUT', `/v1/indexes/${index}/schema`, { key, body: { events: { min_query_count: 1, excluded_queries: ['zelda breath of the wild'] } } });
      expect(put.status).toBe(200);
      await waitFor(async () => !(await get(path)).body.suggestions.some((s) => s.id === 'q:zelda breath of the wild'), 10_000, 'exclusion');
      const bad = await api.call<{ detail: { loc: unknown[] }[] }>('PUT', `/v1/indexes/${index}/schema`, { key, body: { events: { min_query_count: 0, typo: true } } });
      expect(bad.status).toBe(422);
      expect(bad.body.detail.map((d) => d.loc[1])).toContain('events');
      expect((await api.call('PUT', `/v1/indexes/${index}/schema`, { key, body: {} })).status).toBe(200);
    });

    it('personalizes autocomplete by user_id on paid plans only', async () => {
      const path = (user?: string) => `/v1/autocomplete?index=${index}&query=cable&limit=20${user ? `&user_id=${user}` : ''}`;
      const pick = (await get(path())).body.suggestions[3]!;
      expect((await click({ index, doc_id: pick.id, user_id: 'fan-1', type: 'purchase' })).status).toBe(200);
      const mine = await get(path('fan-1'));
      expect(mine.status).toBe(200);
      const mineScore = mine.body.suggestions.find((s) => s.id === pick.id);
      expect(mineScore?.metadata?.behavior?.personal ?? 0).toBeGreaterThan(0);
      const someone = await get(path('someone-else'));
      expect(someone.body.suggestions.every((s) => (s.metadata?.behavior?.personal ?? 0) === 0)).toBe(true);
      // on a free plan: events with user_id are taken, personalized ranking is refused
      expect((await click({ index, doc_id: docs[0]!.id, user_id: 'u' }, freePub)).status).toBe(200);
      const free = await api.call<{ code: string }>('GET', `/v1/autocomplete?index=${index}&query=tv&user_id=u`, { key: freePub });
      expect(free.status).toBe(403);
      expect(free.body.code).toBe('plan_required');
    });

    it('takes every field and type (purchase > add_to_cart > click), and index defaults to `default`', async () => {
      const path = `/v1/autocomplete?index=${index}&query=${encodeURIComponent('speaker')}&limit=50`;
      const before = (await get(path)).body.suggestions;
      const [a, b, c] = before.slice(-3);
      for (const doc of [a, b, c]) expect(doc?.metadata?.behavior?.boost ?? 1).toBe(1);
      const query = 'zqx weighted';
      const at = Date.now() - 60_000;
      for (const [doc, type] of [
        [a!, 'purchase'],
        [b!, 'add_to_cart'],
        [c!, 'click'],
      ] as const) {
        const res = await click({ index, doc_id: doc.id, query, position: 3, user_id: 'weigher', session_id: `w-${type}`, type, timestamp: at });
        expect(res.status, type).toBe(200);
        expect(res.body).toEqual({ accepted: 1, ignored: 0, unknown_document_ids: [] });
      }
      const res = await get(path);
      const boost = (id: string) => res.body.suggestions.find((x) => x.id === id)?.metadata?.behavior?.boost ?? 0;
      expect(boost(a!.id)).toBeGreaterThan(boost(b!.id));
      expect(boost(b!.id)).toBeGreaterThan(boost(c!.id));
      expect(boost(c!.id)).toBeGreaterThan(1);
      // without `index` the event goes to the index `default`, which this tenant does not have
      const dflt = await click({ doc_id: a!.id });
      expect(dflt.status).toBe(404);
      expect(dflt.body.code).toBe('index_not_found');
      expect(dflt.body.detail).toContain("'default'");
    });

    it('refuses bad fields with 422 and {detail: [{loc, msg, type}]}', async () => {
      const id = docs[0]!.id;
      const cases: [unknown, (string | number)[]][] = [
        [{ index }, ['body', 'doc_id']],
        [{ index, doc_id: '' }, ['body', 'doc_id']],
        [{ index, doc_id: 7 }, ['body', 'doc_id']],
        [{ index, doc_id: id, type: 'view' }, ['body', 'type']],
        [{ index, doc_id: id, type: 'CLICK' }, ['body', 'type']],
        [{ index, doc_id: id, position: 0 }, ['body', 'position']],
        [{ index, doc_id: id, position: 1001 }, ['body', 'position']],
        [{ index, doc_id: id, position: 2.5 }, ['body', 'position']],
        [{ index, doc_id: id, query: 'x'.repeat(513) }, ['body', 'query']],
        [{ index, doc_id: id, query: 3 }, ['body', 'query']],
        [{ index, doc_id: id, user_id: '' }, ['body', 'user_id']],
        [{ index, doc_id: id, user_id: 'u'.repeat(257) }, ['body', 'user_id']],
        [{ index, doc_id: id, session_id: 5 }, ['body', 'session_id']],
        [{ index, doc_id: id, timestamp: Date.now() + 10 * 60_000 }, ['body', 'timestamp']],
        [{ index, doc_id: id, timestamp: '2026-01-01' }, ['body', 'timestamp']],
        [{ index, doc_id: id, timestamp: 1000 }, ['body', 'timestamp']],
        [{ index: 'bad index!', doc_id: id }, ['body', 'index']],
        [{ index, doc_id: id, clicked: true }, ['body', 'clicked']],
        [{ events: [] }, ['body', 'events']],
        [{ events: Array.from({ length: 101 }, () => ({ index, doc_id: id })) }, ['body', 'events']],
        [{ events: [{ index, doc_id: id }, { index, query: 'no doc' }] }, ['body', 'events', 1, 'doc_id']],
        [{ events: [{ index, doc_id: id, colour: 'red' }] }, ['body', 'events', 0, 'colour']],
        [{ events: [{ index, doc_id: id }], index }, ['body', 'index']],
      ];
      for (const [body, loc] of cases) {
        const res = await click(body);
        const what = JSON.stringify(body).slice(0, 80);
        expect(res.status, what).toBe(422);
        const detail = res.body.detail as { loc: (string | number)[]; msg: string; type: string }[];
        expect(detail.map((d) => d.loc), what).toContainEqual(loc);
        for (const d of detail) {
          expect(typeof d.msg, what).toBe('string');
          expect(d.msg.length, what).toBeGreaterThan(0);
          expect(typeof d.type, what).toBe('string');
        }
      }
      // nothing of a refused batch is stored, even its valid events
      const probe = docs[1]!.id;
      expect((await click({ events: [{ index, doc_id: probe, query: 'zqx refused' }, { index, doc_id: probe, position: 0 }] })).status).toBe(422);
      const after = await get(`/v1/autocomplete?index=${index}&query=${encodeURIComponent('zqx refused')}`);
      expect(after.body.suggestions.every((x) => x.metadata?.behavior === undefined)).toBe(true);
    });

    it('takes public, private and admin keys; 401 without a known key, 403 for another tenant', async () => {
      const id = docs[2]!.id;
      expect((await click({ index, doc_id: id }, key)).status).toBe(200);
      expect((await click({ index, doc_id: id }, adminKey, { 'x-tenant-id': tenant })).status).toBe(200);
      expect((await api.call<Body>('POST', `/v1/events/click?tenant_id=${tenant}`, { key: adminKey, body: { index, doc_id: id } })).status).toBe(200);
      const missing = await api.call<Body>('POST', '/v1/events/click', { body: { index, doc_id: id } });
      expect(missing.status).toBe(401);
      expect(missing.body.code).toBe('missing_api_key');
      expect((await click({ index, doc_id: id }, 'not-a-key')).status).toBe(401);
      for (const [how, res] of [
        ['header', await click({ index, doc_id: id }, freePub, { 'x-tenant-id': tenant })],
        ['query', await api.call<Body>('POST', `/v1/events/click?tenant_id=${tenant}`, { key: freePub, body: { index, doc_id: id } })],
        ['body', await click({ index, doc_id: id, tenant_id: tenant }, freePub)],
      ] as const) {
        expect(res.status, how).toBe(403);
        expect(res.body.code, how).toBe('forbidden_tenant');
      }
    });

    it('keeps tenants apart: same index name, same documents, separate events', async () => {
      // the free tenant's index of the same name holds the first 50 documents
      const shared = docs[20]!;
      const word = shared.title.split(/\s+/)[0]!.toLowerCase();
      const events = Array.from({ length: 4 }, (_, i) => ({ index, doc_id: shared.id, query: word, session_id: `iso-${i}`, type: 'purchase' }));
      expect((await click({ events })).status).toBe(200);
      const path = `/v1/autocomplete?index=${index}&query=${encodeURIComponent(word)}&limit=50`;
      const mine = (await get(path)).body.suggestions.find((x) => x.id === shared.id);
      expect(mine?.metadata?.behavior?.boost ?? 0).toBeGreaterThan(1);
      const theirs = await get(path, freePub);
      expect(theirs.status).toBe(200);
      const same = theirs.body.suggestions.find((x) => x.id === shared.id);
      expect(same).toBeDefined();
      expect(same!.metadata?.behavior?.boost ?? 1).toBe(1);
      expect(same!.metadata?.behavior?.popularity ?? 0).toBe(0);
      // a document only the other tenant has is unknown here
      const onlyPro = docs[200]!.id;
      const unknown = await click({ index, doc_id: onlyPro }, freePub);
      expect(unknown.status).toBe(404);
      expect(unknown.body.code).toBe('document_not_found');
    });

    it('rate limits per key: 429 rate_limited with Retry-After once the burst is spent, then recovers', async () => {
      const limitedKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: adminKey, body: { kind: 'public', name: 'burst' } })).body.key;
      // default burst 1,000 events per key: 25 concurrent batches of 100 cannot all pass
      const batch = { events: Array.from({ length: 100 }, (_, i) => ({ index, doc_id: `no-such-${i}` })) };
      const results = await Promise.all(Array.from({ length: 25 }, () => click(batch, limitedKey)));
      const passed = results.filter((x) => x.status === 200);
      const limited = results.filter((x) => x.status === 429);
      expect(passed.length + limited.length).toBe(25);
      expect(passed.length).toBeGreaterThanOrEqual(10);
      expect(limited.length).toBeGreaterThan(0);
      for (const x of passed) expect(x.body).toMatchObject({ accepted: 0, ignored: 100 });
      const first = limited[0]!;
      expect(first.body.code).toBe('rate_limited');
      const wait = Number(first.headers.get('retry-after'));
      expect(Number.isInteger(wait)).toBe(true);
      expect(wait).toBeGreaterThanOrEqual(1);
      // the tenant's other keys have their own buckets
      expect((await click({ index, doc_id: docs[3]!.id })).status).toBe(200);
      await new Promise((res) => setTimeout(res, wait * 1000 + 100));
      expect((await click({ index, doc_id: docs[3]!.id }, limitedKey)).status).toBe(200);
    });

    it('deletes the events with the index', async () => {
      const tmp = `tmp-${opts.parts}`;
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: tmp, name: tmp, parts: opts.parts } })).status).toBe(200);
      const few = docs.slice(0, 200);
      expect((await api.call('POST', `/v1/indexes/${tmp}/documents`, { key, body: { documents: few } })).status).toBe(200);
      const target = few.find((d) => /samsung/i.test(d.title)) ?? few[0]!;
      expect((await click({ events: Array.from({ length: 3 }, (_, i) => ({ index: tmp, doc_id: target.id, query: 'samsung', session_id: `d${i}` })) })).status).toBe(200);
      const learned = await get(`/v1/autocomplete?index=${tmp}&query=samsung`);
      expect(learned.body.suggestions[0]!.metadata!.behavior).toBeDefined();
      expect((await api.call('DELETE', `/v1/indexes/${tmp}`, { key })).status).toBe(200);
      expect((await click({ index: tmp, doc_id: target.id })).status).toBe(404);
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: tmp, name: tmp, parts: opts.parts } })).status).toBe(200);
      expect((await api.call('POST', `/v1/indexes/${tmp}/documents`, { key, body: { documents: few } })).status).toBe(200);
      const fresh = await get(`/v1/autocomplete?index=${tmp}&query=samsung`);
      expect(fresh.body.suggestions.every((s) => s.metadata?.behavior === undefined)).toBe(true);
    });
  });
}
