// Queries on an index while a bulk write is still being indexed, on a real single-node process
// (segment pool, query threads) and on the local cluster (etcd, 3 shard nodes, a router; an
// index in 3 parts, the answers coming over gRPC). With SUGGEST_FRESH_WAIT_MS=0 a query does not
// wait for the documents written before it: it is answered at once from those already
// searchable, /stats counts the rest, /metrics counts such answers (where the shard runs in the
// process that serves /metrics), and the response cache does not keep them: once everything is
// indexed, the same cached request finds the new documents.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, startSingleNode } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

interface Target {
  url: string;
  adminKey: string;
  stop(): Promise<void>;
}

// Every segment build of the processes sleeps 1.5 s first (a failure point of segment-worker.ts),
// so the bulk write below stays in progress through the requests made during it on any machine.
const ENV = { SUGGEST_FRESH_WAIT_MS: '0', SUGGEST_QUERY_THREADS: '1', SUGGEST_FAILPOINT_BUILD_DELAY_MS: '1500' };

describe.each([
  {
    name: 'single node',
    parts: 1,
    shardMetrics: true,
    start: async (): Promise<Target> => {
      const node = await startSingleNode({ env: ENV });
      return { url: node.baseUrl, adminKey: node.adminKey, stop: () => node.stop() };
    },
  },
  {
    name: 'local cluster, index in 3 parts',
    parts: 3,
    shardMetrics: false,
    start: async (): Promise<Target> => {
      const cluster = await startLocalCluster({ shards: 3, routers: 1, partitions: 16, env: ENV });
      return { url: cluster.routerUrls[0]!, adminKey: cluster.adminKey, stop: () => cluster.stop() };
    },
  },
])('queries during a bulk write, without waiting for it: $name', ({ parts, shardMetrics, start }) => {
  let target: Target;
  let api: ApiClient;
  let key: string;

  const metric = (name: string): Promise<number> => metricValue(api, name);
  const answer = async (path: string) => {
    const r = await api.call<{ suggestions: { title?: string; text?: string }[]; documents_indexing?: number }>('GET', path, { key });
    expect(r.status).toBe(200);
    return { titles: r.body.suggestions.map((s) => s.title ?? s.text ?? ''), indexing: r.body.documents_indexing };
  };
  const titles = async (path: string) => (await answer(path)).titles;
  const indexing = async () => (await api.call<{ documents_indexing: number }>('GET', '/v1/indexes/live/stats', { key })).body.documents_indexing;

  beforeAll(async () => {
    target = await start();
    api = new ApiClient(target.url);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    key = await tenantKey(api, target.adminKey, { tenant_id: 'bulk', name: 'Bulk', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'live', name: 'live', parts } })).status).toBe(200);
    expect((await api.call('POST', '/v1/indexes/live/documents', { key, body: { documents: bestBuyDocuments().slice(0, 100) } })).status).toBe(200);
    await untilSearchable(api, key, 'live');
    await waitFor(async () => (await indexing()) === 0, 30_000, 'first documents indexed');
  }, 120_000);

  afterAll(async () => {
    await target?.stop();
  });

  it('answers from the searchable documents at once, caches none of it, and finds the load once indexed', async () => {
    expect(await titles('/v1/typeahead?index=live&query=quokka')).toEqual([]);
    // 10,000 documents: segment builds on the pool, each held 1.5 s by the failure point
    const base = bestBuyDocuments();
    const bulk = Array.from({ length: 10_000 }, (_, i) => ({ ...base[i % base.length]!, id: `bulk-${i}` }));
    bulk[9_999] = { ...bulk[9_999]!, title: 'Quokka Espresso Machine', manufacturer: 'Quokka' };
    expect((await api.call('POST', '/v1/indexes/live/documents', { key, body: { documents: bulk } })).status).toBe(200);
    // at once, and from what is searchable: the load is still being indexed
    expect(await indexing()).toBeGreaterThan(0);
    // the answer says what it did not see
    const during = await answer('/v1/typeahead?index=live&query=quokka');
    expect(during.titles).toEqual([]);
    expect(during.indexing).toBeGreaterThan(0);
    const predicted = await api.call<{ documents_indexing?: number }>('POST', '/v1/predict', { key, body: { index: 'live', query: 'quokka' } });
    expect(predicted.status).toBe(200);
    expect(predicted.body.documents_indexing).toBeGreaterThan(0);
    expect(await titles('/v1/autocomplete?index=live&query=quokka%20espresso')).toEqual([]);
    // said once, at the top, with debug asked for too
    const debug = await api.call<{ documents_indexing?: number; debug: Record<string, unknown> }>('GET', '/v1/autocomplete?index=live&query=quokka&debug=true', { key });
    expect(debug.body.documents_indexing).toBeGreaterThan(0);
    expect(debug.body.debug).not.toHaveProperty('documents_indexing');
    if (shardMetrics) expect(await metric('suggest_answers_during_indexing_total')).toBeGreaterThanOrEqual(3);
    await waitFor(async () => (await indexing()) === 0, 60_000, 'the bulk write indexed');
    if (shardMetrics) expect(await metric('suggest_documents_indexing')).toBe(0);
    // the same requests, cache on: the answers given during the load were not kept
    const after = await answer('/v1/typeahead?index=live&query=quokka');
    expect(after.titles).toContain('Quokka Espresso Machine');
    expect(after.indexing).toBeUndefined();
    expect((await api.call<{ documents_indexing?: number }>('POST', '/v1/predict', { key, body: { index: 'live', query: 'quokka' } })).body.documents_indexing).toBeUndefined();
    expect(await titles('/v1/autocomplete?index=live&query=quokka%20espresso')).toContain('Quokka Espresso Machine');
  }, 120_000);
});
