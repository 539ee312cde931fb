// The cluster while etcd is down: searches keep answering from what routers and shard nodes
// already hold, the control plane's routes (index list and creation, jobs, writes that check job
// state) answer 503 `unavailable` with Retry-After instead of an internal error, no detail shows
// where etcd lives, and everything works again once etcd is back. Real processes: etcd, two
// shard nodes and a router on loopback; etcd is SIGKILLed and restarted on its data directory.
// An etcd that stalls longer than the membership TTL (SIGSTOP, as behind a network cut) expires
// every lease when it comes back: shard nodes exit for their supervisor to restart them, the
// router registers again and goes on serving once they are back, without a restart of its own.
// A background ingestion job that etcd disappears under resumes once etcd is back and finishes
// with every document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster, type ServiceProcess } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, waitFor } from './api-client.js';

/** A cluster with a tenant and an index of 40 searchable documents; returns the tenant's private key. */
async function provision(cluster: LocalCluster, api: ApiClient): Promise<string> {
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  const key = await tenantKey(api, cluster.adminKey, { tenant_id: 'outage', name: 'Outage', plan: 'enterprise' });
  expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'tools', name: 'Tools' } })).status).toBe(200);
  const documents = Array.from({ length: 40 }, (_, i) => ({ id: `d${i}`, title: `Cordless drill ${i}`, desc: 'Drills and drivers', manufacturer: 'Bosch', raw: {} }));
  expect((await api.call('POST', '/v1/indexes/tools/documents', { key, body: { documents } })).status).toBe(200);
  await waitFor(async () => (await api.call<{ suggestions: unknown[] }>('GET', '/v1/autocomplete?index=tools&query=drill&bypass_cache=true', { key })).body.suggestions.length > 0, 20_000, 'documents searchable');
  return key;
}

const exited = (p: ServiceProcess): boolean => p.child.exitCode !== null || p.child.signalCode !== null;

/** A provisioned cluster of two shard nodes and a router for the enclosing describe block. */
function useCluster(env: Record<string, string> = {}): { cluster: LocalCluster; api: ApiClient; key: string } {
  const ctx = {} as { cluster: LocalCluster; api: ApiClient; key: string };
  beforeAll(async () => {
    ctx.cluster = await startLocalCluster({ shards: 2, routers: 1, partitions: 8, env });
    ctx.api = new ApiClient(ctx.cluster.routerUrls[0]!);
    ctx.key = await provision(ctx.cluster, ctx.api);
  }, 120_000);
  afterAll(async () => {
    await ctx.cluster?.stop();
  });
  return ctx;
}

describe('etcd down', () => {
  const ctx = useCluster();

  it('keeps searches answering and turns control-plane calls into 503 with Retry-After, then recovers', async () => {
    const { cluster, api, key } = ctx;
    await cluster.etcd.kill();

    // searches do not wait for etcd
    const ac = await api.call<{ suggestions: { id: string }[] }>('GET', '/v1/autocomplete?index=tools&query=cordless&bypass_cache=true', { key });
    expect(ac.status).toBe(200);
    expect(ac.body.suggestions.length).toBeGreaterThan(0);
    const ta = await api.call<{ suggestions: unknown[] }>('GET', '/v1/typeahead?index=tools&query=dri&bypass_cache=true', { key });
    expect(ta.status).toBe(200);
    expect(ta.body.suggestions.length).toBeGreaterThan(0);

    // what needs etcd: a retryable 503, call after call
    const controlPlane: [string, string, unknown][] = [
      ['GET', '/v1/indexes', undefined],
      ['POST', '/v1/indexes', { index_id: 'later', name: 'Later' }],
      ['GET', '/v1/ingestion-jobs', undefined],
      ['POST', '/v1/indexes/tools/ingest/start', { documents: [{ id: 'x1', title: 'Hammer', desc: '', manufacturer: '', raw: {} }] }],
      ['GET', '/v1/indexes', undefined],
      ['GET', '/v1/export-jobs', undefined],
    ];
    for (const [method, path, body] of controlPlane) {
      const r = await api.call<{ detail: string; code: string }>(method, path, { key, body });
      expect(r.status, `${method} ${path}: ${JSON.stringify(r.body)}`).toBe(503);
      expect(r.body.code).toBe('unavailable');
      expect(r.body.detail).toMatch(/coordination service \(etcd\) did not answer/);
      // where etcd lives is not the client's business
      expect(r.body.detail).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|:\d{4,5}/);
      expect(r.headers.get('retry-after')).toBe('1');
    }
    // still ready (searches answer), and says etcd is out of reach; so do the metrics
    const ready = await api.call<{ status: string; coordination: string }>('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.coordination).toBe('unreachable');
    expect(await metricValue(api, 'suggest_coordination_reachable')).toBe(0);
    expect(await metricValue(api, 'suggest_coordination_unreachable_calls_total')).toBeGreaterThanOrEqual(controlPlane.length);

    await cluster.etcd.restart();
    // the client reconnects: the same calls work again
    await waitFor(async () => (await api.call('GET', '/v1/indexes', { key })).status === 200, 30_000, 'index list after etcd restart');
    await waitFor(async () => (await api.call('POST', '/v1/indexes', { key, body: { index_id: 'later', name: 'Later' } })).status === 200, 30_000, 'index creation after etcd restart');
    const started = await api.call<{ job_id: string }>('POST', '/v1/indexes/tools/ingest/start', { key, body: { documents: [{ id: 'x2', title: 'Claw hammer', desc: '', manufacturer: 'Estwing', raw: {} }] } });
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    await waitFor(async () => (await api.call<{ status: string }>('GET', `/v1/ingestion-jobs/${started.body.job_id}`, { key })).body.status === 'succeeded', 30_000, 'ingestion after etcd restart');
    const found = await api.call<{ suggestions: { id: string }[] }>('GET', '/v1/autocomplete?index=tools&query=claw%20hammer&bypass_cache=true', { key });
    expect(found.body.suggestions.map((s) => s.id)).toContain('x2');
    expect((await api.call<{ coordination: string }>('GET', '/readyz')).body.coordination).toBe('ok');
    expect(await metricValue(api, 'suggest_coordination_reachable')).toBe(1);
  }, 120_000);
});

