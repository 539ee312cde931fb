// One measured run of autocannon against one target: every request takes the next path of the
// workload's stream (a different real prefix each time), and every response time is recorded
// (2xx only; other statuses, errors and timeouts are counted, never averaged in).
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { LatencyStats, type LatencySummary } from './latency-stats.js';

export interface RoundOptions {
  url: string;
  /** request paths, cycled from `startAt` */
  paths: readonly string[];
  startAt: number;
  headers: Record<string, string>;
  connections: number;
  pipelining: number;
  durationS: number;
  timeoutS: number;
  /** offered load: requests per second over all connections (autocannon overallRate); none = as fast as answers come */
  rate?: number | undefined;
}

export interface RoundResult {
  elapsed_s: number;
  /** 2xx responses per second of the run */
  rps: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  status_counts: Record<string, number>;
  latency: LatencySummary;
  /** kept for aggregation across rounds; not written to result files */
  stats: LatencyStats;
}

export function runRound(opts: RoundOptions): Promise<RoundResult> {
  const { paths } = opts;
  if (paths.length === 0) throw new Error('no request paths');
  let cursor = opts.startAt % paths.length;
  const stats = new LatencyStats();
  const statusCounts: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const instance = autocannon(
      {
        url: opts.url,
        connections: opts.connections,
        pipelining: opts.pipelining,
        duration: opts.durationS,
        timeout: opts.timeoutS,
        headers: opts.headers,
        ...(opts.rate !== undefined ? { overallRate: opts.rate } : {}),
        requests: [
          {
            method: 'GET',
            setupRequest: (req) => {
              req.path = paths[cursor]!;
              cursor = cursor + 1 === paths.length ? 0 : cursor + 1;
              return req;
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        const elapsed = (performance.now() - t0) / 1000;
        resolve({
          elapsed_s: elapsed,
          rps: stats.count / elapsed,
          ok: stats.count,
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          status_counts: statusCounts,
          latency: stats.summary(),
          stats,
        });
        return undefined;
      },
    );
    instance.on('response', (_client, statusCode, _bytes, ms) => {
      statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) stats.add(ms);
    });
  });
}
