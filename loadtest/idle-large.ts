// A large index going idle on a busy node: what unloading its engine (SUGGEST_ENGINE_IDLE_SECONDS)
// gives back, and what it costs the other indexes' queries while its snapshot is written and
// while it is read back. A spawned single node holds a large index (100k documents by default,
// with its ANN graphs) and a small one; a probe asks the small one for typeahead, one request
// at a time, all along. The probe's latency while the large engine is loaded and idle is the
// baseline of the same run for its latency while the engine is unloaded and read back.
//
//   node dist/loadtest/idle-large.js [--catalog bestbuy,homedepot,bigbasket,pad:100000] [--idle-s 20] [--write] [--restart] [--out FILE]
//
// `--write`: once unloaded, one document is upserted to the large index before its next query
// (timed too): what a write does to an idle part's snapshot. `--restart`: then the node is stopped
// in order and started again before that query (a rolling restart after the write); the probe
// stops with it.
import { startSingleNode, WHOLE_LOAD_WAIT_ENV } from '../node/runtime/process-harness.js';
import { runMain, writeResult } from './load/result-file.js';
import { loadCatalog, loadCatalogSpec } from './data/catalog.js';
import { LatencyProbe } from './load/latency-probe.js';
import { provisionIndex } from './load/provision-service.js';
import { readMetrics } from './load/metrics-reader.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    catalog: { type: 'string', default: 'bestbuy,homedepot,bigbasket,pad:100000' },
    'idle-s': { type: 'string', default: '20' },
    write: { type: 'boolean', default: false },
    restart: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[idle-large] ${line}\n`);
const idleSeconds = Number(values['idle-s']);
if (!Number.isInteger(idleSeconds) || idleSeconds < 1) throw new Error('--idle-s must be a whole number of seconds, at least 1');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const node = await startSingleNode({ env: { SUGGEST_ENGINE_IDLE_SECONDS: String(idleSeconds), ...WHOLE_LOAD_WAIT_ENV } });
  let base = node.baseUrl; // a restart may bind another port
  const metrics = async () => {
    const read = await readMetrics(base);
    // an absent series is written as null (NaN in JSON)
    const value = (name: string) => read(name) ?? NaN;
    const mb = (name: string) => Math.round(value(name) / 1048576);
    return {
      rss_mb: mb('process_resident_memory_bytes'),
      heap_used_mb: mb('nodejs_heap_size_used_bytes'),
      external_mb: mb('nodejs_external_memory_bytes'),
      engines_loaded: value('suggest_engines_loaded'),
      unloads: value('suggest_engine_unloads_total'),
      // engines tokenized from the stored documents (absent before the counter existed)
      builds: (read('suggest_engine_builds_total', { thread: 'event_loop' }) ?? NaN) + (read('suggest_engine_builds_total', { thread: 'segment_pool' }) ?? NaN),
    };
  };
  const stages: Record<string, unknown> = {};
  let probe: LatencyProbe | null = null;
  try {
    const big = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'idle', indexId: 'big', docs: loadCatalogSpec(values.catalog as string), log });
    const small = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'idle', indexId: 'small', docs: loadCatalog(['bestbuy']).slice(0, 200), log });
    const ask = async (index: string, key: string, params: Record<string, string>) => {
      const started = performance.now();
      const res = await fetch(`${base}/v1/${params.route ?? 'typeahead'}?${new URLSearchParams({ index, bypass_cache: 'true', ...params })}`, { headers: { 'x-api-key': key } });
      const body = (await res.json()) as { suggestions?: unknown[]; debug?: { vector?: { graph?: { ready?: boolean } } } };
      if (res.status !== 200) throw new Error(`${index}: HTTP ${res.status}`);
      return { ms: performance.now() - started, body };
    };
    // the large engine loaded, with its graphs built (asked every 2 s meanwhile, so it stays)
    await ask('big', big.privateKey, { query: 'drill' });
    const graphsFrom = Date.now();
    while ((await ask('big', big.privateKey, { route: 'autocomplete', query: 'drill', mode: 'vector_only', debug: 'true' })).body.debug?.vector?.graph?.ready !== true) await sleep(2000);
    log(`graphs of ${big.documents} documents ready after ${Math.round((Date.now() - graphsFrom) / 1000)} s`);
    await ask('big', big.privateKey, { route: 'autocomplete', query: 'cordless drill', mode: 'hybrid' });
    const lastBigQuery = performance.now();
    stages.loaded = await metrics();
    log(`loaded: ${JSON.stringify(stages.loaded)}`);

    // the probe, one request at a time, until told to stop
    const queries = ['sam', 'wireless h', 'ipho', 'case', 'laptop b'];
    const running = new LatencyProbe(async (i) => void (await ask('small', small.privateKey, { query: queries[i % queries.length] as string })));
    probe = running;
    // its first seconds (the small index's first load) are not part of the baseline
    const probeFrom = performance.now() + 2000;
    running.start();
    const unloadsBefore = (stages.loaded as { unloads: number }).unloads;
    let m = await metrics();
    const deadline = performance.now() + (idleSeconds * 3 + 120) * 1000;
    while (m.unloads === unloadsBefore && performance.now() < deadline) {
      await sleep(250);
      m = await metrics();
    }
    if (m.unloads === unloadsBefore) throw new Error('the large engine was not unloaded');
    // the unload began at the first idle sweep after idleSeconds (sweeps every idleSeconds/4)
    const idleFrom = lastBigQuery + idleSeconds * 1000;
    const unloadedAt = performance.now();
    stages.unloaded = { ...m, seconds_after_idle: Math.round(unloadedAt - idleFrom) / 1000 };
    log(`unloaded: ${JSON.stringify(stages.unloaded)}`);
    await sleep(5000);
    stages.unloaded_5s = await metrics();
    log(`5 s later: ${JSON.stringify(stages.unloaded_5s)}`);
    const readFrom = performance.now();
    if (values.write) {
      const res = await fetch(`${base}/v1/indexes/big/documents`, {
        method: 'POST',
        headers: { 'x-api-key': big.privateKey, 'content-type': 'application/json' },
        body: JSON.stringify({ documents: [{ id: 'idle-write', title: 'Quokka Cordless Drill 20V', desc: '', manufacturer: 'Quokka' }] }),
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`write: HTTP ${res.status}`);
      stages.write_ms = Math.round((performance.now() - readFrom) * 10) / 10;
      log(`one write to the unloaded index: ${stages.write_ms as number} ms`);
    }
    if (values.restart) {
      await running.stop();
      const stoppedAt = performance.now();
      await node.restart();
      base = node.baseUrl;
      while ((await fetch(`${base}/readyz`).catch(() => null))?.status !== 200) await sleep(10);
      stages.restart_ms = Math.round(performance.now() - stoppedAt);
      log(`stopped and started again: ${stages.restart_ms as number} ms to /readyz`);
    }
    const first = await ask('big', big.privateKey, { route: 'autocomplete', query: 'cordless drill', mode: 'hybrid' });
    const readUntil = performance.now();
    await sleep(2000);
    stages.read_back = { ...(await metrics()), first_query_ms: Math.round(first.ms * 10) / 10 };
    log(`read back: ${JSON.stringify(stages.read_back)}`);
    await running.stop();

    const phase = (from: number, until: number) => running.window(from, until);
    stages.probe = {
      'loaded, idle (baseline)': phase(probeFrom, idleFrom),
      'idle sweeps and the unload': phase(idleFrom, unloadedAt),
      unloaded: phase(unloadedAt, readFrom),
      'read back on a query': phase(readFrom, readUntil + 1000),
    };
    log(`probe on the small index: ${JSON.stringify(stages.probe)}`);
  } finally {
    await probe?.stop().catch(() => undefined);
    await node.stop();
  }
  log(`wrote ${writeResult('idle-large', values.out, { catalog: values.catalog, idle_seconds: idleSeconds, write: values.write, stages })}`);
}

runMain(main);
