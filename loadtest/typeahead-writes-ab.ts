// Two builds' typeahead under a trickle of writes, in lockstep: both engines hold the same
// catalogue, take the same writes (a new document, an update of a stored one, a delete, in turn)
// every `--every` keystrokes, each refreshed at once into a segment of its own (and merged as
// the node merges them), and answer every keystroke of the stream, one after the other, the
// order alternating by keystroke. Reports each build's wall time per answer (the writes not
// counted), how many answers differ as JSON (0 when a change is meant to keep the answers) and how
// many are empty lists.
// Typeahead over several segments is the state of every index taking writes; a single-segment
// run (`--every 0`) is the quiet index.
//
//   node dist/loadtest/typeahead-writes-ab.js --a /tmp/base --b . [--every 250] [--sessions 4000]
//        [--catalog bestbuy,homedepot] [--rounds 3] [--one-word]
//
// `--one-word` keeps only keystrokes of one word (no space). Each round starts from fresh engines.
import { loadCatalogSpec } from './data/catalog.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources } from './data/keystrokes.js';
import { loadEngine, type EngineOfBuild } from './load/engine-build.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    every: { type: 'string', default: '250' },
    sessions: { type: 'string', default: '4000' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    rounds: { type: 'string', default: '3' },
    'one-word': { type: 'boolean', default: false },
  },
});
if (values.a === undefined || values.b === undefined) {
  process.stderr.write('usage: typeahead-writes-ab --a DIR --b DIR [--every N] [--sessions N] [--catalog LIST] [--rounds N] [--one-word]\n');
  process.exit(2);
}
const every = Number(values.every);
const rounds = Number(values.rounds);
if (!Number.isInteger(every) || every < 0 || !Number.isInteger(rounds) || rounds < 1) throw new Error('--every and --rounds take whole numbers');
const docs = loadCatalogSpec(values.catalog as string) as { id: string; title: string }[];
const all = keystrokeStream(loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log'])), { sessions: Number(values.sessions), seed: 7, minPrefix: 1 });
const stream = values['one-word'] ? all.filter((q) => !q.trim().includes(' ')) : all;

/** The n-th write: a new document, an update of a stored one, or a delete, in turn. */
function write(engine: EngineOfBuild, n: number): void {
  const base = docs[(n * 7919) % docs.length]!;
  if (n % 3 === 0) engine.upsert([{ ...base, id: `${base.id}~w${n}`, title: `${base.title} edition ${n}` }]);
  else if (n % 3 === 1) engine.upsert([{ ...base, title: `${base.title} renewed` }]);
  else engine.remove([base.id]);
  engine.refresh();
}

const dirs = [values.a, values.b] as [string, string];
const perRound: [number, number][] = [];
let compared = 0;
let differ = 0;
/** answers with no suggestion, per build */
const empty = [0, 0];
let example = '';
for (let r = 0; r < rounds; r++) {
  const engines = [await loadEngine(dirs[0], docs, 'typeahead'), await loadEngine(dirs[1], docs, 'typeahead')];
  const ms = [0, 0];
  let writes = 0;
  for (let i = 0; i < stream.length; i++) {
    if (every > 0 && i % every === 0) {
      writes++;
      for (const e of engines) write(e, writes);
    }
    const q = stream[i]!;
    const answers: string[] = ['', ''];
    for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
      const t = performance.now();
      const res = engines[k]!.typeahead({ query: q, limit: 10 });
      ms[k]! += performance.now() - t;
      if ((res as { suggestions: unknown[] }).suggestions.length === 0) empty[k]!++;
      answers[k] = JSON.stringify(res);
    }
    compared++;
    if (answers[0] !== answers[1]) {
      differ++;
      example ||= `${JSON.stringify(q)}\n  a ${answers[0]!.slice(0, 400)}\n  b ${answers[1]!.slice(0, 400)}`;
    }
  }
  perRound.push([(ms[0]! * 1000) / stream.length, (ms[1]! * 1000) / stream.length]);
}
const mean = (k: 0 | 1) => perRound.reduce((s, p) => s + p[k], 0) / perRound.length;
console.log(`typeahead, ${docs.length} documents, ${stream.length} keystrokes${values['one-word'] ? ' (one word)' : ''}, ${every > 0 ? `a write every ${every}` : 'no writes'}, ${rounds} rounds; wall µs per answer`);
console.log(`a ${mean(0).toFixed(1)} (${perRound.map((p) => p[0].toFixed(1)).join(' ')})  b ${mean(1).toFixed(1)} (${perRound.map((p) => p[1].toFixed(1)).join(' ')})  b/a ${(mean(1) / mean(0)).toFixed(3)}`);
console.log(`answers compared ${compared}, differing ${differ}; empty: a ${empty[0]}, b ${empty[1]}`);
if (example) console.log(`first difference: ${example}`);
