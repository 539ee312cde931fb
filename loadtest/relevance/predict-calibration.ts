// Calibration of predict's confidence on the Home Depot judged queries. The service (spawned or
// reached over HTTP) is filled with every product title of the training file; a seeded sample of
// judged queries with at least one perfect product is split in two halves by query. Every query
// is asked whole and as a typing prefix (the first 60 % of its characters) with include.debug,
// which returns each candidate's features. A logistic regression (L2, Newton's method) is fitted
// on the candidates of the first half; the second half reports the expected calibration error
// and a reliability table of the primary prediction and of every returned candidate.
//
// What counts as right (the labels the model learns):
// - a product: one of the query's perfect products (mean relevance 3, as in eval-set.ts);
// - a search phrase (intent) or any other suggestion: the phrase has the same words as the whole
//   query (singular forms, any order), or it has every word of the query and all of its own words
//   appear in the title of a perfect product (a more specific search that still finds it).
//
//   node dist/loadtest/relevance/predict-calibration.js (--spawn-single-node | --target URL --admin-key KEY)
//        [--queries 1500] [--seed 7] [--concurrency 4] [--write] [--out FILE]
// --write regenerates router/predict-coefficients.ts from the fit.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../data/data-files.js';
import { loadHomeDepot } from '../data/homedepot.js';
import { SeededRandom } from '../data/seeded-random.js';
import { provisionIndex, waitSearchable, ServiceError } from '../load/provision-service.js';
import { fitLogistic, fold, isRight, reliability, type ReliabilityBin } from './calibration-math.js';
import { typingPrefix } from './eval-set.js';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    'spawn-single-node': { type: 'boolean', default: false },
    'admin-key': { type: 'string' },
    key: { type: 'string' },
    index: { type: 'string', default: 'hd-predict' },
    queries: { type: 'string', default: '1500' },
    seed: { type: 'string', default: '7' },
    concurrency: { type: 'string', default: '4' },
    l2: { type: 'string', default: '1' },
    write: { type: 'boolean', default: false },
    out: { type: 'string' },
    echo: { type: 'boolean', default: false },
    dump: { type: 'boolean', default: false },
    'platt-primary': { type: 'boolean', default: false },
  },
});

