// Does the engagement loop make suggestions learn? Replays click logs derived from real queries
// through POST /v1/events/click and measures before and after, over HTTP like any client:
//
// 1. Home Depot (judged queries, 54,667 product titles): the judged queries with a perfect
//    product are split at random into halves A and B. Clicks are replayed for half A only: every
//    judged product of a query gets clicks in proportion to its mean human relevance
//    (round(2 * (relevance - 2)) sessions: 2 for an exact match, 1 for 2.25..2.74, none below),
//    each with the query as typed. success@k and MRR@k of autocomplete (fts_only) are measured
//    on A (the queries the replay touched) and on B (held out: what the replay did not see), for
//    the whole query and its 60% typing prefix, before and after.
// 2. Best Buy (real mobile query log, 28,241 events, 3,291 products): the log is split in time;
//    the first half is replayed as clicks (user = session, the clicked product = the top
//    autocomplete answer for the query, the log has no clicked SKU), then every event of the
//    second half is typed as its 60% prefix into typeahead: the share whose real query appears
//    among the suggestions, before and after (mined queries need `min_query_count` visitors).
//
//   node dist/loadtest/relevance/click-replay.js (--spawn-single-node | --target URL --admin-key KEY)
//        [--queries 3000] [--seed 7] [--k 10] [--concurrency 4] [--skip-homedepot] [--skip-bestbuy] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { loadBestBuyProducts, loadBestBuyQueryEvents } from '../data/bestbuy.js';
import { REPO_ROOT } from '../data/data-files.js';
import { loadHomeDepot, type JudgedQuery } from '../data/homedepot.js';
import { SeededRandom } from '../data/seeded-random.js';
import { summarize, type LatencySummary } from '../load/latency-stats.js';
import { provisionIndex, ServiceError, waitSearchable } from '../load/provision-service.js';
import { typingPrefix } from './eval-set.js';
import { firstRelevantRank, scoreRanks, type RankingScore } from './metrics.js';
import { ServiceEngine } from './service-engine.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    target: { type: 'string' },
    'spawn-single-node': { type: 'boolean', default: false },
    'admin-key': { type: 'string' },
    queries: { type: 'string', default: '3000' },
    seed: { type: 'string', default: '7' },
    k: { type: 'string', default: '10' },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '3' },
    'skip-homedepot': { type: 'boolean', default: false },
    'skip-bestbuy': { type: 'boolean', default: false },
    out: { type: 'string' },
    echo: { type: 'boolean', default: false },
  },
});

const log = (line: string) => process.stderr.write(`[click-replay] ${line}\n`);
const usage = (msg: string): never => {
  process.stderr.write(`${msg}\nsee loadtest/README.md for usage\n`);
  process.exit(2);
};
const int = (v: string, name: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) usage(`--${name} must be a positive integer`);
  return n;
};
const K = int(values.k, 'k');
const CONCURRENCY = int(values.concurrency, 'concurrency');
const EVENT_BATCH = 100;

const cleanups: (() => Promise<void>)[] = [];

async function service(): Promise<{ baseUrl: string; adminKey: string }> {
  if (values['spawn-single-node']) {
    const { startSingleNode } = await import('../../node/runtime/process-harness.js');
    log('starting a single node (event rate limit raised for the replay)');
    const node = await startSingleNode({ echo: values.echo, env: { SUGGEST_EVENTS_PER_SECOND: '1000000', SUGGEST_EVENTS_BURST: '1000000' } });
    cleanups.push(() => node.stop());
    return { baseUrl: node.baseUrl, adminKey: node.adminKey };
  }
  const target = values.target ?? usage('needs --target URL (with --admin-key) or --spawn-single-node');
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(target)) usage('--target must be a loopback URL');
  return { baseUrl: target.replace(/\/$/, ''), adminKey: values['admin-key'] ?? usage('--target needs --admin-key') };
}

async function forEachConcurrent<T>(items: readonly T[], fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

interface ClickEvent {
  index: string;
  doc_id: string;
  query: string;
  session_id: string;
  user_id?: string;
  type: 'click';
  timestamp?: number;
}

/** Sends events in batches of 100; returns the totals the service reported. */
async function replay(baseUrl: string, key: string, events: ClickEvent[]): Promise<{ sent: number; accepted: number; ignored: number; ms: number }> {
  const t0 = performance.now();
  let accepted = 0;
  let ignored = 0;
  const batches: ClickEvent[][] = [];
  for (let i = 0; i < events.length; i += EVENT_BATCH) batches.push(events.slice(i, i + EVENT_BATCH));
  await forEachConcurrent(batches, async (batch) => {
    const res = await fetch(`${baseUrl}/v1/events/click`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ events: batch }) });
    const text = await res.text();
    if (res.status !== 200) throw new ServiceError('POST /v1/events/click', res.status, text);
    const body = JSON.parse(text) as { accepted: number; ignored: number };
    accepted += body.accepted;
    ignored += body.ignored;
  });
  return { sent: events.length, accepted, ignored, ms: performance.now() - t0 };
}

