// ANN graphs survive a restart of a real single-node process: they are written beside the engine
// snapshot when the node stops and read back (only onto the same vectors) when it starts, so the
// first vector query after a restart is answered by the graph, not by a full scan during a rebuild
// (on the query threads, which read the graph the node loaded). Graphs are built on the node's
// graph thread, which /metrics counts. The node names usearch as its default backend
// (SUGGEST_VECTOR_BACKEND), which its query threads follow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

interface VectorAnswer {
  suggestions: { id: string }[];
  debug: { vector?: { backend: string; method: string; graph: { ready: boolean; built: number; total: number } } } | null;
}

let node: SingleNode;
let key: string;
const api = () => new ApiClient(node.baseUrl);

beforeAll(async () => {
  node = await startSingleNode({ env: { SUGGEST_QUERY_THREADS: '2', SUGGEST_VECTOR_BACKEND: 'usearch' } });
  await waitFor(async () => (await api().call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  key = await tenantKey(api(), node.adminKey, { tenant_id: 'graphs', name: 'Graphs', plan: 'pro' });
  expect((await api().call('POST', '/v1/indexes', { key, body: { index_id: 'bb', name: 'Best Buy' } })).status).toBe(200);
  const docs = bestBuyDocuments();
  for (let i = 0; i < docs.length; i += 1000) expect((await api().call('POST', '/v1/indexes/bb/documents', { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
  await untilSearchable(api(), key, 'bb');
}, 120_000);

afterAll(async () => {
  await node?.stop();
});

/** The graph thread's counters at /metrics. */
async function graphBuilds(): Promise<{ total: number; failures: number; inProgress: number }> {
  const r = await fetch(`${node.baseUrl}/metrics`, { headers: { 'x-api-key': node.adminKey } });
  expect(r.status).toBe(200);
  const text = await r.text();
  const value = (name: string) => {
    const m = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(text);
    expect(m, name).not.toBeNull();
    return Number(m![1]);
  };
  return { total: value('suggest_graph_builds_total'), failures: value('suggest_graph_build_failures_total'), inProgress: value('suggest_graph_builds_in_progress') };
}

describe('ANN graphs across a restart', () => {
  it('answers vector queries from the saved graph right after a restart, with the same results', async () => {
    const ask = async (backend: string) => {
      const named = backend === '' ? '' : `&vector_backend=${backend}`;
      const r = await api().call<VectorAnswer>('GET', `/v1/autocomplete?index=bb&query=${encodeURIComponent('wireless headphones')}&mode=vector_only${named}&debug=true&bypass_cache=true`, { key });
      expect(r.status).toBe(200);
      return r.body;
    };
    // the first vector queries start the graph builds (one segment of 3,291 documents once merged)
    const before: Record<string, VectorAnswer> = {};
    for (const backend of ['hnswlib', 'usearch']) {
      await waitFor(async () => (await ask(backend)).debug?.vector?.method === 'ann', 120_000, `${backend} graph built`);
      before[backend] = await ask(backend);
    }
    // built on the graph thread, not on the event loop
    const built = await graphBuilds();
    expect(built.total).toBeGreaterThanOrEqual(2);
    expect(built).toMatchObject({ failures: 0, inProgress: 0 });
    await node.restart();
    await waitFor(async () => (await api().call('GET', '/readyz')).status === 200, 30_000, 'readyz after restart');
    for (const backend of ['hnswlib', 'usearch']) {
      const after = await ask(backend);
      expect(after.debug?.vector, backend).toMatchObject({ method: 'ann', graph: { ready: true } });
      expect(after.suggestions.map((s) => s.id), backend).toEqual(before[backend]!.suggestions.map((s) => s.id));
    }
    // read back, not built again
    expect(await graphBuilds()).toMatchObject({ total: 0, failures: 0, inProgress: 0 });
    // no backend named: the node's default, on the query threads too
    const unnamed = await ask('');
    expect(unnamed.debug?.vector?.backend).toBe('usearch');
    expect(unnamed.suggestions.map((s) => s.id)).toEqual(before.usearch!.suggestions.map((s) => s.id));
  }, 300_000);
});
