// The operations endpoint of a process without the router role: a shard node speaks gRPC only,
// so its metrics (partitions, engines, memos, query threads, jobs) and its health would have no
// way out. Three read-only routes on their own port (SUGGEST_METRICS_PORT): GET /metrics (the
// process registry, Prometheus text), GET /healthz and GET /readyz. Not the product's HTTP edge
// (that is router/, on uWebSockets.js): a scrape every few seconds needs nothing more than Node's
// own server, and this keeps uWS behind router/.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.js';

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface OpsServerOptions {
  host: string;
  port: number;
  metrics: Metrics;
  /** whether the process serves its role now (/readyz: 200 or 503), with what to show */
  ready: () => { ready: boolean; [k: string]: unknown };
}

export async function startOpsServer(opts: OpsServerOptions): Promise<OpsServer> {
  const server = createServer((req, res) => void answer(opts, req, res));
  // a scraper keeps its connection; nothing here is slow enough to need a request timeout
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'EADDRINUSE' ? `cannot listen on ${opts.host}:${opts.port} for metrics (is another process using the port?)` : err.message, { cause: err })),
    );
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(opts: OpsServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  try {
    const path = (req.url ?? '/').split('?')[0];
    const known = path === '/metrics' || path === '/healthz' || path === '/readyz';
    if (!known) return json(404, { detail: 'This port serves GET /metrics, /healthz and /readyz only.', code: 'not_found' });
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { detail: `${path} takes GET.`, code: 'method_not_allowed' }, { allow: 'GET, HEAD' });
    if (path === '/metrics') {
      const text = await opts.metrics.render();
      res.writeHead(200, { 'content-type': opts.metrics.contentType }).end(text);
      return;
    }
    if (path === '/healthz') return json(200, { status: 'ok' });
    const state = opts.ready();
    return json(state.ready ? 200 : 503, { status: state.ready ? 'ready' : 'not_ready', ...state });
  } catch {
    if (!res.headersSent) json(500, { detail: 'Internal error.', code: 'internal' });
    else res.destroy();
  }
}
