// Reads through a primary's crash, for real: etcd, 3 shard nodes and a router as separate
// processes, replication factor 2. The primary of an index's partition is SIGKILLed: its
// membership lease outlives it for up to 10 s and the partition fails over after that, and every
// search meanwhile and after is answered, by the follower, with every document.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../runtime/hash.js';
import type { LocalCluster } from '../runtime/process-harness.js';
import { metricValue, waitFor, type ApiClient } from './api-client.js';
import { startReplicatedCluster } from './replicated-cluster.js';

const PARTITIONS = 8;
let cluster: LocalCluster;
let api: ApiClient;
let key: string;

beforeAll(async () => {
  ({ cluster, api, key } = await startReplicatedCluster('failover', PARTITIONS));
  expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'shop', name: 'shop' } })).status).toBe(200);
  const documents = Array.from({ length: 12 }, (_, i) => ({ id: `d${i}`, title: `Wombat Kettle ${i}` }));
  expect((await api.call('POST', '/v1/indexes/shop/documents', { key, body: { documents } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

/** The router's count of part queries answered by `replica` (primary, follower, follower_fallback, follower_for_primary). */
const partQueries = (replica: string) => metricValue(api, `suggest_router_part_queries\\{replica="${replica}"\\}`);

describe('reads through a failover', () => {
  it('answers every search while the primary of its partition is dead, before and after the failover', async () => {
    const physical = (await api.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key })).body.find((v) => v.index_id === 'shop')!.physical_index_id;
    const partition = partitionOf('failover', physical, 0, PARTITIONS);
    const view = async () =>
      (await api.call<{ partitions: { partition: number; primary: string | null; followers: string[] }[] }>('GET', '/v1/admin/cluster', { key: cluster.adminKey })).body.partitions.find((p) => p.partition === partition)!;
    const before = await view();
    // the documents found, or the refusal with its code and detail (what a failure needs to be understood)
    const ask = async (): Promise<number | string> => {
      const r = await api.call<{ suggestions: { id: string }[]; code?: string; detail?: string }>('GET', '/v1/typeahead?index=shop&bypass_cache=true&query=wombat&limit=20', { key });
      return r.status === 200 ? r.body.suggestions.filter((s) => !s.id.startsWith('q:')).length : `${r.status} ${r.body.code}: ${r.body.detail}`;
    };
    expect(await ask()).toBe(12);
    const standIns = await partQueries('follower_for_primary');
    await cluster.shards.find((s) => s.name === before.primary)!.kill();
    // while its lease lasts the router still takes the dead node for live
    const during: (number | string)[] = [];
    for (let i = 0; i < 20; i++) during.push(await ask());
    expect(during).toEqual(during.map(() => 12));
    expect(await partQueries('follower_for_primary')).toBeGreaterThan(standIns);
    await waitFor(async () => (await view()).primary !== before.primary, 60_000, 'the partition to fail over');
    const after: (number | string)[] = [];
    for (let i = 0; i < 10; i++) after.push(await ask());
    expect(after).toEqual(after.map(() => 12));
  }, 120_000);
});
