// What synonyms and merchandising rules cost inside one engine: autocomplete latency on the Best
// Buy catalogue (3,291 products with brands and categories) for the Algolia query suggestions,
// without rules (the baseline, same invocation) and with each kind of ranking payload, in
// interleaved rounds so machine load hits every configuration alike. Prints p50/p99 and the
// ratio of each to the baseline.
//
//   npx tsc && node dist/shard/bench/ranking-bench.js [--data DIR] [--rounds 5] [--json]
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { SuggestDocument } from '../../node/runtime/document.js';
import type { RankingPayload } from '../../node/runtime/ranking-payload.js';
import { SuggestEngine } from '../engine/engine.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}
const DATA = arg('data', process.env.SUGGEST_DATA_SETS ?? '/work/shared/data');
const ROUNDS = Number(arg('rounds', '5'));

interface Row { name: string; description: string; brand: string; categories: string[]; price: number }
const rows = JSON.parse(readFileSync(`${DATA}/bestbuy_products_3291.json`, 'utf8')) as Row[];
const docs: SuggestDocument[] = rows.map((r, i) => ({ id: `bb${i}`, title: r.name, desc: r.description, manufacturer: r.brand, raw: { category: r.categories.join(' > '), price: r.price } }));
const queries = (JSON.parse(readFileSync(`${DATA}/algolia_bestbuy_query_suggestions.json`, 'utf8')) as { query: string }[]).map((s) => s.query).slice(0, 400);

const engine = new SuggestEngine();
engine.upsert(docs);
engine.optimize();

const brands = [...new Set(rows.map((r) => r.brand))].slice(0, 10);
const rules: RankingPayload['rules'] = [
  ...brands.map((b, i) => ({ id: `boost-${i}`, action: 'boost' as const, target: { field: 'manufacturer', values: [b] }, factor: 1.5 })),
  ...['Cell Phones', 'Headphones', 'Cases', 'Laptops', 'TVs'].map((c, i) => ({ id: `bury-${i}`, action: 'bury' as const, target: { field: 'category', values: [c] }, factor: 0.7 })),
  ...Array.from({ length: 5 }, (_, i) => ({ id: `hide-${i}`, action: 'hide' as const, target: { ids: Array.from({ length: 20 }, (_, j) => `bb${i * 20 + j}`) } })),
];
// one reading per query with as many words (the words reversed): the cost of one real synonym
const reading = (q: string): RankingPayload => ({ synonyms: [{ query: q.split(' ').reverse().join(' '), from: 'x', to: 'y' }] });
const pins: RankingPayload['pins'] = [
  { id: 'pin-ids', target: { ids: ['bb10', 'bb2000'] }, position: 1 },
  { id: 'pin-brand', target: { field: 'manufacturer', values: [brands[3] as string] }, position: 4 },
];

const configs: { name: string; payload: (q: string) => RankingPayload | null }[] = [
  { name: 'baseline (no rules)', payload: () => null },
  { name: '20 rules (10 boost, 5 bury by attribute, 5 hide x 20 ids)', payload: () => ({ rules }) },
  { name: '1 synonym reading', payload: reading },
  { name: '2 pins (ids, attribute)', payload: () => ({ pins }) },
  { name: 'all of the above', payload: (q) => ({ rules, pins, ...reading(q) }) },
];

const samples = configs.map(() => [] as number[]);
for (const q of queries) engine.autocomplete({ query: q }); // warm up
for (let round = 0; round < ROUNDS; round++) {
  configs.forEach((c, ci) => {
    for (const q of queries) {
      const t0 = performance.now();
      engine.autocomplete({ query: q, limit: 10, ranking: c.payload(q) });
      (samples[ci] as number[]).push((performance.now() - t0) * 1000);
    }
  });
}
const pctl = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] as number;
};
const base = samples[0] as number[];
const results = configs.map((c, i) => {
  const xs = samples[i] as number[];
  return { config: c.name, queries: xs.length, p50_us: Math.round(pctl(xs, 0.5)), p99_us: Math.round(pctl(xs, 0.99)), p50_ratio: +(pctl(xs, 0.5) / pctl(base, 0.5)).toFixed(2), p99_ratio: +(pctl(xs, 0.99) / pctl(base, 0.99)).toFixed(2) };
});
if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify({ loadavg: os.loadavg(), results })}\n`);
else {
  process.stdout.write(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}\n\n| payload | p50 µs | p99 µs | p50 vs baseline | p99 vs baseline |\n|---|---:|---:|---:|---:|\n`);
  for (const r of results) process.stdout.write(`| ${r.config} | ${r.p50_us} | ${r.p99_us} | ${r.p50_ratio}x | ${r.p99_ratio}x |\n`);
}