const pct = (x: number) => (Number.isFinite(x) ? (100 * x).toFixed(1) : 'n/a');
const num = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : 'n/a');
const fold = (q: string) => q.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

// ---------------------------------------------------------------- Home Depot

type Half = 'A' | 'B';
type Variant = 'full' | 'prefix60';
interface HdCase {
  half: Half;
  variant: Variant;
  text: string;
  perfect: ReadonlySet<string>;
}

/** Sessions of clicks a judged product gets: 2 for an exact match, 1 for 2.25..2.74, none below. */
const clicksFor = (relevance: number) => Math.max(0, Math.round(2 * (relevance - 2)));

async function homeDepot(baseUrl: string, adminKey: string, seed: number, queries: number) {
  const hd = loadHomeDepot();
  const docs: SuggestDocument[] = [...hd.products].map(([id, title]) => ({ id, title, desc: '', manufacturer: '', raw: {} }));
  const eligible = hd.queries.filter((q) => q.perfect.length > 0);
  const chosen = new SeededRandom(seed).sample(eligible, queries);
  const half = (i: number): Half => (i < chosen.length / 2 ? 'A' : 'B');
  const cases: HdCase[] = [];
  chosen.forEach((q, i) => {
    const perfect = new Set(q.perfect);
    cases.push({ half: half(i), variant: 'full', text: q.query, perfect });
    cases.push({ half: half(i), variant: 'prefix60', text: typingPrefix(q.query), perfect });
  });

  const index = 'hd-clicks';
  const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'click-replay', indexId: index, docs, log });
  await waitSearchable(baseUrl, p.publicKey, `/v1/autocomplete?index=${index}&query=drill`);
  const engine = new ServiceEngine('service-autocomplete', baseUrl, p.publicKey, index, 'autocomplete', docs.map((d) => ({ id: d.id, title: d.title })));

  const measure = async (phase: string) => {
    const ranks = new Array<number>(cases.length);
    const latencies = new Float64Array(cases.length);
    const t0 = performance.now();
    await forEachConcurrent(cases, async (c, i) => {
      const q0 = performance.now();
      const ranked = await engine.search(c.text, K);
      latencies[i] = performance.now() - q0;
      ranks[i] = firstRelevantRank(ranked, c.perfect, K);
    });
    log(`home depot ${phase}: ${cases.length} searches in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const out: Record<string, RankingScore> = {};
    for (const h of ['A', 'B'] as const) for (const v of ['full', 'prefix60'] as const) out[`${h}/${v}`] = scoreRanks(cases.flatMap((c, i) => (c.half === h && c.variant === v ? [ranks[i]!] : [])));
    return { scores: out, latency: summarize(latencies) };
  };

  const beforeRun = await measure('before');
  const events: ClickEvent[] = [];
  let session = 0;
  chosen.forEach((q: JudgedQuery, i) => {
    if (half(i) !== 'A') return;
    for (const j of q.judgments) for (let c = 0; c < clicksFor(j.relevance); c++) events.push({ index, doc_id: j.productUid, query: q.query, session_id: `hd-${session++}`, type: 'click' });
  });
  const shuffled = new SeededRandom(seed + 1).shuffled(events);
  const sent = await replay(baseUrl, p.publicKey, shuffled);
  log(`home depot: replayed ${sent.sent} clicks (${sent.accepted} accepted) in ${(sent.ms / 1000).toFixed(1)} s`);
  const afterRun = await measure('after');
  const cost = await rankingCost(baseUrl, p.privateKey, p.publicKey, index, cases.map((c) => c.text));
  return {
    documents: docs.length,
    queries: chosen.length,
    half_a_queries: chosen.filter((_, i) => half(i) === 'A').length,
    clicks: sent,
    click_rule: 'round(2 * (mean relevance - 2)) sessions per judged product of a half-A query',
    before: beforeRun.scores,
    after: afterRun.scores,
    latency: { before: beforeRun.latency, after: afterRun.latency } as { before: LatencySummary; after: LatencySummary },
    ranking_cost: cost,
  };
}

/**
 * What behaviour ranking costs: the same cases on the same index (events replayed), with the
 * index schema's `events.enabled` off (baseline) and on, in alternating rounds, cache bypassed.
 */
async function rankingCost(baseUrl: string, privateKey: string, publicKey: string, index: string, texts: string[]) {
  const rounds = int(values.rounds, 'rounds');
  const setEnabled = async (enabled: boolean) => {
    const res = await fetch(`${baseUrl}/v1/indexes/${index}/schema`, { method: 'PUT', headers: { 'x-api-key': privateKey, 'content-type': 'application/json' }, body: JSON.stringify({ events: { enabled } }) });
    if (res.status !== 200) throw new ServiceError('PUT schema', res.status, await res.text());
  };
  const round = async () => {
    const latencies = new Float64Array(texts.length);
    await forEachConcurrent(texts, async (text, i) => {
      const q0 = performance.now();
      const res = await fetch(`${baseUrl}/v1/autocomplete?${new URLSearchParams({ query: text, index, limit: String(K), mode: 'fts_only', bypass_cache: 'true' })}`, { headers: { 'x-api-key': publicKey } });
      await res.text();
      latencies[i] = performance.now() - q0;
    });
    return latencies;
  };
  const off: Float64Array[] = [];
  const on: Float64Array[] = [];
  for (let r = 0; r < rounds; r++) {
    await setEnabled(false);
    off.push(await round());
    await setEnabled(true);
    on.push(await round());
    log(`ranking cost round ${r + 1}/${rounds} done`);
  }
  const join = (xs: Float64Array[]) => {
    const out = new Float64Array(xs.reduce((n, x) => n + x.length, 0));
    let o = 0;
    for (const x of xs) {
      out.set(x, o);
      o += x.length;
    }
    return out;
  };
  await fetch(`${baseUrl}/v1/indexes/${index}/schema`, { method: 'PUT', headers: { 'x-api-key': privateKey, 'content-type': 'application/json' }, body: '{}' });
  return { rounds, cases_per_round: texts.length, off: summarize(join(off)), on: summarize(join(on)) };
}

// ---------------------------------------------------------------- Best Buy

async function bestBuy(baseUrl: string, adminKey: string) {
  const docs = loadBestBuyProducts();
  const all = loadBestBuyQueryEvents();
  const cut = Math.floor(all.length / 2);
  const replayed = all.slice(0, cut);
  const heldOut = all.slice(cut);
  const index = 'bb-clicks';
  const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'click-replay', indexId: index, docs, log });
  await waitSearchable(baseUrl, p.publicKey, `/v1/typeahead?index=${index}&query=samsung`);
  const typeahead = async (text: string): Promise<string[]> => {
    const res = await fetch(`${baseUrl}/v1/typeahead?${new URLSearchParams({ index, query: text, limit: String(K) })}`, { headers: { 'x-api-key': p.publicKey } });
    const body = await res.text();
    if (res.status !== 200) throw new ServiceError('GET /v1/typeahead', res.status, body);
    return (JSON.parse(body) as { suggestions: { title: string }[] }).suggestions.map((s) => fold(s.title));
  };

  // held-out prefixes, asked once per distinct (prefix, query); each event counts
  const asks = new Map<string, { prefix: string; query: string; events: number }>();
  for (const e of heldOut) {
    const query = fold(e.query);
    const prefix = typingPrefix(query);
    const k = `${prefix}\0${query}`;
    const a = asks.get(k);
    if (a) a.events++;
    else asks.set(k, { prefix, query, events: 1 });
  }
  const askList = [...asks.values()];
  const seenBefore = new Set(replayed.map((e) => fold(e.query)));
  const measure = async (phase: string) => {
    const hit = new Array<boolean>(askList.length);
    const t0 = performance.now();
    await forEachConcurrent(askList, async (a, i) => {
      hit[i] = (await typeahead(a.prefix)).includes(a.query);
    });
    log(`best buy ${phase}: ${askList.length} prefixes in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const share = (filter: (a: (typeof askList)[number]) => boolean, weighted: boolean) => {
      let n = 0;
      let h = 0;
      askList.forEach((a, i) => {
        if (!filter(a)) return;
        const w = weighted ? a.events : 1;
        n += w;
        if (hit[i]) h += w;
      });
      return n > 0 ? h / n : Number.NaN;
    };
    return {
      events: share(() => true, true),
      distinct: share(() => true, false),
      events_seen_in_replay: share((a) => seenBefore.has(a.query), true),
      events_new: share((a) => !seenBefore.has(a.query), true),
    };
  };

  const before = await measure('before');
  // the clicked product of a query: its top autocomplete answer (the log has no clicked SKU)
  const target = new Map<string, string | null>();
  const distinct = [...new Set(replayed.map((e) => fold(e.query)))];
  await forEachConcurrent(distinct, async (q) => {
    const res = await fetch(`${baseUrl}/v1/autocomplete?${new URLSearchParams({ index, query: q, limit: '1' })}`, { headers: { 'x-api-key': p.publicKey } });
    const body = JSON.parse(await res.text()) as { suggestions?: { id: string }[] };
    target.set(q, body.suggestions?.[0]?.id ?? null);
  });
  const events: ClickEvent[] = [];
  let unmatched = 0;
  for (const e of replayed) {
    const doc = target.get(fold(e.query));
    if (!doc) {
      unmatched++;
      continue;
    }
    events.push({ index, doc_id: doc, query: e.query, session_id: e.user, user_id: e.user, type: 'click', timestamp: Date.now() - 60_000 });
  }
  const sent = await replay(baseUrl, p.publicKey, events);
  log(`best buy: replayed ${sent.sent} clicks (${sent.accepted} accepted, ${unmatched} log events had no product to click) in ${(sent.ms / 1000).toFixed(1)} s`);
  const after = await measure('after');
  return {
    documents: docs.length,
    log_events: all.length,
    replayed_events: replayed.length,
    replayed_clicks: sent,
    unmatched_events: unmatched,
    held_out_events: heldOut.length,
    held_out_distinct: askList.length,
    held_out_events_seen_in_replay: heldOut.filter((e) => seenBefore.has(fold(e.query))).length,
    before,
    after,
  };
}

