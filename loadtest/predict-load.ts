// Predict beside typeahead (and autocomplete fts_only, the retrieval predict runs too) in one
// invocation: the same service, the same catalogue and the same keystroke stream of real
// queries, measured in alternating rounds (typeahead, autocomplete, predict, typeahead, ...) so
// that drifts of a shared machine hit all alike. Reports 2xx throughput and latency percentiles
// of each route and the ratios predict/typeahead and predict/autocomplete; writes the JSON under
// loadtest/results/.
//
//   node dist/loadtest/predict-load.js (--spawn-single-node | --target URL --key KEY --index ID)
//        [--catalog bestbuy,homedepot] [--sessions 5000] [--seed 1] [--connections 16]
//        [--duration 10] [--warmup 3] [--rounds 3] [--limit 5] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { loadCatalog, parseCatalogSources } from './data/catalog.js';
import { REPO_ROOT } from './data/data-files.js';
import { keystrokeStream, loadWeightedQueries } from './data/keystrokes.js';
import { LatencyStats, type LatencySummary } from './load/latency-stats.js';
import { provisionIndex, waitSearchable } from './load/provision-service.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    target: { type: 'string' },
    'spawn-single-node': { type: 'boolean', default: false },
    key: { type: 'string' },
    index: { type: 'string', default: 'products' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    sessions: { type: 'string', default: '5000' },
    seed: { type: 'string', default: '1' },
    connections: { type: 'string', default: '16' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '3' },
    limit: { type: 'string', default: '5' },
    out: { type: 'string' },
    echo: { type: 'boolean', default: false },
  },
});

