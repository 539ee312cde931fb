// Ingestion and export jobs end to end on a local cluster (etcd, 3 shard nodes, 2 routers):
// jobs run on the index's sequencer whichever router took the upload, files cross nodes (a
// presigned upload kept on one node is read by a job on another, an export is downloaded through
// the other router), progress is streamed by either router, promote under load across both
// routers, and the crash test: SIGKILL the shard node running a background job; the job is found
// stuck, resumed after the node restarts, and ends with every row exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Coordinator } from '../../coordinator/coordinator.js';
import { createCoordinator } from '../../coordinator/create-coordinator.js';
import { loadConfig } from '../runtime/config.js';
import { partitionOf } from '../runtime/hash.js';
import { setLogLevel } from '../runtime/log.js';
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';
import { bestBuyJsonl, bigBasketCsv, readStream, uploadFile, waitForJob, type JobView, type StartView } from './job-client.js';
import { promoteUnderLoad } from './promote-load.js';

const PARTITIONS = 16;
let cluster: LocalCluster;
let coordinator: Coordinator;
let r1: ApiClient;
let r2: ApiClient;
let key: string;

beforeAll(async () => {
  setLogLevel('error');
  cluster = await startLocalCluster({
    shards: 3,
    routers: 2,
    partitions: PARTITIONS,
    env: { SUGGEST_JOB_BATCH_SIZE: '200', SUGGEST_JOB_BATCH_DELAY_MS: '10', SUGGEST_JOB_LEASE_TTL_SECONDS: '2', SUGGEST_SSE_HEARTBEAT_MS: '500' },
  });
  coordinator = await createCoordinator({ ...loadConfig({}), etcd: cluster.etcd.endpoints });
  [r1, r2] = cluster.routerUrls.map((u) => new ApiClient(u)) as [ApiClient, ApiClient];
  await waitFor(async () => (await r1.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  key = await tenantKey(r1, cluster.adminKey, { tenant_id: 'shop', name: 'Shop', plan: 'enterprise' });
  for (const index_id of ['bb', 'bestbuy', 'crash']) expect((await r1.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
}, 180_000);
afterAll(async () => {
  await coordinator?.close();
  await cluster?.stop();
});

/** The shard node (index into cluster.shards) that is the sequencer of a physical index. */
async function sequencerOf(tenant: string, physical: string): Promise<number> {
  const table = await coordinator.getPlacement();
  const node = table!.nodes[partitionOf(tenant, physical, 0, table!.partitions)]![0]!;
  return cluster.shards.findIndex((s) => s.info.node_id === node);
}

describe('jobs on a local cluster', () => {
  it('runs an upload taken by one router on the sequencer, streamed by the other', async () => {
    const up = await uploadFile(cluster.routerUrls[0]!, key, 'bb', bigBasketCsv(), { filename: 'bigbasket.csv' });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.run).toBe('background');
    const stream = await readStream(`${cluster.routerUrls[1]}/v1/ingestion-jobs/${up.body.job_id}/stream`, key, (ev) => ev.some((e) => e.event === 'done'), { timeoutMs: 120_000 });
    const done = JSON.parse(stream.events.find((e) => e.event === 'done')!.data) as JobView;
    expect(done).toMatchObject({ status: 'succeeded', processed: 27_555, failed: 0 });
    expect(stream.events.filter((e) => e.event === 'progress').length).toBeGreaterThan(2);
    expect((await r2.call<{ total: number }>('GET', '/v1/indexes/bb/documents?page_size=1', { key })).body.total).toBe(27_555);
  });

  it('reads a presigned upload kept on another node, and downloads an export through the other router', async () => {
    const u = await r1.call<{ upload_id: string; upload_url: string }>('POST', '/v1/indexes/bestbuy/upload-url', { key });
    const put = await fetch(cluster.routerUrls[1] + u.body.upload_url, { method: 'PUT', body: new Uint8Array(bestBuyJsonl()) });
    expect(put.status).toBe(200);
    const done = await r1.call<StartView>('POST', '/v1/indexes/bestbuy/ingest/cloud-complete', { key, body: { upload_id: u.body.upload_id, source_filename: 'bestbuy.jsonl' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(await waitForJob(r2, key, done.body.job_id)).toMatchObject({ status: 'succeeded', processed: 3_291, failed: 0 });
    const exp = await r2.call<StartView>('POST', '/v1/indexes/bestbuy/export/start', { key, body: { format: 'jsonl' } });
    const job = await waitForJob(r2, key, exp.body.job_id, 'export');
    expect(job.status).toBe('succeeded');
    const file = await fetch(cluster.routerUrls[0] + job.download_url!, { headers: { 'x-api-key': key } });
    expect(file.status).toBe(200);
    expect((await file.text()).trim().split('\n').length).toBe(3_291);
  });

  it('promotes under load across both routers: no failed request, no mixed response', async () => {
    // a tenant of its own: its document-limit checks must not count (and index) the catalogs above
    const own = await tenantKey(r1, cluster.adminKey, { tenant_id: 'promoter', name: 'P', plan: 'pro' });
    const r = await promoteUnderLoad(cluster.routerUrls, own, 'live');
    expect(r.errors).toEqual([]);
    expect(r.mixed).toBe(0);
    expect(r.flips).toBe(0);
    expect(r.sawOld).toBeGreaterThan(0);
    expect(r.sawNew).toBeGreaterThan(0);
    expect(r.typeahead).toBeGreaterThan(0);
  });

  it('finds the job of a SIGKILLed shard node stuck and resumes it after restart, every row once', async () => {
    const up = await uploadFile(cluster.routerUrls[0]!, key, 'crash', bigBasketCsv(), { filename: 'bigbasket.csv' });
    expect(up.body.run).toBe('background');
    const jobId = up.body.job_id;
    await waitFor(async () => (await r1.call<JobView>('GET', `/v1/ingestion-jobs/${jobId}`, { key })).body.processed >= 3_000, 60_000, 'the job to be under way');
    const victim = await sequencerOf('shop', up.body.job.physical_index_id);
    expect(victim).toBeGreaterThanOrEqual(0);
    await cluster.shards[victim]!.kill();
    // the lease lapses: reading the job finds it stuck and queues it again (its node is down)
    await waitFor(async () => (await r2.call<JobView>('GET', `/v1/ingestion-jobs/${jobId}`, { key })).body.status === 'queued', 30_000, 'the stuck job to be requeued');
    await cluster.restartShard(victim);
    const done = await waitForJob(r2, key, jobId, 'ingestion', 180_000);
    expect(done).toMatchObject({ status: 'succeeded', processed: 27_555, failed: 0, total: 27_555 });
    // at least the killed attempt and the resumed one; a busy machine may let a lease lapse once more
    expect(done.attempts).toBeGreaterThanOrEqual(2);
    const exported = await r1.call<{ documents: { id: string }[]; total: number }>('GET', '/v1/indexes/crash/export', { key });
    expect(exported.status).toBe(200);
    expect(exported.body.total).toBe(27_555);
    const ids = new Set(exported.body.documents.map((d) => Number(d.id)));
    for (let i = 1; i <= 27_555; i++) if (!ids.has(i)) throw new Error(`document ${i} was lost`);
  });
});
