// End-to-end tests of POST /v1/predict over real HTTP on real Best Buy products plus a few
// documents of the other prediction types: every request field, default and status, the
// response shape, the schema's predict object (enabled, default_types, action_mappings,
// intent_rules), allowed types, include flags, plan gating, tenancy and hostile input.
import { beforeAll, describe, expect, it } from 'vitest';
import { PREDICT_MODEL } from '../../router/predict-coefficients.js';
import { confidenceOf, primaryConfidence } from '../../router/predict-model.js';
import { ApiClient, untilSearchable, waitFor } from './api-client.js';
import type { SuiteTarget } from './api-suite.js';
import { bestBuyDocuments } from './search-suite.js';

type Issue = { loc: (string | number)[]; msg: string; type: string };
interface Action {
  kind: string;
  target: string;
  method: string;
}
interface Prediction {
  type: string;
  label: string;
  action: Action;
  entity: { id: string; object: string };
  confidence: number;
  reason_codes: string[];
}
interface PredictBody {
  took_ms: number;
  query: string;
  original_query: string;
  normalized_query: string;
  corrected_query: string | null;
  mode: string;
  index: string;
  prediction: Prediction | null;
  alternatives: Prediction[];
  supporting_suggestions: { id: string; type: string; title: string; score: number }[];
  debug: null | { candidates: { type: string; features: Record<string, number> | null; log_odds: number; confidence: number; source: string; reason_codes: string[] }[]; context: unknown; allowed_types: string[] };
}

const TYPES = ['destination', 'intent', 'product', 'category', 'content', 'workflow'];
const KINDS = ['navigate', 'search', 'apply_filter', 'start_workflow'];
const REASONS = [
  'spell_corrected', 'intent_match', 'exact_match', 'prefix_match', 'word_match', 'partial_match', 'popular_suggestion', 'top_document',
  'behavioral_boost', 'synonym', 'merchandised', 'personalized', 'action_mapping',
];

/** Documents that are not products: a help article, a store page and a workflow. */
const EXTRA_DOCS = [
  { id: 'help-returns', title: 'Returns and exchanges policy', desc: 'How to return a product', manufacturer: '', raw: { predict_type: 'content', url: '/help/returns' } },
  { id: 'page-stores', title: 'Store locator', desc: 'Find a store near you', manufacturer: '', raw: { predict_type: 'destination', url: '/stores' } },
  { id: 'wf-tradein', title: 'Trade-in your old phone', desc: 'Start a trade-in', manufacturer: '', raw: { predict_type: 'workflow' } },
];

function expectPrediction(p: Prediction, where: string): void {
  expect(TYPES, where).toContain(p.type);
  expect(typeof p.label, where).toBe('string');
  expect(KINDS, where).toContain(p.action.kind);
  expect(p.action.method, where).toBe(p.action.kind === 'start_workflow' ? 'POST' : 'GET');
  expect(p.action.target.length, where).toBeGreaterThan(0);
  expect(typeof p.entity.id, where).toBe('string');
  expect(typeof p.entity.object, where).toBe('string');
  expect(p.confidence, where).toBeGreaterThanOrEqual(0);
  expect(p.confidence, where).toBeLessThanOrEqual(1);
  for (const r of p.reason_codes) expect(REASONS, where).toContain(r);
}

