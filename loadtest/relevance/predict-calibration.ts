// Calibration of predict's confidence on the Home Depot judged queries. The service (spawned or
// reached over HTTP) is filled with every product title of the training file; a seeded sample of
// judged queries with at least one perfect product is split in two halves by query. Every query
// is asked whole and as a typing prefix (the first 60 % of its characters) with include.debug,
// which returns each candidate's features. A logistic regression (L2, Newton's method) is fitted
// on the candidates of the first half, then an isotonic map on the first half's primaries (the
// best candidate of each case is optimistic as a winner; the service applies the map to its
// primary prediction and shows no alternative above it). The second half reports the expected
// calibration error and a reliability table of the primary prediction and of every returned
// candidate, before (logistic model alone) and after the primary's recalibration.
//
// What counts as right (the labels the model learns):
// - a product: one of the query's perfect products (mean relevance 3, as in eval-set.ts);
// - a search phrase (intent) or any other suggestion: the phrase has the same words as the whole
//   query (singular forms, any order), or it has every word of the query and all of its own words
//   appear in the title of a perfect product (a more specific search that still finds it).
//
//   node dist/loadtest/relevance/predict-calibration.js (--spawn-single-node | --target URL --admin-key KEY)
//        [--queries 1500] [--seed 7] [--concurrency 4] [--write] [--out FILE]
//        [--save-samples FILE] [--samples FILE]
// --save-samples keeps the labelled candidates; --samples refits from such a file without a service;
// --splits N reports N random fit/check splits of the queries instead (nothing written).
// --write regenerates router/predict-coefficients.ts from the fit.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../data/data-files.js';
import { loadHomeDepot } from '../data/homedepot.js';
import { SeededRandom } from '../data/seeded-random.js';
import { provisionIndex, waitSearchable, ServiceError } from '../load/provision-service.js';
import { primaryConfidence, recalibrated } from '../../router/predict-model.js';
import { fitLogistic, fold, isotonicKnots, isRight, reliability, type ReliabilityBin } from './calibration-math.js';
import { typingPrefix } from './eval-set.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
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
    'save-samples': { type: 'string' },
    samples: { type: 'string' },
    splits: { type: 'string' },
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

function sideBySide(a: ReliabilityBin[], b: ReliabilityBin[]): string[] {
  const cell = (x: ReliabilityBin) => (x.count > 0 ? `${x.count} | ${x.mean_confidence.toFixed(3)} | ${x.accuracy.toFixed(3)}` : '0 | | ');
  return a.filter((x, i) => x.count > 0 || b[i]!.count > 0).map((x) => `| ${x.from.toFixed(1)}–${x.to.toFixed(1)} | ${cell(x)} | ${cell(b[a.indexOf(x)]!)} |`);
}

function bar(bins: ReliabilityBin[]): string[] {
  return bins.filter((b) => b.count > 0).map((b) => `| ${b.from.toFixed(1)}–${b.to.toFixed(1)} | ${b.count} | ${b.mean_confidence.toFixed(3)} | ${b.accuracy.toFixed(3)} |`);
}

interface Case {
  text: string;
  split: 'fit' | 'check';
  full: string[];
  perfect: Set<string>;
  perfectTitles: string[][];
}

/** Asks every case of the service with include.debug and labels every candidate it returns. */
async function collect(docs: Parameters<typeof service>[0], cases: readonly Case[]): Promise<{ samples: Sample[]; caseSplit: ('fit' | 'check')[] }> {
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
  return { samples, caseSplit };
}

/**
 * Fits the logistic model on `fitSet`, then the isotonic map of the primary on the same half's
 * primaries, and returns both with the reliability tables (before and after the map) of any set
 * of cases.
 */
