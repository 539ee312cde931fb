// The foundation's end-to-end suite against a local cluster of real processes (etcd, 3 shard
// nodes, 2 routers), plus the crash tests: a shard node SIGKILLed right after acknowledged
// writes loses none of them, and a dead router leaves the other serving. Shard nodes answer
// autocomplete on one query thread each, so the search suites cross gRPC into the query pool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { registerApiSuite } from './api-suite.js';
import { registerEventsSuite } from './events-suite.js';
import { registerRankingSuite } from './ranking-suite.js';
import { registerSearchSuite } from './search-suite.js';
import { registerVectorSuite } from './vector-suite.js';
import { registerPredictSuite } from './predict-suite.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';

let cluster: LocalCluster;
beforeAll(async () => {
  cluster = await startLocalCluster({ shards: 3, routers: 2, partitions: 16, env: { SUGGEST_QUERY_THREADS: '1' } });
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

registerApiSuite('local cluster', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }));
registerSearchSuite('search on the local cluster, index in 3 parts', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }), { parts: 3 });
registerVectorSuite('vector modes on the local cluster, index in 3 parts', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }), { parts: 3 });
registerEventsSuite('engagement events on the local cluster, index in 3 parts', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }), { parts: 3 });
registerRankingSuite('synonyms and merchandising on the local cluster, index in 3 parts', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }), { parts: 3 });
registerPredictSuite('predict on the local cluster, index in 3 parts', () => ({ urls: cluster.routerUrls, adminKey: cluster.adminKey }), { parts: 3 });

describe('cluster crash behaviour', () => {
  it('keeps every acknowledged document when a shard node is SIGKILLed and restarted', async () => {
    const api = new ApiClient(cluster.routerUrls[0]!);
    const admin = cluster.adminKey;
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    const key = await tenantKey(api, admin, { tenant_id: 'crash', name: 'Crash', plan: 'enterprise' });
    // several indexes so the writes land on partitions owned by different shard nodes
    const indexes = Array.from({ length: 8 }, (_, i) => `idx-${i}`);
    for (const index_id of indexes) expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
    const acknowledged: [string, string][] = [];
    for (let batch = 0; batch < 5; batch++) {
      for (const index of indexes) {
        const documents = Array.from({ length: 20 }, (_, i) => ({ id: `b${batch}-d${i}`, title: `Doc ${batch} ${i}`, desc: '', manufacturer: '', raw: {} }));
        const r = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents } });
        expect(r.status).toBe(200);
        for (const d of documents) acknowledged.push([index, d.id]);
      }
    }
    await cluster.shards[0]!.kill();
    await cluster.restartShard(0);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz after restart');
    await waitFor(async () => (await api.call('GET', `/v1/indexes/${indexes[0]}/documents`, { key })).status === 200, 30_000, 'reads after restart');
    for (const index of indexes) {
      const r = await api.call<{ total: number; items: { id: string }[] }>('GET', `/v1/indexes/${index}/documents?page_size=100`, { key });
      expect(r.status).toBe(200);
      expect(r.body.total).toBe(100);
    }
    for (const [index, id] of acknowledged.filter((_, i) => i % 7 === 0)) {
      const r = await api.call('GET', `/v1/indexes/${index}/documents/${id}`, { key });
      expect(r.status, `${index}/${id}`).toBe(200);
    }
  });

  it("serves each shard node's metrics and health on its operations port", async () => {
    const api = new ApiClient(cluster.routerUrls[0]!);
    const admin = cluster.adminKey;
    const key = await tenantKey(api, admin, { tenant_id: 'metered', name: 'Metered', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'metered', name: 'Metered' } })).status).toBe(200);
    const documents = Array.from({ length: 120 }, (_, i) => ({ id: `m${i}`, title: `Metered lamp ${i}`, desc: '', manufacturer: 'Lumen', raw: {} }));
    expect((await api.call('POST', '/v1/indexes/metered/documents', { key, body: { documents } })).status).toBe(200);
    expect((await api.call('GET', '/v1/typeahead?index=metered&query=lam&bypass_cache=true', { key })).status).toBe(200);
    const stats = await api.call<{ parts: { partition: number; node: string; document_count: number }[] }>('GET', '/v1/indexes/metered/stats', { key });
    const part = stats.body.parts[0]!;
    expect(part.document_count).toBe(120);
    // the cluster view names every node's operations endpoint; the harness's ready lines agree
    const view = await api.call<{ nodes: { node_id: string; live: boolean; metrics_address: string | null }[] }>('GET', '/v1/admin/cluster', { key: admin });
    for (const s of cluster.shards) expect(view.body.nodes.find((n) => n.node_id === s.info.node_id)?.metrics_address).toBe(s.info.metrics);
    const address = view.body.nodes.find((n) => n.node_id === part.node)!.metrics_address!;
    const text = await (await fetch(`http://${address}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name}\\{partition="${part.partition}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    expect(value('suggest_partition_documents')).toBeGreaterThanOrEqual(120);
    expect(value('suggest_engine_segments')).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^suggest_query_pool_threads 1$/m);
    expect((await fetch(`http://${address}/healthz`)).status).toBe(200);
    expect((await fetch(`http://${address}/readyz`)).status).toBe(200);
    expect((await fetch(`http://${address}/v1/typeahead`)).status).toBe(404);
  });

  it('keeps serving through the second router when the first dies', async () => {
    const second = new ApiClient(cluster.routerUrls[1]!);
    await cluster.routers[0]!.kill();
    const r = await second.call('GET', '/v1/indexes?tenant_id=crash', { key: cluster.adminKey });
    expect(r.status).toBe(200);
    expect((r.body as unknown[]).length).toBe(8);
    expect((await second.call('GET', '/healthz')).status).toBe(200);
  });
});