const log = (line: string) => process.stderr.write(`[predict-load] ${line}\n`);
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nsee loadtest/README.md for usage\n`);
  process.exit(2);
};
const int = (v: string, name: string, min: number, max: number) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) usage(`--${name} must be an integer in ${min}..${max}`);
  return n;
};

type Route = 'typeahead' | 'autocomplete' | 'predict';
const ROUTES: readonly Route[] = ['typeahead', 'autocomplete', 'predict'];

interface Request {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
}

interface RoundRecord {
  route: Route;
  elapsed_s: number;
  rps: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latency: LatencySummary;
}

function round(route: Route, url: string, key: string, requests: readonly Request[], startAt: number, connections: number, durationS: number): Promise<RoundRecord & { stats: LatencyStats }> {
  let cursor = startAt % requests.length;
  const stats = new LatencyStats();
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const instance = autocannon(
      {
        url,
        connections,
        pipelining: 1,
        duration: durationS,
        timeout: 10,
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (req) => {
              const r = requests[cursor]!;
              cursor = cursor + 1 === requests.length ? 0 : cursor + 1;
              req.method = r.method;
              req.path = r.path;
              if (r.body !== undefined) req.body = r.body;
              return req;
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        const elapsed = (performance.now() - t0) / 1000;
        resolve({
          route,
          elapsed_s: elapsed,
          rps: stats.count / elapsed,
          ok: stats.count,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          latency: stats.summary(),
          stats,
        });
        return undefined;
      },
    );
    instance.on('response', (_c, status, _b, ms) => {
      if (status >= 200 && status < 300) stats.add(ms);
    });
  });
}

const cleanups: (() => Promise<void>)[] = [];

async function target(): Promise<{ url: string; key: string; index: string; info: Record<string, unknown> }> {
  const index = values.index;
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../node/runtime/process-harness.js');
    log('starting a single node');
    const node = await startSingleNode({ echo: values.echo });
    cleanups.push(() => node.stop());
    const docs = loadCatalog(parseCatalogSources(values.catalog));
    const p = await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'loadtest', indexId: index, docs, log });
    await waitSearchable(node.baseUrl, p.publicKey, `/v1/typeahead?index=${index}&query=${encodeURIComponent(docs[0]!.title.split(' ')[0]!)}`);
    return { url: node.baseUrl, key: p.publicKey, index, info: { origin: 'spawned single node', documents: p.documents } };
  }
  const t = values.target ?? usage('give --target URL --key KEY, or --spawn-single-node');
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(t)) usage('--target must be a loopback URL');
  return { url: t.replace(/\/$/, ''), key: values.key ?? usage('--target needs --key'), index, info: { origin: 'given URL' } };
}

const fmt = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');

async function main(): Promise<void> {
  const connections = int(values.connections, 'connections', 1, 1000);
  const duration = int(values.duration, 'duration', 1, 600);
  const warmup = int(values.warmup, 'warmup', 0, 600);
  const rounds = int(values.rounds, 'rounds', 1, 50);
  const limit = int(values.limit, 'limit', 0, 20);
  const queries = keystrokeStream(loadWeightedQueries(['homedepot', 'bestbuy-log']), { sessions: int(values.sessions, 'sessions', 1, 1_000_000), seed: int(values.seed, 'seed', 0, 2 ** 31), minPrefix: 1 });
  log(`${queries.length} keystrokes`);
  const t = await target();
  const streams: Record<Route, Request[]> = {
    typeahead: queries.map((q) => ({ method: 'GET', path: `/v1/typeahead?${new URLSearchParams({ index: t.index, query: q, limit: '10' })}` })),
    autocomplete: queries.map((q) => ({ method: 'GET', path: `/v1/autocomplete?${new URLSearchParams({ index: t.index, query: q, limit: '10', mode: 'fts_only' })}` })),
    predict: queries.map((q) => ({ method: 'POST', path: '/v1/predict', body: JSON.stringify({ index: t.index, query: q, limit }) })),
  };
  // preflight: both routes answer 200 on a sample
  for (const route of ROUTES) {
    for (const r of streams[route].slice(0, 5)) {
      const res = await fetch(t.url + r.path, { method: r.method, headers: { 'x-api-key': t.key, 'content-type': 'application/json' }, body: r.body ?? null });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${route} preflight: ${res.status} ${text.slice(0, 300)}`);
    }
  }
  if (warmup > 0) for (const route of ROUTES) await round(route, t.url, t.key, streams[route], 0, connections, warmup);
  const totals: Record<Route, { stats: LatencyStats; ok: number; elapsed: number; rounds: RoundRecord[] }> = {
    typeahead: { stats: new LatencyStats(), ok: 0, elapsed: 0, rounds: [] },
    autocomplete: { stats: new LatencyStats(), ok: 0, elapsed: 0, rounds: [] },
    predict: { stats: new LatencyStats(), ok: 0, elapsed: 0, rounds: [] },
  };
  const stride = Math.floor(queries.length / (rounds + 1));
  for (let i = 0; i < rounds; i++) {
    for (const route of ROUTES) {
      const { stats, ...rec } = await round(route, t.url, t.key, streams[route], (i + 1) * stride, connections, duration);
      totals[route].stats.addAll(stats);
      totals[route].ok += rec.ok;
      totals[route].elapsed += rec.elapsed_s;
      totals[route].rounds.push(rec);
      log(`round ${i + 1}/${rounds} ${route}: ${fmt(rec.rps, 0)} req/s, p50 ${fmt(rec.latency.p50_ms, 3)} ms, p99 ${fmt(rec.latency.p99_ms, 3)} ms, non-2xx ${rec.non2xx}, errors ${rec.errors}`);
    }
  }
  const summary = (route: Route) => ({ rps: totals[route].ok / totals[route].elapsed, latency: totals[route].stats.summary() });
  const ta = summary('typeahead');
  const pr = summary('predict');
  const au = summary('autocomplete');
  const loadavg = os.loadavg();
  const lines = [
    '',
    `predict beside typeahead: ${queries.length} keystrokes of real queries, ${connections} connections, ${rounds} alternating rounds x ${duration} s, ${os.cpus().length} CPUs, load average ${loadavg.map((x) => x.toFixed(2)).join(' ')}`,
    '',
    '| route | req/s (2xx) | p50 ms | p90 ms | p99 ms | p99.9 ms |',
    '|---|---:|---:|---:|---:|---:|',
    ...ROUTES.map((r) => {
      const s = summary(r);
      return `| ${r} | ${fmt(s.rps, 0)} | ${fmt(s.latency.p50_ms, 3)} | ${fmt(s.latency.p90_ms, 3)} | ${fmt(s.latency.p99_ms, 3)} | ${fmt(s.latency.p999_ms, 3)} |`;
    }),
    '',
    `predict / typeahead: throughput x${fmt(pr.rps / ta.rps)} (per round ${totals.predict.rounds.map((r, i) => fmt(r.rps / totals.typeahead.rounds[i]!.rps)).join(', ')}), p50 x${fmt(pr.latency.p50_ms / ta.latency.p50_ms)}, p99 x${fmt(pr.latency.p99_ms / ta.latency.p99_ms)}`,
    `predict / autocomplete (fts_only): throughput x${fmt(pr.rps / au.rps)}, p50 x${fmt(pr.latency.p50_ms / au.latency.p50_ms)}, p99 x${fmt(pr.latency.p99_ms / au.latency.p99_ms)}`,
    '',
  ];
  process.stdout.write(lines.join('\n'));
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `predict-load-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ kind: 'predict-load', finished_at: new Date().toISOString(), target: t.info, keystrokes: queries.length, connections, duration, rounds, limit, machine: { cpus: os.cpus().length, node: process.version, loadavg }, typeahead: { ...ta, rounds: totals.typeahead.rounds }, autocomplete: { ...au, rounds: totals.autocomplete.rounds }, predict: { ...pr, rounds: totals.predict.rounds } }, null, 2)}\n`,
  );
  log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}
