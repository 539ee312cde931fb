// Load test driver: runs a workload (loadtest/workloads/*.json) against a target and, side by
// side in the same invocation, against one or more baselines: warm-up per server, then
// alternating measured rounds (baseline, target, baseline, target, ...) so slow drifts of the
// machine hit both alike. Reports 2xx throughput and latency percentiles per server and the
// ratios target/baseline; writes everything to a JSON file under loadtest/results/.
//
//   node dist/loadtest/run-load.js --workload loadtest/workloads/typeahead-keystrokes.json
//        (--target http://127.0.0.1:PORT --key KEY | --target spawn:fastify-flexsearch | --spawn-single-node | --spawn-cluster)
//        [--parts N]   (index parts; --spawn-cluster defaults to 3)
//        [--index products] [--baseline bare-uws,fastify-flexsearch] [--out loadtest/results/x.json]
//        (a baseline bare-uws@MICROS spends MICROS µs of JavaScript per request before answering:
//         the ceiling for a handler of that cost; bare-uws@MICROSxN does so on N event loops)
//        [--duration S] [--warmup S] [--rounds N] [--connections N] [--rate REQ_PER_S]
//        [--provision --admin-key KEY] [--catalog bestbuy,homedepot] [--allow-errors] [--echo]
//        [--pid PID]   (with --target URL: the server's process, for its CPU figures)
//        [--compare-env NAME=VALUE,...]   (with --spawn-single-node: one more single node with these
//                                          settings, measured as a baseline; repeatable)
//        [--driver wrk|autocannon|paced] [--wrk-threads N]   (the load generator: wrk, in C, when it is
//                                          installed and no --rate is asked for; otherwise autocannon
//                                          in this process, which spends about as much CPU per request
//                                          as bare uWS: load-round.ts, wrk-round.ts; paced, with --rate:
//                                          requests evenly spaced, timed from when each was due,
//                                          paced-round.ts)
// See loadtest/README.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCatalogSpec } from './data/catalog.js';
import { REPO_ROOT } from './data/data-files.js';
import { suggestContractProblems } from './load/contract-check.js';
import { LatencyStats, type LatencySummary } from './load/latency-stats.js';
import { runRound, type RoundOptions, type RoundResult } from './load/load-round.js';
import { runWrkRound, wrkInstalled } from './load/wrk-round.js';
import { runPacedRound } from './load/paced-round.js';
import { mainThreadCpuSeconds, processCpuSeconds } from './load/process-cpu.js';
import { cacheLookups, hitRatio, type CacheLookups } from './load/metrics-reader.js';
import { provisionIndex, waitSearchable, waitSettled } from './load/provision-service.js';
import { parseBaselineSpec, spawnBaseline } from './load/spawned-server.js';
import { loadWorkload, parseEnvSettings, parseWorkload, requestPath, workloadQueries, type Workload } from './load/workload.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    workload: { type: 'string' },
    target: { type: 'string' },
    'spawn-single-node': { type: 'boolean', default: false },
    'spawn-cluster': { type: 'boolean', default: false },
    parts: { type: 'string' },
    key: { type: 'string' },
    index: { type: 'string', default: 'products' },
    baseline: { type: 'string' },
    out: { type: 'string' },
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    rate: { type: 'string' },
    provision: { type: 'boolean', default: false },
    'admin-key': { type: 'string' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    'allow-errors': { type: 'boolean', default: false },
    echo: { type: 'boolean', default: false },
    'compare-env': { type: 'string', multiple: true },
    driver: { type: 'string' },
    'wrk-threads': { type: 'string', default: '1' },
    pid: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`[run-load] ${line}\n`);
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nsee loadtest/README.md for usage\n`);
  process.exit(2);
};

interface Server {
  role: 'target' | 'baseline';
  name: string;
  url: string;
  key: string;
  /** how it was started: a URL given, a spawned baseline, a spawned single node */
  origin: string;
  info?: Record<string, unknown>;
  /** the server's processes when this invocation started them (for their CPU time per request) */
  pids?: number[];
}

const cleanups: (() => Promise<void>)[] = [];
async function cleanup() {
  while (cleanups.length) await cleanups.pop()!().catch((e: unknown) => log(`cleanup: ${String(e)}`));
}
process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));

function applyOverrides(w: Workload): Workload {
  const int = (v: string | undefined, name: string) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) usage(`--${name} must be a non-negative integer`);
    return n;
  };
  // checked again, so an override obeys the same bounds as the file
  return parseWorkload(
    {
      ...w,
      duration_s: int(values.duration, 'duration') ?? w.duration_s,
      warmup_s: int(values.warmup, 'warmup') ?? w.warmup_s,
      rounds: int(values.rounds, 'rounds') ?? w.rounds,
      connections: int(values.connections, 'connections') ?? w.connections,
    },
    'command line',
  );
}

/** The target; single nodes started with other settings (--compare-env) are added to `compared`. */
async function setUpTarget(w: Workload, index: string, compared: Server[]): Promise<Server> {
  // Loads the catalogue into a new index and waits until it is searchable (once the first word of
  // a loaded title finds something) and, with `settle`, until its parts stop merging.
  const provision = async (baseUrl: string, adminKey: string, indexParts: number | undefined, settle: boolean) => {
    const docs = loadCatalogSpec(values.catalog);
    const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'loadtest', indexId: index, docs, ...(indexParts !== undefined ? { parts: indexParts } : {}), log });
    await waitSearchable(baseUrl, p.publicKey, requestPath(w, docs[0]?.title.split(' ')[0] ?? 'a', index));
    const settled = settle ? await waitSettled(baseUrl, p.privateKey, index, log) : null;
    return { ...p, settled };
  };
  if (values['compare-env'] !== undefined && !values['spawn-single-node']) usage('--compare-env needs --spawn-single-node');
  const parts = values.parts === undefined ? undefined : Number(values.parts);
  if (parts !== undefined && (!Number.isInteger(parts) || parts < 1)) usage('--parts must be a positive integer');
  if (values['spawn-cluster']) {
    // etcd, 3 shard nodes and one router (the load generator talks to one address)
    const { startLocalCluster } = await import('../node/runtime/process-harness.js');
    log('starting a local cluster (3 shard nodes, 1 router)');
    const cluster = await startLocalCluster({ shards: 3, routers: 1, echo: values.echo });
    cleanups.push(() => cluster.stop());
    const baseUrl = cluster.routerUrls[0]!;
    const p = await provision(baseUrl, cluster.adminKey, parts ?? 3, true);
    const pids = [...cluster.routers, ...cluster.shards].map((s) => s.child.pid).filter((x): x is number => x !== undefined);
    return { role: 'target', name: `suggest-cluster-${parts ?? 3}-parts`, url: baseUrl, key: p.publicKey, origin: 'spawned local cluster (3 shard nodes, 1 router)', pids, info: { documents: p.documents, parts: parts ?? 3, ingest_ms: Math.round(p.ingestMs), segments: p.settled?.segments, settle_ms: p.settled?.settle_ms } };
  }
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../node/runtime/process-harness.js');
    const spawnNode = async (role: Server['role'], env: Record<string, string>): Promise<Server> => {
      const settings = Object.entries(env).map(([k, v]) => `${k}=${v}`).join(',');
      log(`starting a single node${settings ? ` with ${settings}` : ''}`);
      const node = await startSingleNode({ echo: values.echo, env });
      cleanups.push(() => node.stop());
      const p = await provision(node.baseUrl, node.adminKey, parts, true);
      const name = settings ? `suggest-single-node[${settings}]` : 'suggest-single-node';
      return { role, name, url: node.baseUrl, key: p.publicKey, origin: 'spawned single node', pids: pidsOf(node.process.child.pid), info: { documents: p.documents, ingest_ms: Math.round(p.ingestMs), segments: p.settled?.segments, settle_ms: p.settled?.settle_ms, ...(settings ? { env } : {}) } };
    };
    // other settings of the same build, as baselines measured in the same alternating rounds
    for (const spec of values['compare-env'] ?? []) {
      let env: Record<string, string> = {};
      try {
        env = parseEnvSettings(spec);
      } catch (err) {
        usage(`--compare-env: ${(err as Error).message}`);
      }
      compared.push(await spawnNode('baseline', env));
    }
    return spawnNode('target', {});
  }
  const target = values.target ?? usage('give --target URL, --target spawn:NAME or --spawn-single-node');
  if (target.startsWith('spawn:')) {
    const spec = parseBaselineSpec(target.slice('spawn:'.length));
    const key = values.key ?? 'loadtest-key';
    const s = await spawnBaseline(spec.name, ['--index', index, '--key', key, '--catalog', values.catalog, ...spec.args]);
    cleanups.push(() => s.stop());
    return { role: 'target', name: spec.label, url: s.url, key, origin: 'spawned baseline', pids: [s.pid], info: s.ready };
  }
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(target)) usage('--target must be a loopback URL such as http://127.0.0.1:8080');
  const baseUrl = target.replace(/\/$/, '');
  if (values.provision) {
    const adminKey = values['admin-key'] ?? usage('--provision needs --admin-key');
    const p = await provision(baseUrl, adminKey, undefined, false);
    return { role: 'target', name: 'suggest', url: baseUrl, key: p.publicKey, origin: 'given URL, provisioned', info: { documents: p.documents, ingest_ms: Math.round(p.ingestMs) } };
  }
  return { role: 'target', name: 'suggest', url: baseUrl, key: values.key ?? usage('--target URL needs --key'), origin: 'given URL', pids: pidsOf(givenPid()) };
}

const pidsOf = (pid: number | undefined): number[] | undefined => (pid === undefined ? undefined : [pid]);

/** --pid: the process of a server given by URL (its CPU figures are read from /proc). */
function givenPid(): number | undefined {
  if (values.pid === undefined) return undefined;
  const pid = Number(values.pid);
  if (!Number.isInteger(pid) || pid <= 0 || processCpuSeconds(pid) === null) usage(`--pid ${values.pid}: no such process to read CPU figures from`);
  return pid;
}

/** `read` of each of a server's processes (its CPU seconds so far), or null when one cannot be read. */
function perProcess(pids: number[] | undefined, read: (pid: number) => number | null): number[] | null {
  if (pids === undefined || pids.length === 0) return null;
  const out: number[] = [];
  for (const pid of pids) {
    const c = read(pid);
    if (c === null) return null;
    out.push(c);
  }
  return out;
}

/** Microseconds of CPU per request answered, or null when the CPU is unknown or nothing was answered. */
function usPerRequest(cpuSeconds: number | null, answered: number): number | null {
  return cpuSeconds !== null && answered > 0 ? (cpuSeconds * 1e6) / answered : null;
}

/** CPU seconds of all of a server's processes, or null when one cannot be read. */
function cpuOf(pids: number[] | undefined): number | null {
  return perProcess(pids, processCpuSeconds)?.reduce((a, b) => a + b, 0) ?? null;
}

/** CPU seconds of each of a server's processes' main thread (a Node process's event loop), or null when one cannot be read. */
function mainThreadsCpuOf(pids: number[] | undefined): number[] | null {
  return perProcess(pids, mainThreadCpuSeconds);
}

/**
 * The vector modes answer by exact scan until the index's ANN graphs are built (in the
 * background, after the first vector query): measure the warm service, not the build.
 */
async function waitVectorGraphs(s: Server, index: string, timeoutMs = 900_000): Promise<void> {
  const started = Date.now();
  log('waiting for the vector graphs to be built');
  for (;;) {
    const params = new URLSearchParams({ query: 'drill', index, mode: 'vector_only', debug: 'true', bypass_cache: 'true' });
    const res = await fetch(`${s.url}/v1/autocomplete?${params}`, { headers: { 'x-api-key': s.key } });
    const body = (await res.json()) as { debug?: { vector?: { graph?: { ready?: boolean; built?: number; total?: number } } } };
    const g = body.debug?.vector?.graph;
    if (g?.ready === true) {
      log(`vector graphs ready after ${((Date.now() - started) / 1000).toFixed(0)} s (${g.total} documents)`);
      return;
    }
    if (Date.now() - started > timeoutMs) usage('the vector graphs were not built in time');
    await new Promise((r) => setTimeout(r, 2000));
  }
}

interface Preflight {
  status_counts: Record<string, number>;
  problems: string[];
  mean_body_bytes: number;
  mean_suggestions: number;
}

/** A few real requests before any load: statuses, contract, body size. */
async function preflight(s: Server, w: Workload, paths: readonly string[]): Promise<Preflight> {
  const sample = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => paths[Math.floor((i * paths.length) / 8)]!);
  const statusCounts: Record<string, number> = {};
  const problems: string[] = [];
  let bytes = 0;
  let suggestions = 0;
  for (const p of sample) {
    const res = await fetch(s.url + p, { headers: { 'x-api-key': s.key } });
    const text = await res.text();
    statusCounts[res.status] = (statusCounts[res.status] ?? 0) + 1;
    bytes += Buffer.byteLength(text);
    if (res.status !== 200) {
      problems.push(`${p} -> ${res.status} ${text.slice(0, 200)}`);
      continue;
    }
    const body = JSON.parse(text) as { suggestions?: unknown[] };
    suggestions += body.suggestions?.length ?? 0;
    for (const problem of suggestContractProblems(body, w.route)) problems.push(`${p}: ${problem}`);
  }
  return { status_counts: statusCounts, problems, mean_body_bytes: bytes / sample.length, mean_suggestions: suggestions / sample.length };
}

/**
 * `cache_hit_ratio`: the server's response-cache hits over lookups in the round (null: no /metrics).
 * `event_loop_us_per_request`: CPU of the server processes' main threads per request (their event
 * loops); `busiest_event_loop`: the busiest one's CPU over the round's time, as a share of one
 * core (near 1: that event loop limits throughput; the rest of `cpu_us_per_request` ran on other
 * threads). Both null when /proc cannot tell.
 */
type RunRecord = Omit<RoundResult, 'stats'> & {
  cpu_us_per_request: number | null;
  event_loop_us_per_request: number | null;
  busiest_event_loop: number | null;
  loadavg_1m: number;
  cache_hit_ratio: number | null;
};
interface ServerTotals {
  rounds: RunRecord[];
  stats: LatencyStats;
  ok: number;
  elapsed: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** server CPU seconds over the measured rounds (null when not readable) */
  cpu: number | null;
  /** of it, on the processes' main threads (null when not readable) */
  mainCpu: number | null;
  /** the busiest main thread's share of a core in any round (null when not readable) */
  busiest: number | null;
  /** response-cache lookups over the measured rounds (null when the server has no /metrics) */
  lookups: CacheLookups | null;
}

const fmt = (x: number, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const fmtShare = (x: number | null) => (x === null || !Number.isFinite(x) ? 'n/a' : `${(100 * x).toFixed(1)} %`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

async function main() {
  const workloadFile = values.workload ?? usage('--workload FILE is required');
  const w = applyOverrides(loadWorkload(workloadFile));
  const loadAtStart = os.loadavg();
  const index = values.index;
  // a fixed offered load measures latency the way a service-level objective states it; without
  // it every server runs saturated and latency is mostly queueing
  const offeredRate = values.rate === undefined ? undefined : Number(values.rate);
  if (offeredRate !== undefined && !(Number.isInteger(offeredRate) && offeredRate > 0)) usage('--rate must be a positive integer (requests per second)');
  // wrk by default: autocannon's own CPU per request caps what it can drive on a small machine
  const driver = values.driver ?? (offeredRate === undefined && wrkInstalled() ? 'wrk' : 'autocannon');
  if (driver !== 'autocannon' && driver !== 'wrk' && driver !== 'paced') usage('--driver is wrk, autocannon or paced');
  if (driver === 'paced' && offeredRate === undefined) usage('--driver paced needs --rate');
  if (values.driver === undefined && driver === 'autocannon') {
    log(offeredRate === undefined ? 'wrk is not installed (apt-get install -y wrk): driving the load with autocannon, whose own CPU per request caps the ratios to bare-uws' : '--rate: driving the load with autocannon (wrk offers no fixed rate)');
  }
  const wrkThreads = Number(values['wrk-threads']);
  if (!(Number.isInteger(wrkThreads) && wrkThreads >= 1)) usage('--wrk-threads must be a whole number of at least 1');
  const round = (o: RoundOptions): Promise<RoundResult> => (driver === 'wrk' ? runWrkRound({ ...o, threads: wrkThreads }) : driver === 'paced' ? runPacedRound(o) : runRound(o));
  log(`building the request stream of ${w.name}`);
  const queries = workloadQueries(w);
  const paths = queries.map((q) => requestPath(w, q, index));
  log(`${paths.length} requests from ${w.source.kind === 'keystrokes' ? `${w.source.sessions} typed queries` : `${w.source.count} queries`}`);

  const servers: Server[] = [];
  for (const name of (values.baseline ?? '').split(',').filter(Boolean)) {
    const b = parseBaselineSpec(name);
    const key = values.key ?? 'loadtest-key';
    log(`starting baseline ${b.label}`);
    const s = await spawnBaseline(b.name, ['--index', index, '--key', key, '--catalog', values.catalog, ...b.args]);
    cleanups.push(() => s.stop());
    servers.push({ role: 'baseline', name: b.label, url: s.url, key, origin: 'spawned baseline', pids: [s.pid], info: s.ready });
  }
  // single nodes with other settings are measured as baselines, before the target in each round
  const compared: Server[] = [];
  const target = await setUpTarget(w, index, compared);
  servers.push(...compared, target);
  const mode = w.params['mode'];
  if (w.route === '/v1/autocomplete' && (mode === 'vector_only' || mode === 'hybrid')) await waitVectorGraphs(target, index);

  const preflights = new Map<Server, Preflight>();
  for (const s of servers) {
    const p = await preflight(s, w, paths);
    preflights.set(s, p);
    log(`${s.name} preflight: statuses ${JSON.stringify(p.status_counts)}, ${fmt(p.mean_body_bytes, 0)} bytes and ${fmt(p.mean_suggestions, 1)} suggestions per answer`);
    if (p.problems.length) {
      for (const problem of p.problems.slice(0, 5)) log(`  ${problem}`);
      if (!values['allow-errors']) throw new Error(`${s.name} does not answer the workload correctly (rerun with --allow-errors to measure anyway)`);
    }
  }

  const runOpts = (s: Server, startAt: number, durationS: number) => ({
    url: s.url,
    paths,
    startAt,
    headers: { 'x-api-key': s.key, ...w.headers },
    connections: w.connections,
    pipelining: w.pipelining,
    durationS,
    timeoutS: w.timeout_s,
    rate: offeredRate,
  });
  if (w.warmup_s > 0) {
    for (const s of servers) {
      log(`warm-up ${s.name} ${w.warmup_s} s`);
      await round(runOpts(s, 0, w.warmup_s));
    }
  }

  const totals = new Map<Server, ServerTotals>(servers.map((s) => [s, { rounds: [], stats: new LatencyStats(), ok: 0, elapsed: 0, non2xx: 0, errors: 0, timeouts: 0, cpu: 0, mainCpu: 0, busiest: 0, lookups: { hit: 0, miss: 0 } }]));
  // every server starts a round at the same place in the stream, so all see the same prefixes
  const stride = Math.floor(paths.length / (w.rounds + 1));
  for (let r = 0; r < w.rounds; r++) {
    for (const s of servers) {
      const lookups0 = await cacheLookups(s.url);
      const cpu0 = cpuOf(s.pids);
      const main0 = mainThreadsCpuOf(s.pids);
      const res = await round(runOpts(s, (r + 1) * stride, w.duration_s));
      const cpu1 = cpuOf(s.pids);
      const main1 = mainThreadsCpuOf(s.pids);
      const lookups1 = await cacheLookups(s.url);
      const t = totals.get(s)!;
      const { stats, ...rest } = res;
      const cpu = cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null;
      const mainDeltas = main0 !== null && main1 !== null ? main1.map((c, i) => c - (main0[i] as number)) : null;
      const mainCpu = mainDeltas === null ? null : mainDeltas.reduce((a, b) => a + b, 0);
      const busiest = mainDeltas === null || res.elapsed_s <= 0 ? null : Math.max(...mainDeltas) / res.elapsed_s;
      const answered = res.ok + res.non2xx;
      const lookups = lookups0 !== null && lookups1 !== null ? { hit: lookups1.hit - lookups0.hit, miss: lookups1.miss - lookups0.miss } : null;
      const record: RunRecord = {
        ...rest,
        loadavg_1m: os.loadavg()[0]!,
        cpu_us_per_request: usPerRequest(cpu, answered),
        event_loop_us_per_request: usPerRequest(mainCpu, answered),
        busiest_event_loop: busiest,
        cache_hit_ratio: lookups === null ? null : hitRatio(lookups),
      };
      t.rounds.push(record);
      t.cpu = cpu === null || t.cpu === null ? null : t.cpu + cpu;
      t.mainCpu = mainCpu === null || t.mainCpu === null ? null : t.mainCpu + mainCpu;
      t.busiest = busiest === null || t.busiest === null ? null : Math.max(t.busiest, busiest);
      t.lookups = lookups === null || t.lookups === null ? null : { hit: t.lookups.hit + lookups.hit, miss: t.lookups.miss + lookups.miss };
      t.stats.addAll(stats);
      t.ok += res.ok;
      t.elapsed += res.elapsed_s;
      t.non2xx += res.non2xx;
      t.errors += res.errors;
      t.timeouts += res.timeouts;
      log(`round ${r + 1}/${w.rounds} ${s.name}: ${fmt(res.rps, 0)} req/s, p50 ${fmt(res.latency.p50_ms, 3)} ms, p99 ${fmt(res.latency.p99_ms, 3)} ms, server CPU ${fmt(record.cpu_us_per_request ?? Number.NaN, 0)} µs/request (event loop ${fmt(record.event_loop_us_per_request ?? Number.NaN, 0)}, busiest at ${fmtShare(record.busiest_event_loop)} of a core), cache hits ${fmtShare(record.cache_hit_ratio)}, non-2xx ${res.non2xx}, errors ${res.errors}, load average ${os.loadavg()[0]!.toFixed(2)}`);
    }
  }

  const summaries = servers.map((s) => {
    const t = totals.get(s)!;
    const answered = t.ok + t.non2xx;
    return {
      server: s,
      rps: t.ok / t.elapsed,
      latency: t.stats.summary(),
      cpuPerRequest: usPerRequest(t.cpu, answered) ?? Number.NaN,
      eventLoopPerRequest: usPerRequest(t.mainCpu, answered) ?? Number.NaN,
      t,
    };
  });
  const tgt = summaries.find((x) => x.server === target)!;
  const latencyRatio = (a: LatencySummary, b: LatencySummary) => ({
    p50: a.p50_ms / b.p50_ms,
    p90: a.p90_ms / b.p90_ms,
    p99: a.p99_ms / b.p99_ms,
    p999: a.p999_ms / b.p999_ms,
  });
  const comparisons = summaries
    .filter((x) => x.server.role === 'baseline')
    .map((b) => {
      const perRound = tgt.t.rounds.map((tr, i) => tr.rps / b.t.rounds[i]!.rps);
      return {
        baseline: b.server.name,
        throughput_ratio: tgt.rps / b.rps,
        per_round_throughput_ratio: perRound,
        per_round_throughput_ratio_median: median(perRound),
        /** target CPU per request / baseline CPU per request: cost, independent of how busy the machine was */
        cpu_per_request_ratio: tgt.cpuPerRequest / b.cpuPerRequest,
        latency_ratio: latencyRatio(tgt.latency, b.latency),
      };
    });

  // the report
  const lines = [
    '',
    `workload ${w.name}: ${w.route}, ${w.connections} connections, pipelining ${w.pipelining}, ${offeredRate === undefined ? 'saturating' : `offered ${offeredRate} req/s`}, ${w.rounds} rounds x ${w.duration_s} s (warm-up ${w.warmup_s} s), ${os.cpus().length} CPUs, driver ${driver}${driver === 'wrk' ? ` (${wrkThreads} thread${wrkThreads > 1 ? 's' : ''})` : ''}`,
    '',
    '| server | role | req/s (2xx) | p50 ms | p90 ms | p99 ms | p99.9 ms | server CPU µs/req | of it event loop (busiest) | cache hits | non-2xx | errors | timeouts |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...summaries.map(
      (x) =>
        `| ${x.server.name} | ${x.server.role} | ${fmt(x.rps, 0)} | ${fmt(x.latency.p50_ms, 3)} | ${fmt(x.latency.p90_ms, 3)} | ${fmt(x.latency.p99_ms, 3)} | ${fmt(x.latency.p999_ms, 3)} | ${fmt(x.cpuPerRequest, 0)} | ${fmt(x.eventLoopPerRequest, 0)} (${fmtShare(x.t.busiest)}) | ${fmtShare(x.t.lookups === null ? null : hitRatio(x.t.lookups))} | ${x.t.non2xx} | ${x.t.errors} | ${x.t.timeouts} |`,
    ),
    '',
    ...comparisons.map(
      (c) =>
        `${target.name} / ${c.baseline}: throughput x${fmt(c.throughput_ratio)} (per round ${c.per_round_throughput_ratio.map((x) => fmt(x)).join(', ')}), ` +
        `latency p50 x${fmt(c.latency_ratio.p50)}, p90 x${fmt(c.latency_ratio.p90)}, p99 x${fmt(c.latency_ratio.p99)}, p99.9 x${fmt(c.latency_ratio.p999)}, ` +
        `server CPU per request x${fmt(c.cpu_per_request_ratio)}`,
    ),
    '',
  ];
  process.stdout.write(lines.join('\n'));

  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `${w.name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  const result = {
    kind: 'load',
    workload: w,
    workload_file: workloadFile,
    index,
    requests_in_stream: paths.length,
    offered_rate: offeredRate ?? null,
    driver: driver === 'wrk' ? { name: 'wrk', threads: wrkThreads } : { name: driver },
    finished_at: new Date().toISOString(),
    loadavg_at_start: loadAtStart,
    machine: { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model ?? 'unknown', node: process.version, platform: `${os.platform()} ${os.release()}`, loadavg: os.loadavg() },
    servers: summaries.map((x) => ({
      name: x.server.name,
      role: x.server.role,
      origin: x.server.origin,
      info: x.server.info ?? null,
      preflight: preflights.get(x.server),
      rps: x.rps,
      latency: x.latency,
      cpu_us_per_request: Number.isFinite(x.cpuPerRequest) ? x.cpuPerRequest : null,
      event_loop_us_per_request: Number.isFinite(x.eventLoopPerRequest) ? x.eventLoopPerRequest : null,
      busiest_event_loop: x.t.busiest,
      cache_lookups: x.t.lookups,
      cache_hit_ratio: x.t.lookups === null ? null : hitRatio(x.t.lookups),
      ok: x.t.ok,
      non2xx: x.t.non2xx,
      errors: x.t.errors,
      timeouts: x.t.timeouts,
      rounds: x.t.rounds,
    })),
    comparisons,
  };
  writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
  log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  await cleanup();
}
