// The throughput ceiling: a bare uWebSockets.js server that answers every request with the same
// pre-encoded JSON body, the size of a typical typeahead answer (ten Best Buy product titles in
// the service's response shape). No parsing, no auth, no search: whatever this reaches on a
// machine is as fast as any HTTP server on uWS can go there, load generator included.
//
// `--work-us N` makes every answer wait for N microseconds of busy JavaScript first (run-load
// baseline `bare-uws@N`): what the same server reaches with a handler of that cost, which tells
// how fast a request path must be for a given share of the ceiling on this machine.
//
// `--threads N` serves the same port from N event loops (worker threads, each its own uWS app on
// the port through SO_REUSEPORT; run-load baseline `bare-uws@WORKxN`): what a server whose
// request path runs on several threads would reach beside the load generator on this machine.
//
//   node dist/loadtest/baselines/bare-uws-server.js [--port 0] [--host 127.0.0.1] [--suggestions 10] [--index products] [--work-us 0] [--threads 1]
// prints {"msg":"ready","server":"bare-uws","port":N,...} on stdout once every thread listens.
import { createServer, type AddressInfo } from 'node:net';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import uWS from 'uWebSockets.js';
import { loadBestBuyProducts } from '../data/bestbuy.js';
import { announceReady, suggestBody, typeaheadSuggestion } from './suggest-body.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    suggestions: { type: 'string', default: '10' },
    'work-us': { type: 'string', default: '0' },
    threads: { type: 'string', default: '1' },
    // accepted so every baseline takes the same command line; the body names the index,
    // the key and catalogue are not looked at
    index: { type: 'string', default: 'products' },
    key: { type: 'string' },
    catalog: { type: 'string' },
  },
});

interface ThreadSetup {
  host: string;
  port: number;
  suggestions: number;
  index: string;
  workUs: number;
}

/** One event loop's server; resolves with the bound port, the body's size and a closer. */
function serve(setup: ThreadSetup): Promise<{ port: number; bodyBytes: number; close: () => void }> {
  const top = loadBestBuyProducts()
    .sort((a, b) => Number(b.raw['popularity']) - Number(a.raw['popularity']))
    .slice(0, setup.suggestions);
  const body = Buffer.from(JSON.stringify(suggestBody('sam', setup.index, 'typeahead', top.map((d, i) => typeaheadSuggestion(d, 1 - i / top.length)), 0.05)));
  const workMs = setup.workUs / 1000;
  const app = uWS.App().any('/*', (res) => {
    if (workMs > 0) {
      const until = performance.now() + workMs;
      while (performance.now() < until);
    }
    res.cork(() => {
      res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(body);
    });
  });
  return new Promise((resolve, reject) => {
    app.listen(setup.host, setup.port, (socket) => {
      if (!socket) return reject(new Error(`cannot listen on ${setup.host}:${setup.port}`));
      const port = uWS.us_socket_local_port(socket as unknown as Parameters<typeof uWS.us_socket_local_port>[0]);
      resolve({ port, bodyBytes: body.length, close: () => uWS.us_listen_socket_close(socket) });
    });
  });
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const port = (probe.address() as AddressInfo).port;
      probe.close(() => resolve(port));
    });
  });
}

async function main(): Promise<void> {
  const workUs = Number(values['work-us']);
  if (!(workUs >= 0)) throw new Error(`--work-us must be a number of microseconds, 0 or more, got '${values['work-us']}'`);
  const threads = Number(values.threads);
  if (!Number.isInteger(threads) || threads < 1 || threads > 64) throw new Error(`--threads must be a whole number from 1 to 64, got '${values.threads}'`);
  const setup: ThreadSetup = { host: values.host, port: Number(values.port), suggestions: Number(values.suggestions), index: values.index, workUs };
  // uWS shares a port between listeners (SO_REUSEPORT) only when it is named, not for port 0:
  // several threads listen on a free port found first
  if (threads > 1 && setup.port === 0) setup.port = await freePort(setup.host);
  const first = await serve(setup);
  await Promise.all(
    Array.from({ length: threads - 1 }, () => {
      const w = new Worker(new URL(import.meta.url), { workerData: { ...setup, port: first.port } satisfies ThreadSetup });
      return new Promise<Worker>((resolve, reject) => {
        w.once('message', () => resolve(w));
        w.once('error', reject);
      });
    }),
  );
  announceReady('bare-uws', first.port, { body_bytes: first.bodyBytes, work_us: workUs, threads });
  const close = () => {
    first.close();
    // A worker thread's uWS loop cannot be torn down cleanly in this uWS.js version (Node asserts
    // on its open handles as the worker exits), so a server with several ends at once.
    if (threads > 1) process.kill(process.pid, 'SIGKILL');
    process.exit(0);
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
}

if (isMainThread) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
} else {
  serve(workerData as ThreadSetup).then(
    () => parentPort!.postMessage('listening'),
    (err: unknown) => {
      throw err;
    },
  );
}
