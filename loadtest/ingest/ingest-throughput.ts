// Ingestion throughput of the real catalogs, every method in the same run and against the same
// service: the same documents as a JSON Lines file upload (a background job on the index's
// sequencer), as inline POST .../documents batches, and as inline ingest/start batches; for
// BigBasket also its original CSV. Each method writes into a fresh index, timed from the first
// byte sent to the last document stored (for a job: until it reports `succeeded`), and to the
// moment the last document is searchable: every payload but the CSV ends with a probe document
// whose title word no other has, asked for by autocomplete (caches bypassed) until it answers.
//
//   node dist/loadtest/ingest/ingest-throughput.js --spawn-single-node
//   node dist/loadtest/ingest/ingest-throughput.js --spawn-cluster
//   node dist/loadtest/ingest/ingest-throughput.js --target http://127.0.0.1:8080 --admin-key KEY
//
// Options: --catalog bigbasket,bestbuy,homedepot  --batch 1000 (inline batch size)
//          --engine cold|warm (warm: a query builds the index's search engine before ingesting, so
//          every write is also indexed for search as it lands; cold: it is built at the first query,
//          here the probe's)
//          --rounds N (each method N times, fresh index each; the median is reported)  --out FILE
//          --echo (the spawned processes' logs on stderr)  --methods upload-jsonl,inline-documents,...
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { startLocalCluster, startSingleNode, type LocalCluster, type SingleNode } from '../../node/runtime/process-harness.js';
import { loadBestBuyProducts } from '../data/bestbuy.js';
import { homeDepotDocuments } from '../data/catalog.js';
import { REPO_ROOT, dataPath } from '../data/data-files.js';

type Catalog = 'bigbasket' | 'bestbuy' | 'homedepot';
type Method = 'upload-jsonl' | 'upload-csv' | 'inline-documents' | 'inline-ingest-start';

interface Options {
  target: string | null;
  adminKey: string | null;
  spawn: 'single' | 'cluster' | null;
  catalogs: Catalog[];
  batch: number;
  engine: 'cold' | 'warm';
  rounds: number;
  out: string;
  echo: boolean;
  methods: Method[] | null;
}

