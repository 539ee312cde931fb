// Micro-benchmark of the search engine (shard/engine) on real catalogues: build time, memory
// per document, snapshot size and load time, and single-thread typeahead / autocomplete
// throughput with keystroke-by-keystroke queries taken from real search logs.
//
//   npx tsc && node dist/shard/bench/engine-bench.js [--data DIR] [--seconds N] [--json]
//
// DIR holds the files described in SOURCES.md (default: $SUGGEST_DATA_SETS or /work/shared/data).
import { parse } from 'csv-parse/sync';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { SuggestEngine } from '../engine/engine.js';

interface Dataset {
  name: string;
  docs: SuggestDocument[];
  /** whole queries people typed, for keystroke replay */
  queries: string[];
  /** misspelled queries, for the typo path */
  typos: string[];
}

interface Timing {
  qps: number;
  p50_us: number;
  p99_us: number;
  queries: number;
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? (process.argv[i + 1] as string) : fallback;
}

const DATA = arg('data', process.env.SUGGEST_DATA_SETS ?? '/work/shared/data');
const SECONDS = Number(arg('seconds', '2'));
const JSON_OUT = process.argv.includes('--json');


function spellPairs(): [string, string][] {
  return readFileSync(`${DATA}/homedepot_query_spellcheck.txt`, 'utf8')
    .split('\n')
    .map((l) => /^'(.*)': '(.*)',?$/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1] as string, m[2] as string]);
}

function bestBuy(): Dataset {
  interface Row { name: string; description: string; brand: string; categories: string[]; price: number; image: string; popularity: number }
  const rows = JSON.parse(readFileSync(`${DATA}/bestbuy_products_3291.json`, 'utf8')) as Row[];
  const docs = rows.map((r, i) => ({ id: `bb${i}`, title: r.name, desc: r.description, manufacturer: r.brand, raw: { categories: r.categories, price: r.price, image: r.image, popularity: r.popularity } }));
  const suggestions = JSON.parse(readFileSync(`${DATA}/algolia_bestbuy_query_suggestions.json`, 'utf8')) as { query: string }[];
  return { name: 'bestbuy', docs, queries: suggestions.map((s) => s.query).slice(0, 400), typos: [] };
}

function homeDepot(): Dataset {
  const rows = (parse(gunzipSync(readFileSync(`${DATA}/homedepot_train.csv.gz`)).toString('latin1'), { relax_column_count: true, skip_empty_lines: true }) as string[][]).slice(1);
  const byId = new Map<string, SuggestDocument>();
  const queries = new Set<string>();
  for (const r of rows) {
    if (r.length < 5) continue;
    const uid = r[1] as string;
    if (!byId.has(uid)) byId.set(uid, { id: `hd${uid}`, title: r[2] as string, desc: '', manufacturer: '', raw: {} });
    queries.add((r[3] as string).toLowerCase());
  }
  return { name: 'homedepot', docs: [...byId.values()], queries: [...queries].slice(0, 400), typos: spellPairs().map((p) => p[0]).slice(0, 400) };
}

/** Every prefix of every query: what a search box sends while someone types. */
function keystrokes(queries: string[]): string[] {
  const out: string[] = [];
  for (const q of queries) for (let i = 1; i <= q.length; i++) if (q[i - 1] !== ' ') out.push(q.slice(0, i));
  return out;
}

function time(queries: string[], run: (q: string) => void): Timing {
  for (const q of queries.slice(0, 500)) run(q); // warm up
  const lat: number[] = [];
  const deadline = performance.now() + SECONDS * 1000;
  let i = 0;
  const start = performance.now();
  while (performance.now() < deadline) {
    const q = queries[i++ % queries.length] as string;
    const t = performance.now();
    run(q);
    lat.push(performance.now() - t);
  }
  const elapsed = (performance.now() - start) / 1000;
  lat.sort((a, b) => a - b);
  const pct = (p: number): number => Math.round((lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? 0) * 1000);
  return { qps: Math.round(lat.length / elapsed), p50_us: pct(0.5), p99_us: pct(0.99), queries: lat.length };
}

function bench(ds: Dataset): Record<string, unknown> {
  global.gc?.();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const engine = new SuggestEngine({ maxPending: Number.MAX_SAFE_INTEGER });
  engine.upsert(ds.docs);
  engine.refresh();
  const buildMs = performance.now() - t0;
  const buildCpuMs = process.cpuUsage(cpu0).user / 1000;
  const stats = engine.stats();

  const s0 = performance.now();
  const bytes = engine.serialize();
  const serializeMs = performance.now() - s0;
  const l0 = performance.now();
  const loaded = SuggestEngine.deserialize(bytes);
  const loadMs = performance.now() - l0;
  loaded.typeahead({ query: 'a' });

  const keys = keystrokes(ds.queries);
  const typeahead = time(keys, (q) => engine.typeahead({ query: q, limit: 10 }));
  const autocomplete = time(keys, (q) => engine.autocomplete({ query: q, limit: 10 }));
  const typos = ds.typos.length > 0 ? time(ds.typos, (q) => engine.typeahead({ query: q, limit: 10 })) : null;
  return {
    dataset: ds.name,
    documents: stats.documents,
    build_ms: Math.round(buildMs),
    build_cpu_ms: Math.round(buildCpuMs),
    docs_per_s: Math.round(stats.documents / (buildMs / 1000)),
    bytes_per_document: stats.bytes_per_document,
    index_bytes_per_document: stats.index_bytes_per_document,
    bytes: stats.bytes,
    terms: stats.terms,
    suggestions: stats.suggestions,
    snapshot_bytes: bytes.length,
    serialize_ms: Math.round(serializeMs),
    load_ms: Math.round(loadMs),
    typeahead_keystrokes: typeahead,
    autocomplete_keystrokes: autocomplete,
    ...(typos ? { typeahead_misspelled: typos } : {}),
  };
}

const results = [bench(bestBuy()), bench(homeDepot())];
if (JSON_OUT) {
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} else {
  for (const r of results) {
    const { bytes, ...rest } = r;
    process.stdout.write(`\n== ${String(r.dataset)}\n`);
    for (const [k, v] of Object.entries(rest)) if (k !== 'dataset') process.stdout.write(`  ${k.padEnd(26)} ${typeof v === 'object' ? JSON.stringify(v) : String(v)}\n`);
    process.stdout.write(`  ${'bytes'.padEnd(26)} ${JSON.stringify(bytes)}\n`);
  }
}
