// Relevance evaluation on the Home Depot judged queries: the service (autocomplete in each mode
// and typeahead, over HTTP) and three peer libraries (Orama, MiniSearch, FlexSearch, in-process),
// each filled with the same 54,667 product titles and asked the same cases (whole query, 60%
// typing prefix, real misspelling and its correction; see eval-set.ts). Prints a markdown table
// and writes the JSON under loadtest/results/.
//
//   node dist/loadtest/relevance/evaluate.js [--engines orama,minisearch,flexsearch,service-autocomplete,service-typeahead,
//        service-autocomplete-vector_only,service-autocomplete-hybrid,service-autocomplete-fts_rerank]
//        [--target http://127.0.0.1:PORT (--admin-key KEY | --key KEY) | --spawn-single-node] [--index hd-relevance]
//        [--queries 2000] [--misspelled N] [--seed 42] [--k 10] [--concurrency 8] [--out FILE]
// See loadtest/README.md.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../data/data-files.js';
import { summarize } from '../load/latency-stats.js';
import { provisionIndex, waitSearchable } from '../load/provision-service.js';
import { FlexSearchPeer } from '../peers/flexsearch-peer.js';
import { MiniSearchPeer } from '../peers/minisearch-peer.js';
import { OramaPeer } from '../peers/orama-peer.js';
import type { PeerEngine, TitledDocument } from '../peers/peer-engine.js';
import { buildEvalSet, VARIANTS, type EvalCase, type Variant } from './eval-set.js';
import { firstRelevantRank, scoreRanks, type RankedPosition, type RankingScore } from './metrics.js';
import { ServiceEngine } from './service-engine.js';
import { cliArgs } from '../load/cli.js';

const ENGINES = [
  'service-autocomplete',
  'service-autocomplete-vector_only',
  'service-autocomplete-hybrid',
  'service-autocomplete-fts_rerank',
  'service-typeahead',
  'orama',
  'minisearch',
  'flexsearch',
] as const;
type EngineName = (typeof ENGINES)[number];

const { values } = cliArgs({
  options: {
    engines: { type: 'string', default: ENGINES.join(',') },
    target: { type: 'string' },
    'spawn-single-node': { type: 'boolean', default: false },
    key: { type: 'string' },
    'admin-key': { type: 'string' },
    index: { type: 'string', default: 'hd-relevance' },
    queries: { type: 'string', default: '2000' },
    misspelled: { type: 'string' },
    seed: { type: 'string', default: '42' },
    k: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '8' },
    out: { type: 'string' },
    echo: { type: 'boolean', default: false },
  },
});