interface Measure {
  catalog: Catalog;
  method: Method;
  documents: number;
  bytes: number;
  seconds: number[];
  median_s: number;
  docs_per_s: number;
  /** until the probe is found: per round, median, documents per second (null for the CSV) */
  searchable_s: number[] | null;
  searchable_median_s: number | null;
  searchable_docs_per_s: number | null;
  /** answers 503 to the probe's queries, over every round */
  unavailable_answers: number;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    target: null,
    adminKey: null,
    spawn: null,
    catalogs: ['bigbasket', 'bestbuy', 'homedepot'],
    batch: 1_000,
    engine: 'cold',
    rounds: 1,
    echo: false,
    methods: null,
    out: path.join(REPO_ROOT, 'loadtest/ingest/results', `ingest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--target') o.target = next();
    else if (a === '--admin-key') o.adminKey = next();
    else if (a === '--spawn-single-node') o.spawn = 'single';
    else if (a === '--spawn-cluster') o.spawn = 'cluster';
    else if (a === '--catalog') o.catalogs = next().split(',') as Catalog[];
    else if (a === '--batch') o.batch = Number(next());
    else if (a === '--engine') o.engine = next() === 'warm' ? 'warm' : 'cold';
    else if (a === '--rounds') o.rounds = Math.max(1, Number(next()));
    else if (a === '--out') o.out = next();
    else if (a === '--echo') o.echo = true;
    else if (a === '--methods') o.methods = next().split(',') as Method[];
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.spawn && !(o.target && o.adminKey)) throw new Error('give --spawn-single-node, --spawn-cluster, or --target URL --admin-key KEY');
  return o;
}

/** BigBasket rows as documents (the same mapping the CSV upload applies). */
function bigBasketDocuments(): SuggestDocument[] {
  const rows = parse(readFileSync(dataPath('bigbasketProducts')), { columns: (h: string[]) => h.map((c, i) => c.trim() || `column_${i + 1}`), bom: true, relax_column_count: true }) as Record<string, string>[];
  return rows.map((r) => {
    const raw: Record<string, string | number> = {};
    for (const [k, v] of Object.entries(r)) {
      if (['index', 'product', 'brand'].includes(k) || v.trim() === '') continue;
      raw[k] = /^-?(?:0|[1-9]\d{0,14})(?:\.\d+)?$/.test(v.trim()) ? Number(v.trim()) : v.trim();
    }
    return { id: r.index!, title: r.product!.trim(), desc: '', manufacturer: (r.brand ?? '').trim(), raw };
  });
}

function documentsOf(c: Catalog): SuggestDocument[] {
  if (c === 'bigbasket') return bigBasketDocuments();
  if (c === 'bestbuy') return loadBestBuyProducts();
  return homeDepotDocuments();
}

class Client {
  constructor(
    readonly base: string,
    readonly key: string,
  ) {}

  async call<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(this.base + p, { method, headers: { 'x-api-key': this.key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
  }

  async ok<T>(method: string, p: string, body?: unknown): Promise<T> {
    const r = await this.call<T>(method, p, body);
    if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    return r.body;
  }

  async upload(index: string, bytes: Buffer, filename: string): Promise<{ job_id: string; status: string }> {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(bytes)]), filename);
    const res = await fetch(`${this.base}/v1/indexes/${index}/upload`, { method: 'POST', headers: { 'x-api-key': this.key }, body: form });
    const body = (await res.json()) as { job_id: string; status: string };
    if (res.status !== 200) throw new Error(`upload: ${res.status} ${JSON.stringify(body)}`);
    return body;
  }

  async waitJob(id: string): Promise<{ status: string; processed: number; failed: number }> {
    for (;;) {
      const j = await this.ok<{ status: string; processed: number; failed: number; error: string | null }>('GET', `/v1/ingestion-jobs/${id}`);
      if (j.status === 'succeeded') return j;
      if (j.status === 'failed' || j.status === 'canceled') throw new Error(`job ${id} ${j.status}: ${j.error}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/**
 * Waits until autocomplete finds the probe; seconds since `t0`, and the answers 503 (a node too
 * busy to answer in time: counted and asked again, as a client would after Retry-After).
 */
async function searchable(client: Client, index: string, probe: SuggestDocument, t0: number): Promise<{ seconds: number; unavailable: number }> {
  const word = (probe.title ?? '').split(' ')[0]!;
  let unavailable = 0;
  for (let i = 0; ; i++) {
    const r = await client.call<{ suggestions: { id: string }[] }>('GET', `/v1/autocomplete?index=${index}&query=${word}&mode=fts_only&bypass_cache=true`);
    if (r.status === 503) unavailable++;
    else if (r.status !== 200) throw new Error(`${index}: autocomplete answered ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
    else if (r.body.suggestions.some((s) => s.id === probe.id)) return { seconds: (performance.now() - t0) / 1000, unavailable };
    if (performance.now() - t0 > 600_000) throw new Error(`${index}: the last document was not searchable after 10 minutes`);
    await new Promise((r) => setTimeout(r, i < 50 ? 2 : 20));
  }
}

async function run(
  client: Client,
  catalog: Catalog,
  method: Method,
  catalogDocs: SuggestDocument[],
  o: Options,
  round: number,
): Promise<{ seconds: number; searchable: { seconds: number; unavailable: number } | null; bytes: number }> {
  const index = `ing-${catalog}-${method}-${round}`;
  await client.ok('POST', '/v1/indexes', { index_id: index, name: index });
  // warm: a query builds the (empty) search engine first, so writes are indexed as they land
  if (o.engine === 'warm') await client.ok('GET', `/v1/autocomplete?index=${index}&query=warm&bypass_cache=true`);
  const probe: SuggestDocument = { id: `ingest-probe-${round}`, title: `Zqxprobe${round} end of the catalog`, desc: '', manufacturer: '', raw: {} };
  const docs = method === 'upload-csv' ? catalogDocs : [...catalogDocs, probe];
  let bytes = 0;
  const t0 = performance.now();
  if (method === 'upload-jsonl' || method === 'upload-csv') {
    const file = method === 'upload-csv' ? readFileSync(dataPath('bigbasketProducts')) : Buffer.from(docs.map((d) => JSON.stringify(d)).join('\n') + '\n');
    bytes = file.length;
    const started = await client.upload(index, file, method === 'upload-csv' ? 'catalog.csv' : 'catalog.jsonl');
    const done = started.status === 'succeeded' ? null : await client.waitJob(started.job_id);
    if (done && done.processed !== docs.length) throw new Error(`${index}: ${done.processed} of ${docs.length} ingested`);
  } else {
    for (let i = 0; i < docs.length; i += o.batch) {
      const batch = docs.slice(i, i + o.batch);
      const body = method === 'inline-documents' ? { documents: batch } : batch;
      const text = JSON.stringify(body);
      bytes += text.length;
      const path = method === 'inline-documents' ? `/v1/indexes/${index}/documents` : `/v1/indexes/${index}/ingest/start`;
      const r = await client.ok<{ job_id?: string; status?: string }>('POST', path, body);
      if (method === 'inline-ingest-start' && r.status !== 'succeeded') await client.waitJob(r.job_id!);
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const visible = method === 'upload-csv' ? null : await searchable(client, index, probe, t0);
  const stored = await client.ok<{ total: number }>('GET', `/v1/indexes/${index}/documents?page_size=1`);
  const unique = new Set(docs.map((d) => d.id)).size;
  if (stored.total !== unique) throw new Error(`${index}: ${stored.total} stored, expected ${unique}`);
  await client.ok('DELETE', `/v1/indexes/${index}`);
  return { seconds, searchable: visible, bytes };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  let single: SingleNode | null = null;
  let cluster: LocalCluster | null = null;
  const stop = async () => {
    await single?.stop();
    await cluster?.stop();
  };
  process.on('SIGINT', () => void stop().then(() => process.exit(130)));
  try {
    let base = o.target ?? '';
    let admin = o.adminKey ?? '';
    if (o.spawn === 'single') {
      single = await startSingleNode({ echo: o.echo });
      base = single.baseUrl;
      admin = single.adminKey;
    } else if (o.spawn === 'cluster') {
      cluster = await startLocalCluster({ shards: 3, routers: 1, partitions: 16, echo: o.echo });
      base = cluster.routerUrls[0]!;
      admin = cluster.adminKey;
      for (let i = 0; i < 300; i++) {
        if ((await fetch(`${base}/readyz`)).status === 200) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const adminClient = new Client(base, admin);
    const tenant = `ingest-${Date.now().toString(36)}`;
    await adminClient.ok('POST', '/v1/admin/tenants', { tenant_id: tenant, name: 'ingest throughput', plan: 'enterprise' });
    const key = (await adminClient.ok<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { kind: 'private', name: 'ingest' })).key;
    const client = new Client(base, key);
    const results: Measure[] = [];
    for (const catalog of o.catalogs) {
      const docs = documentsOf(catalog);
      const all: Method[] = ['upload-jsonl', ...(catalog === 'bigbasket' ? (['upload-csv'] as const) : []), 'inline-documents', 'inline-ingest-start'];
      const methods = all.filter((m) => !o.methods || o.methods.includes(m));
      const seconds = new Map<Method, number[]>(methods.map((m) => [m, []]));
      const visible = new Map<Method, number[]>(methods.map((m) => [m, []]));
      const unavailable = new Map<Method, number>();
      const bytes = new Map<Method, number>();
      // rounds alternate the methods, so drift of a shared machine hits them alike
      for (let round = 0; round < o.rounds; round++) {
        for (const method of methods) {
          const r = await run(client, catalog, method, docs, o, round);
          seconds.get(method)!.push(r.seconds);
          if (r.searchable !== null) visible.get(method)!.push(r.searchable.seconds);
          unavailable.set(method, (unavailable.get(method) ?? 0) + (r.searchable?.unavailable ?? 0));
          bytes.set(method, r.bytes);
          const seen = r.searchable === null ? '' : `, searchable after ${r.searchable.seconds.toFixed(2)} s${r.searchable.unavailable > 0 ? ` (${r.searchable.unavailable} answers 503 on the way)` : ''}`;
          process.stderr.write(`${catalog} ${method} round ${round + 1}: ${docs.length} docs in ${r.seconds.toFixed(2)} s${seen}\n`);
        }
      }
      for (const method of methods) {
        const median = medianOf(seconds.get(method)!)!;
        const v = visible.get(method)!;
        const visibleMedian = medianOf(v);
        results.push({
          catalog,
          method,
          documents: docs.length,
          bytes: bytes.get(method)!,
          seconds: seconds.get(method)!,
          median_s: median,
          docs_per_s: Math.round(docs.length / median),
          searchable_s: v.length > 0 ? v : null,
          searchable_median_s: visibleMedian,
          searchable_docs_per_s: visibleMedian === null ? null : Math.round(docs.length / visibleMedian),
          unavailable_answers: unavailable.get(method) ?? 0,
        });
      }
    }
    const report = {
      run_at: new Date().toISOString(),
      target: o.spawn ? `spawned ${o.spawn === 'single' ? 'single node' : 'cluster (3 shard nodes, 1 router)'}` : o.target,
      engine: o.engine,
      inline_batch: o.batch,
      rounds: o.rounds,
      node: process.version,
      results,
    };
    mkdirSync(path.dirname(o.out), { recursive: true });
    writeFileSync(o.out, JSON.stringify(report, null, 2) + '\n');
    const rows = results.map(
      (r) => `| ${r.catalog} | ${r.documents} | ${r.method} | ${(r.bytes / 1e6).toFixed(1)} MB | ${r.median_s.toFixed(2)} | ${r.docs_per_s} | ${r.searchable_median_s?.toFixed(2) ?? '–'} | ${r.searchable_docs_per_s ?? '–'} | ${r.unavailable_answers} |`,
    );
    process.stdout.write(
      `\n${report.target}, engine ${o.engine}, inline batches of ${o.batch}, median of ${o.rounds}\n\n| catalog | documents | method | sent | stored, s | docs/s | searchable, s | docs/s | 503 on the way |\n|---|---|---|---|---|---|---|---|---|\n${rows.join('\n')}\n\nwritten to ${o.out}\n`,
    );
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});

function medianOf(values: number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
