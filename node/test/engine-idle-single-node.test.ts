// Engines of parts nobody queries are unloaded (SUGGEST_ENGINE_IDLE_SECONDS, here 1 s) and come
// back from their snapshot on the next query, with the same answers: small ones on the event
// loop, large ones (more than 4 MB of segments) with their files written and read off it; a part
// that keeps being queried stays; a write made while a part is unloaded is seen by the next query
// even when it keeps the part's size (the snapshot written at unload is dropped). A real
// single-node process with one query thread, so the threads' views are let go too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

let node: SingleNode;
let api: ApiClient;
let key: string;

beforeAll(async () => {
  node = await startSingleNode({ env: { SUGGEST_ENGINE_IDLE_SECONDS: '1', SUGGEST_QUERY_THREADS: '1' } });
  api = new ApiClient(node.baseUrl);
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  key = await tenantKey(api, node.adminKey, { tenant_id: 'idle', name: 'Idle', plan: 'pro' });
  for (const index_id of ['bb', 'hot', 'large', 'small']) expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
  const docs = bestBuyDocuments();
  for (let i = 0; i < docs.length; i += 1000) expect((await api.call('POST', '/v1/indexes/bb/documents', { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
  expect((await api.call('POST', '/v1/indexes/hot/documents', { key, body: { documents: docs.slice(0, 50) } })).status).toBe(200);
  expect((await api.call('POST', '/v1/indexes/small/documents', { key, body: { documents: docs.slice(100, 300) } })).status).toBe(200);
  // three copies of the catalogue: some 20 MB of segments
  const large = [0, 1, 2].flatMap((copy) => docs.map((d) => ({ ...d, id: `${d.id}-${copy}` })));
  for (let i = 0; i < large.length; i += 2000) expect((await api.call('POST', '/v1/indexes/large/documents', { key, body: { documents: large.slice(i, i + 2000) } })).status).toBe(200);
  // loaded here: its first build takes longer than the others may stay idle
  for (const index of ['bb', 'hot', 'large', 'small']) await untilSearchable(api, key, index);
}, 120_000);

afterAll(async () => {
  await node?.stop();
});

interface Answer {
  suggestions: { id: string; title: string }[];
  documents_indexing?: number;
}

/** An index's answers once its engine is back (until then, past SUGGEST_LOAD_WAIT_MS, a query is answered without it and says so). */
async function answers(index: string, query: string): Promise<{ typeahead: string[]; autocomplete: string[] }> {
  const q = encodeURIComponent(query);
  const typeahead = await loadedAnswer(`/v1/typeahead?index=${index}&query=${q}&bypass_cache=true`);
  const autocomplete = await loadedAnswer(`/v1/autocomplete?index=${index}&query=${q}&bypass_cache=true`);
  return { typeahead: typeahead.map((s) => s.title), autocomplete: autocomplete.map((s) => s.id) };
}

async function loadedAnswer(path: string): Promise<Answer['suggestions']> {
  for (let tries = 0; ; tries++) {
    const r = await api.call<Answer>('GET', path, { key });
    expect(r.status).toBe(200);
    if (r.body.documents_indexing === undefined || tries >= 300) return r.body.suggestions;
    await new Promise((done) => setTimeout(done, 100));
  }
}

const metric = (name: string) => metricValue(api, name);

describe('idle engines', () => {
  it('unloads unqueried engines, small and large, and answers the same from their snapshots, while a queried one stays', async () => {
    const before = { bb: await answers('bb', 'wireless head'), large: await answers('large', 'case'), small: await answers('small', 'a') };
    for (const a of Object.values(before)) expect(a.autocomplete.length).toBeGreaterThan(0);
    await answers('hot', 'case');
    // 'hot' is asked every 200 ms; the others not at all
    let asking = true;
    const keepHot = (async () => {
      while (asking) {
        await answers('hot', 'case');
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      await waitFor(async () => (await metric('suggest_engines_loaded')) === 1, 30_000, 'the idle engines unloaded');
      await new Promise((r) => setTimeout(r, 2_000)); // a second idle period for 'hot'
      expect(await metric('suggest_engines_loaded')).toBe(1);
    } finally {
      asking = false;
      await keepHot;
    }
    // both ways of unloading were taken: 'small' on the event loop, 'bb' and 'large' off it
    expect(node.process.output.filter((l) => l.includes('"idle engines unloaded"')).length).toBeGreaterThanOrEqual(1);
    expect(node.process.output.filter((l) => l.includes('"idle engine unloaded"')).length).toBeGreaterThanOrEqual(2);
    const loadsBefore = node.process.output.filter((l) => l.includes('engine loaded from snapshot')).length;
    for (const [index, query] of [['bb', 'wireless head'], ['large', 'case'], ['small', 'a']] as const) expect(await answers(index, query), index).toEqual(before[index]);
    // read back from the snapshots written at unload, not rebuilt from the stored documents
    expect(node.process.output.filter((l) => l.includes('engine loaded from snapshot')).length).toBe(loadsBefore + 3);
  }, 90_000);

  it('sees a write made while the engine was unloaded, even one that keeps the part the same size', async () => {
    const docs = bestBuyDocuments();
    // twice: the second time, the part has already had a write while unloaded once
    for (const doc of [docs[0]!, docs[1]!]) {
      const unloads = await metric('suggest_engine_unloads_total');
      await answers('bb', 'anything');
      await waitFor(async () => (await metric('suggest_engine_unloads_total')) > unloads, 15_000, 'unloaded again');
      // same length, same stored size: a snapshot check by count and bytes cannot tell
      const title = doc.title.replace(/[A-Za-z]/, (c) => (c === 'Q' ? 'Z' : 'Q'));
      expect(title.length).toBe(doc.title.length);
      expect((await api.call('PATCH', `/v1/indexes/bb/documents/${doc.id}`, { key, body: { title } })).status).toBe(200);
      const found = await loadedAnswer(`/v1/autocomplete?index=bb&query=${encodeURIComponent(title)}&bypass_cache=true&limit=50`);
      expect(found.find((s) => s.id === doc.id)?.title, doc.id).toBe(title);
    }
  }, 60_000);
});
