// Growing and losing shard nodes for real: etcd, shard nodes and a router as separate processes
// (replication factor 2, 16 partitions, at most 2 moves at a time).
// 1. A 4th shard node joins while writers keep writing: no write fails, the new node ends up
//    holding its share of replicas, and every acknowledged document is readable afterwards.
// 2. A primary is SIGKILLed under the same write load: writes to its partitions fail only until
//    its lease lapses and followers are promoted (the recovery time is measured and bounded),
//    no acknowledged write is lost, and the partitions are re-replicated on the survivors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';
import { partitionOf } from '../runtime/hash.js';
import { WriteLoad, missingDocuments, percentile } from '../../loadtest/placement/write-load.js';

interface ClusterView {
  epoch: number;
  settled: boolean;
  nodes: { node_id: string; live: boolean; primaries: number; replicas: number; document_count: number | null }[];
  partitions: { partition: number; primary: string | null; followers: string[] }[];
  moves: { partition: number; to: string }[];
}

// the default lease TTL: shorter ones (3 s, 6 s) were lost under a loaded machine, taking nodes down
const TTL_SECONDS = 10;
let cluster: LocalCluster;
let api: ApiClient;
let key: string;
let growLoad: WriteLoad | undefined;
let killLoad: WriteLoad | undefined;
let victimIndex = -1;
const indexes = Array.from({ length: 8 }, (_, i) => `grow-${i}`);

const view = async () => {
  const r = await api.call<ClusterView>('GET', '/v1/admin/cluster', { key: cluster.adminKey });
  expect(r.status).toBe(200);
  return r.body;
};

function diagnostics(load?: WriteLoad): string {
  const logs = cluster.shards.map((s) => `--- ${s.name}\n${s.output.filter((l) => /"level":"(warn|error)"|move|placement/.test(l)).slice(-25).join('\n')}`);
  return JSON.stringify(load?.failures.slice(0, 5) ?? []) + '\n' + logs.join('\n');
}

/** The partition of each test index (one part each), in the order of `indexes`. */
async function indexPartitions(): Promise<number[]> {
  const views = (await api.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key })).body;
  return indexes.map((index) => partitionOf('grow', views.find((v) => v.index_id === index)!.physical_index_id, 0, 16));
}

/** waitFor that, on timeout, fails with the cluster view and the shard nodes' recent placement log lines. */
async function waitForCluster(probe: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  try {
    await waitFor(probe, ms, what);
  } catch (err) {
    const v = await view().catch(() => null);
    throw new Error(`${(err as Error).message}\nview: ${JSON.stringify({ epoch: v?.epoch, settled: v?.settled, nodes: v?.nodes, moves: v?.moves })}\n${diagnostics()}`, { cause: err });
  }
}

