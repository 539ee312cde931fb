// Time to settle a 3 -> 4 shard node cluster holding N documents, and the write latency while
// partitions move, against a baseline of the same write load on the same cluster before the
// 4th node joins (same invocation, same machine state). Beside the writers, one searcher asks
// typeahead of each index in turn (caches bypassed) and counts what a user would see go wrong:
// failed requests, and empty answers (those flagged `documents_indexing`: the index's engine
// still loading on the node that answered). Real processes: etcd, shard nodes and a router
// started by the process harness.
//
//   npm run build && node dist/loadtest/placement/settle-bench.js [--docs 20000] [--partitions 64]
//     [--rf 2] [--moves 2] [--concurrency 2] [--baseline-seconds 10]
//
// Prints one JSON object and writes it to loadtest/results/placement-settle-<ts>.json.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLocalCluster } from '../../node/runtime/process-harness.js';
import { REPO_ROOT } from '../data/data-files.js';
import { WriteLoad, missingDocuments, percentile } from './write-load.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    docs: { type: 'string', default: '20000' },
    partitions: { type: 'string', default: '64' },
    rf: { type: 'string', default: '2' },
    moves: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '2' },
    'baseline-seconds': { type: 'string', default: '10' },
  },
});
const docs = Number(values.docs);
const partitions = Number(values.partitions);
const concurrency = Number(values.concurrency);

interface View {
  settled: boolean;
  epoch: number;
  nodes: { node_id: string; replicas: number; primaries: number; document_count: number | null }[];
  router: { retries_wrong_owner: number; retries_unavailable: number };
}