const log = (line: string) => process.stderr.write(`[predict-calibration] ${line}\n`);
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nsee loadtest/README.md for usage\n`);
  process.exit(2);
};
const positive = (v: string, name: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) usage(`--${name} must be a positive number`);
  return n;
};

/** Feature values by name, as the service's debug output reports them. */
type Features = Record<string, number>;
/** Feature names in the order the service reports them (learned from the first answer). */
let FEATURES: string[] = [];

interface DebugCandidate {
  key: string;
  type: string;
  label: string;
  source: string;
  features: Features | null;
  confidence: number;
}

interface Sample {
  features: Features;
  right: boolean;
  /** the case (query x variant) the candidate belongs to */
  caseId: number;
  /** the confidence the service reported (the model it ran with) */
  served: number;
  text: string;
  label: string;
  key: string;
}

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

function row(f: Features): number[] {
  return [1, ...FEATURES.map((n) => f[n] ?? 0)];
}

// ------------------------------------------------------------------ the run

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

const cleanups: (() => Promise<void>)[] = [];

async function service(docs: { id: string; title: string; desc: string; manufacturer: string; raw: Record<string, never> }[]): Promise<{ baseUrl: string; key: string }> {
  const probe = `/v1/typeahead?${new URLSearchParams({ query: docs[0]!.title.split(' ')[0]!, index: values.index })}`;
  let baseUrl: string;
  let adminKey: string;
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../../node/runtime/process-harness.js');
    log('starting a single node');
    const node = await startSingleNode({ echo: values.echo });
    cleanups.push(() => node.stop());
    baseUrl = node.baseUrl;
    adminKey = node.adminKey;
  } else {
    const target = values.target ?? usage('needs --target URL or --spawn-single-node');
    if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(target)) usage('--target must be a loopback URL');
    baseUrl = target.replace(/\/$/, '');
    if (!values['admin-key']) return { baseUrl, key: values.key ?? usage('--target needs --admin-key (to load the products) or --key (already loaded)') };
    adminKey = values['admin-key'];
  }
  const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'calibration', indexId: values.index, docs, log });
  await waitSearchable(baseUrl, p.publicKey, probe);
  return { baseUrl, key: p.publicKey };
}

function bar(bins: ReliabilityBin[]): string[] {
  return bins.filter((b) => b.count > 0).map((b) => `| ${b.from.toFixed(1)}–${b.to.toFixed(1)} | ${b.count} | ${b.mean_confidence.toFixed(3)} | ${b.accuracy.toFixed(3)} |`);
}

async function main(): Promise<void> {
  const queries = positive(values.queries, 'queries');
  const seed = positive(values.seed, 'seed');
  const l2 = positive(values.l2, 'l2');
  const hd = loadHomeDepot();
  const docs = [...hd.products].map(([id, title]) => ({ id, title, desc: '', manufacturer: '', raw: {} as Record<string, never> }));
  const random = new SeededRandom(seed);
  const chosen = random.sample(
    hd.queries.filter((q) => q.perfect.length > 0),
    queries,
  );
  const half = Math.floor(chosen.length / 2);
  const cases = chosen.flatMap((q, qi) => {
    const perfect = new Set(q.perfect);
    const perfectTitles = q.perfect.map((id) => fold(hd.products.get(id) ?? ''));
    const split = qi < half ? ('fit' as const) : ('check' as const);
    const full = fold(q.query);
    return [
      { query: q.query, text: q.query, variant: 'full', perfect, perfectTitles, split, full },
      { query: q.query, text: typingPrefix(q.query), variant: 'prefix60', perfect, perfectTitles, split, full },
    ];
  });
  log(`${docs.length} products, ${chosen.length} queries (${half} to fit, ${chosen.length - half} to check), ${cases.length} cases`);
  const { baseUrl, key } = await service(docs);

  const samples: Sample[] = [];
  const caseSplit: ('fit' | 'check')[] = [];
  let failures = 0;
  const t0 = Date.now();
  await forEachConcurrent(cases, positive(values.concurrency, 'concurrency'), async (c, i) => {
    caseSplit[i] = c.split;
    const res = await fetch(`${baseUrl}/v1/predict`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ index: values.index, query: c.text, limit: 20, include: { debug: true, supporting_suggestions: false } }),
    });
    const text = await res.text();
    if (res.status !== 200) {
      failures++;
      if (failures > 10) throw new ServiceError(`predict ${JSON.stringify(c.text)}`, res.status, text);
      return;
    }
    const body = JSON.parse(text) as { debug: { candidates: DebugCandidate[] } };
    for (const cand of body.debug.candidates) {
      if (!cand.features) continue;
      if (FEATURES.length === 0) FEATURES = Object.keys(cand.features);
      samples.push({ features: cand.features, right: isRight(cand, c.full, c.perfect, c.perfectTitles), caseId: i, served: cand.confidence, text: c.text, label: cand.label, key: cand.key });
    }
    if (i % 500 === 0) log(`asked ${i}/${cases.length}`);
  });
  log(`asked ${cases.length} cases in ${((Date.now() - t0) / 1000).toFixed(1)} s (${failures} failures), ${samples.length} candidates`);

  const fitSet = samples.filter((s) => caseSplit[s.caseId] === 'fit');
  const checkSet = samples.filter((s) => caseSplit[s.caseId] === 'check');
  let w = fitLogistic(
    fitSet.map((s) => row(s.features)),
    fitSet.map((s) => (s.right ? 1 : 0)),
    l2,
  );
  if (values['platt-primary']) {
    // the primary is the maximum over candidates, so it is a little luckier than a candidate of
    // the same log-odds; a Platt step (a * z + b) fitted on the fitted half's primaries rescales
    // the whole model, keeping its order
    const zOf = (f: Features) => row(f).reduce((z, x, j) => z + x * w[j]!, 0);
    const best = new Map<number, { z: number; y: boolean }>();
    for (const s of fitSet) {
      const z = zOf(s.features);
      const b = best.get(s.caseId);
      if (!b || z > b.z) best.set(s.caseId, { z, y: s.right });
    }
    const [b, a] = fitLogistic(
      [...best.values()].map((x) => [1, x.z]),
      [...best.values()].map((x) => (x.y ? 1 : 0)),
      1e-6,
    );
    log(`Platt step on ${best.size} primaries: a ${a!.toFixed(3)}, b ${b!.toFixed(3)}`);
    w = w.map((v, j) => a! * v + (j === 0 ? b! : 0));
  }
  const weights: Record<string, number> = { bias: round(w[0]!) };
  FEATURES.forEach((n, j) => (weights[n] = round(w[j + 1]!)));
  const predictOf = (f: Features) => sigmoid(row(f).reduce((z, x, j) => z + x * w[j]!, 0));

  // primary = the candidate of a case with the highest fitted confidence (what the service returns)
  const primaries = (set: Sample[], p: (s: Sample) => number) => {
    const best = new Map<number, { p: number; y: boolean }>();
    for (const s of set) {
      const v = p(s);
      const b = best.get(s.caseId);
      if (!b || v > b.p) best.set(s.caseId, { p: v, y: s.right });
    }
    return [...best.values()];
  };
  if (values.dump) {
    const best = new Map<number, Sample>();
    for (const s of checkSet) {
      const b = best.get(s.caseId);
      if (!b || predictOf(s.features) > predictOf(b.features)) best.set(s.caseId, s);
    }
    for (const s of best.values()) if (predictOf(s.features) >= 0.6) log(`dump ${predictOf(s.features).toFixed(2)} ${s.right ? 'RIGHT' : 'wrong'} ${JSON.stringify(s.text)} -> ${s.key} ${JSON.stringify(s.label)} ${JSON.stringify(s.features)}`);
  }
  const checkPrimary = reliability(primaries(checkSet, (s) => predictOf(s.features)));
  const checkAll = reliability(checkSet.map((s) => ({ p: predictOf(s.features), y: s.right })));
  const fitPrimary = reliability(primaries(fitSet, (s) => predictOf(s.features)));
  const servedPrimary = reliability(primaries(checkSet, (s) => s.served));
  const checkCases = new Set(checkSet.map((s) => s.caseId)).size;
  const primaryRight = primaries(checkSet, (s) => predictOf(s.features)).filter((x) => x.y).length;

  const lines = [
    '',
    `Predict confidence calibration on Home Depot judged queries: ${docs.length} products, ${chosen.length} queries (seed ${seed}), whole query and 60% prefix; ` +
      `fit on ${fitSet.length} candidates of ${half} queries, checked on ${checkSet.length} candidates of the other ${chosen.length - half}.`,
    '',
    `Primary prediction on the held-out half: ECE ${checkPrimary.ece.toFixed(3)}, Brier ${checkPrimary.brier.toFixed(3)}, right ${primaryRight}/${checkCases} cases; ` +
      `every candidate: ECE ${checkAll.ece.toFixed(3)}, Brier ${checkAll.brier.toFixed(3)}; primary on the fitted half: ECE ${fitPrimary.ece.toFixed(3)}; ` +
      `primary with the coefficients the service ran with: ECE ${servedPrimary.ece.toFixed(3)}.`,
    '',
    '| confidence | primaries | mean confidence | right |',
    '|---|---:|---:|---:|',
    ...bar(checkPrimary.bins),
    '',
    '| confidence | all candidates | mean confidence | right |',
    '|---|---:|---:|---:|',
    ...bar(checkAll.bins),
    '',
    `weights: ${JSON.stringify(weights)}`,
    '',
  ];
  process.stdout.write(lines.join('\n'));

  const fittedOn = {
    data: 'Home Depot judged queries (homedepot_train.csv.gz), product titles',
    products: docs.length,
    queries: chosen.length,
    seed,
    l2,
    variants: ['full', 'prefix60'],
    fit_candidates: fitSet.length,
    check_candidates: checkSet.length,
    check_primary_ece: round(checkPrimary.ece),
    check_all_ece: round(checkAll.ece),
    check_primary_brier: round(checkPrimary.brier),
  };
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `predict-calibration-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ kind: 'predict-calibration', finished_at: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg() }, fitted_on: fittedOn, weights, check_primary: checkPrimary, check_all: checkAll, fit_primary: fitPrimary, served_primary: servedPrimary })}\n`,
  );
  log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
  if (values.write) {
    const file = path.join(REPO_ROOT, 'router', 'predict-coefficients.ts');
    const body = [
      '// Generated by loadtest/relevance/predict-calibration.ts; do not edit by hand.',
      `// node dist/loadtest/relevance/predict-calibration.js --spawn-single-node --queries ${queries} --seed ${seed} --write`,
      'export const PREDICT_MODEL = {',
      `  version: 'hd-seed${seed}-q${queries}',`,
      `  fitted_on: ${JSON.stringify(fittedOn)} as null | Record<string, unknown>,`,
      '  weights: {',
      ...Object.entries(weights).map(([k, v]) => `    ${k}: ${v},`),
      '  },',
      '} as const;',
      '',
    ].join('\n');
    writeFileSync(file, body);
    log(`wrote ${path.relative(process.cwd(), file)}`);
  }
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;

try {
  await main();
} catch (err) {
  log(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}