async function main() {
  const { baseUrl, adminKey } = await service();
  const started = new Date().toISOString();
  const load = os.loadavg().map((x) => x.toFixed(2)).join(' ');
  const hd = values['skip-homedepot'] ? null : await homeDepot(baseUrl, adminKey, int(values.seed, 'seed'), int(values.queries, 'queries'));
  const bb = values['skip-bestbuy'] ? null : await bestBuy(baseUrl, adminKey);
  const loadAfter = os.loadavg().map((x) => x.toFixed(2)).join(' ');

  const lines = ['', `Click replay (k=${K}; load average at start ${load}, at end ${loadAfter})`, ''];
  if (hd) {
    lines.push(
      `Home Depot: ${hd.documents} products; ${hd.queries} judged queries split A (${hd.half_a_queries}, clicks replayed: ${hd.clicks.accepted}) / B (held out); autocomplete fts_only`,
      '',
      `| half | variant | s@${K} before | s@${K} after | MRR before | MRR after |`,
      '|---|---|---:|---:|---:|---:|',
    );
    for (const h of ['A', 'B']) {
      for (const v of ['full', 'prefix60']) {
        const b = hd.before[`${h}/${v}`]!;
        const a = hd.after[`${h}/${v}`]!;
        lines.push(`| ${h}${h === 'B' ? ' (held out)' : ' (replayed)'} | ${v} | ${pct(b.success_at_k)} | ${pct(a.success_at_k)} | ${num(b.mrr)} | ${num(a.mrr)} |`);
      }
    }
    const c = hd.ranking_cost;
    lines.push(
      '',
      `Cost of behaviour ranking: the ${c.cases_per_round} cases on the replayed index, schema events.enabled off then on, ${c.rounds} alternating rounds each, ` +
        `cache bypassed, concurrency ${CONCURRENCY}, HTTP round trip: p50 ${num(c.off.p50_ms)} -> ${num(c.on.p50_ms)} ms (x${(c.on.p50_ms / c.off.p50_ms).toFixed(2)}), ` +
        `p99 ${num(c.off.p99_ms)} -> ${num(c.on.p99_ms)} ms (x${(c.on.p99_ms / c.off.p99_ms).toFixed(2)})`,
      '',
    );
  }
  if (bb) {
    lines.push(
      `Best Buy: ${bb.documents} products; query log split in time: ${bb.replayed_events} events replayed (${bb.replayed_clicks.accepted} clicks), ${bb.held_out_events} held out (${bb.held_out_distinct} distinct prefix/query pairs); share of held-out 60% prefixes whose real query is among the typeahead suggestions`,
      '',
      '| held-out set | before | after |',
      '|---|---:|---:|',
      `| every event | ${pct(bb.before.events)} | ${pct(bb.after.events)} |`,
      `| distinct prefix/query | ${pct(bb.before.distinct)} | ${pct(bb.after.distinct)} |`,
      `| events whose query was in the replayed half | ${pct(bb.before.events_seen_in_replay)} | ${pct(bb.after.events_seen_in_replay)} |`,
      `| events whose query was not | ${pct(bb.before.events_new)} | ${pct(bb.after.events_new)} |`,
      '',
    );
  }
  process.stdout.write(lines.join('\n'));
  const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `click-replay-${started.replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ kind: 'click-replay', started, finished_at: new Date().toISOString(), k: K, load_average: { start: load, end: loadAfter }, machine: { cpus: os.cpus().length, node: process.version }, homedepot: hd, bestbuy: bb }, null, 1)}\n`);
  log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
}

try {
  await main();
} catch (err) {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
} finally {
  for (const c of cleanups.reverse()) await c().catch(() => {});
}

