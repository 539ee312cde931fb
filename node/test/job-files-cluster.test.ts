// Job files outlive the shard node that stored them, for real: etcd, 3 shard nodes and a router
// as separate processes, replication factor 2. A presigned upload is copied to the followers of
// its partition: its home is killed, the partition fails over, and cloud-complete reads the file
// from the promoted follower. An export is copied to the followers of the index's sequencer
// partition: the node that wrote it is killed, and the download comes from a copy at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../runtime/hash.js';
import type { LocalCluster } from '../runtime/process-harness.js';
import { waitFor, type ApiClient } from './api-client.js';
import { startReplicatedCluster } from './replicated-cluster.js';
import { bestBuyJsonl, waitForJob, type StartView } from './job-client.js';

const PARTITIONS = 8;
let cluster: LocalCluster;
let api: ApiClient;
let key: string;

interface ClusterView {
  settled: boolean;
  partitions: { partition: number; primary: string | null; followers: string[] }[];
}

beforeAll(async () => {
  ({ cluster, api, key } = await startReplicatedCluster('files', PARTITIONS));
  expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'bestbuy', name: 'bestbuy' } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

const view = async () => (await api.call<ClusterView>('GET', '/v1/admin/cluster', { key: cluster.adminKey })).body;
const primaryOf = async (physical: string) => (await view()).partitions.find((p) => p.partition === partitionOf('files', physical, 0, PARTITIONS))!.primary;
const physicalOf = async (index: string) => (await api.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key })).body.find((v) => v.index_id === index)!.physical_index_id;
const shardNamed = (name: string) => cluster.shards.find((s) => s.name === name)!;

describe('job files on a cluster with replication', () => {
  it('ingests a presigned upload whose home node died, from the promoted follower', async () => {
    const sequencer = await primaryOf(await physicalOf('bestbuy'));
    // an upload kept away from the index's sequencer, so that the job still has a node to run on
    let upload: { upload_id: string; upload_url: string } | null = null;
    for (let i = 0; i < 50 && upload === null; i++) {
      const u = (await api.call<{ upload_id: string; upload_url: string }>('POST', '/v1/indexes/bestbuy/upload-url', { key })).body;
      if ((await primaryOf(`~upload/${u.upload_id}`)) !== sequencer) upload = u;
    }
    expect(upload).not.toBeNull();
    const put = await fetch(cluster.routerUrls[0] + upload!.upload_url, { method: 'PUT', body: new Uint8Array(bestBuyJsonl()) });
    expect(put.status).toBe(200);
    const home = (await primaryOf(`~upload/${upload!.upload_id}`))!;
    await shardNamed(home).kill();
    // its partitions fail over once its lease lapses (10 s)
    await waitFor(async () => {
      const p = await primaryOf(`~upload/${upload!.upload_id}`);
      return p !== null && p !== home;
    }, 60_000, "the upload's partition to fail over");
    const done = await api.call<StartView>('POST', '/v1/indexes/bestbuy/ingest/cloud-complete', { key, body: { upload_id: upload!.upload_id, source_filename: 'bestbuy.jsonl' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(await waitForJob(api, key, done.body.job_id, 'ingestion', 120_000)).toMatchObject({ status: 'succeeded', processed: 3_291, failed: 0 });
  }, 180_000);

  it('downloads an export whose node died, from a copy', async () => {
    // the node killed above left partitions with one replica until they are copied again: the
    // export's file is copied to the followers its partition has when it is written
    await waitFor(async () => (await api.call<{ settled: boolean }>('GET', '/v1/admin/cluster', { key: cluster.adminKey })).body.settled, 90_000, 'the cluster to settle on the live nodes');
    const exp = await api.call<StartView>('POST', '/v1/indexes/bestbuy/export/start', { key, body: { format: 'jsonl' } });
    expect(exp.status, JSON.stringify(exp.body)).toBe(200);
    const job = await waitForJob(api, key, exp.body.job_id, 'export', 120_000);
    expect(job.status).toBe('succeeded');
    // the export ran on the sequencer and wrote its file there
    const writer = (await primaryOf(await physicalOf('bestbuy')))!;
    await shardNamed(writer).kill();
    const file = await fetch(cluster.routerUrls[0] + job.download_url!, { headers: { 'x-api-key': key } });
    expect(file.status).toBe(200);
    expect((await file.text()).trim().split('\n').length).toBe(3_291);
  }, 180_000);
});
