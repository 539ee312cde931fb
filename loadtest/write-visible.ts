// Write-to-visible latency: how long after a client starts an upsert the document shows up in
// typeahead, measured while a typeahead keystroke load runs against the same index. Each write
// upserts one document with a title word no other document has, then the same client asks
// typeahead for that word (through the response cache, as any client would: the stricter case)
// until the document is there. Reports the acknowledgement latency and the write-to-visible
// latency (start of the write -> first answer that lists the document), and how often the very
// first query after the acknowledgement already saw it.
//
//   node dist/loadtest/write-visible.js --spawn-single-node [--writes 300] [--gap-ms 20]
//        [--connections 16] [--catalog bestbuy,homedepot] [--out FILE]
//   node dist/loadtest/write-visible.js --target http://127.0.0.1:PORT --admin-key KEY ...
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCatalog, parseCatalogSources } from './data/catalog.js';
import { REPO_ROOT } from './data/data-files.js';
import { LatencyStats } from './load/latency-stats.js';
import { runRound, type RoundResult } from './load/load-round.js';
import { provisionIndex, waitSearchable } from './load/provision-service.js';
import { loadWorkload, requestPath, workloadQueries } from './load/workload.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    'spawn-single-node': { type: 'boolean', default: false },
    target: { type: 'string' },
    'admin-key': { type: 'string' },
    index: { type: 'string', default: 'products' },
    writes: { type: 'string', default: '300' },
    'gap-ms': { type: 'string', default: '20' },
    connections: { type: 'string', default: '16' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    workload: { type: 'string', default: 'loadtest/workloads/typeahead-keystrokes.json' },
    'timeout-ms': { type: 'string', default: '5000' },
    out: { type: 'string' },
  },
});

