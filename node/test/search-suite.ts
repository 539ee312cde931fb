// End-to-end tests of typeahead and autocomplete over real HTTP, on real Best Buy products:
// every parameter and status of the routes, the response shape ARCHITECTURE.md fixes, writes
// visible to the next query (cache included), and the same answers from an index split in parts.
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, untilSearchable, waitFor } from './api-client.js';
import type { SuiteTarget } from './api-suite.js';

interface Product {
  objectID?: string;
  name: string;
  description?: string;
  brand?: string;
  categories?: string[];
  price?: number;
  popularity?: number;
  image?: string;
}

export function bestBuyDocuments(): { id: string; title: string; desc: string; manufacturer: string; raw: Record<string, unknown> }[] {
  const products = JSON.parse(readFileSync(new URL('../../../shared/data/bestbuy_products_3291.json', import.meta.url), 'utf8')) as Product[];
  return products.map((p, i) => ({
    id: `bb-${i}`,
    title: p.name,
    desc: p.description ?? '',
    manufacturer: p.brand ?? '',
    raw: { category: (p.categories ?? []).join(' > '), price: p.price ?? 0, popularity: p.popularity ?? 0, image: p.image ?? '' },
  }));
}

type Issue = { loc: (string | number)[] };
interface SuggestBody {
  took_ms: number;
  query: string;
  original_query: string;
  normalized_query: string;
  corrected_query: string | null;
  mode: string;
  index: string;
  suggestions: { id: string; type: string; title: string; score: number; [k: string]: unknown }[];
  debug: null | Record<string, unknown>;
}