describe('etcd stalled longer than the membership TTL', () => {
  const ctx = useCluster({ SUGGEST_MEMBER_TTL_SECONDS: '2' });

  it('restarts nothing but the shard nodes: the router registers again and serves once they are back', async () => {
    const { cluster, api, key } = ctx;
    const router = cluster.routers[0]!;
    cluster.etcd.pause();
    await new Promise((r) => setTimeout(r, 4_000));
    cluster.etcd.resume();
    // the leases expired while etcd stood still: shard nodes stop (their partitions may have moved)
    await waitFor(async () => cluster.shards.every(exited), 30_000, 'shard nodes exit after their leases expired');
    // the router does not
    await waitFor(async () => router.output.some((line) => line.includes('"registered again"')), 30_000, 'router registered again');
    expect(exited(router)).toBe(false);
    expect((await api.call('GET', '/healthz')).status).toBe(200);
    // what a supervisor does for the shard nodes; the router keeps its process
    for (let i = 0; i < cluster.shards.length; i++) await cluster.restartShard(i);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz with the shard nodes back');
    await waitFor(async () => (await api.call<{ suggestions: unknown[] }>('GET', '/v1/autocomplete?index=tools&query=cordless&bypass_cache=true', { key })).body.suggestions?.length > 0, 30_000, 'search through the same router');
    expect((await api.call('GET', '/v1/indexes', { key })).status).toBe(200);
    expect(cluster.routers[0]).toBe(router);
    expect(exited(router)).toBe(false);
  }, 120_000);
});

describe('a background ingestion job while etcd is down', () => {
  // small, slow batches: the job is still running when etcd goes away
  const ctx = useCluster({ SUGGEST_JOB_BATCH_SIZE: '100', SUGGEST_JOB_BATCH_DELAY_MS: '200' });

  it('resumes once etcd is back and stores every document', async () => {
    const { cluster, api, key } = ctx;
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'bulk', name: 'Bulk' } })).status).toBe(200);
    const documents = Array.from({ length: 3000 }, (_, i) => ({ id: `b${i}`, title: `Hammer drill ${i}`, desc: '', manufacturer: 'Bosch', raw: {} }));
    const started = await api.call<{ job_id: string; run: string }>('POST', '/v1/indexes/bulk/ingest/start', { key, body: { documents } });
    expect(started.status).toBe(200);
    expect(started.body.run).toBe('background');
    await new Promise((r) => setTimeout(r, 1_500));
    await cluster.etcd.kill();
    await new Promise((r) => setTimeout(r, 5_000));
    await cluster.etcd.restart();
    let job: { status: string; processed: number; failed: number; attempts: number } | undefined;
    await waitFor(async () => {
      const r = await api.call<typeof job & object>('GET', `/v1/ingestion-jobs/${started.body.job_id}`, { key });
      job = r.body;
      return r.status === 200 && ['succeeded', 'failed', 'canceled'].includes(r.body.status);
    }, 90_000, 'the job to end');
    expect(job).toMatchObject({ status: 'succeeded', processed: 3000, failed: 0 });
    const listed = await api.call<{ total: number }>('GET', '/v1/indexes/bulk/documents?page_size=1', { key });
    expect(listed.body.total).toBe(3000);
  }, 150_000);
});
