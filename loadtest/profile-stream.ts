// Where a workload's time goes, from the service itself: asks the requests of a workload's
// stream one at a time with profile=true (caches bypassed) against a running service, and sums
// up `debug.profile`: the router's whole answer, each part's engine time, wait for a query
// thread and hand-off, and every engine stage (mean, p99, max), then lists the slowest requests
// with their three largest stages. Run it alone for what a query costs, or beside a load
// (`run-load --driver paced --rate R`) for what waiting adds.
//
//   node dist/loadtest/profile-stream.js --workload loadtest/workloads/autocomplete-hybrid.json \
//        --target http://127.0.0.1:8080 --key PUBLIC_KEY [--index products] [--from 0] [--count 3000]
//        [--warm] [--out FILE]
//
// `--warm` asks the same requests once, unmeasured, first (the thread memos of a running service).
import { writeFileSync } from 'node:fs';
import { percentile } from './load/latency-stats.js';
import { loadWorkload, requestPath, workloadQueries } from './load/workload.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    workload: { type: 'string' },
    target: { type: 'string' },
    key: { type: 'string' },
    index: { type: 'string', default: 'products' },
    from: { type: 'string', default: '0' },
    count: { type: 'string', default: '3000' },
    warm: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nusage: profile-stream --workload FILE --target URL --key KEY [--index ID] [--from N] [--count N] [--warm] [--out FILE]\n`);
  process.exit(2);
};
const workload = loadWorkload(values.workload ?? usage('--workload is required'));
const target = (values.target ?? usage('--target is required')).replace(/\/$/, '');
const key = values.key ?? usage('--key is required');
const from = Number(values.from);
const count = Number(values.count);
if (!Number.isInteger(from) || from < 0 || !Number.isInteger(count) || count < 1) usage('--from and --count take whole numbers');

interface PartProfile {
  part: number;
  ms: number;
  engine_ms?: number;
  queue_ms?: number;
  handoff_ms?: number;
  thread?: string;
  stages?: Record<string, number>;
}

interface Sample {
  query: string;
  took: number;
  parts: PartProfile[];
}

const queries = workloadQueries(workload).slice(from, from + count);
const extra = ['profile=true', ...('bypass_cache' in workload.params ? [] : ['bypass_cache=true'])].join('&');
const pathOf = (query: string): string => {
  const path = requestPath(workload, query, values.index as string);
  return `${path}${path.includes('?') ? '&' : '?'}${extra}`;
};

async function ask(query: string): Promise<Sample> {
  const res = await fetch(`${target}${pathOf(query)}`, { headers: { 'x-api-key': key, ...workload.headers } });
  const body = (await res.json()) as { took_ms?: number; debug?: { profile?: { parts?: PartProfile[] } } | null; detail?: unknown };
  if (res.status !== 200) throw new Error(`${res.status} for ${JSON.stringify(query)}: ${JSON.stringify(body.detail ?? body)}`);
  const parts = body.debug?.profile?.parts;
  if (parts === undefined) throw new Error(`no debug.profile in the answer to ${JSON.stringify(query)}: is this service too old for profile=true on ${workload.route}?`);
  return { query, took: body.took_ms ?? 0, parts };
}

if (values.warm) for (const q of queries) await ask(q);
const samples: Sample[] = [];
for (const q of queries) samples.push(await ask(q));

const stat = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return { mean: round(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)), p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), max: round(sorted[sorted.length - 1] ?? 0) };
};
const parts = samples.flatMap((s) => s.parts);
const stageNames = [...new Set(parts.flatMap((p) => Object.keys(p.stages ?? {})))];
const report = {
  workload: workload.name,
  requests: samples.length,
  took_ms: stat(samples.map((s) => s.took)),
  engine_ms: stat(parts.map((p) => p.engine_ms ?? 0)),
  queue_ms: stat(parts.map((p) => p.queue_ms ?? 0)),
  handoff_ms: stat(parts.map((p) => p.handoff_ms ?? 0)),
  stages: Object.fromEntries(stageNames.map((n) => [n, stat(parts.map((p) => p.stages?.[n] ?? 0))])),
  slowest: [...samples]
    .sort((a, b) => b.took - a.took)
    .slice(0, 15)
    .map((s) => ({
      query: s.query,
      took_ms: s.took,
      parts: s.parts.map((p) => ({ part: p.part, thread: p.thread, queue_ms: p.queue_ms, engine_ms: p.engine_ms, top: Object.entries(p.stages ?? {}).sort((a, b) => b[1] - a[1]).slice(0, 3) })),
    })),
};

const line = (name: string, s: { mean: number; p50: number; p99: number; max: number }) => `${name.padEnd(20)} mean ${s.mean.toFixed(3).padStart(8)}  p50 ${s.p50.toFixed(3).padStart(8)}  p99 ${s.p99.toFixed(3).padStart(8)}  max ${s.max.toFixed(3).padStart(8)}`;
console.log(`${workload.name}: ${samples.length} requests one at a time, ms`);
for (const k of ['took_ms', 'engine_ms', 'queue_ms', 'handoff_ms'] as const) console.log(line(k, report[k]));
for (const n of stageNames) console.log(line(`  ${n}`, report.stages[n]!));
console.log('slowest:');
for (const s of report.slowest) console.log(`${s.took_ms.toFixed(3).padStart(8)}  ${JSON.stringify(s.query)}  ${s.parts.map((p) => `queue ${p.queue_ms ?? 0} engine ${p.engine_ms ?? 0} ${p.top.map(([k, v]) => `${k}=${v}`).join(' ')}`).join(' | ')}`);
if (values.out) writeFileSync(values.out, `${JSON.stringify({ kind: 'profile-stream', target, finished_at: new Date().toISOString(), ...report }, null, 2)}\n`);
