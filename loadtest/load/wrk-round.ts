// One measured run of wrk (C, epoll; Debian package `wrk`) against one target, the same contract
// as `runRound` (load-round.ts): every request takes the next path of the workload's stream.
// A load generator in Node (autocannon) spends about as much CPU per request as a bare uWS server
// does to answer it, so on a small machine it caps what it can measure: bare uWS answered
// 131k req/s to wrk and 31k to autocannon here. wrk keeps its own histogram (microseconds);
// the Lua script hands back its quantile function on a grid dense in the tail, from which the
// round's latency distribution is rebuilt (its percentiles at the grid points are wrk's own).
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { LatencyStats } from './latency-stats.js';
import type { RoundOptions, RoundResult } from './load-round.js';

/** Quantiles wrk reports (percent): every 0.5 to 99, every 0.1 to 99.9, every 0.01 to 99.99, then the maximum. */
const GRID: number[] = [
  ...Array.from({ length: 198 }, (_, i) => (i + 1) * 0.5),
  ...Array.from({ length: 9 }, (_, i) => 99 + (i + 1) * 0.1),
  ...Array.from({ length: 9 }, (_, i) => 99.9 + (i + 1) * 0.01),
  100,
].map((p) => Math.round(p * 100) / 100);

const SCRIPT = `
local paths = {}
for line in io.lines(os.getenv("WRK_PATHS")) do paths[#paths + 1] = line end
local headers = {}
for line in string.gmatch(os.getenv("WRK_HEADERS") or "", "[^\\n]+") do
  local name, value = string.match(line, "^([^:]+): (.*)$")
  if name then headers[name] = value end
end
local grid = {}
for p in string.gmatch(os.getenv("WRK_GRID"), "[^,]+") do grid[#grid + 1] = tonumber(p) end
local threads = 0
setup = function(thread)
  thread:set("first", tonumber(os.getenv("WRK_START")) + threads * math.floor(#paths / tonumber(os.getenv("WRK_THREADS"))))
  threads = threads + 1
end
local cursor = 0
init = function() cursor = first end
request = function()
  local p = paths[(cursor % #paths) + 1]
  cursor = cursor + 1
  return wrk.format("GET", p, headers)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK-RESULT %d %d %d %d %d %d %d\\n", summary.duration, summary.requests, e.status, e.connect, e.read, e.write, e.timeout))
  local q = {}
  for i, p in ipairs(grid) do q[i] = p >= 100 and latency.max or latency:percentile(p) end
  io.write("WRK-QUANTILES " .. table.concat(q, ",") .. "\\n")
end
`;

/** Whether `wrk` can be run here. */
export function wrkInstalled(): boolean {
  const r = spawnSync('wrk', ['-v'], { stdio: 'ignore' });
  return r.error === undefined;
}

export async function runWrkRound(opts: RoundOptions & { threads?: number }): Promise<RoundResult> {
  if (opts.rate !== undefined) throw new Error('wrk offers no fixed request rate: drop --rate or use --driver autocannon');
  if (opts.pipelining !== 1) throw new Error('the wrk driver sends one request at a time per connection (pipelining 1)');
  const threads = Math.max(1, Math.min(opts.threads ?? 1, opts.connections));
  const dir = mkdtempSync(path.join(tmpdir(), 'wrk-round-'));
  try {
    writeFileSync(path.join(dir, 'paths.txt'), `${opts.paths.join('\n')}\n`);
    writeFileSync(path.join(dir, 'round.lua'), SCRIPT);
    const t0 = performance.now();
    const out = await run('wrk', ['-t', String(threads), '-c', String(opts.connections), '-d', `${opts.durationS}s`, '--timeout', `${opts.timeoutS}s`, '-s', path.join(dir, 'round.lua'), opts.url], {
      WRK_PATHS: path.join(dir, 'paths.txt'),
      WRK_HEADERS: Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}`).join('\n'),
      WRK_GRID: GRID.join(','),
      WRK_START: String(opts.startAt % opts.paths.length),
      WRK_THREADS: String(threads),
    });
    const elapsed = (performance.now() - t0) / 1000;
    const result = /^WRK-RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$/m.exec(out);
    const quantiles = /^WRK-QUANTILES (.*)$/m.exec(out);
    if (!result || !quantiles) throw new Error(`wrk printed no result:\n${out.slice(-2000)}`);
    const [durationUs, requests, non2xx, connect, read, write, timeouts] = result.slice(1).map(Number) as number[];
    const ok = requests! - non2xx!;
    const stats = distribution(quantiles[1]!.split(',').map((us) => Number(us) / 1000), ok);
    return {
      elapsed_s: elapsed,
      rps: ok / (durationUs! / 1e6),
      ok,
      non2xx: non2xx!,
      errors: connect! + read! + write!,
      timeouts: timeouts!,
      // wrk counts statuses of 400 and above as errors, without telling them apart
      status_counts: { '2xx/3xx': ok, '4xx/5xx': non2xx! },
      latency: stats.summary(),
      stats,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * `count` latencies whose quantile function is `values` at GRID: each grid step's share of the
 * samples takes the value at its upper end (nearest rank, as the rest of the driver ranks).
 */
function distribution(values: number[], count: number): LatencyStats {
  const stats = new LatencyStats();
  let placed = 0;
  GRID.forEach((p, i) => {
    const upTo = i === GRID.length - 1 ? count : Math.round((p / 100) * count);
    for (; placed < upTo; placed++) stats.add(values[i]!);
  });
  return stats;
}

function run(cmd: string, args: string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', (err) => reject(new Error(`cannot run ${cmd} (Debian package 'wrk': apt-get install -y wrk): ${err.message}`)));
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited with ${code}:\n${out.slice(-2000)}`))));
  });
}