function fitAndCheck(fitSet: Sample[], checkSet: Sample[], l2: number, verbose: boolean) {
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
    if (verbose) log(`Platt step on ${best.size} primaries: a ${a!.toFixed(3)}, b ${b!.toFixed(3)}`);
    w = w.map((v, j) => a! * v + (j === 0 ? b! : 0));
  }
  const weights: Record<string, number> = { bias: round(w[0]!) };
  FEATURES.forEach((n, j) => (weights[n] = round(w[j + 1]!)));
  const zOf = (f: Features) => row(f).reduce((z, x, j) => z + x * w[j]!, 0);
  const predictOf = (f: Features) => sigmoid(zOf(f));

  // each case's candidates, best first (the service ranks by the same log-odds)
  const byCase = (set: Sample[]) => {
    const cases = new Map<number, Sample[]>();
    for (const s of set) {
      const list = cases.get(s.caseId);
      if (list) list.push(s);
      else cases.set(s.caseId, [s]);
    }
    return [...cases.values()].map((list) => list.sort((a, b) => zOf(b.features) - zOf(a.features)));
  };
  const fitCases = byCase(fitSet);
  const checkCases = byCase(checkSet);
  // the isotonic map of the primary, fitted on the first half only; knots rounded as stored
  const knots: [number, number][] = [];
  for (const [x, y] of isotonicKnots(fitCases.map((c) => ({ x: predictOf(c[0]!.features), y: c[0]!.right ? 1 : 0 })))) {
    const k: [number, number] = [round(x), round(y)];
    if (knots.length === 0 || k[0] > knots[knots.length - 1]![0]) knots.push(k);
  }
  if (verbose) log(`primary recalibration: ${knots.length} knots from ${fitCases.length} primaries`);
  /** Confidences as the service reports them: `after` recalibrates the primary and caps the rest at it. */
  const scored = (cases: Sample[][], after: boolean) =>
    cases.map((c) => {
      const first = after ? primaryConfidence(zOf(c[0]!.features), 0, knots) : predictOf(c[0]!.features);
      const rest = c.slice(1).map((s) => ({ p: after ? Math.min(predictOf(s.features), first) : predictOf(s.features), y: s.right }));
      return { primary: { p: first, y: c[0]!.right }, rest };
    });
  const tables = (cases: Sample[][], after: boolean) => {
    const s = scored(cases, after);
    return { primary: reliability(s.map((c) => c.primary)), all: reliability(s.flatMap((c) => [c.primary, ...c.rest])), alternatives: reliability(s.flatMap((c) => c.rest)) };
  };

  return { weights, knots, zOf, predictOf, fitCases, checkCases, tables };
}

/** Mean |right - confidence| of the primaries at confidence `from` and above, and their count. */
function above(r: { bins: ReliabilityBin[] }, from: number): { count: number; gap: number } {
  const bins = r.bins.filter((b) => b.from >= from - 1e-9 && b.count > 0);
  const n = bins.reduce((t, b) => t + b.count, 0);
  return { count: n, gap: n ? bins.reduce((t, b) => t + b.count * Math.abs(b.accuracy - b.mean_confidence), 0) / n : 0 };
}

/**
 * How much the primary's recalibration carries to unseen queries: `n` random splits of the
 * collected queries in two halves (a query's whole and prefix cases stay together), each fitted on
 * one half and checked on the other.
 */
