// Which operations hold up a node's other requests. A spawned single node holds a large index
// (its engine loaded) and a small one that a probe asks for typeahead, one request at a time, all
// along; each operation of the interface that works on the large index runs in turn, two seconds
// apart, and the probe's worst answers while it runs are compared with the quiet seconds before
// it. An operation whose window shows a probe answer of hundreds of milliseconds ran work of that
// size on the event loop that typeahead, routing and HTTP share.
//
//   node dist/loadtest/stall-sweep.js [--catalog bestbuy,homedepot] [--only NAME,...] [--out FILE]
import { startSingleNode } from '../node/runtime/process-harness.js';
import { runMain, writeResult } from './load/result-file.js';
import { loadCatalog, loadCatalogSpec } from './data/catalog.js';
import { LatencyProbe } from './load/latency-probe.js';
import { provisionIndex } from './load/provision-service.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    only: { type: 'string' },
    out: { type: 'string' },
  },
});
const log = (line: string) => process.stderr.write(`[stall-sweep] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const docs = loadCatalogSpec(values.catalog as string);
  const node = await startSingleNode({});
  const base = node.baseUrl;
  let probe: LatencyProbe | null = null;
  const rows: Record<string, unknown>[] = [];
  try {
    const big = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'sweep', indexId: 'big', docs, log });
    const small = await provisionIndex({ baseUrl: base, adminKey: node.adminKey, tenantId: 'probe', indexId: 'probe', docs: loadCatalog(['bestbuy']).slice(0, 60), log });
    const key = big.privateKey;
    const call = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number; json: unknown }> => {
      const res = await fetch(base + route, {
        method,
        headers: { 'x-api-key': key, ...(body !== undefined && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body !== undefined ? { body: body instanceof FormData ? body : JSON.stringify(body) } : {}),
      });
      const buf = Buffer.from(await res.arrayBuffer());
      let json: unknown = null;
      try {
        json = JSON.parse(buf.toString('utf8'));
      } catch {
        // a file download
      }
      return { status: res.status, bytes: buf.length, json };
    };
    const waitJob = async (kind: 'ingestion' | 'export', id: string): Promise<unknown> => {
      for (;;) {
        const r = await call('GET', `/v1/${kind}-jobs/${id}`);
        const status = (r.json as { status?: string }).status;
        if (status === 'succeeded' || status === 'failed' || status === 'cancelled') return r.json;
        await sleep(100);
      }
    };
    await call('GET', `/v1/typeahead?${new URLSearchParams({ index: 'big', query: 'drill' })}`);
    await fetch(`${base}/v1/typeahead?query=sam&index=probe`, { headers: { 'x-api-key': small.privateKey } });

    const queries = ['sam', 'wireless h', 'ipho', 'case', 'laptop b'];
    probe = new LatencyProbe(async (i) => {
      const res = await fetch(`${base}/v1/typeahead?${new URLSearchParams({ index: 'probe', query: queries[i % queries.length] as string, bypass_cache: 'true' })}`, { headers: { 'x-api-key': small.privateKey } });
      await res.arrayBuffer();
    });
    probe.start();

    const batch = docs.slice(0, 1000).map((d) => ({ ...d, id: `${d.id}~b`, title: `${d.title} (B)` }));
    const csv = ['id,title,desc,manufacturer', ...docs.slice(0, 5000).map((d) => [`${d.id}~c`, d.title, d.desc ?? '', d.manufacturer ?? ''].map((v) => `"${String(v).replace(/"/g, '""')}"`).join(','))].join('\n');
    const operations: [string, () => Promise<string>][] = [
      ['GET stats', async () => `${(await call('GET', '/v1/indexes/big/stats')).status}`],
      ['GET documents, page 200 of 100', async () => `${(await call('GET', '/v1/indexes/big/documents?page=200&page_size=100')).status}`],
      ['GET export (immediate)', async () => {
        const r = await call('GET', '/v1/indexes/big/export');
        return `${r.status}, ${Math.round(r.bytes / 1024)} KB`;
      }],
      ['POST export/start and the download', async () => {
        const r = await call('POST', '/v1/indexes/big/export/start', {});
        const started = r.json as { job_id?: string; run?: string; download_url?: string };
        if (started.job_id === undefined) return `${r.status} ${JSON.stringify(r.json).slice(0, 200)}`;
        const job = (await waitJob('export', started.job_id)) as { status: string; download_url?: string };
        const file = job.download_url ? await call('GET', job.download_url) : null;
        return `${job.status}, ${started.run ?? ''}, ${Math.round((file?.bytes ?? 0) / 1024)} KB`;
      }],
      ['POST documents (1,000 upserts)', async () => `${(await call('POST', '/v1/indexes/big/documents', { documents: batch })).status}`],
      ['PUT schema (synonyms)', async () => `${(await call('PUT', '/v1/indexes/big/schema', { synonyms: [['tv', 'television'], ['fridge', 'refrigerator']] })).status}`],
      ['PUT merchandising (a boost rule)', async () => `${(await call('PUT', '/v1/indexes/big/merchandising', { rules: [{ id: 'r1', action: 'boost', target: { field: 'manufacturer', values: ['Samsung'] }, factor: 2 }] })).status}`],
      ['autocomplete hybrid, first', async () => `${(await call('GET', `/v1/autocomplete?${new URLSearchParams({ index: 'big', query: 'cordless drill', mode: 'hybrid' })}`)).status}`],
      ['POST upload (CSV, 5,000 rows) and the job', async () => {
        const form = new FormData();
        form.append('file', new Blob([csv], { type: 'text/csv' }), 'rows.csv');
        const r = await call('POST', '/v1/indexes/big/upload', form);
        const id = (r.json as { job_id?: string }).job_id;
        if (id === undefined) return `${r.status} ${JSON.stringify(r.json).slice(0, 200)}`;
        return `${((await waitJob('ingestion', id)) as { status: string }).status}`;
      }],
      ['DELETE index', async () => `${(await call('DELETE', '/v1/indexes/big')).status}`],
    ];
    const only = values.only === undefined ? null : new Set((values.only as string).split(','));
    for (const [name, run] of operations) {
      if (only !== null && !only.has(name)) continue;
      const quietFrom = performance.now();
      await sleep(2000);
      const from = performance.now();
      const outcome = await run();
      const took = performance.now() - from;
      await sleep(300);
      const row = { operation: name, outcome, ms: Math.round(took), probe_quiet: probe.window(quietFrom, from), probe_during: probe.window(from, from + took + 200) };
      log(JSON.stringify(row));
      rows.push(row);
    }
  } finally {
    await probe?.stop().catch(() => undefined);
    await node.stop();
  }
  log(`wrote ${writeResult('stall-sweep', values.out, { catalog: values.catalog, operations: rows })}`);
}

runMain(main);
