// The vector modes of autocomplete on real data (Best Buy, 3,291 products): vector_only, hybrid
// and fts_rerank, both ANN libraries, lazy graph builds, deletes, filters, snapshots, benchmark.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { SuggestEngine } from '../engine.js';
import { validateFilters } from '../filters.js';
import type { AutocompleteRequest } from '../types.js';
import { loadBestBuy } from './helpers.js';

const ids = (r: { suggestions: { id: string }[] } | { id: string }[]): string[] => ('suggestions' in r ? r.suggestions : r).map((s) => s.id);

describe('vector modes', () => {
  let docs: SuggestDocument[];
  let engine: SuggestEngine;

  beforeAll(async () => {
    docs = loadBestBuy();
    // graphs for every segment of 256 documents or more, built in the background
    engine = new SuggestEngine({ vectors: { exactBelow: 256 } });
    engine.upsert(docs);
    engine.optimize();
    await engine.whenVectorsReady('hnswlib');
    await engine.whenVectorsReady('usearch');
  });

  it('vector_only finds products from a misspelled query with no word in common', () => {
    const r = engine.autocomplete({ query: 'otterbx defendr', mode: 'vector_only', limit: 5 });
    expect(r.mode).toBe('vector_only');
    expect(r.suggestions.length).toBe(5);
    expect(r.suggestions.filter((s) => /otterbox.*defender/i.test(s.title)).length).toBeGreaterThanOrEqual(3);
    // lexical search finds nothing for it without correction of both words
    for (const s of r.suggestions) {
      expect(s.score).toBeGreaterThan(0);
      expect(s.score).toBeLessThanOrEqual(1.0001);
      expect(s.metadata.matched_words).toBe(0);
    }
    const scores = r.suggestions.map((s) => s.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it('both libraries answer vector_only with nearly the exact scan`s results', () => {
    const queries = ['iphone case', 'samsung galaxy', 'wireless headphones', 'macbook pro', 'xbox one controller', 'canon camera lens', 'refrigerator', 'usb cable'];
    for (const backend of ['hnswlib', 'usearch'] as const) {
      let recall = 0;
      for (const query of queries) {
        const r = engine.autocomplete({ query, mode: 'vector_only', vectorBackend: backend, benchmark: true });
        const b = r.debug?.vector.benchmark;
        expect(b).toBeDefined();
        expect(r.debug?.vector.backend).toBe(backend);
        expect(r.debug?.vector.method).toBe('ann');
        recall += b?.backends[backend].recall_at_k ?? 0;
      }
      // low-similarity queries ('canon camera lens': 0.2 to every document) can stall in a local
      // region of the graph: an honest floor, not perfection
      expect(recall / queries.length).toBeGreaterThanOrEqual(0.85);
    }
  });

  it('hybrid keeps lexical matches first and fills with vector neighbours', () => {
    const lexical = engine.autocomplete({ query: 'otterbox defender', mode: 'fts_only', limit: 50 });
    const hybrid = engine.autocomplete({ query: 'otterbox defender', mode: 'hybrid', limit: 10 });
    expect(hybrid.mode).toBe('hybrid');
    expect(hybrid.suggestions[0]?.title).toMatch(/otterbox.*defender/i);
    // every lexical match of both words outranks what only the vectors found
    const both = hybrid.suggestions.filter((s) => s.metadata.matched_words === 2);
    expect(both.length).toBeGreaterThanOrEqual(3);
    expect(hybrid.suggestions.slice(0, both.length)).toEqual(both);
    expect(ids(lexical)).toEqual(expect.arrayContaining(ids(both)));
    // a query the lexical pass has little for still gets a full list
    const sparse = engine.autocomplete({ query: 'otterbx defendr', mode: 'hybrid', limit: 10 });
    expect(sparse.suggestions.length).toBe(10);
    expect(sparse.suggestions[0]?.title).toMatch(/otterbox/i);
    for (const s of hybrid.suggestions) {
      expect(s.score).toBeGreaterThan(0);
      expect(s.score).toBeLessThanOrEqual(1.0001);
    }
  });

  it('fts_rerank returns the lexical candidates, re-ordered', () => {
    const q = { query: 'galaxy case', limit: 50 } as const;
    const lexical = ids(engine.autocomplete({ ...q, mode: 'fts_only' }));
    const rerank = ids(engine.autocomplete({ ...q, mode: 'fts_rerank' }));
    expect(new Set(rerank)).toEqual(new Set(lexical));
  });

  it('applies filters in every vector mode', () => {
    const f = validateFilters({ price: { lt: 30 } }).filters;
    for (const mode of ['vector_only', 'hybrid', 'fts_rerank'] as const) {
      for (const backend of ['hnswlib', 'usearch'] as const) {
        const r = engine.autocomplete({ query: 'otterbox case', mode, vectorBackend: backend, filters: f, limit: 20 });
        expect(r.suggestions.length).toBeGreaterThan(0);
        for (const s of r.suggestions) expect(s.price).toBeLessThan(30);
      }
    }
    const none = validateFilters({ manufacturer: ['no such brand'] }).filters;
    expect(engine.autocomplete({ query: 'otterbox', mode: 'vector_only', filters: none }).suggestions).toEqual([]);
  });

  it('reports what the vector retrieval did only when asked', () => {
    expect(engine.autocomplete({ query: 'ipad', mode: 'hybrid' }).debug).toBeUndefined();
    const r = engine.autocomplete({ query: 'ipad', mode: 'hybrid', debug: true });
    expect(r.debug?.vector).toMatchObject({ backend: 'hnswlib', embedder: 'hashed-ngram-v1-256', dimensions: 256, method: 'ann', graph: { ready: true } });
    expect(r.debug?.vector.candidates).toBeGreaterThan(0);
    const f = engine.autocomplete({ query: 'ipad', mode: 'fts_only', debug: true });
    expect(f.debug?.vector.method).toBe('none');
  });

  it('benchmark=true runs both libraries and the exact scan and compares them', () => {
    const r = engine.autocomplete({ query: 'apple watch band', mode: 'hybrid', benchmark: true, limit: 10 });
    const b = r.debug?.vector.benchmark;
    expect(b?.k).toBe(10);
    for (const name of ['hnswlib', 'usearch'] as const) {
      expect(b?.backends[name]).toMatchObject({ method: 'ann', graph_ready: true });
      expect(b?.backends[name].ms).toBeGreaterThanOrEqual(0);
      expect(b?.backends[name].recall_at_k).toBeGreaterThanOrEqual(0.7);
    }
    expect(b?.overlap_at_k).toBeGreaterThanOrEqual(0.6);
    expect(b?.overlap_at_k).toBeLessThanOrEqual(1);
    expect(b?.exact_ms).toBeGreaterThan(0);
  });

  it('hybrid skips the graph search only when its lexical candidates decide the answer, which stays the same', () => {
    // a fresh engine whose graphs are built on the first vector search: their size shows whether one ran
    const e = new SuggestEngine({ vectors: { exactBelow: 256, build: 'sync' } });
    e.upsert(docs);
    e.optimize();
    const graphBytes = () => e.stats().bytes.graph_hnswlib ?? 0;
    // debug=true always searches the graph: the reference answer
    const full = (query: string) => {
      const { debug, ...rest } = e.autocomplete({ query, mode: 'hybrid', limit: 10, debug: true });
      expect(debug?.vector.candidates, query).toBeGreaterThan(0);
      return rest;
    };
    const strong = 'otterbox defender series case for apple iphone ';
    const quick = e.autocomplete({ query: strong, mode: 'hybrid', limit: 10 });
    expect(graphBytes()).toBe(0);
    expect(quick.suggestions).toHaveLength(10);
    expect(quick).toEqual(full(strong));
    expect(graphBytes()).toBeGreaterThan(0);
    // prefixes of real titles and misspelled ones (weak lexical matches, where vector neighbours
    // count), settled or not, answer as the full search does
    const misspell = (w: string) => (w.length >= 5 ? w.slice(0, 2) + w[3] + w[2] + w.slice(4) : w);
    let checked = 0;
    for (const d of docs.slice(0, 400)) {
      const words = d.title.toLowerCase().split(/\s+/).slice(0, 4);
      const text = words.join(' ');
      for (const query of [text.slice(0, 2), text.slice(0, Math.ceil(text.length * 0.6)), text, words.map(misspell).join(' '), words.slice(0, 2).map(misspell).join(' ')]) {
        expect(e.autocomplete({ query, mode: 'hybrid', limit: 10 }), query).toEqual(full(query));
        checked++;
      }
    }
    expect(checked).toBe(2_000);
  });

  it('saves complete graphs beside a snapshot and reads them back only onto the same vectors', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'graphs-'));
    try {
      expect(engine.saveGraphs(dir)).toBe(2);
      const bytes = engine.serialize();
      const copy = SuggestEngine.deserialize(bytes, { vectors: { exactBelow: 256 } });
      expect(copy.loadGraphs(dir)).toBe(2);
      for (const backend of ['hnswlib', 'usearch'] as const) {
        for (const query of ['otterbx defendr', 'wireless headphones', 'samsung galaxy case']) {
          const req = { query, mode: 'vector_only' as const, vectorBackend: backend, limit: 10 };
          const r = copy.autocomplete({ ...req, debug: true });
          // answered by the read graph at once, with the answers of the graph that was saved
          expect(r.debug?.vector).toMatchObject({ method: 'ann', graph: { ready: true } });
          expect(ids(r)).toEqual(ids(engine.autocomplete(req)));
        }
      }
      // other vectors (one document fewer): nothing is read, the graph is built as usual
      const other = new SuggestEngine({ vectors: { exactBelow: 256 } });
      other.upsert(docs.slice(1));
      other.optimize();
      expect(other.loadGraphs(dir)).toBe(0);
      expect(other.autocomplete({ query: 'ipad', mode: 'vector_only', debug: true }).debug?.vector.method).toBe('exact');
      other.close();
      // a damaged file is not read; the intact one still is
      const file = path.join(dir, '0.hnswlib');
      const damaged = readFileSync(file);
      const mid = damaged.length >> 1;
      damaged[mid] = damaged[mid]! ^ 0xff;
      writeFileSync(file, damaged);
      const again = SuggestEngine.deserialize(bytes, { vectors: { exactBelow: 256 } });
      expect(again.loadGraphs(dir)).toBe(1);
      expect(again.autocomplete({ query: 'ipad', mode: 'vector_only', vectorBackend: 'usearch', debug: true }).debug?.vector.method).toBe('ann');
      expect(again.autocomplete({ query: 'ipad', mode: 'vector_only', vectorBackend: 'hnswlib', debug: true }).debug?.vector.method).toBe('exact');
      again.close();
      copy.close();
      // no manifest: nothing
      expect(SuggestEngine.deserialize(bytes).loadGraphs(path.join(dir, 'missing'))).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('saves and reads back graphs off the event loop as the synchronous calls do', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'graphs-async-'));
    try {
      expect(await engine.saveGraphsAsync(dir)).toBe(2);
      const copy = SuggestEngine.deserialize(engine.serialize(), { vectors: { exactBelow: 256 } });
      expect(await copy.loadGraphsAsync(dir)).toBe(2);
      for (const backend of ['hnswlib', 'usearch'] as const) {
        for (const query of ['otterbx defendr', 'wireless headphones']) {
          const req = { query, mode: 'vector_only' as const, vectorBackend: backend, limit: 10 };
          expect(copy.autocomplete({ ...req, debug: true }).debug?.vector).toMatchObject({ method: 'ann', graph: { ready: true } });
          expect(ids(copy.autocomplete(req))).toEqual(ids(engine.autocomplete(req)));
        }
      }
      copy.close();
      // the same manifest checks: a damaged file is not read
      const file = path.join(dir, '0.usearch');
      const damaged = readFileSync(file);
      damaged[damaged.length >> 1] = damaged[damaged.length >> 1]! ^ 0xff;
      writeFileSync(file, damaged);
      const again = SuggestEngine.deserialize(engine.serialize(), { vectors: { exactBelow: 256 } });
      expect(await again.loadGraphsAsync(dir)).toBe(1);
      expect(again.autocomplete({ query: 'ipad', mode: 'vector_only', vectorBackend: 'usearch', debug: true }).debug?.vector.method).toBe('exact');
      again.close();
      // a closed engine adopts nothing
      const closed = SuggestEngine.deserialize(engine.serialize(), { vectors: { exactBelow: 256 } });
      const loading = closed.loadGraphsAsync(dir);
      closed.close();
      expect(await loading).toBe(0);
      expect(await SuggestEngine.deserialize(engine.serialize()).loadGraphsAsync(path.join(dir, 'missing'))).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a one-letter query has no vector: vector_only answers nothing rather than noise', () => {
    expect(engine.autocomplete({ query: 'x', mode: 'vector_only' }).suggestions).toEqual([]);
  });
});

describe('vector modes over a changing index', () => {
  const base: SuggestDocument[] = loadBestBuy().slice(0, 1200);

  it('answers by exact scan while a graph is built, then by the graph, with the same results', async () => {
    const e = new SuggestEngine({ vectors: { exactBelow: 500, sliceMs: 1 } });
    e.upsert(base);
    e.optimize();
    const req: AutocompleteRequest = { query: 'wireless speaker', mode: 'vector_only', debug: true, limit: 10 };
    const before = e.autocomplete(req);
    expect(before.debug?.vector.method).toBe('exact');
    expect(before.debug?.vector.graph.ready).toBe(false);
    await e.whenVectorsReady();
    const after = e.autocomplete(req);
    expect(after.debug?.vector.method).toBe('ann');
    expect(after.debug?.vector.graph).toEqual({ ready: true, built: 1200, total: 1200 });
    const overlap = ids(after).filter((id) => ids(before).includes(id)).length;
    expect(overlap).toBeGreaterThanOrEqual(9);
    e.close();
  });

  it('never returns deleted documents and finds new ones at once', async () => {
    const e = new SuggestEngine({ vectors: { exactBelow: 500, build: 'sync' } });
    e.upsert(base);
    e.optimize();
    await e.whenVectorsReady();
    const req: AutocompleteRequest = { query: 'otterbox', mode: 'vector_only', limit: 5 };
    const first = ids(e.autocomplete(req));
    expect(first.length).toBe(5);
    e.remove([first[0] as string]);
    const second = ids(e.autocomplete(req));
    expect(second).not.toContain(first[0]);
    expect(second.slice(0, 4)).toEqual(first.slice(1, 5));
    e.upsert([{ id: 'new-1', title: 'OtterBox Zyxelian Case', desc: '', manufacturer: 'OtterBox', raw: {} }]);
    expect(ids(e.autocomplete({ ...req, query: 'zyxelian' }))[0]).toBe('new-1');
    expect(ids(e.autocomplete({ ...req, query: 'zyxelian', mode: 'hybrid' }))[0]).toBe('new-1');
  });

  it('keeps vectors through a snapshot, rebuilding graphs on demand', async () => {
    const e = new SuggestEngine({ vectors: { exactBelow: 500, build: 'sync' } });
    e.upsert(base);
    e.optimize();
    const req: AutocompleteRequest = { query: 'laptop bag', mode: 'vector_only', limit: 10 };
    const want = e.autocomplete(req);
    const loaded = SuggestEngine.deserialize(e.serialize());
    expect(loaded.autocomplete(req)).toEqual(want);
    expect(loaded.autocomplete({ ...req, mode: 'hybrid' })).toEqual(e.autocomplete({ ...req, mode: 'hybrid' }));
  });

  it('reports the memory of vectors and graphs per document', () => {
    const e = new SuggestEngine({ vectors: { exactBelow: 500, build: 'sync' } });
    e.upsert(base);
    e.optimize();
    const before = e.stats();
    expect(before.bytes.vectors).toBe(1200 * 256 * 4);
    expect(before.bytes.graph_hnswlib).toBe(0);
    e.autocomplete({ query: 'tv', mode: 'hybrid' });
    const after = e.stats();
    expect(after.bytes.graph_hnswlib).toBeGreaterThan(1200 * 256 * 4);
    expect(after.bytes.graph_usearch).toBe(0);
    expect(after.vector_bytes_per_document).toBeGreaterThan(2048);
    // a merge replaces the segment: its graphs go with it
    e.upsert(base.slice(0, 700).map((d) => ({ ...d, title: `${d.title} v2` })));
    e.optimize();
    expect(e.stats().bytes.graph_hnswlib).toBe(0);
  });
});
