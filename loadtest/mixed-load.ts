// Typeahead beside heavy autocomplete on one node: what a slow query path does to the fast one.
// For each number of query threads (SUGGEST_QUERY_THREADS) a fresh single node gets the load
// catalogue; typeahead keystrokes are then offered at a fixed rate, first alone, then while
// `hybrid` autocomplete keystrokes saturate the node from other connections. Reports each
// stream's throughput and latency percentiles, and typeahead's p99 beside hybrid against alone
// (the same node, the same run). Caches are bypassed throughout; writes the JSON under
// loadtest/results/.
//
//   node dist/loadtest/mixed-load.js [--query-threads 0,2] [--rate 1000] [--typeahead-connections 8]
//        [--autocomplete-connections 16] [--mode hybrid] [--duration 8] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSingleNode } from '../node/runtime/process-harness.js';
import { loadCatalog } from './data/catalog.js';
import { REPO_ROOT } from './data/data-files.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources } from './data/keystrokes.js';
import { runRound, type RoundResult } from './load/load-round.js';
import type { LatencySummary } from './load/latency-stats.js';
import { provisionIndex, waitSettled } from './load/provision-service.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    'query-threads': { type: 'string', default: '0,2' },
    rate: { type: 'string', default: '1000' },
    'typeahead-connections': { type: 'string', default: '8' },
    'autocomplete-connections': { type: 'string', default: '16' },
    mode: { type: 'string', default: 'hybrid' },
    duration: { type: 'string', default: '8' },
    out: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`[mixed-load] ${line}\n`);
const num = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number`);
  return n;
};

interface Stream {
  rps: number;
  latency: LatencySummary;
  non2xx: number;
  errors: number;
}

interface Outcome {
  query_threads: number;
  typeahead_alone: Stream;
  typeahead_beside: Stream;
  autocomplete_beside: Stream;
  /** typeahead p99 beside the autocomplete load / alone */
  typeahead_p99_ratio: number;
}

const stream = (r: RoundResult): Stream => ({ rps: Math.round(r.rps), latency: r.latency, non2xx: r.non2xx, errors: r.errors + r.timeouts });

async function measure(threads: number, rate: number, duration: number): Promise<Outcome> {
  log(`query threads ${threads}: starting a single node`);
  const node = await startSingleNode({ env: { SUGGEST_QUERY_THREADS: String(threads) } });
  try {
    const p = await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'mixed', indexId: 'products', docs: loadCatalog(), log });
    await waitSettled(node.baseUrl, p.privateKey, 'products', log);
    const headers = { 'x-api-key': p.publicKey };
    const mode = values.mode ?? 'hybrid';
    if (mode === 'hybrid' || mode === 'vector_only') {
      log('waiting for the vector graphs');
      for (;;) {
        const r = await fetch(`${node.baseUrl}/v1/autocomplete?index=products&query=drill&mode=vector_only&debug=true&bypass_cache=true`, { headers });
        const body = (await r.json()) as { debug?: { vector?: { graph?: { ready?: boolean } } } };
        if (body.debug?.vector?.graph?.ready === true) break;
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
    const queries = loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log']));
    const typeahead = keystrokeStream(queries, { sessions: 20000, seed: 1, minPrefix: 1 }).map((q) => `/v1/typeahead?index=products&limit=10&bypass_cache=true&query=${encodeURIComponent(q)}`);
    const autocomplete = keystrokeStream(queries, { sessions: 10000, seed: 3, minPrefix: 2 }).map((q) => `/v1/autocomplete?index=products&limit=10&mode=${mode}&bypass_cache=true&query=${encodeURIComponent(q)}`);
    const base = { url: node.baseUrl, headers, pipelining: 1, timeoutS: 10 };
    const typeaheadRound = (startAt: number, durationS: number) => runRound({ ...base, paths: typeahead, startAt, connections: num('typeahead-connections'), durationS, rate });
    await typeaheadRound(0, 3); // warm-up
    await runRound({ ...base, paths: autocomplete, startAt: 50_000, connections: num('autocomplete-connections'), durationS: 3 });
    const alone = await typeaheadRound(10_000, duration);
    const [beside, heavy] = await Promise.all([typeaheadRound(30_000, duration), runRound({ ...base, paths: autocomplete, startAt: 0, connections: num('autocomplete-connections'), durationS: duration })]);
    return { query_threads: threads, typeahead_alone: stream(alone), typeahead_beside: stream(beside), autocomplete_beside: stream(heavy), typeahead_p99_ratio: Math.round((beside.latency.p99_ms / alone.latency.p99_ms) * 100) / 100 };
  } finally {
    await node.stop();
  }
}

async function main(): Promise<void> {
  const rate = num('rate');
  const duration = num('duration');
  const threads = (values['query-threads'] ?? '0,2').split(',').map((t) => Number(t));
  if (threads.some((t) => !Number.isInteger(t) || t < 0)) throw new Error('--query-threads takes whole numbers, e.g. 0,2');
  const outcomes: Outcome[] = [];
  for (const t of threads) outcomes.push(await measure(t, rate, duration));
  const ms = (x: number) => x.toFixed(2);
  console.log(`\ntypeahead offered at ${rate} req/s (${values['typeahead-connections']} conn.), alone and beside ${values.mode} autocomplete saturating ${values['autocomplete-connections']} conn., ${duration} s each, caches bypassed, ${os.cpus().length} CPUs\n`);
  console.log('| query threads | stream | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | non-2xx + errors |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|');
  for (const o of outcomes) {
    for (const [name, s] of [['typeahead alone', o.typeahead_alone], ['typeahead beside autocomplete', o.typeahead_beside], [`${values.mode} autocomplete`, o.autocomplete_beside]] as const) {
      console.log(`| ${o.query_threads} | ${name} | ${s.rps} | ${ms(s.latency.p50_ms)} | ${ms(s.latency.p90_ms)} | ${ms(s.latency.p99_ms)} | ${ms(s.latency.p999_ms)} | ${s.non2xx + s.errors} |`);
    }
  }
  for (const o of outcomes) console.log(`query threads ${o.query_threads}: typeahead p99 beside autocomplete / alone x${o.typeahead_p99_ratio}`);
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `mixed-load-${new Date().toISOString().slice(0, 10)}.json`);
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ rate, duration_s: duration, mode: values.mode, typeahead_connections: num('typeahead-connections'), autocomplete_connections: num('autocomplete-connections'), cpus: os.cpus().length, outcomes }, null, 2));
  log(`wrote ${path.relative(process.cwd(), out)}`);
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
