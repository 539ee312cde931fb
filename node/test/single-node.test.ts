// The foundation's end-to-end suite against a real single-node process (`node dist/node/main.js`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { registerApiSuite } from './api-suite.js';
import { ApiClient, enginesLoaded, waitFor } from './api-client.js';

let node: SingleNode;
beforeAll(async () => {
  node = await startSingleNode();
});
afterAll(async () => {
  await node?.stop();
});

registerApiSuite('single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }));

describe('single node boot and restart', () => {
  it('refuses to start on a port another node is serving, rather than sharing its connections', async () => {
    const port = new URL(node.baseUrl).port;
    await expect(startSingleNode({ env: { SUGGEST_PORT: port } })).rejects.toThrow(/exited \(1\) before ready[\s\S]*cannot listen on 127\.0\.0\.1:\d+/);
    // the first node still answers every request itself
    for (let i = 0; i < 5; i++) expect((await new ApiClient(node.baseUrl).call('GET', '/healthz')).status).toBe(200);
  });

  it('shares a port between routers that both ask for it (SUGGEST_REUSE_PORT=1)', async () => {
    // a port known to be free (the kernel lets no one join a port it picked for a port-0 bind)
    const port = await new Promise<string>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(String(free)));
      });
    });
    const first = await startSingleNode({ env: { SUGGEST_PORT: port, SUGGEST_REUSE_PORT: '1' } });
    try {
      const second = await startSingleNode({ env: { SUGGEST_PORT: port, SUGGEST_REUSE_PORT: '1' } });
      try {
        expect(second.baseUrl).toBe(first.baseUrl);
        expect((await new ApiClient(second.baseUrl).call('GET', '/healthz')).status).toBe(200);
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
  });

  it('answers health checks that speak HTTP/1.0 on its operations port, with the router readiness', async () => {
    // the API's server (uWS) never answers an HTTP/1.0 request line: checkers such as HAProxy's
    // httpchk use the operations port instead
    const withOps = await startSingleNode({ env: { SUGGEST_METRICS_PORT: '0' } });
    try {
      const ops = withOps.process.info.metrics;
      expect(ops).toMatch(/^127\.0\.0\.1:\d+$/);
      const [host, port] = ops!.split(':') as [string, string];
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), host, () => socket.write('GET /readyz HTTP/1.0\r\n\r\n'));
        let text = '';
        socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk)).on('end', () => resolve(text)).on('error', reject);
        socket.setTimeout(5_000, () => reject(new Error(`no answer: ${text}`)));
      });
      expect(answer).toMatch(/^HTTP\/1\.[01] 200/);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
      expect(body).toMatchObject({ status: 'ready', ready: true, partitions: 8, writes_waiting: 0, coordination: 'ok', roles: expect.arrayContaining(['router']) });
      expect((await fetch(`http://${ops}/metrics`)).status).toBe(200);
    } finally {
      await withOps.stop();
    }
  });

  it('writes first-boot credentials with mode 0600 and they work', async () => {
    const file = path.join(node.dataDir, 'credentials.json');
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const creds = JSON.parse(readFileSync(file, 'utf8')) as { admin_key: string; tenant_id: string; public_key: string; private_key: string };
    expect(creds.tenant_id).toBe('default');
    const api = new ApiClient(node.baseUrl);
    expect((await api.call('GET', '/v1/indexes', { key: creds.private_key })).status).toBe(200);
    expect((await api.call('GET', '/v1/indexes', { key: creds.public_key })).status).toBe(403);
  });

  it('keeps indexes and documents across a restart', async () => {
    const creds = JSON.parse(readFileSync(path.join(node.dataDir, 'credentials.json'), 'utf8')) as { private_key: string };
    let api = new ApiClient(node.baseUrl);
    await api.call('POST', '/v1/indexes', { key: creds.private_key, body: { index_id: 'durable', name: 'Durable' } });
    const up = await api.call('POST', '/v1/indexes/durable/documents', { key: creds.private_key, body: { documents: [{ id: 'k', title: 'Kept', desc: '', manufacturer: '', raw: {} }] } });
    expect(up.status).toBe(200);
    await node.restart();
    api = new ApiClient(node.baseUrl);
    const r = await api.call<{ title: string }>('GET', '/v1/indexes/durable/documents/k', { key: creds.private_key });
    expect(r.status).toBe(200);
    expect(r.body.title).toBe('Kept');
  });

  it('loads a new large index filled through the document routes once its writes pause, before any query', async () => {
    const creds = JSON.parse(readFileSync(path.join(node.dataDir, 'credentials.json'), 'utf8')) as { private_key: string };
    const key = creds.private_key;
    const api = new ApiClient(node.baseUrl);
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'filled', name: 'filled' } })).status).toBe(200);
    const documents = Array.from({ length: 2_100 }, (_, i) => ({ id: `f${i}`, title: `Pruning shears ${i}`, raw: {} }));
    for (let i = 0; i < documents.length; i += 700) expect((await api.call('POST', '/v1/indexes/filled/documents', { key, body: { documents: documents.slice(i, i + 700) } })).status).toBe(200);
    const loaded = async () => (await enginesLoaded(api, key, 'filled')).every(Boolean);
    const indexing = async () => (await api.call<{ documents_indexing: number }>('GET', '/v1/indexes/filled/stats', { key })).body.documents_indexing;
    // not searchable until the load: the stats say so
    expect(await indexing()).toBe(2_100);
    // SUGGEST_WARM_AFTER_WRITES_MS, 3 s by default
    await waitFor(loaded, 20_000, 'the engine loaded after the writes paused');
    expect(await indexing()).toBe(0);
  });

  it('answers a query whose index is still loading within SUGGEST_LOAD_WAIT_MS, from no documents, says so and caches nothing', async () => {
    const quick = await startSingleNode({ env: { SUGGEST_LOAD_WAIT_MS: '1', SUGGEST_WARM_AFTER_WRITES_MS: '0' } });
    try {
      const api = new ApiClient(quick.baseUrl);
      const creds = JSON.parse(readFileSync(path.join(quick.dataDir, 'credentials.json'), 'utf8')) as { private_key: string; public_key: string };
      expect((await api.call('POST', '/v1/indexes', { key: creds.private_key, body: { index_id: 'big', name: 'big' } })).status).toBe(200);
      const documents = Array.from({ length: 3_000 }, (_, i) => ({ id: `g${i}`, title: `Garden hose reel ${i}`, raw: { length_ft: i % 100 } }));
      for (let i = 0; i < documents.length; i += 1_000) expect((await api.call('POST', '/v1/indexes/big/documents', { key: creds.private_key, body: { documents: documents.slice(i, i + 1_000) } })).status).toBe(200);
      type Answer = { suggestions: unknown[]; documents_indexing?: number };
      const first = await api.call<Answer>('GET', '/v1/typeahead?index=big&query=garden', { key: creds.public_key });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ suggestions: [], documents_indexing: 3_000 });
      const auto = await api.call<Answer>('GET', '/v1/autocomplete?index=big&query=hose&mode=hybrid', { key: creds.public_key });
      expect(auto.body).toMatchObject({ suggestions: [], documents_indexing: 3_000 });
      // the same request, uncached, finds them once the engine is there
      await waitFor(async () => (await api.call<Answer>('GET', '/v1/typeahead?index=big&query=garden', { key: creds.public_key })).body.suggestions.length > 0, 20_000, 'the engine loaded');
      expect((await api.call<Answer>('GET', '/v1/autocomplete?index=big&query=hose&mode=hybrid', { key: creds.public_key })).body.documents_indexing).toBeUndefined();
      const scrape = (await api.call<string>('GET', '/metrics', { key: quick.adminKey })).body;
      expect(Number(/^suggest_answers_during_load_total (\d+)$/m.exec(scrape)?.[1])).toBeGreaterThanOrEqual(2);
    } finally {
      await quick.stop();
    }
  });

  it('reads back, after a restart and before any query, the engines that were in memory at the stop', async () => {
    const creds = JSON.parse(readFileSync(path.join(node.dataDir, 'credentials.json'), 'utf8')) as { private_key: string };
    const key = creds.private_key;
    let api = new ApiClient(node.baseUrl);
    for (const index_id of ['hot', 'cold']) {
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
      const documents = Array.from({ length: 200 }, (_, i) => ({ id: `${index_id}${i}`, title: `Garden trowel ${index_id} ${i}`, raw: {} }));
      expect((await api.call('POST', `/v1/indexes/${index_id}/documents`, { key, body: { documents } })).status).toBe(200);
    }
    // only `hot` is queried: its engine is in memory at the stop
    expect((await api.call<{ suggestions: unknown[] }>('GET', '/v1/typeahead?index=hot&query=garden', { key })).body.suggestions.length).toBeGreaterThan(0);
    const loaded = async (index: string) => (await enginesLoaded(api, key, index)).every(Boolean);
    await node.restart();
    api = new ApiClient(node.baseUrl);
    await waitFor(() => loaded('hot'), 20_000, 'the engine read back after the restart');
    expect(await loaded('cold')).toBe(false);
    const scrape = (await api.call<string>('GET', '/metrics', { key: node.adminKey })).body;
    // read from its snapshot, not built from the stored documents
    expect(scrape).toMatch(/^suggest_engine_builds_total\{thread="event_loop"\} 0$/m);
    expect(scrape).toMatch(/^suggest_engine_builds_total\{thread="segment_pool"\} 0$/m);
    expect(Number(/^suggest_engine_warm_loads_total (\d+)$/m.exec(scrape)?.[1])).toBeGreaterThanOrEqual(1);
    await waitFor(async () => /^suggest_engines_restoring 0$/m.test((await api.call<string>('GET', '/metrics', { key: node.adminKey })).body), 20_000, 'nothing left to read back');
  });

  it('does not answer from an engine snapshot older than a write made before the first query after a restart', async () => {
    const creds = JSON.parse(readFileSync(path.join(node.dataDir, 'credentials.json'), 'utf8')) as { private_key: string };
    const key = creds.private_key;
    let api = new ApiClient(node.baseUrl);
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'snapshots', name: 'Snapshots' } })).status).toBe(200);
    const documents = [
      { id: 'a', title: 'Walnut desk lamp', desc: '', manufacturer: 'Acme', raw: { price: 19.99 } },
      { id: 'b', title: 'Maple side table', desc: '', manufacturer: 'Acme', raw: { price: 89.5 } },
    ];
    expect((await api.call('POST', '/v1/indexes/snapshots/documents', { key, body: { documents } })).status).toBe(200);
    const titles = async (query: string) =>
      (await api.call<{ suggestions: { title: string }[] }>('GET', `/v1/autocomplete?index=snapshots&query=${encodeURIComponent(query)}&bypass_cache=true`, { key })).body.suggestions.map((s) => s.title);
    expect(await titles('walnut')).toEqual(['Walnut desk lamp']);
    // the engine is loaded: stopping writes its snapshot
    await node.restart();
    api = new ApiClient(node.baseUrl);
    // before any query loads the engine: an update of the same stored size (same count, same bytes)
    const patched = await api.call('PATCH', '/v1/indexes/snapshots/documents/a', { key, body: { title: 'Cherry desk lamp', raw: { price: 24.99 } } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(await titles('cherry')).toEqual(['Cherry desk lamp']);
    expect(await titles('walnut')).toEqual([]);
  });
});
