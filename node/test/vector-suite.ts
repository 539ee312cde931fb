// End-to-end tests of the vector modes of autocomplete over real HTTP, on real Best Buy products:
// every mode and vector parameter, their statuses (422 for bad values), benchmark and debug
// payloads, filters, writes and deletes seen by the vector modes, and background graph builds.
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, untilSearchable, waitFor } from './api-client.js';
import type { SuiteTarget } from './api-suite.js';
import { bestBuyDocuments } from './search-suite.js';

type Issue = { loc: (string | number)[]; msg: string };
interface Suggestion {
  id: string;
  title: string;
  score: number;
  price: number | null;
  metadata: { matched_words?: number };
}
interface Timing {
  ms: number;
  method: string;
  graph_ready: boolean;
  recall_at_k: number;
}
interface VectorDebug {
  backend: string;
  embedder: string;
  dimensions: number;
  method: string;
  graph: { ready: boolean; built: number; total: number };
  candidates: number;
  ms: number;
  benchmark?: { k: number; backends: { hnswlib: Timing; usearch: Timing }; overlap_at_k: number; exact_ms: number };
  parts?: unknown[];
}
interface Body {
  mode: string;
  suggestions: Suggestion[];
  debug: null | { vector?: VectorDebug; cache?: string };
}

export function registerVectorSuite(name: string, target: () => SuiteTarget, opts: { parts: number }): void {
  describe(name, () => {
    let api: ApiClient;
    let key: string;
    let pub: string;
    const tenant = `vec-${Math.random().toString(36).slice(2, 8)}`;
    const index = 'bestbuy';
    const ac = (params: string) => api.call<Body>('GET', `/v1/autocomplete?index=${index}&${params}`, { key: pub });
    const enc = encodeURIComponent;

    beforeAll(async () => {
      const t = target();
      api = new ApiClient(t.urls[0]!);
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      expect((await api.call('POST', '/v1/admin/tenants', { key: t.adminKey, body: { tenant_id: tenant, name: 'Vectors', plan: 'pro' } })).status).toBe(200);
      key = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
      pub = (await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: t.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Best Buy', parts: opts.parts } })).status).toBe(200);
      const docs = bestBuyDocuments();
      for (let i = 0; i < docs.length; i += 1000) {
        expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
      }
      await untilSearchable(api, key, index);
    }, 120_000);

    it('answers every mode and reports it; fts_only when no mode is named', async () => {
      for (const mode of ['fts_only', 'vector_only', 'hybrid', 'fts_rerank']) {
        const r = await ac(`query=${enc('otterbox case')}&mode=${mode}&limit=5`);
        expect(r.status, mode).toBe(200);
        expect(r.body.mode).toBe(mode);
        expect(r.body.suggestions.length).toBe(5);
        expect(r.body.debug).toBeNull();
        const scores = r.body.suggestions.map((s) => s.score);
        expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      }
      expect((await ac('query=galaxy')).body.mode).toBe('fts_only');
    });

    it('vector_only and hybrid find products for a query misspelled beyond typo matching', async () => {
      const v = await ac(`query=${enc('otterbx defendr')}&mode=vector_only&limit=5`);
      expect(v.body.suggestions.filter((s) => /otterbox.*defender/i.test(s.title)).length).toBeGreaterThanOrEqual(3);
      const h = await ac(`query=${enc('otterbx defendr')}&mode=hybrid&limit=5`);
      expect(h.body.suggestions[0]!.title).toMatch(/otterbox/i);
    });

    it('takes either vector backend, and refuses other values, modes and flags with 422', async () => {
      // hnswlib when the request names none (and the node sets no SUGGEST_VECTOR_BACKEND)
      expect((await ac(`query=${enc('iphone case')}&mode=vector_only&debug=true`)).body.debug?.vector?.backend).toBe('hnswlib');
      for (const backend of ['hnswlib', 'usearch']) {
        const r = await ac(`query=${enc('iphone case')}&mode=vector_only&vector_backend=${backend}&debug=true`);
        expect(r.status).toBe(200);
        expect(r.body.debug?.vector?.backend).toBe(backend);
        expect(r.body.suggestions.length).toBe(10);
      }
      for (const [param, loc] of [
        ['vector_backend=faiss', 'vector_backend'],
        ['vector_backend=', 'vector_backend'],
        ['mode=VECTOR_ONLY', 'mode'],
        ['mode=hybrid%00', 'mode'],
        ['benchmark=maybe', 'benchmark'],
        ['debug=2', 'debug'],
      ] as const) {
        const r = await api.call<{ detail: Issue[] }>('GET', `/v1/autocomplete?index=${index}&query=a&${param}`, { key: pub });
        expect(r.status, param).toBe(422);
        expect(r.body.detail[0]!.loc).toEqual(['query', loc]);
      }
      const long = await api.call<{ detail: Issue[] }>('GET', `/v1/autocomplete?index=${index}&mode=vector_only&query=${'a'.repeat(600)}`, { key: pub });
      expect(long.status).toBe(422);
    });

    it('benchmark=true runs both libraries and reports timings, recall and overlap (never cached)', async () => {
      for (let i = 0; i < 2; i++) {
        const r = await ac(`query=${enc('wireless headphones')}&mode=hybrid&benchmark=true&limit=10`);
        expect(r.status).toBe(200);
        const b = r.body.debug?.vector?.benchmark;
        expect(b, JSON.stringify(r.body.debug)).toBeDefined();
        expect(b!.k).toBe(10);
        for (const lib of ['hnswlib', 'usearch'] as const) {
          expect(b!.backends[lib].ms).toBeGreaterThanOrEqual(0);
          expect(['ann', 'exact', 'mixed']).toContain(b!.backends[lib].method);
          expect(b!.backends[lib].recall_at_k).toBeGreaterThanOrEqual(0.5);
          expect(b!.backends[lib].recall_at_k).toBeLessThanOrEqual(1);
        }
        expect(b!.overlap_at_k).toBeGreaterThanOrEqual(0);
        expect(b!.overlap_at_k).toBeLessThanOrEqual(1);
        expect(r.body.debug?.cache).toBe('bypassed');
      }
      // benchmark without a vector mode still compares the libraries
      const f = await ac(`query=${enc('wireless headphones')}&mode=fts_only&benchmark=true`);
      expect(f.body.debug?.vector?.method).toBe('none');
      expect(f.body.debug?.vector?.benchmark?.backends.usearch).toBeDefined();
    });

    it('debug=true reports the vector retrieval, per part when the index has several', async () => {
      const r = await ac(`query=${enc('macbook')}&mode=hybrid&debug=true`);
      const v = r.body.debug?.vector;
      expect(v).toMatchObject({ backend: 'hnswlib', embedder: 'hashed-ngram-v1-256', dimensions: 256 });
      expect(['ann', 'exact', 'mixed']).toContain(v!.method);
      expect(v!.candidates).toBeGreaterThan(0);
      if (opts.parts > 1) expect(v!.parts).toHaveLength(opts.parts);
      else expect(v!.parts).toBeUndefined();
    });

    it('applies filters in the vector modes', async () => {
      for (const mode of ['vector_only', 'hybrid']) {
        const r = await ac(`query=${enc('otterbox case')}&mode=${mode}&limit=20&filters=${enc(JSON.stringify({ price: { lt: 30 } }))}`);
        expect(r.status).toBe(200);
        expect(r.body.suggestions.length).toBeGreaterThan(0);
        for (const s of r.body.suggestions) expect(s.price!).toBeLessThan(30);
      }
    });

    it('sees a write and a delete at once in the vector modes', async () => {
      const doc = { id: 'vec-new', title: 'Quorblax Holographic Projector', desc: '', manufacturer: 'Quorblax', raw: {} };
      expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: [doc] } })).status).toBe(200);
      for (const mode of ['vector_only', 'hybrid']) {
        const r = await ac(`query=${enc('quorblx holographc')}&mode=${mode}&limit=3`);
        expect(r.body.suggestions[0]?.id, mode).toBe('vec-new');
      }
      expect((await api.call('DELETE', `/v1/indexes/${index}/documents/vec-new`, { key })).status).toBe(200);
      const gone = await ac(`query=${enc('quorblx holographc')}&mode=vector_only&limit=10`);
      expect(gone.body.suggestions.some((s) => s.id === 'vec-new')).toBe(false);
    });

    it('builds the ANN graphs in the background and then answers from them', async () => {
      // parts of fewer than 2,048 documents are scanned exactly and need no graph
      const needsGraph = 3291 / opts.parts >= 2048;
      await waitFor(
        async () => {
          const r = await ac(`query=${enc('samsung galaxy')}&mode=vector_only&debug=true&bypass_cache=true`);
          return r.body.debug?.vector?.graph.ready === true;
        },
        60_000,
        'graphs built',
      );
      const r = await ac(`query=${enc('samsung galaxy')}&mode=vector_only&debug=true`);
      expect(r.body.debug?.vector?.method).toBe(needsGraph ? 'ann' : 'exact');
      expect(r.body.debug?.vector?.graph.total).toBe(needsGraph ? 3291 : 0);
    }, 90_000);
  });
}