export function registerPredictSuite(name: string, target: () => SuiteTarget, opts: { parts: number }): void {
  describe(name, () => {
    let api: ApiClient;
    let key: string;
    let pub: string;
    const tenant = `predict-${Math.random().toString(36).slice(2, 8)}`;
    const index = 'bestbuy';
    const predict = (body: unknown, k?: string) => api.call<PredictBody>('POST', '/v1/predict', { key: k ?? pub, body });
    const bad = (body: unknown) => api.call<{ detail: Issue[] }>('POST', '/v1/predict', { key: pub, body });
    const putSchema = (schema: unknown) => api.call('PUT', `/v1/indexes/${index}/schema`, { key, body: schema });

    beforeAll(async () => {
      const t = target();
      api = new ApiClient(t.urls[0]!);
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: tenant, name: 'Predict', plan: 'pro' } })).status).toBe(200);
      key = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      pub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      const created = await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Best Buy', parts: opts.parts } });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const docs = [...bestBuyDocuments(), ...EXTRA_DOCS];
      for (let i = 0; i < docs.length; i += 1000) {
        const r = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: docs.slice(i, i + 1000) } });
        expect(r.status).toBe(200);
      }
      // every part's engine is built from the stored documents before the assertions start (a
      // query waits for that at most SUGGEST_LOAD_WAIT_MS, then answers without the part)
      await untilSearchable(api, key, index);
    }, 180_000);

    it('answers with the documented shape and defaults: 5 alternatives, suggestions, no debug', async () => {
      const r = await predict({ index, query: 'sams' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ query: 'sams', original_query: 'sams', corrected_query: null, mode: 'predict', index, debug: null });
      expect(typeof r.body.took_ms).toBe('number');
      expect(r.body.prediction).not.toBeNull();
      expectPrediction(r.body.prediction!, 'primary');
      expect(r.body.prediction!.label.toLowerCase()).toContain('samsung');
      expect(r.body.alternatives).toHaveLength(5);
      r.body.alternatives.forEach((a, i) => expectPrediction(a, `alternative ${i}`));
      const confidences = [r.body.prediction!.confidence, ...r.body.alternatives.map((a) => a.confidence)];
      expect([...confidences].sort((a, b) => b - a)).toEqual(confidences);
      expect(r.body.supporting_suggestions.length).toBeGreaterThan(0);
      expect(r.body.supporting_suggestions.length).toBeLessThanOrEqual(10);
      for (const s of r.body.supporting_suggestions) {
        expect(Object.keys(s).sort()).toEqual(['id', 'score', 'title', 'type']);
        expect(s.score).toBeGreaterThanOrEqual(0);
        expect(s.score).toBeLessThanOrEqual(1);
      }
      expect(r.body.supporting_suggestions[0]!.score).toBe(1);
      // the primary and alternatives are distinct
      const seen = new Set([r.body.prediction!, ...r.body.alternatives].map((p) => `${p.type}|${p.label.toLowerCase()}`));
      expect(seen.size).toBe(6);
    });

    it('publishes its defaults, bounds, types and statuses in the OpenAPI document', async () => {
      type Schema = { properties: Record<string, { default?: unknown; minimum?: number; maximum?: number; properties?: Record<string, { default?: unknown }>; items?: unknown }>; required?: string[] };
      const doc = (await api.call<{ paths: Record<string, Record<string, { responses: Record<string, unknown>; description: string }>>; components: { schemas: Record<string, Schema> } }>('GET', '/.well-known/openapi.json')).body;
      const req = doc.components.schemas['PredictRequest']!;
      expect(req.required).toEqual(['query']);
      expect(req.properties['limit']).toMatchObject({ default: 5, minimum: 0, maximum: 20 });
      expect(req.properties['index']).toMatchObject({ default: 'default' });
      expect(req.properties['include']!.properties).toMatchObject({ alternatives: { default: true }, supporting_suggestions: { default: true }, debug: { default: false } });
      expect(JSON.stringify(req.properties['allowed_types']!.items)).toContain('workflow');
      expect(Object.keys(req.properties['context']!.properties!).sort()).toEqual(['device', 'locale', 'page_type', 'surface']);
      const op = doc.paths['/v1/predict']!['post']!;
      for (const status of ['200', '401', '403', '404', '409', '422']) expect(Object.keys(op.responses), status).toContain(status);
      expect(op.description).toContain('predict_disabled');
      expect(JSON.stringify(doc.components.schemas['PredictResponse'])).toContain('behavioral_boost');
    });

    it('recalibrates the primary as the best of its candidates and shows no alternative above it', async () => {
      let moved = 0;
      for (const query of ['sams', 'samsung galaxy', 'iphone se', 'hdmi', 'wireless headph']) {
        const r = await predict({ index, query, limit: 20, include: { debug: true } });
        expect(r.status).toBe(200);
        const p = r.body.prediction!;
        const [first, ...rest] = r.body.debug!.candidates;
        // a scored candidate with no behaviour or merchandising (nothing clicked or ruled yet)
        expect(first!.features, query).not.toBeNull();
        expect(p.reason_codes, query).not.toContain('behavioral_boost');
        const expected = primaryConfidence(first!.log_odds, 0);
        expect(p.confidence, query).toBeCloseTo(expected, 3);
        expect(p.confidence, query).toBeLessThanOrEqual(PREDICT_MODEL.primary_calibration.at(-1)![1]);
        if (Math.abs(expected - confidenceOf(first!.log_odds)) > 0.005) moved++;
        for (const a of r.body.alternatives) expect(a.confidence, query).toBeLessThanOrEqual(p.confidence);
        // every other candidate keeps the model's probability, capped at the primary's
        for (const c of rest) if (c.features) expect(c.confidence, query).toBeCloseTo(Math.min(confidenceOf(c.log_odds), p.confidence), 3);
      }
      expect(moved).toBeGreaterThan(0);
    });

    it('maps each type to its action: destination, intent, product, category, content, workflow', async () => {
      const brand = await predict({ index, query: 'samsung', allowed_types: ['destination'] });
      expect(brand.body.prediction).toMatchObject({ type: 'destination', label: 'Samsung', action: { kind: 'navigate', method: 'GET', target: '/brands/samsung' }, entity: { object: 'brand' } });
      const intent = await predict({ index, query: 'samsung gal', allowed_types: ['intent'] });
      expect(intent.body.prediction!.type).toBe('intent');
      expect(intent.body.prediction!.action.kind).toBe('search');
      expect(intent.body.prediction!.action.target).toMatch(/^\/search\?q=/);
      const product = await predict({ index, query: 'iphone se', allowed_types: ['product'] });
      expect(product.body.prediction!.type).toBe('product');
      expect(product.body.prediction!.action).toEqual({ kind: 'navigate', target: `/products/${product.body.prediction!.entity.id}`, method: 'GET' });
      expect(product.body.prediction!.entity.object).toBe('product');
      for (const a of product.body.alternatives) expect(a.type).toBe('product');
      const category = await predict({ index, query: 'cell pho', allowed_types: ['category'] });
      expect(category.body.prediction!.type).toBe('category');
      expect(category.body.prediction!.action.kind).toBe('apply_filter');
      expect(decodeURIComponent(category.body.prediction!.action.target)).toContain('"category"');
      const content = await predict({ index, query: 'returns policy', allowed_types: ['content'] });
      expect(content.body.prediction).toMatchObject({ type: 'content', entity: { id: 'help-returns', object: 'document' }, action: { kind: 'navigate', target: '/content/help-returns', method: 'GET' } });
      const workflow = await predict({ index, query: 'trade-in', allowed_types: ['workflow'] });
      expect(workflow.body.prediction).toMatchObject({ type: 'workflow', entity: { id: 'wf-tradein' }, action: { kind: 'start_workflow', target: '/workflows/wf-tradein', method: 'POST' } });
      const store = await predict({ index, query: 'store locator', allowed_types: ['destination'] });
      expect(store.body.prediction).toMatchObject({ type: 'destination', entity: { id: 'page-stores' }, action: { kind: 'navigate', target: '/pages/page-stores' } });
      const several = await predict({ index, query: 'samsung', allowed_types: ['destination', 'category'], limit: 20 });
      for (const p of [several.body.prediction!, ...several.body.alternatives]) expect(['destination', 'category']).toContain(p.type);
    });

    it('spell-corrects the query and says so', async () => {
      const r = await predict({ index, query: 'iphne' });
      expect(r.status).toBe(200);
      expect(r.body.corrected_query).toBe('iphone');
      expect(r.body.query).toBe('iphone');
      expect(r.body.original_query).toBe('iphne');
      expect(r.body.prediction!.reason_codes).toContain('spell_corrected');
      expect(r.body.prediction!.label.toLowerCase()).toContain('iphone');
    });

    it('honours limit, its bounds and its default', async () => {
      const none = await predict({ index, query: 'sams', limit: 0 });
      expect(none.status).toBe(200);
      expect(none.body.alternatives).toEqual([]);
      expect(none.body.prediction).not.toBeNull();
      const two = await predict({ index, query: 'sams', limit: 2 });
      expect(two.body.alternatives).toHaveLength(2);
      const max = await predict({ index, query: 'sams', limit: 20 });
      expect(max.status).toBe(200);
      expect(max.body.alternatives.length).toBeGreaterThan(5);
      expect(max.body.alternatives.length).toBeLessThanOrEqual(20);
      for (const v of [21, -1, 2.5, 'x', null]) {
        const r = await bad({ index, query: 'sams', limit: v });
        expect(r.status, String(v)).toBe(422);
        expect(r.body.detail[0]!.loc).toEqual(['body', 'limit']);
      }
    });

    it('toggles alternatives, supporting suggestions and debug with include', async () => {
      const off = await predict({ index, query: 'sams', include: { alternatives: false, supporting_suggestions: false } });
      expect(off.status).toBe(200);
      expect(off.body.alternatives).toEqual([]);
      expect(off.body.supporting_suggestions).toEqual([]);
      expect(off.body.prediction).not.toBeNull();
      expect(off.body.debug).toBeNull();
      const dbg = await predict({ index, query: 'sams', include: { debug: true }, context: { surface: 'search_box', page_type: 'home', locale: 'en-US', device: 'mobile' } });
      expect(dbg.status).toBe(200);
      expect(dbg.body.debug).not.toBeNull();
      expect(dbg.body.debug!.context).toEqual({ surface: 'search_box', page_type: 'home', locale: 'en-US', device: 'mobile' });
      expect(dbg.body.debug!.allowed_types.sort()).toEqual([...TYPES].sort());
      const cands = dbg.body.debug!.candidates;
      expect(cands.length).toBeGreaterThan(5);
      expect(cands[0]!.confidence).toBe(dbg.body.prediction!.confidence);
      expect(Object.keys(cands[0]!.features!)).toContain('coverage');
      for (const v of [{ debug: 'yes' }, { alternatives: 1 }, { extra: true }, 'all']) {
        const r = await bad({ index, query: 'sams', include: v });
        expect(r.status, JSON.stringify(v)).toBe(422);
        expect(r.body.detail[0]!.loc[1]).toBe('include');
      }
    });

    it('validates allowed_types, context, query, filters and unknown fields', async () => {
      const cases: [unknown, (string | number)[]][] = [
        [{ index, query: 'sams', allowed_types: ['spaceship'] }, ['body', 'allowed_types', 0]],
        [{ index, query: 'sams', allowed_types: [] }, ['body', 'allowed_types']],
        [{ index, query: 'sams', allowed_types: ['product', 'product'] }, ['body', 'allowed_types']],
        [{ index, query: 'sams', allowed_types: 'product' }, ['body', 'allowed_types']],
        [{ index, query: 'sams', context: { planet: 'mars' } }, ['body', 'context', 'planet']],
        [{ index, query: 'sams', context: { device: 3 } }, ['body', 'context', 'device']],
        [{ index, query: '' }, ['body', 'query']],
        [{ index, query: 'x'.repeat(513) }, ['body', 'query']],
        [{ index }, ['body', 'query']],
        [{ index, query: 7 }, ['body', 'query']],
        [{ index, query: 'sams', colour: 'red' }, ['body', 'colour']],
        [{ index: 'bad index!', query: 'sams' }, ['body', 'index']],
        [{ index, query: 'sams', filters: { price: { between: 3 } } }, ['body', 'filters']],
        [{ index, query: 'sams', user_id: '' }, ['body', 'user_id']],
        [{ index, query: 'sams', user_id: 42 }, ['body', 'user_id']],
        [{ index, query: 'sams', user_id: 'u'.repeat(257) }, ['body', 'user_id']],
        [{ index, query: 'sams', context: 'search_box' }, ['body', 'context']],
        [{ index, query: 'sams', context: null }, ['body', 'context']],
        [{ index, query: 'sams', context: { surface: 'x'.repeat(129) } }, ['body', 'context', 'surface']],
        [{ index, query: 'sams', context: { locale: ['en'] } }, ['body', 'context', 'locale']],
        [{ index, query: 'sams', context: { page_type: null } }, ['body', 'context', 'page_type']],
        [{ index, query: 'sams', allowed_types: null }, ['body', 'allowed_types']],
        [{ index, query: 'sams', allowed_types: ['Product'] }, ['body', 'allowed_types', 0]],
        [{ index, query: 'sams', filters: ['manufacturer'] }, ['body', 'filters']],
        [{ index, query: 'sams', limit: '5' }, ['body', 'limit']],
        [{ index, query: 'sams', include: null }, ['body', 'include']],
        [{ index: 7, query: 'sams' }, ['body', 'index']],
      ];
      for (const [body, loc] of cases) {
        const r = await bad(body);
        expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(422);
        expect(r.body.detail.map((d) => d.loc.slice(0, loc.length))).toContainEqual(loc);
        expect(Object.keys(r.body)).toEqual(['detail']);
        for (const d of r.body.detail) {
          expect(Object.keys(d).sort()).toEqual(['loc', 'msg', 'type']);
          expect(d.msg.length).toBeGreaterThan(0);
          expect(typeof d.type).toBe('string');
          expect(d.type.length).toBeGreaterThan(0);
        }
      }
      // an empty context is a context with nothing in it
      expect((await predict({ index, query: 'sams', context: {} })).status).toBe(200);
      const notJson = await api.call<{ detail: Issue[] }>('POST', '/v1/predict', { key: pub, headers: { 'content-type': 'application/json' }, rawBody: '{"query": "sams",' });
      expect(notJson.status).toBe(422);
      const array = await api.call('POST', '/v1/predict', { key: pub, headers: { 'content-type': 'application/json' }, rawBody: '["sams"]' });
      expect(array.status).toBe(422);
      const huge = await api.call<{ code: string }>('POST', '/v1/predict', { key: pub, headers: { 'content-type': 'application/json' }, rawBody: `{"index":"${index}","query":"${'a'.repeat(9 * 1024 * 1024)}"}` });
      expect(huge.status).toBe(413);
    });

    it('restricts documents with filters', async () => {
      const r = await predict({ index, query: 'phone', allowed_types: ['product'], filters: { manufacturer: ['Samsung'] }, limit: 10 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.prediction).not.toBeNull();
      for (const p of [r.body.prediction!, ...r.body.alternatives]) expect(p.label).toMatch(/samsung/i);
    });

    it('applies range filters, and filters the products among supporting suggestions too', async () => {
      const doc = async (id: string) => (await api.call<{ manufacturer: string; raw: { price: number } }>('GET', `/v1/indexes/${index}/documents/${encodeURIComponent(id)}`, { key })).body;
      const products = (b: PredictBody) => [b.prediction, ...b.alternatives].filter((p): p is Prediction => p !== null && p.entity.object === 'product');
      const pricey = await predict({ index, query: 'samsung', allowed_types: ['product'], filters: { price: { gte: 600 } }, limit: 10 });
      expect(pricey.status).toBe(200);
      expect(products(pricey.body).length).toBeGreaterThan(0);
      for (const p of products(pricey.body)) expect((await doc(p.entity.id)).raw.price, p.label).toBeGreaterThanOrEqual(600);
      const cheap = await predict({ index, query: 'samsung', allowed_types: ['product'], filters: { price: { lt: 50 } }, limit: 10 });
      for (const p of products(cheap.body)) expect((await doc(p.entity.id)).raw.price, p.label).toBeLessThan(50);
      // the unfiltered answer suggests products of several brands for "headphones"; the one
      // filtered to Belkin only Belkin products (and phrases)
      const open = await predict({ index, query: 'headphones' });
      const productSuggestions = (b: PredictBody) => b.supporting_suggestions.filter((x) => x.type === 'product');
      const others = async (b: PredictBody) => (await Promise.all(productSuggestions(b).map(async (x) => (await doc(x.id)).manufacturer))).filter((m) => m !== 'Belkin');
      expect((await others(open.body)).length).toBeGreaterThan(0);
      const filtered = await predict({ index, query: 'headphones', filters: { manufacturer: ['Belkin'] } });
      expect(filtered.status).toBe(200);
      expect(filtered.body.supporting_suggestions.length).toBeGreaterThan(0);
      expect(await others(filtered.body)).toEqual([]);
    });

    it('takes public, private and admin keys for the tenant they name; 403 for another tenant by header or query', async () => {
      const t = target();
      const body = { index, query: 'sams' };
      const viaPublic = await predict(body);
      expect((await predict(body, key)).body.prediction).toEqual(viaPublic.body.prediction);
      expect((await api.call('POST', '/v1/predict', { key: t.adminKey, body, headers: { 'x-tenant-id': tenant } })).status).toBe(200);
      expect((await api.call('POST', `/v1/predict?tenant_id=${tenant}`, { key: t.adminKey, body })).status).toBe(200);
      const unnamed = await api.call<{ detail: Issue[] }>('POST', '/v1/predict', { key: t.adminKey, body });
      expect(unnamed.status).toBe(422);
      expect(unnamed.body.detail[0]!.loc).toEqual(['query', 'tenant_id']);
      expect((await api.call('POST', '/v1/predict', { key: pub, body, headers: { 'x-tenant-id': tenant } })).status).toBe(200);
      const missing = await api.call<{ code: string }>('POST', '/v1/predict', { body });
      expect(missing.body.code).toBe('missing_api_key');
      const other = `pother-${Math.random().toString(36).slice(2, 8)}`;
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: other, name: 'Other', plan: 'pro' } })).status).toBe(200);
      const otherKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${other}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      for (const res of [
        await api.call<{ code: string }>('POST', '/v1/predict', { key: otherKey, body, headers: { 'x-tenant-id': tenant } }),
        await api.call<{ code: string }>('POST', `/v1/predict?tenant_id=${tenant}`, { key: otherKey, body }),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.code).toBe('forbidden_tenant');
      }
      // the same index name in another tenant is another index
      expect((await api.call('POST', '/v1/indexes', { key: otherKey, body: { index_id: index, name: 'Other' } })).status).toBe(200);
      expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key: otherKey, body: { documents: [{ id: 'o-1', title: 'Samsonite Carry-On Suitcase', desc: '', manufacturer: 'Samsonite', raw: {} }] } })).status).toBe(200);
      const theirs = await predict(body, otherKey);
      expect(theirs.status).toBe(200);
      for (const p of [theirs.body.prediction, ...theirs.body.alternatives]) if (p?.entity.object === 'product') expect(p.entity.id).toBe('o-1');
      const ours = await predict(body);
      expect([ours.body.prediction, ...ours.body.alternatives].some((p) => p?.entity.id === 'o-1')).toBe(false);
    });

    it('answers 404, 401 and 403 for unknown indexes, keys and tenants', async () => {
      const t = target();
      const unknown = await api.call<{ code: string }>('POST', '/v1/predict', { key: pub, body: { index: 'nope', query: 'sams' } });
      expect(unknown.status).toBe(404);
      expect(unknown.body.code).toBe('index_not_found');
      const dflt = await api.call<{ detail: string }>('POST', '/v1/predict', { key: pub, body: { query: 'sams' } });
      expect(dflt.status).toBe(404);
      expect(dflt.body.detail).toContain("'default'");
      expect((await api.call('POST', '/v1/predict', { body: { index, query: 'sams' } })).status).toBe(401);
      expect((await api.call('POST', '/v1/predict', { key: 'nope', body: { index, query: 'sams' } })).status).toBe(401);
      const other = `pfree-${Math.random().toString(36).slice(2, 8)}`;
      await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: other, name: 'Free', plan: 'free' } });
      const freeKey = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${other}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      expect((await predict({ index, query: 'sams' }, freeKey)).status).toBe(404);
      const foreign = await api.call<{ code: string }>('POST', '/v1/predict', { key: freeKey, body: { index, query: 'sams', tenant_id: tenant } });
      expect(foreign.status).toBe(403);
      expect(foreign.body.code).toBe('forbidden_tenant');
      // plan gating: user_id needs a paid plan
      const gated = await api.call<{ code: string }>('POST', '/v1/predict', { key: freeKey, body: { index, query: 'sams', user_id: 'u1' } });
      expect(gated.status).toBe(403);
      expect(gated.body.code).toBe('plan_required');
      const paid = await predict({ index, query: 'sams', user_id: 'u1' });
      expect(paid.status).toBe(200);
    });

    it('follows the schema: disabled -> 409, default_types, action_mappings and intent rules', async () => {
      try {
        expect((await putSchema({ predict: { enabled: false } })).status).toBe(200);
        await waitFor(async () => (await predict({ index, query: 'sams' })).status === 409, 10_000, 'predict disabled');
        const off = await api.call<{ code: string; detail: string }>('POST', '/v1/predict', { key: pub, body: { index, query: 'sams' } });
        expect(off.body.code).toBe('predict_disabled');
        expect(off.body.detail).toContain(index);

        expect((await putSchema({ predict: { enabled: true, default_types: ['category'] } })).status).toBe(200);
        await waitFor(async () => (await predict({ index, query: 'cell pho' })).body.prediction?.type === 'category', 10_000, 'default types');
        const cat = await predict({ index, query: 'cell pho' });
        for (const p of cat.body.alternatives) expect(p.type).toBe('category');
        const overridden = await predict({ index, query: 'cell pho', allowed_types: ['product'] });
        expect(overridden.body.prediction!.type).toBe('product');

        const rule = { intent: 'trade_in', match_terms: ['trade in', 'sell my phone'], target: '/trade-in/start', label: 'Start a trade-in', type: 'workflow' };
        const schema = {
          predict: {
            enabled: true,
            default_types: ['product', 'workflow', 'intent'],
            action_mappings: { product: { target_field: 'image', label_field: 'manufacturer' } },
            intent_rules: [rule, { intent: 'case_finder', match_terms: ['iphone case'], target: '/cases', label: 'Find your case', type: 'workflow' }, { intent: 'stores', match_terms: ['store near me'], target: '/stores', label: 'Find a store', type: 'destination' }],
          },
          synonyms: [['tv', 'television']],
        };
        expect((await putSchema(schema)).status).toBe(200);
        await waitFor(async () => (await predict({ index, query: 'sell my phone' })).body.prediction?.entity.object === 'intent_rule', 10_000, 'intent rules');
        const ruled = await predict({ index, query: 'sell my phone', include: { debug: true } });
        expect(ruled.body.prediction).toMatchObject({
          type: 'workflow',
          label: 'Start a trade-in',
          action: { kind: 'start_workflow', target: '/trade-in/start', method: 'POST' },
          entity: { id: 'trade_in', object: 'intent_rule' },
        });
        expect(ruled.body.prediction!.reason_codes).toContain('intent_match');
        expect(ruled.body.prediction!.confidence).toBeGreaterThan(0.85);
        // a typing prefix of a rule term matches more weakly
        const partial = await predict({ index, query: 'sell my ph', include: { debug: true } });
        const weak = [partial.body.prediction!, ...partial.body.alternatives].find((p) => p.entity.object === 'intent_rule');
        expect(weak).toBeDefined();
        expect(weak!.confidence).toBeLessThan(ruled.body.prediction!.confidence);
        // a misspelled query matches a rule through its correction
        const typo = await predict({ index, query: 'iphne case ' });
        expect(typo.body.corrected_query).toBe('iphone case');
        const viaTypo = [typo.body.prediction!, ...typo.body.alternatives].find((p) => p.entity.id === 'case_finder');
        expect(viaTypo?.reason_codes).toEqual(['spell_corrected', 'intent_match']);
        // rules of types outside allowed_types are left out; destination rules keep their target
        const productsOnly = await predict({ index, query: 'sell my phone', allowed_types: ['product'] });
        expect([productsOnly.body.prediction, ...productsOnly.body.alternatives].some((p) => p?.entity.object === 'intent_rule')).toBe(false);
        const store = await predict({ index, query: 'store near me', allowed_types: ['destination'] });
        expect(store.body.prediction).toMatchObject({ type: 'destination', action: { kind: 'navigate', target: '/stores', method: 'GET' }, entity: { id: 'stores' } });
        // action mappings: target and label from the mapped document fields
        const mapped = await predict({ index, query: 'iphone se', allowed_types: ['product'] });
        const p = mapped.body.prediction!;
        expect(p.action.kind).toBe('navigate');
        expect(p.action.target).toMatch(/^https:\/\//);
        expect(p.label).toBe('Apple');
        expect(p.reason_codes).toContain('action_mapping');
      } finally {
        expect((await putSchema({})).status).toBe(200);
      }
    });

    it('maps an action only for documents that have the mapped field; the others keep their type\'s action', async () => {
      try {
        const mappings = { content: { target_field: 'url', label_field: 'desc' }, workflow: { target_field: 'url', label_field: 'desc' } };
        expect((await putSchema({ predict: { action_mappings: mappings } })).status).toBe(200);
        await waitFor(async () => (await predict({ index, query: 'returns policy', allowed_types: ['content'] })).body.prediction?.action.target === '/help/returns', 10_000, 'mapping');
        const mapped = await predict({ index, query: 'returns policy', allowed_types: ['content'] });
        expect(mapped.body.prediction).toMatchObject({ label: 'How to return a product', action: { kind: 'navigate', target: '/help/returns', method: 'GET' }, entity: { id: 'help-returns' } });
        expect(mapped.body.prediction!.reason_codes).toContain('action_mapping');
        // the workflow document has no url: its default action and label, no action_mapping code
        const unmapped = await predict({ index, query: 'trade-in', allowed_types: ['workflow'] });
        expect(unmapped.body.prediction).toMatchObject({ label: 'Trade-in your old phone', action: { kind: 'start_workflow', target: '/workflows/wf-tradein', method: 'POST' } });
        expect(unmapped.body.prediction!.reason_codes).not.toContain('action_mapping');
      } finally {
        expect((await putSchema({})).status).toBe(200);
      }
    });

    it('applies schema synonyms and merchandising rules, with their reason codes and confidence', async () => {
      try {
        expect((await putSchema({ synonyms: [['zorblat', 'otterbox']] })).status).toBe(200);
        await waitFor(async () => (await predict({ index, query: 'zorblat', allowed_types: ['product'] })).body.prediction !== null, 10_000, 'synonyms');
        const syn = await predict({ index, query: 'zorblat', allowed_types: ['product'], limit: 3 });
        for (const p of [syn.body.prediction!, ...syn.body.alternatives]) {
          expect(p.label).toMatch(/otterbox/i);
          expect(p.reason_codes).toContain('synonym');
        }
        // a boost marks and raises the boosted document; a bury is no reason to predict
        const base = await predict({ index, query: 'iphone case', allowed_types: ['product'], limit: 10, include: { debug: true } });
        const target = base.body.alternatives[4]!;
        const buried = base.body.alternatives[0]!;
        const rules = [
          { id: 'push', action: 'boost', target: { ids: [target.entity.id] }, factor: 50 },
          { id: 'sink', action: 'bury', target: { ids: [buried.entity.id] }, factor: 0.5 },
          { id: 'pinned', action: 'pin', target: { ids: ['help-returns'] }, position: 1, when: { contains: 'iphone case' } },
        ];
        expect((await api.call('PUT', `/v1/indexes/${index}/merchandising`, { key, body: { rules } })).status).toBe(200);
        const find = async () => {
          const r = await predict({ index, query: 'iphone case', allowed_types: ['product', 'content'], limit: 20 });
          return [r.body.prediction!, ...r.body.alternatives];
        };
        await waitFor(async () => (await find()).some((p) => p.entity.id === target.entity.id && p.reason_codes.includes('merchandised')), 10_000, 'boost');
        const all = await find();
        expect(all.findIndex((p) => p.entity.id === target.entity.id)).toBeLessThan(5);
        const top = all.find((p) => p.entity.id === target.entity.id)!;
        expect(top.reason_codes).toContain('merchandised');
        expect(top.confidence).toBeGreaterThan(target.confidence);
        const sunk = all.find((p) => p.entity.id === buried.entity.id);
        if (sunk) expect(sunk.reason_codes).not.toContain('merchandised');
        const pin = all.find((p) => p.entity.id === 'help-returns');
        expect(pin?.reason_codes).toContain('merchandised');
      } finally {
        expect((await putSchema({})).status).toBe(200);
        expect((await api.call('PUT', `/v1/indexes/${index}/merchandising`, { key, body: { rules: [] } })).status).toBe(200);
      }
    });

    it('shows an acknowledged write to the next prediction, and nothing for a query nothing matches', async () => {
      await waitFor(async () => (await predict({ index, query: 'zyxwq' })).body.prediction === null, 10_000, 'schema reset');
      const none = await predict({ index, query: 'zyxwq' });
      expect(none.status).toBe(200);
      expect(none.body.prediction).toBeNull();
      expect(none.body.alternatives).toEqual([]);
      const w = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: [{ id: 'zz-1', title: 'Zyxwquartz Speaker', desc: '', manufacturer: 'Zyx', raw: {} }] } });
      expect(w.status).toBe(200);
      const after = await predict({ index, query: 'zyxwq' });
      expect([after.body.prediction, ...after.body.alternatives].some((p) => p?.entity.id === 'zz-1')).toBe(true);
      expect((await api.call('DELETE', `/v1/indexes/${index}/documents/zz-1`, { key })).status).toBe(200);
      const gone = await predict({ index, query: 'zyxwquartz spe', allowed_types: ['product'] });
      expect([gone.body.prediction, ...gone.body.alternatives].some((p) => p?.entity.id === 'zz-1')).toBe(false);
    });

    it('raises documents people click (behavioral_boost) and a user\'s own picks (personalized)', async () => {
      const click = (body: unknown) => api.call('POST', '/v1/events/click', { key: pub, body });
      const before = await predict({ index, query: 'hdmi cable', allowed_types: ['product'], limit: 10 });
      expect(before.status).toBe(200);
      const pick = before.body.alternatives[5]!;
      expect(pick.reason_codes).not.toContain('behavioral_boost');
      const events = Array.from({ length: 6 }, (_, i) => ({ index, doc_id: pick.entity.id, query: 'hdmi cable', session_id: `s${i}` }));
      expect((await click({ events })).status).toBe(200);
      await waitFor(async () => [(await predict({ index, query: 'hdmi cable', allowed_types: ['product'], limit: 10 })).body].flatMap((b) => [b.prediction!, ...b.alternatives]).some((p) => p.entity.id === pick.entity.id && p.reason_codes.includes('behavioral_boost')), 10_000, 'behaviour');
      const after = await predict({ index, query: 'hdmi cable', allowed_types: ['product'], limit: 10 });
      const all = [after.body.prediction!, ...after.body.alternatives];
      const raised = all.find((p) => p.entity.id === pick.entity.id)!;
      expect(all.indexOf(raised)).toBeLessThan(6);
      expect(raised.confidence).toBeGreaterThan(pick.confidence);
      for (const p of all) expect(p.reason_codes).not.toContain('personalized');
      // a purchase by one user personalizes that user's predictions only
      const other = all[all.length - 1]!;
      expect((await click({ index, doc_id: other.entity.id, user_id: 'fan-1', type: 'purchase' })).status).toBe(200);
      const mine = await predict({ index, query: 'hdmi cable', allowed_types: ['product'], limit: 20, user_id: 'fan-1' });
      expect(mine.status).toBe(200);
      const personal = [mine.body.prediction!, ...mine.body.alternatives].find((p) => p.entity.id === other.entity.id);
      expect(personal?.reason_codes).toContain('personalized');
      const someone = await predict({ index, query: 'hdmi cable', allowed_types: ['product'], limit: 20, user_id: 'someone-else' });
      for (const p of [someone.body.prediction!, ...someone.body.alternatives]) expect(p.reason_codes).not.toContain('personalized');
    });
  });
}
