// The throughput ceiling: a bare uWebSockets.js server that answers every request with the same
// pre-encoded JSON body, the size of a typical typeahead answer (ten Best Buy product titles in
// the service's response shape). No parsing, no auth, no search: whatever this reaches on a
// machine is as fast as any HTTP server on uWS can go there, load generator included.
//
// `--work-us N` makes every answer wait for N microseconds of busy JavaScript first (run-load
// baseline `bare-uws@N`): what the same server reaches with a handler of that cost, which tells
// how fast a request path must be for a given share of the ceiling on this machine.
//
//   node dist/loadtest/baselines/bare-uws-server.js [--port 0] [--host 127.0.0.1] [--suggestions 10] [--index products] [--work-us 0]
// prints {"msg":"ready","server":"bare-uws","port":N,...} on stdout once listening.
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import { loadBestBuyProducts } from '../data/bestbuy.js';
import { announceReady, suggestBody, typeaheadSuggestion } from './suggest-body.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    suggestions: { type: 'string', default: '10' },
    'work-us': { type: 'string', default: '0' },
    // accepted so every baseline takes the same command line; the body names the index,
    // the key and catalogue are not looked at
    index: { type: 'string', default: 'products' },
    key: { type: 'string' },
    catalog: { type: 'string' },
  },
});

const top = loadBestBuyProducts()
  .sort((a, b) => Number(b.raw['popularity']) - Number(a.raw['popularity']))
  .slice(0, Number(values.suggestions));
const BODY = Buffer.from(JSON.stringify(suggestBody('sam', values.index, 'typeahead', top.map((d, i) => typeaheadSuggestion(d, 1 - i / top.length)), 0.05)));

const workMs = Number(values['work-us']) / 1000;
if (!(workMs >= 0)) throw new Error(`--work-us must be a number of microseconds, 0 or more, got '${values['work-us']}'`);

const app = uWS.App().any('/*', (res) => {
  if (workMs > 0) {
    const until = performance.now() + workMs;
    while (performance.now() < until);
  }
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('content-type', 'application/json').end(BODY);
  });
});

app.listen(values.host, Number(values.port), (socket) => {
  if (!socket) {
    process.stderr.write(`cannot listen on ${values.host}:${values.port}\n`);
    process.exit(1);
  }
  const port = uWS.us_socket_local_port(socket as unknown as Parameters<typeof uWS.us_socket_local_port>[0]);
  announceReady('bare-uws', port, { body_bytes: BODY.length, work_us: workMs * 1000 });
  const close = () => {
    uWS.us_listen_socket_close(socket);
    process.exit(0);
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
});