export function registerSearchSuite(name: string, target: () => SuiteTarget, opts: { parts: number }): void {
  describe(name, () => {
    let api: ApiClient;
    let key: string;
    let pub: string;
    const tenant = `search-${Math.random().toString(36).slice(2, 8)}`;
    const index = 'bestbuy';
    const q = (path: string, k = pub) => api.call<SuggestBody>('GET', path, { key: k });

    beforeAll(async () => {
      const t = target();
      api = new ApiClient(t.urls[0]!);
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: tenant, name: 'Search', plan: 'pro' } })).status).toBe(200);
      key = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      pub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      const created = await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Best Buy', parts: opts.parts } });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const docs = bestBuyDocuments();
      for (let i = 0; i < docs.length; i += 1000) {
        const r = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: docs.slice(i, i + 1000) } });
        expect(r.status).toBe(200);
      }
      // every part's engine is built from the stored documents before the assertions start (a
      // query waits for that at most SUGGEST_LOAD_WAIT_MS, then answers without the part)
      await untilSearchable(api, key, index);
    }, 180_000);

    it('completes a brand prefix and a multi-word prefix with the fixed response shape', async () => {
      const r = await q(`/v1/typeahead?index=${index}&query=sams`);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ query: 'sams', original_query: 'sams', corrected_query: null, mode: 'typeahead', index, debug: null });
      expect(typeof r.body.took_ms).toBe('number');
      expect(r.body.suggestions.length).toBeGreaterThan(0);
      expect(r.body.suggestions.length).toBeLessThanOrEqual(10);
      expect(r.body.suggestions[0]!.title.toLowerCase()).toContain('samsung');
      for (const s of r.body.suggestions) expect(Object.keys(s).sort()).toEqual(['id', 'score', 'title', 'type']);
      const scores = r.body.suggestions.map((s) => s.score);
      expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      const multi = await q(`/v1/typeahead?index=${index}&query=${encodeURIComponent('samsung gal')}`);
      expect(multi.body.suggestions.some((s) => /samsung galaxy/i.test(s.title))).toBe(true);
    });

    it('corrects a misspelled query from the index vocabulary', async () => {
      const r = await q(`/v1/typeahead?index=${index}&query=iphne`);
      expect(r.status).toBe(200);
      expect(r.body.corrected_query).toBe('iphone');
      expect(r.body.original_query).toBe('iphne');
      expect(r.body.suggestions.some((s) => /iphone/i.test(s.title))).toBe(true);
    });

    it('honours limit and its bounds', async () => {
      const three = await q(`/v1/typeahead?index=${index}&query=a&limit=3`);
      expect(three.body.suggestions.length).toBe(3);
      for (const bad of ['0', '51', 'x', '-1']) {
        const r = await api.call<{ detail: Issue[] }>('GET', `/v1/typeahead?index=${index}&query=a&limit=${bad}`, { key: pub });
        expect(r.status, bad).toBe(422);
        expect(r.body.detail[0]!.loc).toEqual(['query', 'limit']);
      }
      const missing = await api.call<{ detail: Issue[] }>('GET', `/v1/typeahead?index=${index}`, { key: pub });
      expect(missing.status).toBe(422);
      expect(missing.body.detail[0]!.loc).toEqual(['query', 'query']);
      const empty = await api.call('GET', `/v1/typeahead?index=${index}&query=`, { key: pub });
      expect(empty.status).toBe(422);
    });

    it('answers 404 for an unknown index and uses `default` when none is named', async () => {
      const r = await api.call<{ code: string }>('GET', '/v1/typeahead?index=nope&query=a', { key: pub });
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('index_not_found');
      const d = await api.call<{ code: string; detail: string }>('GET', '/v1/typeahead?query=a', { key: pub });
      expect(d.status).toBe(404);
      expect(d.body.detail).toContain("'default'");
    });

    it('serves autocomplete suggestion objects, filters and the debug/profile payloads', async () => {
      const r = await q(`/v1/autocomplete?index=${index}&query=galaxy&limit=5`);
      expect(r.status).toBe(200);
      expect(r.body.suggestions.length).toBe(5);
      const s = r.body.suggestions[0]!;
      for (const k of ['id', 'type', 'title', 'subtitle', 'description', 'url', 'image', 'price', 'currency', 'score', 'metadata']) expect(s).toHaveProperty(k);
      expect(Array.isArray((s.metadata as { concepts: unknown }).concepts)).toBe(true);
      expect(r.body.debug).toBeNull();

      const filtered = await q(`/v1/autocomplete?index=${index}&query=galaxy&limit=10&filters=${encodeURIComponent(JSON.stringify({ price: { gte: 500 } }))}`);
      expect(filtered.status).toBe(200);
      expect(filtered.body.suggestions.length).toBeGreaterThan(0);
      for (const x of filtered.body.suggestions) expect(x.price as number).toBeGreaterThanOrEqual(500);
      const exact = await q(`/v1/autocomplete?index=${index}&query=phone&filters=${encodeURIComponent(JSON.stringify({ manufacturer: ['Samsung'] }))}`);
      expect(exact.status).toBe(200);
      for (const x of exact.body.suggestions) expect(String(x.subtitle) + JSON.stringify(x.metadata)).toMatch(/samsung/i);

      const bad = await api.call<{ detail: Issue[] }>('GET', `/v1/autocomplete?index=${index}&query=a&filters=${encodeURIComponent('{"price": {"between": 3}}')}`, { key: pub });
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0]!.loc.slice(0, 2)).toEqual(['query', 'filters']);
      const notJson = await api.call('GET', `/v1/autocomplete?index=${index}&query=a&filters=nope`, { key: pub });
      expect(notJson.status).toBe(422);
      const badMode = await api.call<{ detail: Issue[] }>('GET', `/v1/autocomplete?index=${index}&query=a&mode=magic`, { key: pub });
      expect(badMode.status).toBe(422);
      expect(badMode.body.detail[0]!.loc).toEqual(['query', 'mode']);

      interface PartProfile { part: number; ms: number; thread: string; engine_ms: number; stages: Record<string, number> }
      const profileOf = (body: SuggestBody) => (body.debug as { profile: { parts: PartProfile[]; total_ms: number; scatter_gather_ms: number } }).profile;
      const checkParts = (profile: ReturnType<typeof profileOf>, stages: string[]) => {
        expect(profile.parts.map((p) => p.part).sort()).toEqual(Array.from({ length: opts.parts }, (_, i) => i));
        for (const p of profile.parts) {
          expect(p.thread).toMatch(/^(event loop|query thread \d+)$/);
          expect(Object.keys(p.stages)).toEqual(expect.arrayContaining(stages));
          const sum = Object.values(p.stages).reduce((a, b) => a + b, 0);
          expect(Math.abs(sum - p.engine_ms)).toBeLessThan(0.05);
          // the engine's time is part of the part's round trip, which is part of the whole
          expect(p.engine_ms).toBeLessThanOrEqual(p.ms + 0.01);
          expect(p.ms).toBeLessThanOrEqual(profile.total_ms + 0.01);
        }
      };
      for (let i = 0; i < 2; i++) {
        // asked twice: a profiled answer is never served from the cache
        const prof = await q(`/v1/autocomplete?index=${index}&query=galaxy&profile=true`);
        expect(prof.body.debug).not.toBeNull();
        checkParts(profileOf(prof.body), ['analyze', 'lexical_strict', 'render']);
      }
      const hybrid = await q(`/v1/autocomplete?index=${index}&query=galxy&mode=hybrid&profile=true`);
      checkParts(profileOf(hybrid.body), ['embed', 'fuse']);
      const ta = await q(`/v1/typeahead?index=${index}&query=samsung%20gal&profile=true`);
      expect(ta.status).toBe(200);
      checkParts(profileOf(ta.body), ['analyze', 'tables', 'rank']);
      expect((await q(`/v1/typeahead?index=${index}&query=samsung%20gal`)).body.debug).toBeNull();
      expect((await api.call('GET', `/v1/typeahead?index=${index}&query=sams&profile=maybe`, { key: pub })).status).toBe(422);
    });

    it('shows an acknowledged write to the next query, cached or not', async () => {
      const before = await q(`/v1/typeahead?index=${index}&query=zyxwq`);
      expect(before.body.suggestions).toHaveLength(0);
      const again = await q(`/v1/typeahead?index=${index}&query=zyxwq`);
      expect(again.body.suggestions).toHaveLength(0);
      const w = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: [{ id: 'new-1', title: 'Zyxwquartz Speaker', desc: '', manufacturer: 'Zyx', raw: {} }] } });
      expect(w.status).toBe(200);
      const after = await q(`/v1/typeahead?index=${index}&query=zyxwq`);
      expect(after.body.suggestions.some((s) => /zyxwquartz/i.test(s.title))).toBe(true);
      const del = await api.call('DELETE', `/v1/indexes/${index}/documents/new-1`, { key });
      expect(del.status).toBe(200);
      const gone = await q(`/v1/typeahead?index=${index}&query=zyxwquartz%20spe`);
      expect(gone.body.suggestions.some((s) => s.id === 'new-1')).toBe(false);
      const bypass = await api.call<SuggestBody>('GET', `/v1/typeahead?index=${index}&query=sams&bypass_cache=true`, { key: pub, headers: { 'X-Bypass-Cache': '1' } });
      expect(bypass.status).toBe(200);
    });

    it('answers the QUERY variant (method override) with 400 and 415 for bad bodies', async () => {
      const headers = { 'x-http-method-override': 'QUERY' };
      const ok = await api.call<SuggestBody>('POST', '/v1/typeahead', { key: pub, headers, body: { index, query: 'sams', limit: 2 } });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body.suggestions).toHaveLength(2);
      const ac = await api.call<SuggestBody>('POST', '/v1/autocomplete', { key: pub, headers, body: { index, query: 'galaxy' } });
      expect(ac.status).toBe(200);
      const notObject = await api.call('POST', '/v1/typeahead', { key: pub, headers: { ...headers, 'content-type': 'application/json' }, rawBody: '[1,2]' });
      expect(notObject.status).toBe(400);
      const wrongType = await api.call('POST', '/v1/typeahead', { key: pub, headers: { ...headers, 'content-type': 'text/plain' }, rawBody: 'sams' });
      expect(wrongType.status).toBe(415);
    });

    it('keeps tenants apart: another tenant cannot query this index', async () => {
      const t = target();
      const other = `other-${Math.random().toString(36).slice(2, 8)}`;
      await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: other, name: 'Other', plan: 'free' } });
      const otherKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${other}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      const r = await api.call('GET', `/v1/typeahead?index=${index}&query=sams`, { key: otherKey });
      expect(r.status).toBe(404);
      const foreign = await api.call('GET', `/v1/typeahead?index=${index}&query=sams&tenant_id=${tenant}`, { key: otherKey });
      expect(foreign.status).toBe(403);
      const personal = await api.call<{ code: string }>('GET', `/v1/autocomplete?index=${index}&query=sams&user_id=u1&tenant_id=${other}`, { key: otherKey });
      expect(personal.status).toBe(403);
      expect(personal.body.code).toBe('plan_required');
    });
  });
}