beforeAll(async () => {
  cluster = await startLocalCluster({
    shards: 3,
    routers: 1,
    partitions: 16,
    env: { SUGGEST_REPLICATION_FACTOR: '2', SUGGEST_MAX_CONCURRENT_MOVES: '2', SUGGEST_MEMBER_TTL_SECONDS: String(TTL_SECONDS) },
  });
  api = new ApiClient(cluster.routerUrls[0]!);
  await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  key = await tenantKey(api, cluster.adminKey, { tenant_id: 'grow', name: 'Grow', plan: 'enterprise' });
  for (const index_id of indexes) expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('cluster placement', () => {
  it('publishes the cluster view to admins only, with every partition on 2 nodes', async () => {
    expect((await api.call('GET', '/v1/admin/cluster', { key })).status).toBe(403);
    expect((await api.call('GET', '/v1/admin/cluster')).status).toBe(401);
    const v = await view();
    expect(v.partitions).toHaveLength(16);
    for (const p of v.partitions) expect(1 + p.followers.length).toBe(2);
    expect(v.nodes.filter((n) => n.live)).toHaveLength(3);
    const spec = (await api.call<string>('GET', '/openapi.yaml')).body;
    expect(spec).toContain('/v1/admin/cluster');
    expect(spec).toContain('ClusterView');
    const scrape = (await api.call<string>('GET', '/metrics')).body;
    expect(scrape).toMatch(new RegExp(`^suggest_placement_epoch ${v.epoch}$`, 'm'));
    expect(scrape).toMatch(/^suggest_placement_moves_in_progress 0$/m);
    expect(scrape).toMatch(/^suggest_router_shard_retries\{reason="wrong_owner"\} \d+$/m);
  });

  it('promotes a staging index of 3 parts once both replicas of every part have loaded its engine', async () => {
    const own = await tenantKey(api, cluster.adminKey, { tenant_id: 'swapper', name: 'Swapper', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key: own, body: { index_id: 'swap', name: 'swap', parts: 3 } })).status).toBe(200);
    const staging = (await api.call<{ physical_index_id: string }>('POST', '/v1/indexes/swap/allocate-physical-id', { key: own })).body.physical_index_id;
    const documents = Array.from({ length: 90 }, (_, i) => ({ id: `d${i}`, title: `Cordless drill ${i}`, raw: {} }));
    expect((await api.call('POST', `/v1/indexes/${staging}/documents`, { key: own, body: { documents } })).status).toBe(200);
    const promoted = await api.call<{ physical_index_id: string; warm: { ready: boolean; replicas: number; replicas_ready: number; pending: unknown[] } }>('POST', '/v1/indexes/swap/promote', {
      key: own,
      body: { physical_index_id: staging },
    });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    // 3 parts on 2 replicas each: the primaries and the followers that share the reads
    expect(promoted.body.warm).toMatchObject({ ready: true, replicas: 6, replicas_ready: 6, pending: [] });
    const answer = await api.call<{ suggestions: unknown[] }>('GET', '/v1/typeahead?index=swap&query=cordl', { key: own });
    expect(answer.body.suggestions.length).toBeGreaterThan(0);
  });

  it("warms both replicas of an ingestion job's index when the job succeeds", async () => {
    const own = await tenantKey(api, cluster.adminKey, { tenant_id: 'jobwarm', name: 'Job warm', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key: own, body: { index_id: 'feed', name: 'feed' } })).status).toBe(200);
    const documents = Array.from({ length: 2_100 }, (_, i) => ({ id: `f${i}`, title: `Garden hose ${i}`, raw: {} }));
    const job = await api.call<{ job_id: string }>('POST', '/v1/indexes/feed/ingest/start', { key: own, body: documents });
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    await waitFor(async () => (await api.call<{ status: string }>('GET', `/v1/ingestion-jobs/${job.body.job_id}`, { key: own })).body.status === 'succeeded', 60_000, 'job succeeded');
    // the runner's report: the primary and the follower of the index's one part, each asked to load
    let states: string[] | undefined;
    await waitFor(
      async () => {
        const line = cluster.shards.flatMap((s) => s.output).find((l) => l.includes('engine warm-up after ingestion') && l.includes(job.body.job_id));
        states = line === undefined ? undefined : (JSON.parse(line) as { parts: string[] }).parts;
        return states !== undefined;
      },
      10_000,
      'the warm-up report',
    );
    expect(states).toHaveLength(2);
    for (const s of states!) expect(['loading', 'ready']).toContain(s);
  });

  it('adds a 4th shard node under write load with zero errors; every acknowledged document is readable', async () => {
    const load = new WriteLoad({ urls: cluster.routerUrls, key, indexes, batch: 10, concurrency: 2, prefix: 'grow' });
    growLoad = load;
    await load.fill(2_000);
    load.start();
    await new Promise((r) => setTimeout(r, 1_000));
    const added = await cluster.addShard();
    const started = Date.now();
    await waitForCluster(
      async () => {
        const v = await view();
        return v.settled && (v.nodes.find((n) => n.node_id === added.info.node_id)?.replicas ?? 0) > 0;
      },
      150_000,
      'placement to settle on 4 nodes',
    );
    const settleMs = Date.now() - started;
    await new Promise((r) => setTimeout(r, 500));
    await load.stop();
    expect(load.failures, diagnostics(load)).toEqual([]);
    const v = await view();
    const joined = v.nodes.find((n) => n.node_id === added.info.node_id)!;
    // 16 partitions x 2 replicas over 4 nodes: 8 each
    expect(joined.replicas).toBe(8);
    // it holds documents exactly when one of its partitions holds a test index (8 indexes may all
    // hash onto the other 8 partitions, so "more than 0" alone is not always true)
    const holdsIndex = (await indexPartitions()).some((partition) => {
      const p = v.partitions[partition]!;
      return p.primary === joined.node_id || p.followers.includes(joined.node_id);
    });
    if (holdsIndex) expect(joined.document_count).toBeGreaterThan(0);
    else expect(joined.document_count).toBe(0);
    const missing = await missingDocuments(cluster.routerUrls[0]!, key, load.acknowledged);
    for (const m of missing) {
      expect(m.missing, m.index).toEqual([]);
      expect(m.total).toBe(load.acknowledged.get(m.index)!.size);
    }
    console.log(JSON.stringify({ test: 'add-shard', settle_ms: settleMs, acknowledged: load.acknowledgedCount, write_p99_ms: percentile(load.latencies.map((l) => l.ms), 99) }));
  }, 200_000);

  it('SIGKILL of a primary with RF=2 loses no acknowledged write; followers take over within the lease TTL', async () => {
    const before = await view();
    // the victim: the primary of the most partitions that hold the test indexes
    const hits = new Map<string, number>();
    for (const partition of await indexPartitions()) {
      const primary = before.partitions[partition]!.primary!;
      hits.set(primary, (hits.get(primary) ?? 0) + 1);
    }
    const victimId = [...hits].sort((a, b) => b[1] - a[1])[0]![0];
    victimIndex = cluster.shards.findIndex((s) => s.info.node_id === victimId);
    const victim = cluster.shards[victimIndex]!;
    const load = new WriteLoad({ urls: cluster.routerUrls, key, indexes, batch: 10, concurrency: 2, prefix: 'kill' });
    killLoad = load;
    load.start();
    await new Promise((r) => setTimeout(r, 1_000));
    const killedAt = Date.now();
    await victim.kill();
    // keep writing through the failover, then a little longer
    await waitFor(async () => !(await view()).partitions.some((p) => p.primary === victim.info.node_id), 30_000, 'failover');
    const failoverMs = Date.now() - killedAt;
    await new Promise((r) => setTimeout(r, 3_000));
    await load.stop();
    const lastFailure = Math.max(killedAt, ...load.failures.map((f) => f.at));
    const recoveryMs = lastFailure - killedAt;
    // failures only while the dead primary still held its partitions: a lease TTL plus a reconcile
    for (const f of load.failures) expect(f.status, JSON.stringify(f)).toBe(503);
    expect(recoveryMs).toBeLessThan(TTL_SECONDS * 1000 + 5_000);
    const missing = await missingDocuments(cluster.routerUrls[0]!, key, load.acknowledged);
    for (const m of missing) expect(m.missing, m.index).toEqual([]);
    // the documents of the previous test survived the kill as well
    if (growLoad) for (const m of await missingDocuments(cluster.routerUrls[0]!, key, growLoad.acknowledged)) expect(m.missing, m.index).toEqual([]);
    await waitForCluster(async () => (await view()).settled, 120_000, 're-replication on the survivors');
    const after = await view();
    for (const p of after.partitions) {
      expect([p.primary, ...p.followers]).not.toContain(victim.info.node_id);
      expect(1 + p.followers.length).toBe(2);
    }
    console.log(JSON.stringify({ test: 'kill-primary', failover_ms: failoverMs, recovery_ms: recoveryMs, failed_writes: load.failures.length, acknowledged: load.acknowledgedCount }));
  }, 200_000);

  it('a killed node that restarts is given fresh copies (its stale ones are dropped) and nothing acknowledged is lost', async () => {
    expect(victimIndex).toBeGreaterThanOrEqual(0);
    const load = new WriteLoad({ urls: cluster.routerUrls, key, indexes, batch: 10, concurrency: 1, prefix: 'back' });
    load.start();
    await cluster.restartShard(victimIndex);
    const id = cluster.shards[victimIndex]!.info.node_id;
    await waitForCluster(
      async () => {
        const v = await view();
        return v.settled && (v.nodes.find((n) => n.node_id === id)?.replicas ?? 0) === 8;
      },
      150_000,
      'the restarted node to be filled again',
    );
    await load.stop();
    // A restart moves replicas (and some primaries) onto the node; each cutover is retried by the
    // router. On a loaded machine a lease can still lapse mid-move: then writes to the partitions
    // it held get 503 until followers are promoted, as in the SIGKILL test, and within its bound.
    for (const f of load.failures) expect(f.status, diagnostics(load)).toBe(503);
    if (load.failures.length > 0) {
      const at = load.failures.map((f) => f.at);
      expect(Math.max(...at) - Math.min(...at), diagnostics(load)).toBeLessThan(TTL_SECONDS * 1000 + 5_000);
      console.log(JSON.stringify({ test: 'restart', failed_writes: load.failures.length, first: load.failures[0] }));
    }
    for (const l of [growLoad, killLoad, load]) {
      if (!l) continue;
      for (const m of await missingDocuments(cluster.routerUrls[0]!, key, l.acknowledged)) expect(m.missing, m.index).toEqual([]);
    }
  }, 200_000);
});
