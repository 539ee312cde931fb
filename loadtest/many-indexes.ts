// Many small indexes on one node, as a multi-tenant deployment has them: the memory each index's
// search engine costs once queried (typeahead loads it on the event loop, autocomplete mirrors it
// on the query threads), the latency of first queries, and what unloading idle engines
// (SUGGEST_ENGINE_IDLE_SECONDS) gives back. A spawned single node; RSS and heap from its
// /metrics (prom-client's process and Node.js collectors).
//
//   node dist/loadtest/many-indexes.js [--indexes 5000] [--tenants 20] [--docs 20] [--idle-s 20] [--out FILE]
import { startSingleNode, WHOLE_LOAD_WAIT_ENV } from '../node/runtime/process-harness.js';
import { runMain, writeResult } from './load/result-file.js';
import { readMetrics } from './load/metrics-reader.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    indexes: { type: 'string', default: '5000' },
    tenants: { type: 'string', default: '20' },
    docs: { type: 'string', default: '20' },
    'idle-s': { type: 'string', default: '20' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[many-indexes] ${line}\n`);
const positive = (name: string, v: string | undefined): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number of at least 1`);
  return n;
};
const indexes = positive('indexes', values.indexes);
const tenants = positive('tenants', values.tenants);
const docsPerIndex = positive('docs', values.docs);
const idleSeconds = positive('idle-s', values['idle-s']);

interface Memory {
  rss_mb: number;
  heap_used_mb: number;
  engines_loaded: number;
  engine_unloads: number;
}

interface Latency {
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

function latency(samples: number[]): Latency {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Math.round((s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0) * 100) / 100;
  return { p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1) };
}

async function main(): Promise<void> {
  const node = await startSingleNode({ env: { SUGGEST_ENGINE_IDLE_SECONDS: String(idleSeconds), ...WHOLE_LOAD_WAIT_ENV } });
  const base = node.baseUrl;
  const call = async <T>(method: string, p: string, key: string, body?: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(base + p, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.status, body: (await res.json()) as T };
  };
  const memory = async (): Promise<Memory> => {
    const read = await readMetrics(base);
    // an absent series is written as null (NaN in JSON)
    const value = (name: string) => read(name) ?? NaN;
    return {
      rss_mb: Math.round(value('process_resident_memory_bytes') / 1048576),
      heap_used_mb: Math.round(value('nodejs_heap_size_used_bytes') / 1048576),
      engines_loaded: value('suggest_engines_loaded'),
      engine_unloads: value('suggest_engine_unloads_total'),
    };
  };
  const stages: Record<string, Memory & { seconds?: number; latency?: Latency }> = {};
  try {
    stages.start = await memory();
    const keys: string[] = [];
    for (let t = 0; t < tenants; t++) {
      const tenant = `tenant-${t}`;
      if ((await call('POST', '/v1/admin/tenants', node.adminKey, { tenant_id: tenant, name: tenant, plan: 'enterprise' })).status !== 200) throw new Error(`tenant ${tenant} not created`);
      await call('PATCH', `/v1/admin/tenants/${tenant}`, node.adminKey, { limits: { max_indexes: indexes } });
      keys.push((await call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, node.adminKey, { kind: 'private', name: 'load' })).body.key);
    }
    const keyOf = (i: number) => keys[i % tenants] as string;
    let t0 = performance.now();
    for (let i = 0; i < indexes; i++) {
      const created = await call('POST', '/v1/indexes', keyOf(i), { index_id: `ix-${i}`, name: `Index ${i}` });
      if (created.status !== 200) throw new Error(`index ${i}: ${created.status} ${JSON.stringify(created.body)}`);
      const documents = Array.from({ length: docsPerIndex }, (_, d) => ({ id: `d${d}`, title: `Product ${d} of catalog ${i} cordless drill`, desc: 'Tools', manufacturer: `Maker ${d % 3}`, raw: { price: d } }));
      const written = await call('POST', `/v1/indexes/ix-${i}/documents`, keyOf(i), { documents });
      if (written.status !== 200) throw new Error(`documents of index ${i}: ${written.status}`);
    }
    stages.created = { ...(await memory()), seconds: Math.round(performance.now() - t0) / 1000 };
    log(`${indexes} indexes of ${docsPerIndex} documents: ${JSON.stringify(stages.created)}`);
    const askEach = async (route: string, query: string): Promise<Latency> => {
      const samples: number[] = [];
      for (let i = 0; i < indexes; i++) {
        const started = performance.now();
        const r = await call<{ suggestions: unknown[] }>('GET', `${route}?index=ix-${i}&query=${encodeURIComponent(query)}&bypass_cache=true`, keyOf(i));
        samples.push(performance.now() - started);
        if (r.status !== 200 || r.body.suggestions.length === 0) throw new Error(`${route} on index ${i}: ${r.status}`);
      }
      return latency(samples);
    };
    t0 = performance.now();
    const first = await askEach('/v1/typeahead', 'cord');
    stages.typeahead_on_each = { ...(await memory()), seconds: Math.round(performance.now() - t0) / 1000, latency: first };
    log(`first typeahead on each: ${JSON.stringify(stages.typeahead_on_each)}`);
    t0 = performance.now();
    const ac = await askEach('/v1/autocomplete', 'cordless');
    stages.autocomplete_on_each = { ...(await memory()), seconds: Math.round(performance.now() - t0) / 1000, latency: ac };
    log(`first autocomplete on each: ${JSON.stringify(stages.autocomplete_on_each)}`);
    // nobody asks any more: every engine goes idle
    t0 = performance.now();
    const deadline = t0 + (idleSeconds * 4 + 120) * 1000;
    let m = await memory();
    while (m.engines_loaded > 0 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      m = await memory();
    }
    stages.unloaded = { ...m, seconds: Math.round(performance.now() - t0) / 1000 };
    log(`after ${idleSeconds} s idle: ${JSON.stringify(stages.unloaded)}`);
    t0 = performance.now();
    const again = await askEach('/v1/typeahead', 'cord');
    stages.typeahead_again = { ...(await memory()), seconds: Math.round(performance.now() - t0) / 1000, latency: again };
    log(`typeahead on each again (from snapshots): ${JSON.stringify(stages.typeahead_again)}`);
  } finally {
    await node.stop();
  }
  log(`wrote ${writeResult('many-indexes', values.out, { indexes, tenants, documents_per_index: docsPerIndex, idle_seconds: idleSeconds, stages })}`);
}

runMain(main);
