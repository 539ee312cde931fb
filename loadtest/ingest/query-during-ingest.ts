// Query latency during a bulk load on one node: typeahead is asked on a small live index, one
// request at a time every 5 ms, before and while the whole Home Depot catalog (54,667 products)
// is uploaded as JSON Lines into another index of the same tenant, until the last document of the
// upload is searchable. A stall of the event loop (indexing in place, say) shows as the largest
// latency. Each round starts a fresh node; `--warm` asks the loading index a query first, so its
// search engine indexes the writes as they land (the case where queries must wait for builds).
// `--probe loading` asks the loading index itself instead: how long its own queries wait for the
// load (non-200 answers are counted, not timed).
//
//   node dist/loadtest/ingest/query-during-ingest.js [--rounds 2] [--warm] [--probe live|loading] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSingleNode } from '../../node/runtime/process-harness.js';
import { homeDepotDocuments } from '../data/catalog.js';
import { REPO_ROOT } from '../data/data-files.js';
import { percentile } from '../load/latency-stats.js';
import { provisionIndex } from '../load/provision-service.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    rounds: { type: 'string', default: '2' },
    warm: { type: 'boolean', default: false },
    probe: { type: 'string', default: 'live' },
    out: { type: 'string' },
  },
});
const rounds = Number(values.rounds);
const probed = values.probe;
if (probed !== 'live' && probed !== 'loading') throw new Error('--probe takes live or loading');
const out = values.out ?? path.join(REPO_ROOT, 'loadtest/results', `query-during-ingest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
const log = (line: string): void => void process.stderr.write(`[query-during-ingest] ${line}\n`);
const KEYSTROKES = ['dr', 'drill', 'pai', 'paint', 'ham', 'ligh', 'light bu', 'ca', 'cabinet', 'sho', 'showe', 'wa', 'wat', 'water h'];

interface Round {
  stored_ms: number;
  searchable_ms: number;
  before: Summary;
  during: Summary;
  /** latencies over 50 ms during the load: [ms since the upload started, latency ms] */
  slow: [number, number][];
  /** answers other than 200 during the load, by status */
  failed: Record<string, number>;
}
interface Summary {
  requests: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

function summary(latencies: number[]): Summary {
  const s = [...latencies].sort((a, b) => a - b);
  return { requests: s.length, p50_ms: percentile(s, 50), p99_ms: percentile(s, 99), max_ms: s.at(-1) ?? Number.NaN };
}

async function round(): Promise<Round> {
  const node = await startSingleNode();
  const call = async <T>(key: string, method: string, p: string, body?: unknown): Promise<T> => {
    const r = await fetch(node.baseUrl + p, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : null) as T;
  };
  try {
    const docs = homeDepotDocuments();
    const key = (await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'bulk', indexId: 'live', docs: docs.slice(0, 1000) })).privateKey;
    await call(key, 'POST', '/v1/indexes', { index_id: 'loading', name: 'loading' });
    if (values.warm) await call(key, 'GET', '/v1/autocomplete?index=loading&query=warm&bypass_cache=true');
    const ask = async (q: string): Promise<number> => {
      const r = await fetch(`${node.baseUrl}/v1/typeahead?index=${probed}&query=${encodeURIComponent(q)}&bypass_cache=true`, { headers: { 'x-api-key': key } });
      await r.arrayBuffer();
      return r.status;
    };
    for (const q of KEYSTROKES) await ask(q);
    const samples: [number, number][] = [];
    const failures: [number, number][] = [];
    let stop = false;
    const prober = (async () => {
      for (let i = 0; !stop; i++) {
        const t = performance.now();
        const status = await ask(KEYSTROKES[i % KEYSTROKES.length]!);
        if (status === 200) samples.push([t, performance.now() - t]);
        else failures.push([t, status]);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = performance.now();
    const form = new FormData();
    form.append('file', new Blob([docs.map((d) => JSON.stringify(d)).join('\n') + '\n']), 'catalog.jsonl');
    const res = await fetch(`${node.baseUrl}/v1/indexes/loading/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
    const job = (await res.json()) as { job_id: string };
    for (;;) {
      const j = await call<{ status: string; error: string | null }>(key, 'GET', `/v1/ingestion-jobs/${job.job_id}`);
      if (j.status === 'succeeded') break;
      if (j.status === 'failed' || j.status === 'canceled') throw new Error(`upload ${j.status}: ${j.error}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const stored = performance.now() - t0;
    const last = docs.at(-1)!;
    for (;;) {
      const r = await call<{ suggestions: { id: string }[] }>(key, 'GET', `/v1/autocomplete?index=loading&query=${encodeURIComponent(last.title ?? '')}&limit=50&bypass_cache=true`);
      if (r.suggestions.some((s) => s.id === last.id)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const searchable = performance.now() - t0;
    stop = true;
    await prober;
    const during = samples.filter(([t]) => t >= t0 && t <= t0 + searchable);
    return {
      stored_ms: Math.round(stored),
      searchable_ms: Math.round(searchable),
      before: summary(samples.filter(([t]) => t < t0).map(([, l]) => l)),
      during: summary(during.map(([, l]) => l)),
      slow: during.filter(([, l]) => l > 50).map(([t, l]) => [Math.round(t - t0), Math.round(l)]),
      failed: failures.reduce<Record<string, number>>((by, [, status]) => ({ ...by, [status]: (by[status] ?? 0) + 1 }), {}),
    };
  } finally {
    await node.stop();
  }
}

const results: Round[] = [];
for (let i = 0; i < rounds; i++) {
  const r = await round();
  results.push(r);
  log(
    `round ${i + 1}: stored ${r.stored_ms} ms, searchable ${r.searchable_ms} ms; typeahead before p99 ${r.before.p99_ms.toFixed(1)} ms, during p50 ${r.during.p50_ms.toFixed(1)} p99 ${r.during.p99_ms.toFixed(1)} max ${r.during.max_ms.toFixed(1)} ms (${r.during.requests} requests answered 200, others: ${JSON.stringify(r.failed)})`,
  );
}
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ run_at: new Date().toISOString(), warm: values.warm, probe: probed, load_average: os.loadavg(), node: process.version, rounds: results }, null, 2) + '\n');
log(`wrote ${path.relative(process.cwd(), out)}`);