function splits(samples: Sample[], n: number, seed: number, l2: number): void {
  const queryOf = (s: Sample) => Math.floor(s.caseId / 2);
  const queries = [...new Set(samples.map(queryOf))];
  const rows: { before: number; after: number; topBefore: number; topAfter: number }[] = [];
  for (let r = 0; r < n; r++) {
    const order = new SeededRandom(seed * 1000 + r).shuffled(queries);
    const fitQueries = new Set(order.slice(0, Math.floor(order.length / 2)));
    const fit = samples.filter((s) => fitQueries.has(queryOf(s)));
    const check = samples.filter((s) => !fitQueries.has(queryOf(s)));
    const { checkCases, tables } = fitAndCheck(fit, check, l2, false);
    const before = tables(checkCases, false).primary;
    const after = tables(checkCases, true).primary;
    rows.push({ before: before.ece, after: after.ece, topBefore: above(before, 0.6).gap, topAfter: above(after, 0.6).gap });
    log(`split ${r + 1}/${n}: primary ECE ${before.ece.toFixed(3)} -> ${after.ece.toFixed(3)}, at 0.6 and above |right - confidence| ${above(before, 0.6).gap.toFixed(3)} -> ${above(after, 0.6).gap.toFixed(3)}`);
  }
  const mean = (f: (x: (typeof rows)[number]) => number) => (rows.reduce((t, x) => t + f(x), 0) / rows.length).toFixed(3);
  process.stdout.write(
    `${n} random splits of ${queries.length} queries in halves: held-out primary ECE ${mean((x) => x.before)} -> ${mean((x) => x.after)} (better in ${rows.filter((x) => x.after < x.before).length}); ` +
      `at 0.6 and above |right - confidence| ${mean((x) => x.topBefore)} -> ${mean((x) => x.topAfter)} (better in ${rows.filter((x) => x.topAfter < x.topBefore).length}).\n`,
  );
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
  const { samples, caseSplit } = values.samples ? (JSON.parse(readFileSync(values.samples, 'utf8')) as { samples: Sample[]; caseSplit: ('fit' | 'check')[] }) : await collect(docs, cases);
  if (values.samples) FEATURES = Object.keys(samples[0]?.features ?? {});
  if (values['save-samples']) writeFileSync(values['save-samples'], JSON.stringify({ samples, caseSplit }));

  if (values.splits) {
    splits(samples, positive(values.splits, 'splits'), seed, l2);
    return;
  }
  const fitSet = samples.filter((s) => caseSplit[s.caseId] === 'fit');
  const checkSet = samples.filter((s) => caseSplit[s.caseId] === 'check');
  const { weights, knots, predictOf, fitCases, checkCases, tables } = fitAndCheck(fitSet, checkSet, l2, true);

  if (values.dump) {
    for (const c of checkCases) {
      const s = c[0]!;
      if (predictOf(s.features) >= 0.6) log(`dump ${predictOf(s.features).toFixed(2)} -> ${recalibrated(predictOf(s.features), knots).toFixed(2)} ${s.right ? 'RIGHT' : 'wrong'} ${JSON.stringify(s.text)} -> ${s.key} ${JSON.stringify(s.label)} ${JSON.stringify(s.features)}`);
    }
  }
  const before = tables(checkCases, false);
  const after = tables(checkCases, true);
  const fitPrimary = tables(fitCases, true).primary;
  // what the service answered during this run (its debug candidates carry the confidences it shows)
  const servedPrimary = reliability(checkCases.map((c) => ({ p: Math.max(...c.map((s) => s.served)), y: c[0]!.right })));
  const primaryRight = checkCases.filter((c) => c[0]!.right).length;
  const checkPrimary = after.primary;
  const checkAll = after.all;
  const summary = (name: string, t: ReturnType<typeof tables>) => {
    const top = above(t.primary, 0.6);
    return (
      `${name}: primary ECE ${t.primary.ece.toFixed(3)}, Brier ${t.primary.brier.toFixed(3)}; at confidence 0.6 and above ${top.count} primaries, mean |right - confidence| ${top.gap.toFixed(3)}; ` +
      `alternatives ECE ${t.alternatives.ece.toFixed(3)}; every candidate ECE ${t.all.ece.toFixed(3)}, Brier ${t.all.brier.toFixed(3)}.`
    );
  };

  const lines = [
    '',
    `Predict confidence calibration on Home Depot judged queries: ${docs.length} products, ${chosen.length} queries (seed ${seed}), whole query and 60% prefix; ` +
      `fit on ${fitSet.length} candidates of ${half} queries, checked on ${checkSet.length} candidates of the other ${chosen.length - half}.`,
    '',
    `Held-out half, primary right in ${primaryRight}/${checkCases.length} cases.`,
    summary('Before (logistic model alone)', before),
    summary('After (primary recalibrated, alternatives capped at it)', after),
    `Primary after recalibration on the fitted half: ECE ${fitPrimary.ece.toFixed(3)}; primary as the service answered during this run: ECE ${servedPrimary.ece.toFixed(3)}.`,
    '',
    '| confidence | primaries before | mean confidence | right | primaries after | mean confidence | right |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...sideBySide(before.primary.bins, after.primary.bins),
    '',
    '| confidence | all candidates after | mean confidence | right |',
    '|---|---:|---:|---:|',
    ...bar(checkAll.bins),
    '',
    `weights: ${JSON.stringify(weights)}`,
    `primary_calibration: ${JSON.stringify(knots)}`,
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
    check_primary_ece_before_recalibration: round(before.primary.ece),
    primary_calibration_cases: fitCases.length,
  };
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `predict-calibration-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ kind: 'predict-calibration', finished_at: new Date().toISOString(), machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg() }, fitted_on: fittedOn, weights, primary_calibration: knots, check_primary: checkPrimary, check_all: checkAll, check_primary_before: before.primary, check_all_before: before.all, fit_primary: fitPrimary, served_primary: servedPrimary })}\n`,
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
      '  // isotonic map of the primary prediction: [model probability, observed rate]',
      '  primary_calibration: [',
      ...knots.map(([x, y]) => `    [${x}, ${y}],`),
      '  ],',
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