const log = (line: string) => process.stderr.write(`[write-visible] ${line}\n`);
const int = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer\n`);
    process.exit(2);
  }
  return n;
};

interface WriteSample {
  ack_ms: number;
  visible_ms: number | null;
  first_query_saw_it: boolean;
  queries: number;
}

async function main() {
  const writes = int('writes', values.writes);
  const gapMs = int('gap-ms', values['gap-ms']);
  const connections = int('connections', values.connections);
  const timeoutMs = int('timeout-ms', values['timeout-ms']);
  const index = values.index;
  const cleanups: (() => Promise<void>)[] = [];
  try {
    let baseUrl: string;
    let adminKey: string;
    if (values['spawn-single-node']) {
      const { startSingleNode } = await import('../node/runtime/process-harness.js');
      const node = await startSingleNode();
      cleanups.push(() => node.stop());
      baseUrl = node.baseUrl;
      adminKey = node.adminKey;
    } else {
      baseUrl = (values.target ?? '').replace(/\/$/, '');
      adminKey = values['admin-key'] ?? '';
      if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(baseUrl) || adminKey === '') {
        process.stderr.write('give --spawn-single-node, or --target http://127.0.0.1:PORT with --admin-key\n');
        process.exit(2);
      }
    }
    const docs = loadCatalog(parseCatalogSources(values.catalog));
    const p = await provisionIndex({ baseUrl, adminKey, tenantId: 'writevisible', indexId: index, docs, log });
    const w = loadWorkload(values.workload);
    const paths = workloadQueries(w).map((q) => requestPath(w, q, index));
    await waitSearchable(baseUrl, p.publicKey, paths[0]!);

    // the query load runs for as long as the writes take (estimated), started first
    const expectedS = Math.max(5, Math.ceil((writes * (gapMs + 10)) / 1000) + 2);
    const load: Promise<RoundResult> | null =
      connections > 0
        ? runRound({ url: baseUrl, paths, startAt: 0, headers: { 'x-api-key': p.publicKey }, connections, pipelining: 1, durationS: expectedS, timeoutS: 10 })
        : null;
    log(`${writes} writes, one every ${gapMs} ms, ${connections > 0 ? `under a typeahead load of ${connections} connections` : 'without other load'}`);

    const samples: WriteSample[] = [];
    const run = Date.now().toString(36);
    for (let i = 0; i < writes; i++) {
      const token = `wv${run}q${i}`;
      const doc = { id: `write-visible-${run}-${i}`, title: `Zzwv ${token} Gadget`, desc: '', manufacturer: '' };
      const t0 = performance.now();
      const res = await fetch(`${baseUrl}/v1/indexes/${index}/documents`, {
        method: 'POST',
        headers: { 'x-api-key': p.privateKey, 'content-type': 'application/json' },
        body: JSON.stringify({ documents: [doc] }),
      });
      await res.text();
      const ack = performance.now() - t0;
      if (res.status !== 200) throw new Error(`write ${i}: HTTP ${res.status}`);
      let visible: number | null = null;
      let queries = 0;
      let firstSaw = false;
      while (performance.now() - t0 < timeoutMs) {
        const q = await fetch(`${baseUrl}/v1/typeahead?index=${index}&query=${token}`, { headers: { 'x-api-key': p.publicKey } });
        const body = (await q.json()) as { suggestions?: { id: string; title: string }[] };
        queries++;
        if (body.suggestions?.some((s) => s.id === doc.id || s.title.includes(token))) {
          visible = performance.now() - t0;
          firstSaw = queries === 1;
          break;
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      samples.push({ ack_ms: ack, visible_ms: visible, first_query_saw_it: firstSaw, queries });
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    }
    const loadResult = load ? await load : null;

    const ackStats = new LatencyStats();
    const visibleStats = new LatencyStats();
    for (const s of samples) {
      ackStats.add(s.ack_ms);
      if (s.visible_ms !== null) visibleStats.add(s.visible_ms);
    }
    const never = samples.filter((s) => s.visible_ms === null).length;
    const firstSaw = samples.filter((s) => s.first_query_saw_it).length;
    const a = ackStats.summary();
    const v = visibleStats.summary();
    const lines = [
      '',
      `write-to-visible, ${writes} single-document upserts, ${connections} typeahead connections alongside, load average ${os.loadavg()[0]!.toFixed(2)}`,
      '',
      '| measure | p50 ms | p90 ms | p99 ms | max ms |',
      '|---|---:|---:|---:|---:|',
      `| write acknowledged | ${a.p50_ms.toFixed(2)} | ${a.p90_ms.toFixed(2)} | ${a.p99_ms.toFixed(2)} | ${a.max_ms.toFixed(2)} |`,
      `| write -> visible in typeahead | ${v.p50_ms.toFixed(2)} | ${v.p90_ms.toFixed(2)} | ${v.p99_ms.toFixed(2)} | ${v.max_ms.toFixed(2)} |`,
      '',
      `first query after the acknowledgement saw the document: ${firstSaw}/${writes}; never visible within ${timeoutMs} ms: ${never}`,
      loadResult ? `typeahead load alongside: ${loadResult.rps.toFixed(0)} req/s, p99 ${loadResult.latency.p99_ms.toFixed(2)} ms, non-2xx ${loadResult.non2xx}` : '',
      '',
    ];
    process.stdout.write(lines.join('\n'));
    const out = values.out ?? path.join(REPO_ROOT, 'loadtest', 'results', `write-visible-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
    mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          kind: 'write-visible',
          finished_at: new Date().toISOString(),
          writes,
          gap_ms: gapMs,
          connections,
          catalog_documents: docs.length,
          loadavg: os.loadavg(),
          ack: a,
          write_to_visible: v,
          first_query_saw_it: firstSaw,
          never_visible: never,
          load: loadResult ? { rps: loadResult.rps, latency: loadResult.latency, non2xx: loadResult.non2xx, errors: loadResult.errors } : null,
        },
        null,
        2,
      )}\n`,
    );
    log(`wrote ${path.relative(process.cwd(), path.resolve(out))}`);
    if (never > 0) process.exitCode = 1;
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: unknown) => log(`cleanup: ${String(e)}`));
  }
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exitCode = 1;
});
