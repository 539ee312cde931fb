// The cluster the replica suites start: etcd, 3 shard nodes and a router as real processes, every
// partition on 2 nodes, ready, with one enterprise tenant and its private key.
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';

export interface ReplicatedCluster {
  cluster: LocalCluster;
  api: ApiClient;
  key: string;
}

export async function startReplicatedCluster(tenant: string, partitions: number): Promise<ReplicatedCluster> {
  const cluster = await startLocalCluster({ shards: 3, routers: 1, partitions, env: { SUGGEST_REPLICATION_FACTOR: '2' } });
  const api = new ApiClient(cluster.routerUrls[0]!);
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  const key = await tenantKey(api, cluster.adminKey, { tenant_id: tenant, name: tenant, plan: 'enterprise' });
  return { cluster, api, key };
}
