// Two builds of the search engine side by side in one process: the same catalogue loaded into
// each, then the same keystroke stream answered by each in alternation, CPU time per query. On a
// shared, noisy machine this tells a change's effect apart from the machine's mood, which two
// load runs minutes apart cannot. The stream is answered in three passes: its first half and its
// second half (first-time queries, as in a load run, the second half after the first has warmed
// what is shared), then the whole stream again (every query seen before).
//
//   npm run build   (in both trees)
//   git worktree add /tmp/base <commit> && (cd /tmp/base && npm ci && npm run build)
//   node dist/loadtest/engine-ab.js --a /tmp/base --b . [--kind typeahead|fts_only|hybrid|...]
//        [--catalog bestbuy,homedepot] [--sessions 4000] [--repeats 3] [--memo-mb 85]
//        [--source keystrokes|queries] [--count 20000] [--writes N] [--shared-stats]
//
// `--source queries` answers whole queries weighted by frequency (`--count` of them, as the
// autocomplete-fts workload sends) instead of keystroke prefixes of typing sessions.
//
// `--writes N`: a write of one new document every N queries (indexed at once, and small segments
// merged as the node merges them, outside the timed query), as a trickle of writes does to a
// node. `--shared-stats`: autocomplete queries carry the engine's own collection statistics as
// shared statistics (the engine API for scoring the parts of an index on one scale).
//
// `--query Q` (repeatable): after the whole stream has warmed both engines, each query named is
// asked 30 times in a row by each build in turn (10 rounds, alternating), and its median CPU time
// per answer reported: what a change does to a few slow queries the stream's average hides.
//
// `--memo-mb` sets each build's memo budget (a query thread's share on a 2-core node is 85 MB).
// The engines are loaded from each tree's `dist/` at run time: this file imports no engine code.
import { loadCatalogSpec } from './data/catalog.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources, queryStream } from './data/keystrokes.js';
import { loadEngine, type EngineOfBuild } from './load/engine-build.js';
import { percentile } from './load/latency-stats.js';
import { cliArgs } from './load/cli.js';

interface Build {
  name: string;
  engine: EngineOfBuild;
}

const { values } = cliArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    kind: { type: 'string', default: 'typeahead' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    sessions: { type: 'string', default: '4000' },
    repeats: { type: 'string', default: '3' },
    'memo-mb': { type: 'string' },
    source: { type: 'string', default: 'keystrokes' },
    count: { type: 'string', default: '20000' },
    writes: { type: 'string' },
    'shared-stats': { type: 'boolean', default: false },
    query: { type: 'string', multiple: true },
  },
});
if (values.a === undefined || values.b === undefined) {
  process.stderr.write('usage: engine-ab --a DIR --b DIR [--kind typeahead|fts_only|hybrid|vector_only|fts_rerank]\n');
  process.exit(2);
}
const kind = values.kind as string;
const repeats = Number(values.repeats);
const docs = loadCatalogSpec(values.catalog as string);
const weighted = loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log']));
const stream =
  values.source === 'queries'
    ? queryStream(weighted, { count: Number(values.count), seed: 4 })
    : keystrokeStream(weighted, { sessions: Number(values.sessions), seed: 2, minPrefix: kind === 'typeahead' ? 1 : 2 });
const half = Math.floor(stream.length / 2);
const passes: [string, string[]][] = [
  ['first half, first time', stream.slice(0, half)],
  ['second half, first time', stream.slice(half)],
  ['whole stream again', stream],
];

async function load(dir: string): Promise<Build> {
  // writes are indexed by `refresh` and merged geometrically, as the node's refresher does
  const memoMb = values['memo-mb'] === undefined ? undefined : Number(values['memo-mb']);
  return { name: dir, engine: await loadEngine(dir, docs, kind, memoMb) };
}

const writeEvery = values.writes === undefined ? 0 : Number(values.writes);
if (!(Number.isInteger(writeEvery) && writeEvery >= 0)) throw new Error('--writes takes a whole number of queries');
/** writes made so far, per engine: both builds get the same documents */
const written = new Map<EngineOfBuild, number>();

function ask(engine: EngineOfBuild, q: string): void {
  if (kind === 'typeahead') engine.typeahead({ query: q, limit: 10 });
  else engine.autocomplete({ query: q, limit: 10, mode: kind, ...(values['shared-stats'] ? { stats: engine.collectionStats(q.toLowerCase().split(/\s+/)) } : {}) });
}

function answer(b: Build, queries: readonly string[]): number {
  let cpu = 0;
  for (let i = 0; i < queries.length; i++) {
    const q = queries[i] as string;
    if (writeEvery > 0 && i % writeEvery === 0) {
      const n = (written.get(b.engine) ?? 0) + 1;
      written.set(b.engine, n);
      const base = docs[n % docs.length] as { id: string; title: string };
      b.engine.upsert([{ ...base, id: `${base.id}~w${n}`, title: `${base.title} edition ${n}` }]);
      b.engine.refresh();
    }
    const c0 = process.cpuUsage();
    ask(b.engine, q);
    const c = process.cpuUsage(c0);
    cpu += c.user + c.system;
  }
  return cpu / queries.length;
}

const median = (xs: number[]): number => percentile([...xs].sort((x, y) => x - y), 50);

const named = values.query ?? [];
if (named.length > 0) {
  const builds = await Promise.all([values.a, values.b].map((d) => load(d as string)));
  for (const b of builds) answer(b, stream);
  console.log(`${kind}, ${docs.length} documents, after the ${stream.length}-query stream; CPU µs per answer, median of 10 rounds of 30`);
  for (const q of named) {
    const times = builds.map(() => [] as number[]);
    for (let r = 0; r < 10; r++) {
      builds.forEach((b, i) => {
        const c0 = process.cpuUsage();
        for (let k = 0; k < 30; k++) ask(b.engine, q);
        const c = process.cpuUsage(c0);
        times[i]!.push((c.user + c.system) / 30);
      });
    }
    const [a, b] = times.map(median) as [number, number];
    console.log(`${JSON.stringify(q).padEnd(26)} a ${a.toFixed(0).padStart(6)}  b ${b.toFixed(0).padStart(6)}  b/a ${(b / a).toFixed(2)}`);
  }
  process.exit(0);
}
const timings = new Map<string, number[][]>([values.a, values.b].map((d) => [d as string, passes.map(() => [])]));
// every repeat starts from fresh engines, so that the first-time passes are first-time again
for (let r = 0; r < repeats; r++) {
  // alternate which build goes first
  const order = r % 2 === 0 ? [values.a, values.b] : [values.b, values.a];
  const builds = await Promise.all(order.map((d) => load(d as string)));
  for (const [p, [, queries]] of passes.entries()) for (const b of builds) timings.get(b.name)![p]!.push(answer(b, queries));
}
console.log(
  `${kind}, ${docs.length} documents, ${stream.length} ${values.source === 'queries' ? 'queries' : 'keystrokes'}, ${repeats} repeats${writeEvery > 0 ? `, a write every ${writeEvery} queries` : ''}${values['shared-stats'] ? ', shared statistics' : ''}; CPU µs per query, median (all)`,
);
for (const [p, [label]] of passes.entries()) {
  const [a, b] = [values.a, values.b].map((n) => timings.get(n as string)![p]!);
  console.log(`${label.padEnd(26)} a ${median(a!).toFixed(1).padStart(7)} (${a!.map((x) => x.toFixed(0)).join(' ')})  b ${median(b!).toFixed(1).padStart(7)} (${b!.map((x) => x.toFixed(0)).join(' ')})  b/a ${(median(b!) / median(a!)).toFixed(3)}`);
}
