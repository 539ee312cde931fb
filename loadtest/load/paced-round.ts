// One measured run at an evenly paced offered load (run-load `--driver paced`, with `--rate`):
// request i is due at start + i / rate, whatever became of the ones before it, and is sent on
// the first of `connections` keep-alive connections free by then (it waits for one otherwise).
// Its response time runs from when it was due, not from when it could be sent, so a server that
// falls behind is charged for the wait it causes (no coordinated omission). autocannon's
// `overallRate` paces each connection on its own timer, so its connections fire together: at a
// rate well below what a server sustains, bursts of `connections` requests at once made latency
// look like saturation. Same contract as `runRound` (load-round.ts).
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { LatencyStats } from './latency-stats.js';
import type { RoundOptions, RoundResult } from './load-round.js';

/** How often due requests are sent (ms): finer than any latency worth reporting here. */
const TICK_MS = 1;

export function runPacedRound(opts: RoundOptions): Promise<RoundResult> {
  const rate = opts.rate;
  if (rate === undefined || !(rate > 0)) throw new Error('the paced driver needs an offered rate (--rate)');
  if (opts.pipelining !== 1) throw new Error('the paced driver sends one request at a time per connection (pipelining 1)');
  const { paths } = opts;
  if (paths.length === 0) throw new Error('no request paths');
  const url = new URL(opts.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const stats = new LatencyStats();
  const statusCounts: Record<string, number> = {};
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  let cursor = opts.startAt % paths.length;
  let sent = 0;
  let inFlight = 0;
  const total = Math.floor(rate * opts.durationS);

  return new Promise((resolve) => {
    const t0 = performance.now();
    let ticking = true;
    const finish = (): void => {
      if (ticking || inFlight > 0) return;
      agent.destroy();
      const elapsed = (performance.now() - t0) / 1000;
      resolve({ elapsed_s: elapsed, rps: stats.count / elapsed, ok: stats.count, non2xx, errors, timeouts, status_counts: statusCounts, latency: stats.summary(), stats });
    };
    const send = (path: string, due: number): void => {
      inFlight++;
      let settled = false;
      /** counts the request's outcome once, whichever event reports it */
      const settle = (outcome: 'ok' | 'status' | 'error' | 'timeout', status = 0): void => {
        if (settled) return;
        settled = true;
        if (outcome === 'ok') stats.add(performance.now() - due);
        else if (outcome === 'status') non2xx++;
        else if (outcome === 'timeout') timeouts++;
        else errors++;
        if (status !== 0) statusCounts[status] = (statusCounts[status] ?? 0) + 1;
        inFlight--;
        finish();
      };
      const req = http.request({ host: url.hostname, port: url.port, path, method: 'GET', headers: opts.headers, agent, timeout: opts.timeoutS * 1000 }, (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        res.on('end', () => settle(status >= 200 && status < 300 ? 'ok' : 'status', status));
        res.on('error', () => settle('error'));
      });
      req.on('timeout', () => {
        settle('timeout');
        req.destroy();
      });
      req.on('error', () => settle('error'));
      req.end();
    };
    const tick = (): void => {
      const now = performance.now();
      // every request due by now goes out, on time or late: the schedule does not wait for answers
      while (sent < total && t0 + (sent * 1000) / rate <= now) {
        send(paths[cursor]!, t0 + (sent * 1000) / rate);
        cursor = cursor + 1 === paths.length ? 0 : cursor + 1;
        sent++;
      }
      if (sent < total) setTimeout(tick, TICK_MS);
      else {
        ticking = false;
        finish();
      }
    };
    tick();
  });
}
