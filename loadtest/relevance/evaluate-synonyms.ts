// What index-schema synonyms do to autocomplete relevance on real Home Depot queries. The service
// indexes the 54,667 product titles once; then, in the same invocation and on the same index,
// every configuration is PUT as the index schema (first none, then each synonym file) and the
// same cases are asked: the held-out half of the judged queries (those mine-synonyms.ts did not
// learn from) that have a perfect product, whole and as a 60% typing prefix. Scores are reported
// on the cases a configuration rewrites (the service says so in `debug.ranking.synonyms`; the
// no-synonym run is scored on the same cases) and on all held-out cases.
//
//   node dist/loadtest/relevance/evaluate-synonyms.js --spawn-single-node
//        [--synonyms loadtest/relevance/hd-synonyms.json[,other.json]] [--k 10] [--concurrency 8] [--out FILE]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../data/data-files.js';
import { loadHomeDepot } from '../data/homedepot.js';
import { summarize } from '../load/latency-stats.js';
import { provisionIndex, ServiceError, waitSearchable } from '../load/provision-service.js';
import { typingPrefix } from './eval-set.js';
import { firstRelevantRank, scoreRanks, type RankingScore } from './metrics.js';
import { inMiningHalf } from './mine-synonyms.js';
import { ServiceEngine } from './service-engine.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    'spawn-single-node': { type: 'boolean', default: false },
    target: { type: 'string' },
    'admin-key': { type: 'string' },
    synonyms: { type: 'string', default: path.join(REPO_ROOT, 'loadtest/relevance/hd-synonyms.json') },
    k: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '8' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[evaluate-synonyms] ${line}\n`);
const cleanups: (() => Promise<void>)[] = [];

interface Case {
  variant: 'whole' | 'prefix60';
  text: string;
  perfect: ReadonlySet<string>;
}

interface ConfigRun {
  name: string;
  entries: number;
  ranks: number[];
  rewritten: boolean[];
  latency: ReturnType<typeof summarize>;
}

async function main(): Promise<void> {
  const k = Number(values.k);
  const concurrency = Number(values.concurrency);
  const hd = loadHomeDepot();
  const docs = [...hd.products].map(([id, title]) => ({ id, title, desc: '', manufacturer: '', raw: {} }));
  const held = hd.queries.filter((q) => q.perfect.length > 0 && !inMiningHalf(q.query));
  const cases: Case[] = held.flatMap((q) => {
    const perfect = new Set(q.perfect);
    return [
      { variant: 'whole' as const, text: q.query, perfect },
      { variant: 'prefix60' as const, text: typingPrefix(q.query), perfect },
    ];
  });
  log(`${docs.length} products, ${held.length} held-out queries with a perfect product`);

  let baseUrl: string;
  let adminKey: string;
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../../node/runtime/process-harness.js');
    const node = await startSingleNode();
    cleanups.push(() => node.stop());
    baseUrl = node.baseUrl;
    adminKey = node.adminKey;
  } else {
    baseUrl = (values.target ?? '').replace(/\/$/, '');
    adminKey = values['admin-key'] ?? '';
    if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(baseUrl) || adminKey === '') throw new Error('give --spawn-single-node, or --target (loopback URL) and --admin-key');
  }
  const index = 'hd-synonyms';
  const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'relevance-synonyms', indexId: index, docs, log });
  await waitSearchable(baseUrl, p.publicKey, `/v1/autocomplete?index=${index}&query=door`);
  const engine = new ServiceEngine('autocomplete', baseUrl, p.publicKey, index, 'autocomplete', docs);

  const configs: { name: string; synonyms: unknown[] }[] = [{ name: 'none', synonyms: [] }];
  for (const file of values.synonyms.split(',').filter(Boolean)) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { synonyms: unknown[] };
    configs.push({ name: path.basename(file), synonyms: parsed.synonyms });
  }

  const runs: ConfigRun[] = [];
  for (const cfg of configs) {
    const put = await fetch(`${baseUrl}/v1/indexes/${index}/schema`, { method: 'PUT', headers: { 'x-api-key': p.privateKey, 'content-type': 'application/json' }, body: JSON.stringify({ synonyms: cfg.synonyms }) });
    if (put.status !== 200) throw new ServiceError(`PUT schema (${cfg.name})`, put.status, await put.text());
    const ranks = new Array<number>(cases.length).fill(0);
    const rewritten = new Array<boolean>(cases.length).fill(false);
    const latencies = new Float64Array(cases.length);
    let next = 0;
    const worker = async () => {
      while (next < cases.length) {
        const i = next++;
        const c = cases[i]!;
        const params = new URLSearchParams({ query: c.text, index, limit: String(k), mode: 'fts_only', debug: 'true' });
        const t0 = performance.now();
        const res = await fetch(`${baseUrl}/v1/autocomplete?${params}`, { headers: { 'x-api-key': p.publicKey } });
        const text = await res.text();
        latencies[i] = performance.now() - t0;
        if (res.status !== 200) throw new ServiceError(`autocomplete ${c.text}`, res.status, text);
        const body = JSON.parse(text) as { suggestions: { id: string; title: string }[]; debug: { ranking?: { synonyms?: unknown[] } } | null };
        ranks[i] = firstRelevantRank(
          body.suggestions.map((s) => engine.positionOf(s)),
          c.perfect,
          k,
        );
        rewritten[i] = (body.debug?.ranking?.synonyms?.length ?? 0) > 0;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    log(`${cfg.name}: ${cases.length} cases in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${rewritten.filter(Boolean).length} rewritten`);
    runs.push({ name: cfg.name, entries: cfg.synonyms.length, ranks, rewritten, latency: summarize(latencies) });
  }

  const base = runs[0]!;
  const score = (run: ConfigRun, pick: (i: number) => boolean): RankingScore => scoreRanks(run.ranks.filter((_, i) => pick(i)));
  const pct = (x: number) => (Number.isFinite(x) ? (100 * x).toFixed(1) : 'n/a');
  const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : 'n/a');
  const cell = (s: RankingScore) => `${pct(s.success_at_k)} / ${f3(s.mrr)}`;
  const lines = ['', `| synonyms | entries | rewritten cases (whole / prefix60) | rewritten whole: none → with | rewritten prefix60: none → with | all held-out whole | all held-out prefix60 | p50 / p99 ms |`, '|---|---:|---:|---|---|---|---|---|'];
  const table: Record<string, unknown>[] = [];
  for (const run of runs) {
    const rw = (v: Case['variant']) => (i: number) => cases[i]!.variant === v && run.rewritten[i] === true;
    const all = (v: Case['variant']) => (i: number) => cases[i]!.variant === v;
    const row = {
      name: run.name,
      entries: run.entries,
      rewritten: { whole: run.ranks.filter((_, i) => rw('whole')(i)).length, prefix60: run.ranks.filter((_, i) => rw('prefix60')(i)).length },
      rewritten_whole: { none: score(base, rw('whole')), with: score(run, rw('whole')) },
      rewritten_prefix60: { none: score(base, rw('prefix60')), with: score(run, rw('prefix60')) },
      all_whole: score(run, all('whole')),
      all_prefix60: score(run, all('prefix60')),
      latency: run.latency,
    };
    table.push(row);
    lines.push(
      `| ${run.name} | ${run.entries} | ${row.rewritten.whole} / ${row.rewritten.prefix60} | ${cell(row.rewritten_whole.none)} → ${cell(row.rewritten_whole.with)} | ` +
        `${cell(row.rewritten_prefix60.none)} → ${cell(row.rewritten_prefix60.with)} | ${cell(row.all_whole)} | ${cell(row.all_prefix60)} | ${f3(run.latency.p50_ms)} / ${f3(run.latency.p99_ms)} |`,
    );
  }
  lines.push('', `success@${k} in %, then MRR@${k}; ${held.length} held-out queries; HTTP round trip on loopback.`, '');
  process.stdout.write(lines.join('\n'));
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', 'relevance-homedepot-synonyms.json');
  mkdirSync(path.dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ kind: 'relevance-synonyms', finished_at: new Date().toISOString(), k, held_out_queries: held.length, machine: { cpus: os.cpus().length, loadavg: os.loadavg(), node: process.version }, table }, null, 1)}\n`);
  log(`wrote ${path.relative(process.cwd(), out)}`);
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}
