// Physical-index deletion and the allocation cap on a local cluster (etcd, 2 shard nodes, 2
// routers): a physical index deleted through one router is gone for the other at once (the
// coordinator's watch, not a cache expiry), so a write through the other router cannot put data
// back into dropped parts; allocations racing on both routers stop at the cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PHYSICAL_INDEXES_PER_INDEX, type Coordinator } from '../../coordinator/coordinator.js';
import { createCoordinator } from '../../coordinator/create-coordinator.js';
import { loadConfig } from '../runtime/config.js';
import { IndexId, PhysicalIndexId, TenantId } from '../runtime/ids.js';
import { setLogLevel } from '../runtime/log.js';
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';

let cluster: LocalCluster;
let coordinator: Coordinator;
let r1: ApiClient;
let r2: ApiClient;
let key: string;

beforeAll(async () => {
  setLogLevel('error');
  cluster = await startLocalCluster({ shards: 2, routers: 2, partitions: 8 });
  coordinator = await createCoordinator({ ...loadConfig({}), etcd: cluster.etcd.endpoints });
  [r1, r2] = cluster.routerUrls.map((u) => new ApiClient(u)) as [ApiClient, ApiClient];
  await waitFor(async () => (await r1.call('GET', '/readyz')).status === 200 && (await r2.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  key = await tenantKey(r1, cluster.adminKey, { tenant_id: 'shop', name: 'Shop', plan: 'enterprise' });
}, 180_000);
afterAll(async () => {
  await coordinator?.close();
  await cluster?.stop();
});

const docs = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, title: `Item ${from + i}` }));

describe('physical indexes on a cluster', () => {
  it('a physical index deleted through one router takes no more writes through the other', async () => {
    expect((await r1.call('POST', '/v1/indexes', { key, body: { index_id: 'daily', name: 'daily' } })).status).toBe(200);
    const staging = (await r1.call<{ physical_index_id: string }>('POST', '/v1/indexes/daily/allocate-physical-id', { key })).body.physical_index_id;
    // the other router fills it, so it holds the physical record in its cache
    expect((await r2.call('POST', `/v1/indexes/${staging}/documents`, { key, body: { documents: docs(6) } })).status).toBe(200);
    const del = await r1.call<{ documents_removed: number }>('DELETE', `/v1/indexes/${staging}`, { key });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body.documents_removed).toBe(6);
    // the watch reaches the other router in milliseconds; its cache would keep the record for a minute
    await waitFor(async () => (await r2.call('POST', `/v1/indexes/${staging}/documents`, { key, body: { documents: docs(1, 50) } })).status === 404, 2_000, 'the other router to forget the physical index');
    // nothing came back on the shard: the id given a record again is empty, seen from both routers
    await coordinator.putPhysicalIndex({ tenant_id: TenantId('shop'), physical_index_id: PhysicalIndexId(staging), index_id: IndexId('daily'), parts: 1, created_at: new Date().toISOString() });
    for (const r of [r1, r2]) {
      await waitFor(async () => (await r.call('GET', `/v1/indexes/${staging}/documents?page_size=1`, { key })).status === 200, 5_000, 'the record again');
      expect((await r.call<{ total: number }>('GET', `/v1/indexes/${staging}/documents?page_size=1`, { key })).body.total).toBe(0);
    }
    // the live one stays, whichever router is asked
    const live = (await coordinator.getIndex(TenantId('shop'), IndexId('daily')))!.physical_index_id;
    expect((await r2.call('DELETE', `/v1/indexes/${live}`, { key })).status).toBe(409);
  });

  it('allocations racing on both routers stop at the cap', async () => {
    expect((await r1.call('POST', '/v1/indexes', { key, body: { index_id: 'racy', name: 'racy' } })).status).toBe(200);
    const tries = MAX_PHYSICAL_INDEXES_PER_INDEX + 8;
    const results = await Promise.all(Array.from({ length: tries }, (_, i) => (i % 2 ? r1 : r2).call('POST', '/v1/indexes/racy/allocate-physical-id', { key })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(MAX_PHYSICAL_INDEXES_PER_INDEX - 1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(tries - MAX_PHYSICAL_INDEXES_PER_INDEX + 1);
    expect(await coordinator.listPhysicalIndexes(TenantId('shop'), IndexId('racy'))).toHaveLength(MAX_PHYSICAL_INDEXES_PER_INDEX);
  });
});
