// Where the engine allocates: the same keystroke stream as engine-ab answered by one build's
// engine in process, with V8's sampling heap profiler counting every allocation (collected ones
// included), reported as KB per query by allocation site. Garbage is what the query threads'
// collections (and the pauses in hybrid's tail) are made of.
//
//   node dist/loadtest/engine-alloc.js [--dir .] [--kind hybrid|fts_only|typeahead|...]
//        [--catalog bestbuy,homedepot] [--sessions 3000] [--warm 5000] [--count 10000] [--top 25]
//
// The first `--warm` requests of the stream are answered unmeasured (memos, optimized code), then
// the next `--count` measured. The engine is loaded from the tree's `dist/` at run time.
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { loadCatalogSpec } from './data/catalog.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources } from './data/keystrokes.js';
import { loadEngine } from './load/engine-build.js';
import { cliArgs } from './load/cli.js';

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

const { values } = cliArgs({
  options: {
    dir: { type: 'string', default: '.' },
    kind: { type: 'string', default: 'hybrid' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    sessions: { type: 'string', default: '3000' },
    warm: { type: 'string', default: '5000' },
    count: { type: 'string', default: '10000' },
    top: { type: 'string', default: '25' },
  },
});
const kind = values.kind as string;
const warm = Number(values.warm);
const count = Number(values.count);
const engine = await loadEngine(values.dir as string, loadCatalogSpec(values.catalog as string), kind);
const stream = keystrokeStream(loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log'])), { sessions: Number(values.sessions), seed: 3, minPrefix: kind === 'typeahead' ? 1 : 2 });
if (stream.length < warm + count) throw new Error(`the stream holds ${stream.length} requests: raise --sessions or lower --warm/--count`);
const answer = (queries: readonly string[]): void => {
  for (const query of queries) {
    if (kind === 'typeahead') engine.typeahead({ query, limit: 10 });
    else engine.autocomplete({ query, limit: 10, mode: kind });
  }
};
answer(stream.slice(0, warm));
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
const cpu = process.cpuUsage();
answer(stream.slice(warm, warm + count));
const used = process.cpuUsage(cpu);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: SamplingNode } };
session.disconnect();

const bySite = new Map<string, number>();
let total = 0;
const visit = (node: SamplingNode): void => {
  if (node.selfSize > 0) {
    const f = node.callFrame;
    const site = `${f.functionName || '(anonymous)'} ${f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '(builtin)'}`;
    bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const c of node.children) visit(c);
};
visit(profile.head);
console.log(`${kind}, ${count} requests after ${warm}: ${(total / count / 1024).toFixed(1)} KB allocated per request (sampled), ${((used.user + used.system) / count).toFixed(0)} µs CPU per request (profiler on)`);
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`${((100 * bytes) / total).toFixed(1).padStart(5)} %  ${(bytes / count / 1024).toFixed(2).padStart(7)} KB  ${site}`);
}