const log = (line: string) => process.stderr.write(`[evaluate] ${line}\n`);
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nsee loadtest/README.md for usage\n`);
  process.exit(2);
};
const int = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) usage(`--${name} must be a positive integer`);
  return n;
};

interface Contender {
  name: EngineName;
  config(): Record<string, unknown>;
  /** fills the engine; resolves when it answers */
  build(docs: readonly TitledDocument[]): Promise<void>;
  search(text: string, k: number): Promise<RankedPosition[]>;
  /** queries in flight at once (in-process libraries: 1) */
  concurrency: number;
  where: 'in-process' | 'http';
  extra?: () => Record<string, unknown>;
}

function peerContender(name: EngineName, make: () => PeerEngine): Contender {
  let peer: PeerEngine | undefined;
  return {
    name,
    config: () => (peer ?? make()).config,
    async build(docs) {
      peer = make();
      await peer.add(docs);
    },
    search: (text, k) => peer!.search(text, k),
    concurrency: 1,
    where: 'in-process',
  };
}

const cleanups: (() => Promise<void>)[] = [];

interface ServiceHandle {
  baseUrl: string;
  key: string;
  index: string;
}

/** The service, started or reached once for both service engines, with the products loaded. */
async function serviceFor(docs: readonly TitledDocument[]): Promise<ServiceHandle> {
  const asDocuments = docs.map((d) => ({ id: d.id, title: d.title, desc: '', manufacturer: '', raw: {} }));
  const probe = (index: string) => `/v1/autocomplete?${new URLSearchParams({ query: docs[0]!.title.split(' ')[0]!, index, mode: 'fts_only' })}`;
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../../node/runtime/process-harness.js');
    log('starting a single node');
    const node = await startSingleNode({ echo: values.echo });
    cleanups.push(() => node.stop());
    const p = await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'relevance', indexId: values.index, docs: asDocuments, log });
    await waitSearchable(node.baseUrl, p.publicKey, probe(values.index));
    return { baseUrl: node.baseUrl, key: p.publicKey, index: values.index };
  }
  const target = values.target ?? usage('the service engines need --target URL or --spawn-single-node');
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(target)) usage('--target must be a loopback URL');
  const baseUrl = target.replace(/\/$/, '');
  if (values['admin-key']) {
    const p = await provisionIndex({ baseUrl, adminKey: values['admin-key'], tenantId: 'relevance', indexId: values.index, docs: asDocuments, log });
    await waitSearchable(baseUrl, p.publicKey, probe(values.index));
    return { baseUrl, key: p.publicKey, index: values.index };
  }
  // already loaded by an earlier run: ids must be the bare product_uid
  return { baseUrl, key: values.key ?? usage('--target needs --admin-key (to load the products) or --key (already loaded)'), index: values.index };
}

function serviceContender(name: EngineName, route: 'autocomplete' | 'typeahead', service: () => Promise<ServiceHandle>, concurrency: number, mode = 'fts_only'): Contender {
  let engine: ServiceEngine | undefined;
  return {
    name,
    config: () => engine?.config ?? { route: `/v1/${route}` },
    async build(docs) {
      const s = await service();
      engine = new ServiceEngine(name, s.baseUrl, s.key, s.index, route, docs, mode);
      if (mode === 'vector_only' || mode === 'hybrid') await engine.waitForVectorGraphs();
    },
    search: (text, k) => engine!.search(text, k),
    concurrency,
    where: 'http',
    extra: () => ({ suggestion_matching: engine?.counts ?? null }),
  };
}

async function forEachConcurrent<T>(items: readonly T[], concurrency: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
}

interface EngineResult {
  engine: EngineName;
  where: string;
  config: Record<string, unknown>;
  error: string | null;
  build_ms: number | null;
  query_latency_ms: ReturnType<typeof summarize> | null;
  scores: Partial<Record<Variant, RankingScore>>;
  /** per variant, the first-relevant rank of each case in eval-set order (0 = missed) */
  ranks: Partial<Record<Variant, number[]>>;
  extra: Record<string, unknown>;
}

async function evaluate(c: Contender, docs: readonly TitledDocument[], cases: readonly EvalCase[], k: number): Promise<EngineResult> {
  const result: EngineResult = { engine: c.name, where: c.where, config: {}, error: null, build_ms: null, query_latency_ms: null, scores: {}, ranks: {}, extra: {} };
  try {
    const t0 = performance.now();
    await c.build(docs);
    result.build_ms = performance.now() - t0;
    result.config = c.config();
    log(`${c.name}: ready in ${(result.build_ms / 1000).toFixed(1)} s, asking ${cases.length} cases`);
    const ranks = new Array<number>(cases.length);
    const latencies = new Float64Array(cases.length);
    await forEachConcurrent(cases, c.concurrency, async (ec, i) => {
      const q0 = performance.now();
      const ranked = await c.search(ec.text, k);
      latencies[i] = performance.now() - q0;
      ranks[i] = firstRelevantRank(ranked, ec.perfect, k);
    });
    result.query_latency_ms = summarize(latencies);
    for (const v of VARIANTS) {
      const rs = cases.flatMap((ec, i) => (ec.variant === v ? [ranks[i]!] : []));
      result.ranks[v] = rs;
      result.scores[v] = scoreRanks(rs);
    }
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    log(`${c.name}: ${result.error}`);
  }
  result.extra = c.extra?.() ?? {};
  return result;
}

const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : (100 * x).toFixed(1));
const num = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(3));

async function main() {
  const k = int(values.k, 'k')!;
  const engineNames = values.engines.split(',').map((s) => s.trim()).filter(Boolean);
  for (const e of engineNames) if (!(ENGINES as readonly string[]).includes(e)) usage(`unknown engine "${e}" (known: ${ENGINES.join(', ')})`);

  log('building the evaluation set');
  const set = buildEvalSet({ seed: int(values.seed, 'seed')!, queries: int(values.queries, 'queries')!, misspelled: int(values.misspelled, 'misspelled') });
  log(`${set.documents.length} products; ${JSON.stringify(set.description)}`);

  let service: Promise<ServiceHandle> | undefined;
  const sharedService = () => (service ??= serviceFor(set.documents));
  const concurrency = int(values.concurrency, 'concurrency')!;
  const make: Record<EngineName, () => Contender> = {
    'service-autocomplete': () => serviceContender('service-autocomplete', 'autocomplete', sharedService, concurrency),
    'service-autocomplete-vector_only': () => serviceContender('service-autocomplete-vector_only', 'autocomplete', sharedService, concurrency, 'vector_only'),
    'service-autocomplete-hybrid': () => serviceContender('service-autocomplete-hybrid', 'autocomplete', sharedService, concurrency, 'hybrid'),
    'service-autocomplete-fts_rerank': () => serviceContender('service-autocomplete-fts_rerank', 'autocomplete', sharedService, concurrency, 'fts_rerank'),
    'service-typeahead': () => serviceContender('service-typeahead', 'typeahead', sharedService, concurrency),
    orama: () => peerContender('orama', () => new OramaPeer()),
    minisearch: () => peerContender('minisearch', () => new MiniSearchPeer()),
    flexsearch: () => peerContender('flexsearch', () => new FlexSearchPeer()),
  };

  const results: EngineResult[] = [];
  for (const name of engineNames as EngineName[]) results.push(await evaluate(make[name](), set.documents, set.cases, k));

  const count = (v: Variant) => set.cases.filter((c) => c.variant === v).length;
  const lines = [
    '',
    `Home Depot relevance: ${set.documents.length} products indexed (titles); success@${k} and MRR@${k} in %/ratio; ` +
      `whole and 60%-prefix on ${count('full')} sampled queries, misspelled and corrected on ${count('misspelled')} queries with a real misspelling`,
    '',
    `| engine | whole s@${k} | whole MRR | prefix60 s@${k} | prefix60 MRR | misspelled s@${k} | misspelled MRR | corrected s@${k} | corrected MRR | build s | query p50 ms | query p99 ms |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map((r) =>
      r.error
        ? `| ${r.engine} | error: ${r.error.slice(0, 120).replace(/\|/g, '/')} |||||||||||`
        : `| ${r.engine} | ${pct(r.scores.full?.success_at_k)} | ${num(r.scores.full?.mrr)} | ${pct(r.scores.prefix60?.success_at_k)} | ${num(r.scores.prefix60?.mrr)} | ` +
          `${pct(r.scores.misspelled?.success_at_k)} | ${num(r.scores.misspelled?.mrr)} | ${pct(r.scores.corrected?.success_at_k)} | ${num(r.scores.corrected?.mrr)} | ` +
          `${((r.build_ms ?? 0) / 1000).toFixed(1)} | ${num(r.query_latency_ms?.p50_ms)} | ${num(r.query_latency_ms?.p99_ms)} |`,
    ),
    '',
    'Query latency: in-process call for the libraries, HTTP round trip on loopback for the service; not comparable across the two.',
    '',
  ];
  process.stdout.write(lines.join('\n'));

  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `relevance-homedepot-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  const doc = {
    kind: 'relevance',
    finished_at: new Date().toISOString(),
    k,
    eval_set: set.description,
    machine: { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model ?? 'unknown', node: process.version },
    cases: VARIANTS.map((v) => ({ variant: v, texts: set.cases.filter((c) => c.variant === v).map((c) => c.text) })),
    results,
  };
  writeFileSync(out, `${JSON.stringify(doc)}\n`);
  log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
  if (results.some((r) => r.error)) process.exitCode = 1;
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}
