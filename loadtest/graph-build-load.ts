// Typeahead while an index's ANN graph is built: what a graph build does to the requests a node
// answers meanwhile. For each way of building (SUGGEST_GRAPH_THREAD: 1 on the segment pool's
// graph thread, 0 in 4 ms slices on the event loop), alternated and repeated, a fresh single
// node gets the catalogue; typeahead keystrokes are offered at a fixed rate, first with no build
// (quiet), then from the moment one vector query asks for the graph until it is complete. Reports
// the build's wall time, typeahead's latency percentiles quiet and during the build, and the
// node's resident memory once every query thread holds the graph, per way, in the same run. Caches are bypassed; writes the JSON under loadtest/results/.
//
//   node dist/loadtest/graph-build-load.js [--catalog bestbuy,homedepot] [--ways 1,0] [--repeat 2]
//        [--rate 1000] [--connections 8] [--quiet 8] [--backend hnswlib] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSingleNode } from '../node/runtime/process-harness.js';
import { loadCatalogSpec } from './data/catalog.js';
import { REPO_ROOT } from './data/data-files.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources } from './data/keystrokes.js';
import { LatencyStats, type LatencySummary } from './load/latency-stats.js';
import { runRound, type RoundResult } from './load/load-round.js';
import { processResidentMb } from './load/process-cpu.js';
import { provisionIndex, waitSearchable, waitSettled } from './load/provision-service.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    ways: { type: 'string', default: '1,0' },
    repeat: { type: 'string', default: '2' },
    rate: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '8' },
    quiet: { type: 'string', default: '8' },
    backend: { type: 'string', default: 'hnswlib' },
    out: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`[graph-build-load] ${line}\n`);
const num = (name: 'repeat' | 'rate' | 'connections' | 'quiet') => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
  return n;
};

interface Outcome {
  graph_thread: boolean;
  documents: number;
  build_s: number;
  /** the node's resident memory once the graph is built and read by every query thread */
  rss_mb: number | null;
  quiet: LatencySummary & { rps: number; failed: number };
  during_build: LatencySummary & { rps: number; failed: number };
}

/** Rounds of this length run back to back while the graph builds. */
const ROUND_S = 2;

const summary = (stats: LatencyStats, rounds: RoundResult[]) => {
  const seconds = rounds.reduce((a, r) => a + r.elapsed_s, 0);
  const ok = rounds.reduce((a, r) => a + r.ok, 0);
  return { ...stats.summary(), rps: Math.round(ok / Math.max(seconds, 1e-9)), failed: rounds.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0) };
};

async function measure(graphThread: boolean, docs: ReturnType<typeof loadCatalogSpec>, typeahead: string[]): Promise<Outcome> {
  log(`graph thread ${graphThread ? 'on' : 'off'}: starting a single node`);
  const node = await startSingleNode({ env: { SUGGEST_GRAPH_THREAD: graphThread ? '1' : '0' } });
  try {
    const p = await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'graphs', indexId: 'products', docs, log });
    // the first query loads the index's engine: settled means settled after that
    await waitSearchable(node.baseUrl, p.publicKey, typeahead[0]!);
    await waitSettled(node.baseUrl, p.privateKey, 'products', log);
    const headers = { 'x-api-key': p.publicKey };
    const base = { url: node.baseUrl, paths: typeahead, headers, pipelining: 1, timeoutS: 10, connections: num('connections'), rate: num('rate') };
    await runRound({ ...base, startAt: 0, durationS: 3 }); // warm-up
    const quietStats = new LatencyStats();
    const quiet = await runRound({ ...base, startAt: 20_000, durationS: num('quiet') });
    quietStats.addAll(quiet.stats);

    // one vector query starts the build; the graph is ready when debug says so
    const probe = `${node.baseUrl}/v1/autocomplete?index=products&query=drill&mode=vector_only&debug=true&bypass_cache=true&vector_backend=${values.backend}`;
    const ready = async () => {
      const r = await fetch(probe, { headers });
      const body = (await r.json()) as { debug?: { vector?: { graph?: { ready?: boolean; total?: number } } } };
      return body.debug?.vector?.graph ?? {};
    };
    const started = performance.now();
    if ((await ready()).ready === true) throw new Error('the graph was ready before the build was asked for');
    let builtAt = 0;
    const watching = (async () => {
      while (builtAt === 0) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        if ((await ready()).ready === true) builtAt = performance.now();
        if (performance.now() - started > 900_000) throw new Error('the graph was not built in 15 minutes');
      }
    })();
    const during: RoundResult[] = [];
    const duringStats = new LatencyStats();
    for (let at = 40_000; builtAt === 0; at += 10_000) {
      const r = await runRound({ ...base, startAt: at, durationS: ROUND_S });
      during.push(r);
      duringStats.addAll(r.stats);
    }
    await watching;
    const build_s = Math.round((builtAt - started) / 100) / 10;
    log(`graph thread ${graphThread ? 'on' : 'off'}: graph of ${p.documents} documents built in ${build_s} s`);
    // every query thread reads the graph, the graph thread (if any) exits: the node's memory then
    for (let i = 0; i < 16; i++) await fetch(probe.replace('query=drill', `query=drill+${i}`), { headers });
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const rss_mb = processResidentMb(node.process.child.pid);
    log(`graph thread ${graphThread ? 'on' : 'off'}: resident memory ${rss_mb} MB`);
    return { graph_thread: graphThread, documents: p.documents, build_s, rss_mb, quiet: summary(quietStats, [quiet]), during_build: summary(duringStats, during) };
  } finally {
    await node.stop();
  }
}

async function main(): Promise<void> {
  const ways = (values.ways ?? '1,0').split(',').map((w) => w.trim());
  if (ways.some((w) => w !== '0' && w !== '1')) throw new Error('--ways takes 1 (graph thread) and 0 (slices on the event loop), e.g. 1,0');
  const docs = loadCatalogSpec(values.catalog ?? 'bestbuy,homedepot');
  const queries = loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log']));
  const typeahead = keystrokeStream(queries, { sessions: 20000, seed: 1, minPrefix: 1 }).map((q) => `/v1/typeahead?index=products&limit=10&bypass_cache=true&query=${encodeURIComponent(q)}`);
  const outcomes: Outcome[] = [];
  for (let i = 0; i < num('repeat'); i++) for (const w of ways) outcomes.push(await measure(w === '1', docs, typeahead));
  const ms = (x: number) => x.toFixed(2);
  console.log(`\ntypeahead offered at ${values.rate} req/s (${values.connections} conn., caches bypassed) on ${docs.length} documents while the ${values.backend} graph builds, ${os.cpus().length} CPUs\n`);
  console.log('| graphs built | build s | node RSS after, MB | typeahead | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | failed |');
  console.log('|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const o of outcomes) {
    for (const [name, s] of [['quiet', o.quiet], ['during the build', o.during_build]] as const) {
      console.log(`| ${o.graph_thread ? 'graph thread' : 'slices on the event loop'} | ${o.build_s} | ${o.rss_mb ?? 'n/a'} | ${name} | ${s.rps} | ${ms(s.p50_ms)} | ${ms(s.p90_ms)} | ${ms(s.p99_ms)} | ${ms(s.p999_ms)} | ${ms(s.max_ms)} | ${s.failed} |`);
    }
  }
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `graph-build-load-${new Date().toISOString().slice(0, 10)}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ catalog: values.catalog, rate: num('rate'), connections: num('connections'), backend: values.backend, cpus: os.cpus().length, outcomes }, null, 2));
  log(`wrote ${path.relative(process.cwd(), out)}`);
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
