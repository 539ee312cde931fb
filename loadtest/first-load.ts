// The first query to an index whose engine is not in memory and has no snapshot to read (a new
// index after its first ingestion): the engine is built from the stored documents, and what that
// costs the node's other queries. A spawned single node holds a small index that a probe asks for
// typeahead, one request at a time, all along; indexes of several sizes are ingested and left
// unqueried, then each gets its first typeahead in turn, two seconds apart. The probe's latency in
// the quiet seconds before each first query is the baseline of the same run.
//
//   node dist/loadtest/first-load.js [--sizes 200,1000,3291,8000] [--wait-s 2] [--warm-after-writes-ms 0] [--out FILE]
//
// `--warm-after-writes-ms` sets the node's SUGGEST_WARM_AFTER_WRITES_MS (0 by default here: the
// build at the first query is what is measured); with it on and `--wait-s` longer than the pause
// plus the build, the first query finds the engine loaded.
import { startSingleNode, WHOLE_LOAD_WAIT_ENV } from '../node/runtime/process-harness.js';
import { runMain, writeResult } from './load/result-file.js';
import { loadCatalog } from './data/catalog.js';
import { LatencyProbe } from './load/latency-probe.js';
import { provisionIndex } from './load/provision-service.js';
import { readMetrics } from './load/metrics-reader.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    sizes: { type: 'string', default: '200,1000,3291,8000' },
    'wait-s': { type: 'string', default: '2' },
    'warm-after-writes-ms': { type: 'string', default: '0' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[first-load] ${line}\n`);
const sizes = (values.sizes as string).split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sizes takes whole numbers of documents, comma-separated');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  // Best Buy first, then Home Depot: the larger sizes take both
  const catalog = loadCatalog(['bestbuy', 'homedepot']);
  if (Math.max(...sizes) > catalog.length) throw new Error(`at most ${catalog.length} documents`);
  const node = await startSingleNode({ env: { SUGGEST_WARM_AFTER_WRITES_MS: values['warm-after-writes-ms'] as string, ...WHOLE_LOAD_WAIT_ENV } });
  const base = node.baseUrl;
  let probe: LatencyProbe | null = null;
  const result: Record<string, unknown> = {};
  try {
    const small = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'first', indexId: 'probe', docs: catalog.slice(0, 200), log });
    const fresh = [];
    for (const n of sizes) fresh.push(await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'first', indexId: `fresh-${n}`, docs: catalog.slice(0, n), log }));
    const ask = async (index: string, key: string, query: string) => {
      const started = performance.now();
      const res = await fetch(`${base}/v1/typeahead?${new URLSearchParams({ index, query, bypass_cache: 'true' })}`, { headers: { 'x-api-key': key } });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${index}: HTTP ${res.status}`);
      return performance.now() - started;
    };
    await ask('probe', small.privateKey, 'sam');
    const queries = ['sam', 'wireless h', 'ipho', 'case', 'laptop b'];
    probe = new LatencyProbe(async (i) => void (await ask('probe', small.privateKey, queries[i % queries.length] as string)));
    probe.start();
    const rows = [];
    for (const index of fresh) {
      const quietFrom = performance.now();
      await sleep(Number(values['wait-s']) * 1000);
      const from = performance.now();
      const firstMs = await ask(index.indexId, index.privateKey, 'samsung ga');
      const until = performance.now();
      // a probe request sent while the engine was built ends after it: the window runs on a little
      await sleep(200);
      const row = { documents: index.documents, first_query_ms: Math.round(firstMs * 10) / 10, probe_quiet: probe.window(quietFrom, from), probe_during_first_load: probe.window(from, until + 100) };
      log(JSON.stringify(row));
      rows.push(row);
    }
    result.first_loads = rows;
    const read = await readMetrics(base);
    result.engine_builds = { event_loop: read('suggest_engine_builds_total', { thread: 'event_loop' }), segment_pool: read('suggest_engine_builds_total', { thread: 'segment_pool' }) };
    log(`engine builds: ${JSON.stringify(result.engine_builds)}`);
  } finally {
    await probe?.stop().catch(() => undefined);
    await node.stop();
  }
  log(`wrote ${writeResult('first-load', values.out, { sizes, ...result })}`);
}

runMain(main);
