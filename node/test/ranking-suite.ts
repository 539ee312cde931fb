// End-to-end tests of synonyms and merchandising over real HTTP on real Best Buy products:
// every parameter and status of GET/PUT merchandising and of schema synonyms, each rule action
// (pin, boost, bury, hide by id, attribute and query), time windows, debug.ranking, a PUT
// visible on the next (cached) query, and pins placed across the parts of an index.
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, untilSearchable, waitFor } from './api-client.js';
import type { SuiteTarget } from './api-suite.js';
import { bestBuyDocuments } from './search-suite.js';

type Issue = { loc: (string | number)[]; msg: string; type: string };
interface Suggestion {
  id: string;
  title: string;
  score: number;
  type: string;
  subtitle?: string;
  metadata?: { synonym?: { from: string; to: string }; merchandised?: { id: string; action: string; position?: number; factor?: number }[]; [k: string]: unknown };
}
interface Body {
  suggestions: Suggestion[];
  debug: null | { ranking?: { config_version: string; synonyms: { from: string; to: string; query: string; hits: number; kept: number }[]; rules: { id: string; status: string; hidden?: number }[]; pins: { id: string; rule: string; position: number }[] } };
}

export function registerRankingSuite(name: string, target: () => SuiteTarget, opts: { parts: number }): void {
  describe(name, () => {
    let api: ApiClient;
    let key: string;
    let pub: string;
    let freeKey: string;
    const tenant = `rank-${Math.random().toString(36).slice(2, 8)}`;
    const index = 'catalog';
    const docs = bestBuyDocuments().slice(0, 1500);
    const ac = async (query: string, extra = '') => {
      const r = await api.call<Body>('GET', `/v1/autocomplete?index=${index}&query=${encodeURIComponent(query)}${extra}`, { key: pub });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const ids = (b: Body) => b.suggestions.map((s) => s.id);
    const putRules = (rules: unknown[], k = key) => api.call<{ detail: Issue[] | string; code?: string }>('PUT', `/v1/indexes/${index}/merchandising`, { key: k, body: { rules } });

    beforeAll(async () => {
      const t = target();
      api = new ApiClient(t.urls[0]!);
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: tenant, name: 'Ranking', plan: 'pro' } })).status).toBe(200);
      key = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      pub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      const free = `${tenant}-free`;
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: free, name: 'Free', plan: 'free' } })).status).toBe(200);
      freeKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${free}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      expect((await api.call('POST', '/v1/indexes', { key: freeKey, body: { index_id: index, name: 'Free catalog' } })).status).toBe(200);
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Catalog', parts: opts.parts } })).status).toBe(200);
      for (let i = 0; i < docs.length; i += 500) {
        expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: docs.slice(i, i + 500) } })).status).toBe(200);
      }
      await untilSearchable(api, key, index);
    }, 120_000);

    it('reads and writes the merchandising config: plan, key kind, tenant and index checks', async () => {
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`, { key })).body).toEqual({});
      const rules = [{ id: 'r1', action: 'boost', target: { field: 'manufacturer', values: ['Apple'] }, factor: 1.5, when: { contains: 'case' } }];
      const put = await putRules(rules);
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      expect(put.body).toEqual({ rules });
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`, { key })).body).toEqual({ rules });
      const free = await putRules(rules, freeKey);
      expect(free.status).toBe(403);
      expect(free.body.code).toBe('plan_required');
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`, { key: freeKey })).status).toBe(200);
      expect((await putRules(rules, pub)).status).toBe(403);
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`, { key: pub })).status).toBe(403);
      expect((await api.call('GET', `/v1/indexes/nope/merchandising`, { key })).status).toBe(404);
      expect((await api.call('PUT', `/v1/indexes/nope/merchandising`, { key, body: { rules: [] } })).status).toBe(404);
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`)).status).toBe(401);
      // another tenant's key naming this tenant
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising?tenant_id=${tenant}`, { key: freeKey })).status).toBe(403);
      expect((await putRules([])).status).toBe(200);
    });

    it('refuses invalid configs with 422 issues that name the rule and field', async () => {
      const cases: [unknown, string][] = [
        [{ rules: [{ id: 'a', action: 'explode', target: { ids: ['x'] } }] }, 'body.rules.0.action'],
        [{ rules: [{ id: 'a', action: 'pin', target: { ids: ['x'] } }] }, 'body.rules.0.position'],
        [{ rules: [{ id: 'a', action: 'hide', target: { ids: ['x'] } }, { id: 'a', action: 'hide', target: { ids: ['y'] } }] }, 'body.rules.1.id'],
        [{ rules: [{ id: 'a', action: 'boost', target: { ids: ['x'] }, factor: 0.5 }] }, 'body.rules.0.factor'],
        [{ rules: [{ id: 'a', action: 'bury', target: { ids: ['x'] }, factor: 1000 }] }, 'body.rules.0.factor'],
        [{ rules: [{ id: 'a', action: 'hide', target: { field: 'brand' } }] }, 'body.rules.0.target.values'],
        [{ rules: [{ id: 'a', action: 'hide', target: {} }] }, 'body.rules.0.target'],
        [{ rules: [{ id: 'a', action: 'hide', target: { ids: ['x'] }, acton: 'pin' }] }, 'body.rules.0.acton'],
        [{ rules: [{ id: 'a', action: 'hide', target: { ids: ['x'] }, when: { query: '' } }] }, 'body.rules.0.when.query'],
        [{ rules: [{ id: 'a', action: 'hide', target: { ids: ['x'] }, starts_at: 'tomorrow' }] }, 'body.rules.0.starts_at'],
        [{ rules: [{ id: 'a', action: 'hide', target: { ids: ['x'] }, starts_at: '2026-02-01T00:00:00Z', ends_at: '2026-01-01T00:00:00Z' }] }, 'body.rules.0.ends_at'],
        [{ rules: Array.from({ length: 201 }, (_, i) => ({ id: `r${i}`, action: 'hide', target: { ids: ['x'] } })) }, 'body.rules'],
        [{ pins: [] }, 'body.pins'],
        [{ rules: 'all' }, 'body.rules'],
      ];
      for (const [body, loc] of cases) {
        const r = await api.call<{ detail: Issue[] }>('PUT', `/v1/indexes/${index}/merchandising`, { key, body });
        expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(422);
        expect(r.body.detail.map((i) => i.loc.join('.')), JSON.stringify(r.body)).toContain(loc);
      }
      const notJson = await api.call('PUT', `/v1/indexes/${index}/merchandising`, { key, headers: { 'content-type': 'application/json' }, rawBody: '{"rules": [' });
      expect([400, 422]).toContain(notJson.status);
      const huge = await api.call('PUT', `/v1/indexes/${index}/merchandising`, { key, headers: { 'content-type': 'application/json' }, rawBody: `{"rules": [], "x": "${'a'.repeat(9 * 1024 * 1024)}"}` });
      expect(huge.status).toBe(413);
      // nothing of the refused writes was stored
      expect((await api.call('GET', `/v1/indexes/${index}/merchandising`, { key })).body).toEqual({ rules: [] });
    });

    it('expands queries with schema synonyms, marks what only a synonym found, and validates them', async () => {
      const before = await ac('zorblat');
      expect(before.suggestions.filter((s) => /otterbox/i.test(s.title))).toHaveLength(0);
      const bad = await api.call<{ detail: Issue[] }>('PUT', `/v1/indexes/${index}/schema`, { key, body: { synonyms: [['zorblat']] } });
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0]!.loc.slice(0, 3)).toEqual(['body', 'synonyms', 0]);
      expect(bad.body.detail[0]!.msg).toContain('equivalent terms');
      const tooMany = await api.call<{ detail: Issue[] }>('PUT', `/v1/indexes/${index}/schema`, { key, body: { synonyms: Array.from({ length: 5001 }, (_, i) => [`a${i}`, `b${i}`]) } });
      expect(tooMany.status).toBe(422);
      expect(tooMany.body.detail[0]!.loc).toEqual(['body', 'synonyms']);
      expect((await api.call('PUT', `/v1/indexes/${index}/schema`, { key: pub, body: { synonyms: [] } })).status).toBe(403);
      const noWords = await api.call<{ detail: Issue[] }>('PUT', `/v1/indexes/${index}/schema`, { key, body: { synonyms: [['zorblat', '???']] } });
      expect(noWords.status).toBe(422);
      expect(noWords.body.detail[0]!.loc).toEqual(['body', 'synonyms', 0, 1]);
      const schema = { synonyms: [['zorblat', 'otterbox'], { from: 'fon', to: ['phone'] }] };
      const put = await api.call('PUT', `/v1/indexes/${index}/schema`, { key, body: schema });
      expect(put.status).toBe(200);
      expect((await api.call('GET', `/v1/indexes/${index}/schema`, { key })).body).toEqual(schema);
      const after = await ac('zorblat', '&debug=true');
      expect(after.suggestions.length).toBeGreaterThan(0);
      for (const s of after.suggestions) {
        expect(s.title).toMatch(/otterbox/i);
        expect(s.metadata?.synonym).toEqual({ from: 'zorblat', to: 'otterbox' });
      }
      const reading = after.debug!.ranking!.synonyms[0]!;
      expect(reading).toMatchObject({ from: 'zorblat', to: 'otterbox', query: 'otterbox' });
      expect(reading.hits).toBeGreaterThan(0);
      // scored x0.85 of the direct query
      const direct = await ac('otterbox');
      const first = after.suggestions[0]!;
      const same = direct.suggestions.find((s) => s.id === first.id);
      if (same) expect(first.score).toBeCloseTo(same.score * 0.85, 2);
      // the typed word still counts: documents the query found directly carry no synonym mark
      const both = await ac('otterbox zorblat');
      expect(both.suggestions.length).toBeGreaterThan(0);
      // one-way: "phone" does not expand to "fon"
      expect((await ac('phone', '&debug=true')).debug!.ranking!.synonyms).toEqual([]);
      // typeahead does not expand synonyms
      const ta = await api.call<Body>('GET', `/v1/typeahead?index=${index}&query=zorblat`, { key: pub });
      expect(ta.body.suggestions.filter((s) => /otterbox/i.test(s.title))).toHaveLength(0);
    });

    it('boosts and buries by attribute and hides by id, visible on the next query', async () => {
      const plain = await ac('case', '&limit=10');
      expect(plain.suggestions.length).toBe(10);
      // cached on single node: the PUT must change the answer anyway
      await ac('case', '&limit=10');
      const tech21 = docs.filter((d) => d.manufacturer.toLowerCase() === 'tech21').map((d) => d.id);
      expect(ids(plain).filter((id) => tech21.includes(id)).length).toBeLessThan(10);
      // attribute values compare case-insensitively
      expect((await putRules([{ id: 'up', action: 'boost', target: { field: 'manufacturer', values: ['TECH21'] }, factor: 50, when: { contains: 'case' } }])).status).toBe(200);
      const boosted = await ac('case', '&limit=10');
      expect(ids(boosted).every((id) => tech21.includes(id))).toBe(true);
      expect(boosted.suggestions[0]!.metadata?.merchandised).toEqual([{ id: 'up', action: 'boost', factor: 50 }]);
      // `contains` is by whole words: "cases" is another word, and "phone" does not contain "case"
      const other = await ac('phone', '&limit=10');
      for (const s of other.suggestions) expect(s.metadata?.merchandised).toBeUndefined();

      const top = plain.suggestions[0]!.id;
      expect((await putRules([{ id: 'down', action: 'bury', target: { ids: [top] }, factor: 0.01 }])).status).toBe(200);
      const buried = await ac('case', '&limit=10');
      expect(buried.suggestions[0]!.id).not.toBe(top);

      expect((await putRules([{ id: 'gone', action: 'hide', target: { ids: [top] } }])).status).toBe(200);
      const hidden = await ac('case', '&limit=10&debug=true');
      expect(ids(hidden)).not.toContain(top);
      expect(hidden.suggestions).toHaveLength(10);
      expect(hidden.debug!.ranking!.rules).toEqual([{ id: 'gone', action: 'hide', status: 'applied', hidden: 1 }]);
      for (const mode of ['hybrid', 'vector_only', 'fts_rerank']) expect(ids(await ac('case', `&limit=10&mode=${mode}`)), mode).not.toContain(top);
      // typeahead honours hides of its product suggestions
      const title = docs.find((d) => d.id === top)!.title;
      const ta = await api.call<Body>('GET', `/v1/typeahead?index=${index}&query=${encodeURIComponent(title.slice(0, 40))}&limit=50`, { key: pub });
      expect(ta.status).toBe(200);
      expect(ta.body.suggestions.map((s) => s.id)).not.toContain(top);
      expect((await putRules([])).status).toBe(200);
      expect(ids(await ac('case', '&limit=10'))).toEqual(ids(plain));
    });

    it('pins documents at positions across the parts, for the query in `when` only', async () => {
      const plain = await ac('galaxy', '&limit=10');
      // documents from anywhere in the catalog (with several parts they live in different parts)
      const far = [docs[1400]!.id, docs[700]!.id];
      const third = plain.suggestions[5]!.id;
      const rules = [
        { id: 'promo', action: 'pin', target: { ids: far }, position: 1, when: { query: 'Galaxy' } },
        { id: 'lift', action: 'pin', target: { ids: [third] }, position: 3, when: { query: 'galaxy' } },
      ];
      expect((await putRules(rules)).status).toBe(200);
      const pinned = await ac('galaxy', '&limit=10&debug=true');
      expect(ids(pinned).slice(0, 3)).toEqual([...far, third]);
      expect(pinned.suggestions).toHaveLength(10);
      expect(pinned.suggestions[0]!.metadata?.merchandised).toEqual([{ id: 'promo', action: 'pin', position: 1 }]);
      expect(pinned.suggestions[2]!.score).toBe(plain.suggestions[5]!.score);
      expect(pinned.debug!.ranking!.pins).toEqual([
        { id: far[0], rule: 'promo', position: 1 },
        { id: far[1], rule: 'promo', position: 2 },
        { id: third, rule: 'lift', position: 3 },
      ]);
      // the rest keeps its order
      expect(ids(pinned).slice(3)).toEqual(ids(plain).filter((id) => id !== third).slice(0, 7));
      // another query: no pin
      expect(ids(await ac('galaxy s7', '&limit=10'))).not.toContain(far[0]);
      // filters still apply to pinned documents
      const price = docs[1400]!.raw.price as number;
      const filtered = await ac('galaxy', `&limit=10&filters=${encodeURIComponent(JSON.stringify({ price: { gt: price } }))}`);
      expect(ids(filtered)).not.toContain(far[0]);
      // hide beats pin; the pin's other document moves up, the other pin keeps its position
      expect((await putRules([...rules, { id: 'no', action: 'hide', target: { ids: [far[0]] } }])).status).toBe(200);
      const rest = ids(plain).filter((id) => id !== third && id !== far[1]);
      expect(ids(await ac('galaxy', '&limit=10')).slice(0, 4)).toEqual([far[1], rest[0], third, rest[1]]);
      // limit 1 keeps the first pin only
      expect(ids(await ac('galaxy', '&limit=1'))).toEqual([far[1]]);
      // the QUERY variant applies the same rules
      const q = await api.call<Body>('POST', '/v1/autocomplete', { key: pub, headers: { 'x-http-method-override': 'QUERY' }, body: { index, query: 'galaxy', limit: 3 } });
      expect(q.status).toBe(200);
      expect(q.body.suggestions.map((s) => s.id)).toEqual([far[1], rest[0], third]);
    });

    it('a PUT through one router reaches every router', async () => {
      const urls = target().urls;
      if (urls.length < 2) return;
      const other = new ApiClient(urls[1]!);
      const top = (await ac('galaxy', '&limit=3')).suggestions[0]!.id;
      expect((await putRules([{ id: 'away', action: 'hide', target: { ids: [top] } }])).status).toBe(200);
      await waitFor(
        async () => {
          const r = await other.call<Body>('GET', `/v1/autocomplete?index=${index}&query=galaxy&limit=3`, { key: pub });
          return r.status === 200 && !ids(r.body).includes(top);
        },
        10_000,
        'the second router to apply the rule',
      );
      expect((await putRules([])).status).toBe(200);
    });

    it('pins the best match of an attribute and honours enabled and the time window', async () => {
      const now = Date.now();
      const rules = [
        { id: 'brand-pin', action: 'pin', target: { field: 'manufacturer', values: ['Belkin'] }, position: 1, when: { contains: 'cable' } },
        { id: 'off', action: 'hide', target: { field: 'manufacturer', values: ['Belkin'] }, enabled: false },
        { id: 'soon', action: 'hide', target: { field: 'manufacturer', values: ['Belkin'] }, starts_at: new Date(now + 3_600_000).toISOString() },
        { id: 'past', action: 'hide', target: { field: 'manufacturer', values: ['Belkin'] }, ends_at: new Date(now - 3_600_000).toISOString() },
      ];
      expect((await putRules(rules)).status).toBe(200);
      const r = await ac('hdmi cable', '&limit=5&debug=true');
      const first = r.suggestions[0]!;
      expect(docs.find((d) => d.id === first.id)!.manufacturer).toBe('Belkin');
      expect(first.metadata?.merchandised?.[0]).toMatchObject({ id: 'brand-pin', action: 'pin', position: 1 });
      expect(Object.fromEntries(r.debug!.ranking!.rules.map((x) => [x.id, x.status]))).toEqual({ 'brand-pin': 'applied', off: 'disabled', soon: 'not_started', past: 'ended' });
      expect(r.debug!.ranking!.config_version).toMatch(/^[A-Za-z0-9_-]{16}$/);
      expect((await putRules([])).status).toBe(200);
    });
  });
}
