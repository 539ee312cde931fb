// A promotion (the alias swap) of a large staging index, and what the index's queries see right
// after it. A spawned single node serves a small live index that a probe asks for typeahead
// through its alias, one request at a time, all along. A staging physical index of the Best Buy
// and Home Depot catalogues is filled through the document routes (not a job, so that nothing has
// loaded its engine) and promoted, once per mode, each on its own index:
//
// - `no-wait`: `ready_timeout_ms: 0`. The loads start at the swap but the swap does not wait for
//   them, so the first queries after it wait for the engine's build, as every promotion did
//   before promotions waited;
// - `wait`: the default. The swap comes once every replica has its engine in memory.
//
// Reported per mode: the promotion's time and its `warm` report, the probe's latencies from the
// promotion's request to `--after-s` seconds after its answer (the worst is the first query the
// new index kept waiting), and the engines in memory then (the index swapped away from lets its
// engine go five seconds after the swap).
//
//   node dist/loadtest/promote-swap.js [--documents 57958] [--after-s 12] [--out FILE]
import type { SuggestDocument } from '../node/runtime/document.js';
import { startSingleNode } from '../node/runtime/process-harness.js';
import { loadCatalog } from './data/catalog.js';
import { LatencyProbe } from './load/latency-probe.js';
import { MAX_BATCH, provisionIndex } from './load/provision-service.js';
import { readMetrics } from './load/metrics-reader.js';
import { runMain, writeResult } from './load/result-file.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    documents: { type: 'string', default: '57958' },
    'after-s': { type: 'string', default: '12' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[promote-swap] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MODES = [
  { name: 'no-wait', body: { ready_timeout_ms: 0 } },
  { name: 'wait', body: {} },
] as const;

async function main(): Promise<void> {
  const catalog = loadCatalog(['bestbuy', 'homedepot']);
  const documents = Number(values.documents);
  if (!Number.isInteger(documents) || documents < 1 || documents > catalog.length) throw new Error(`--documents: 1 to ${catalog.length}`);
  const afterMs = Number(values['after-s']) * 1000;
  // the staging index is loaded only by the promotion here (no warm-up after its writes)
  const node = await startSingleNode({ env: { SUGGEST_WARM_AFTER_WRITES_MS: '0' } });
  const base = node.baseUrl;
  const result: Record<string, unknown> = { documents };
  try {
    for (const mode of MODES) {
      const live = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'swap', indexId: `live-${mode.name}`, docs: catalog.slice(0, 200), log });
      const key = live.privateKey;
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(base + path, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        const json = (await res.json()) as Record<string, unknown>;
        if (res.status !== 200) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
        return json;
      };
      const staging = (await api('POST', `/v1/indexes/${live.indexId}/allocate-physical-id`)).physical_index_id as string;
      const docs: SuggestDocument[] = catalog.slice(0, documents);
      for (let i = 0; i < docs.length; i += MAX_BATCH) await api('POST', `/v1/indexes/${staging}/documents`, { documents: docs.slice(i, i + MAX_BATCH) });
      log(`${mode.name}: staging ${staging} filled with ${docs.length} documents`);

      // the probe asks the alias: the small live index until the swap, the promoted one after it
      const queries = ['sam', 'wireless h', 'ipho', 'case', 'laptop b', 'drill', 'dewalt im'];
      const probe = new LatencyProbe(async (i) => {
        const res = await fetch(`${base}/v1/typeahead?${new URLSearchParams({ index: live.indexId, query: queries[i % queries.length] as string, bypass_cache: 'true' })}`, { headers: { 'x-api-key': live.publicKey } });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`typeahead: HTTP ${res.status} ${text.slice(0, 200)}`);
      });
      probe.start();
      await sleep(2000);
      const from = performance.now();
      const promoted = await api('POST', `/v1/indexes/${live.indexId}/promote`, { physical_index_id: staging, ...mode.body });
      const promotedAt = performance.now();
      await sleep(afterMs);
      await probe.stop();
      // the swapped-away index lets its engine go a few seconds after the swap
      const engines = (await readMetrics(base))('suggest_engines_loaded');
      const row = {
        mode: mode.name,
        engines_loaded_after: engines,
        promote_ms: Math.round(promotedAt - from),
        warm: promoted.warm,
        probe_before: probe.window(from - 2000, from),
        probe_after_swap: probe.window(from, promotedAt + afterMs),
      };
      log(JSON.stringify(row));
      result[mode.name] = row;
    }
  } finally {
    await node.stop();
  }
  log(`wrote ${writeResult('promote-swap', values.out, result)}`);
}

runMain(main);