/** One client typing into every index in turn: typeahead latency, failures and empty answers. */
class SearchProbe {
  readonly answers: { at: number; ms: number; status: number; suggestions: number; indexing: boolean }[] = [];
  private running = false;
  private loop: Promise<void> | null = null;
  constructor(private readonly url: string, private readonly key: string, private readonly indexes: string[]) {}
  start(): void {
    this.running = true;
    this.loop = (async () => {
      for (let turn = 0; this.running; turn++) {
        const index = this.indexes[turn % this.indexes.length]!;
        const began = Date.now();
        let status = 0;
        let suggestions = 0;
        let indexing = false;
        try {
          const res = await fetch(`${this.url}/v1/typeahead?${new URLSearchParams({ index, query: 'placement doc', bypass_cache: 'true' })}`, { headers: { 'x-api-key': this.key } });
          status = res.status;
          const body = (await res.json()) as { suggestions?: unknown[]; documents_indexing?: number };
          suggestions = body.suggestions?.length ?? 0;
          indexing = (body.documents_indexing ?? 0) > 0;
        } catch {
          // status 0: no answer
        }
        this.answers.push({ at: began, ms: Date.now() - began, status, suggestions, indexing });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
  }
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
  summary(from: number, to: number) {
    const a = this.answers.filter((x) => x.at >= from && x.at <= to);
    const ms = a.map((x) => x.ms);
    return {
      queries: a.length,
      p50_ms: percentile(ms, 50),
      p99_ms: percentile(ms, 99),
      max_ms: ms.length ? Math.max(...ms) : NaN,
      failed: a.filter((x) => x.status !== 200).length,
      empty: a.filter((x) => x.status === 200 && x.suggestions === 0).length,
      empty_flagged_indexing: a.filter((x) => x.status === 200 && x.suggestions === 0 && x.indexing).length,
    };
  }
}

const summary = (lat: { ms: number }[]) => {
  const ms = lat.map((l) => l.ms);
  return { writes: ms.length, p50_ms: percentile(ms, 50), p95_ms: percentile(ms, 95), p99_ms: percentile(ms, 99), max_ms: ms.length ? Math.max(...ms) : NaN };
};

const cluster = await startLocalCluster({
  shards: 3,
  routers: 1,
  partitions,
  env: { SUGGEST_REPLICATION_FACTOR: values.rf!, SUGGEST_MAX_CONCURRENT_MOVES: values.moves! },
});
try {
  const url = cluster.routerUrls[0]!;
  const admin = { 'x-api-key': cluster.adminKey, 'content-type': 'application/json' };
  const view = async (): Promise<View> => (await (await fetch(`${url}/v1/admin/cluster`, { headers: admin })).json()) as View;
  for (let i = 0; i < 300 && (await fetch(`${url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
  await fetch(`${url}/v1/admin/tenants`, { method: 'POST', headers: admin, body: JSON.stringify({ tenant_id: 'bench', name: 'Bench', plan: 'enterprise' }) });
  const key = ((await (await fetch(`${url}/v1/admin/tenants/bench/keys`, { method: 'POST', headers: admin, body: JSON.stringify({ kind: 'private', name: 'bench' }) })).json()) as { key: string }).key;
  const indexes = Array.from({ length: 16 }, (_, i) => `settle-${i}`);
  for (const index_id of indexes) {
    await fetch(`${url}/v1/indexes`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ index_id, name: index_id }) });
  }

  const fillStarted = Date.now();
  const fill = new WriteLoad({ urls: [url], key, indexes, prefix: 'fill' });
  await fill.fill(docs);
  const fillMs = Date.now() - fillStarted;

  // every index's engine loaded before the baseline (a first query builds it)
  for (const index of indexes) await fetch(`${url}/v1/typeahead?${new URLSearchParams({ index, query: 'placement' })}`, { headers: { 'x-api-key': key } });
  const probe = new SearchProbe(url, key, indexes);
  probe.start();
  // baseline: the same write load, nothing moving
  const baseline = new WriteLoad({ urls: [url], key, indexes, batch: 10, concurrency, prefix: 'base' });
  const baselineAt = Date.now();
  baseline.start();
  await new Promise((r) => setTimeout(r, Number(values['baseline-seconds']) * 1000));
  await baseline.stop();

  // the move: the same load while a 4th node joins, until placement has settled
  const during = new WriteLoad({ urls: [url], key, indexes, batch: 10, concurrency, prefix: 'move' });
  during.start();
  const joinedAt = Date.now();
  const added = await cluster.addShard();
  let settledAt = 0;
  for (;;) {
    const v = await view();
    if (v.settled && (v.nodes.find((n) => n.node_id === added.info.node_id)?.replicas ?? 0) > 0) {
      settledAt = Date.now();
      break;
    }
    if (Date.now() - joinedAt > 30 * 60_000) throw new Error('placement did not settle in 30 minutes');
    await new Promise((r) => setTimeout(r, 100));
  }
  await during.stop();
  await probe.stop();
  const moveLatencies = during.latencies.filter((l) => l.at <= settledAt);
  const final = await view();

  const lost = [...(await missingDocuments(url, key, fill.acknowledged)), ...(await missingDocuments(url, key, during.acknowledged))].reduce((n, m) => n + m.missing.length, 0);
  const base = summary(baseline.latencies);
  const move = summary(moveLatencies);
  const result = {
    benchmark: 'placement-settle-3-to-4',
    command: `node dist/loadtest/placement/settle-bench.js ${process.argv.slice(2).join(' ')}`.trim(),
    at: new Date().toISOString(),
    load_average: os.loadavg().map((x) => Number(x.toFixed(2))),
    cpus: os.cpus().length,
    documents: docs,
    partitions,
    replication_factor: Number(values.rf),
    max_concurrent_moves: Number(values.moves),
    writers: concurrency,
    fill_ms: fillMs,
    settle_ms: settledAt - joinedAt,
    placement_epoch: final.epoch,
    replicas_per_node: Object.fromEntries(final.nodes.map((n) => [n.node_id, n.replicas])),
    baseline_writes: base,
    writes_during_move: move,
    search_baseline: probe.summary(baselineAt, joinedAt),
    search_baseline_second_half: probe.summary((baselineAt + joinedAt) / 2, joinedAt),
    search_during_move: probe.summary(joinedAt, settledAt),
    p99_ratio_move_vs_baseline: Number((move.p99_ms / base.p99_ms).toFixed(2)),
    failed_writes: baseline.failures.length + during.failures.length,
    lost_acknowledged_documents: lost,
    router_retries: final.router,
  };
  const dir = path.join(REPO_ROOT, 'loadtest', 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `placement-settle-${result.at.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + '\n');
  console.log(JSON.stringify(result, null, 2));
  console.log(`written to ${path.relative(REPO_ROOT, file)}`);
} finally {
  await cluster.stop();
}
