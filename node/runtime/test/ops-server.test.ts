import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../metrics.js';
import { startOpsServer, type OpsServer } from '../ops-server.js';

/** The status of GET `path`, sent exactly as written. */
function rawStatus(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('operations endpoint of a process without an HTTP API', () => {
  const metrics = new Metrics({ defaultMetrics: false });
  let documents = 41;
  let ready = false;
  let server: OpsServer;
  let base: string;

  beforeAll(async () => {
    metrics.labelledGauge('test_partition_documents', 'Documents per partition (test).', ['partition'], () => [[{ partition: '3' }, documents]]);
    server = await startOpsServer({ host: '127.0.0.1', port: 0, metrics, ready: () => ({ ready, node_id: 'shard-9' }) });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(async () => {
    await server?.close();
  });

  it('serves the registry at /metrics as it is at the scrape', async () => {
    const first = await fetch(`${base}/metrics`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toContain('text/plain');
    expect(await first.text()).toMatch(/^test_partition_documents\{partition="3"\} 41$/m);
    documents = 42;
    expect(await (await fetch(`${base}/metrics?x=1`)).text()).toMatch(/^test_partition_documents\{partition="3"\} 42$/m);
  });

  it('answers /healthz always and /readyz by the readiness it is given', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not_ready', ready: false, node_id: 'shard-9' });
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('refuses every other path and method with a catalogue body', async () => {
    for (const path of ['/', '/v1/typeahead?query=a', '/METRICS', '/metrics/']) {
      const r = await fetch(`${base}${path}`);
      expect(r.status, path).toBe(404);
      expect((await r.json()) as { code: string }).toMatchObject({ code: 'not_found' });
    }
    // paths as sent, not as a URL parser would tidy them
    for (const path of ['/metrics/../etc/passwd', '/..%2fmetrics', '//metrics']) expect(await rawStatus(server.port, path), path).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${base}/metrics`, { method: 'HEAD' })).status).toBe(200);
  });

  it('says which port is taken when it cannot listen', async () => {
    await expect(startOpsServer({ host: '127.0.0.1', port: server.port, metrics, ready: () => ({ ready: true }) })).rejects.toThrow(`cannot listen on 127.0.0.1:${server.port} for metrics`);
  });
});
