// The first queries after a restart: a spawned single node holds a large index (Best Buy and Home
// Depot, 57,958 documents, by default) in memory when it is stopped (gracefully: its snapshot is
// written), then started again on the same data, once with the engines read back in the
// background after the start (SUGGEST_RESTORE_ENGINES=1, the default) and once without (0). After
// each start, once the node answers /readyz and `--delay-ms` more have passed (traffic moving
// back to a restarted node), the large index is asked for typeahead, one request at a time, every
// 20 ms, for `--after-s` seconds: the first answer's time is what the first user typing waits.
//
//   node dist/loadtest/restart-first-query.js [--catalog bestbuy,homedepot] [--delay-ms 1000] [--after-s 5] [--out FILE]
import { startSingleNode, WHOLE_LOAD_WAIT_ENV } from '../node/runtime/process-harness.js';
import { loadCatalogSpec } from './data/catalog.js';
import { percentile } from './load/latency-stats.js';
import { provisionIndex } from './load/provision-service.js';
import { runMain, writeResult } from './load/result-file.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    'after-s': { type: 'string', default: '5' },
    'delay-ms': { type: 'string', default: '1000' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[restart-first-query] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const QUERIES = ['drill', 'samsung ga', 'cordless dr', 'ipho', 'led bul', 'wireless h'];

async function main(): Promise<void> {
  const afterMs = Number(values['after-s']) * 1000;
  const result: Record<string, unknown> = { delay_ms: Number(values['delay-ms']) };
  for (const restore of ['1', '0']) {
    const node = await startSingleNode({ env: { SUGGEST_RESTORE_ENGINES: restore, ...WHOLE_LOAD_WAIT_ENV } });
    try {
      const big = await provisionIndex({ baseUrl: node.baseUrl, adminKey: node.adminKey, tenantId: 'restart', indexId: 'big', docs: loadCatalogSpec(values.catalog as string), log });
      const ask = async (q: string) => {
        const started = performance.now();
        const res = await fetch(`${node.baseUrl}/v1/typeahead?${new URLSearchParams({ index: 'big', query: q, bypass_cache: 'true' })}`, { headers: { 'x-api-key': big.publicKey } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`typeahead: HTTP ${res.status}`);
        return performance.now() - started;
      };
      await ask('drill'); // loaded: the stop writes its snapshot
      await node.restart();
      const startedAt = performance.now();
      while ((await fetch(`${node.baseUrl}/readyz`).catch(() => null))?.status !== 200) await sleep(10);
      const readyMs = performance.now() - startedAt;
      await sleep(Number(values['delay-ms']));
      const times: number[] = [];
      const until = performance.now() + afterMs;
      for (let i = 0; performance.now() < until; i++) {
        times.push(await ask(QUERIES[i % QUERIES.length] as string));
        await sleep(20);
      }
      const sorted = [...times].sort((a, b) => a - b);
      const r = (v: number) => Math.round(v * 100) / 100;
      const row = { restore_engines: restore === '1', ready_after_start_ms: Math.round(readyMs), first_query_ms: r(times[0] ?? NaN), requests: times.length, p50_ms: r(percentile(sorted, 50)), max_ms: r(sorted[sorted.length - 1] ?? NaN) };
      log(JSON.stringify(row));
      result[restore === '1' ? 'restore' : 'no_restore'] = row;
    } finally {
      await node.stop();
    }
  }
  log(`wrote ${writeResult('restart-first-query', values.out, result)}`);
}

runMain(main);
