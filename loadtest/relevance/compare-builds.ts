// Home Depot relevance of two builds of the engine side by side, in process: the judged cases of
// evaluate.ts (same seed, same sample) asked of each build's engine directly, autocomplete
// (`fts_only`) and typeahead, with the cases each build ranks differently. Faster than two service
// runs (no HTTP, one catalogue load per build), and the same figures: an answer maps back to
// products as the service engine's does (a product id, else every product of that title).
//
//   node dist/loadtest/relevance/compare-builds.js --a /tmp/base --b . [--routes autocomplete,typeahead]
//        [--queries 2000] [--seed 42] [--subset REGEX] [--changes N]
//
// `--subset REGEX`: also a row per route for the cases whose judged query matches (for example
// '\d/\d', the queries with a fraction). `--changes N`: print up to N cases whose first relevant
// rank differs between the builds, with each build's first five titles.
import { loadEngine, type EngineOfBuild } from '../load/engine-build.js';
import { cliArgs } from '../load/cli.js';
import { buildEvalSet, VARIANTS, type EvalCase } from './eval-set.js';
import { firstRelevantRank, type RankedPosition } from './metrics.js';

const { values } = cliArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    routes: { type: 'string', default: 'autocomplete,typeahead' },
    queries: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '42' },
    subset: { type: 'string' },
    changes: { type: 'string', default: '0' },
  },
});
if (values.a === undefined || values.b === undefined) {
  process.stderr.write('usage: compare-builds --a DIR --b DIR [--routes autocomplete,typeahead] [--subset REGEX] [--changes N]\n');
  process.exit(2);
}
const K = 10;
const routes = values.routes.split(',').map((r) => r.trim()).filter((r) => r === 'autocomplete' || r === 'typeahead');
const subset = values.subset === undefined ? null : new RegExp(values.subset, 'u');
const set = buildEvalSet({ seed: Number(values.seed), queries: Number(values.queries) });
const documents = set.documents.map((d) => ({ id: d.id, title: d.title }));
const fold = (t: string): string => t.toLowerCase().replace(/\s+/g, ' ').trim();
const ids = new Set(documents.map((d) => d.id));
const byTitle = new Map<string, string[]>();
for (const d of documents) byTitle.set(fold(d.title), [...(byTitle.get(fold(d.title)) ?? []), d.id]);
const titleOf = new Map(documents.map((d) => [d.id, d.title]));

interface Suggestion {
  id: string;
  title: string;
}
const positionOf = (s: Suggestion): RankedPosition => (ids.has(s.id) ? s.id : (byTitle.get(fold(s.title)) ?? []));
const ask = (engine: EngineOfBuild, route: string, text: string): Suggestion[] =>
  (route === 'typeahead' ? (engine.typeahead({ query: text, limit: K }) as { suggestions: Suggestion[] }) : (engine.autocomplete({ query: text, limit: K, mode: 'fts_only' }) as { suggestions: Suggestion[] })).suggestions;

const builds = [
  { name: 'a', engine: await loadEngine(values.a, documents, 'fts_only') },
  { name: 'b', engine: await loadEngine(values.b, documents, 'fts_only') },
];
let changesLeft = Number(values.changes);
for (const route of routes) {
  // per build, per row: cases, found in the top K, summed reciprocal rank
  const rows = new Map<string, { n: number; found: number[]; rr: number[] }>();
  const count = (row: string, b: number, rank: number): void => {
    const r = rows.get(row) ?? { n: 0, found: [0, 0], rr: [0, 0] };
    if (b === 0) r.n++;
    if (rank > 0) {
      r.found[b] = (r.found[b] as number) + 1;
      r.rr[b] = (r.rr[b] as number) + 1 / rank;
    }
    rows.set(row, r);
  };
  for (const c of set.cases as EvalCase[]) {
    const answers = builds.map((b) => ask(b.engine, route, c.text));
    const ranks = answers.map((list) => firstRelevantRank(list.map(positionOf), c.perfect, K));
    ranks.forEach((rank, b) => {
      count(c.variant, b, rank);
      if (subset?.test(c.query)) count(`${c.variant} (subset)`, b, rank);
    });
    if (ranks[0] !== ranks[1] && changesLeft > 0) {
      changesLeft--;
      const perfect = [...c.perfect].slice(0, 2).map((id) => titleOf.get(id)).join(' | ');
      console.log(`${route} ${c.variant} ${JSON.stringify(c.text)}: rank ${ranks[0]} -> ${ranks[1]} (0: not in the top ${K}); judged: ${perfect}`);
      answers.forEach((list, b) => console.log(`  ${builds[b]?.name}: ${list.slice(0, 5).map((s) => s.title).join(' | ')}`));
    }
  }
  console.log(`\n${route}: success@${K} % and MRR@${K}, a = ${values.a}, b = ${values.b}\n`);
  console.log('| cases | n | a s@10 | b s@10 | a MRR | b MRR |');
  console.log('|---|---:|---:|---:|---:|---:|');
  const order = VARIANTS.flatMap((v) => [v, `${v} (subset)`]);
  for (const row of order) {
    const r = rows.get(row);
    if (r === undefined) continue;
    const pct = (x: number) => ((100 * x) / r.n).toFixed(1);
    const mrr = (x: number) => (x / r.n).toFixed(3);
    const [foundA = 0, foundB = 0] = r.found;
    const [rrA = 0, rrB = 0] = r.rr;
    console.log(`| ${row} | ${r.n} | ${pct(foundA)} | ${pct(foundB)} | ${mrr(rrA)} | ${mrr(rrB)} |`);
  }
}
