// The wrk driver against a real HTTP server on loopback (wrk itself, the Debian package that
// .ci/run installs): its counts agree with what the server answered, every request takes the next
// path of the stream from where the round starts, headers arrive, non-2xx answers are counted
// apart, and the latency distribution it rebuilds has wrk's shape (a server that delays every
// tenth request shows it above the 90th percentile, not below).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runWrkRound } from '../load/wrk-round.js';

let server: Server;
let url: string;
const seen: string[] = [];
let withKey = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.headers['x-api-key'] === 'k1') withKey++;
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n'));
    const answer = () => {
      res.writeHead(req.url?.includes('bad') ? 503 : 200, { 'content-type': 'application/json' });
      res.end('{}');
    };
    // every tenth path is slow
    if (n % 10 === 9) setTimeout(answer, 20);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('runWrkRound', () => {
  it('walks the stream from its start, counts what the server answered and rebuilds the latency shape', async () => {
    const paths = Array.from({ length: 1000 }, (_, n) => `/q?n=${n}${n === 500 ? '&bad' : ''}`);
    seen.length = 0;
    withKey = 0;
    const r = await runWrkRound({ url, paths, startAt: 250, headers: { 'x-api-key': 'k1' }, connections: 1, pipelining: 1, durationS: 2, timeoutS: 5 });
    // one connection: the server saw the stream in order from path 250 (wrk asks its script for
    // one request it does not send before it starts, and may have one in flight at the end)
    expect(seen.length).toBeGreaterThan(50);
    const first = paths.indexOf(seen[0]!);
    expect(first).toBeGreaterThanOrEqual(250);
    expect(first).toBeLessThanOrEqual(251);
    expect(seen.slice(0, 50)).toEqual(paths.slice(first, first + 50));
    expect(Math.abs(r.ok + r.non2xx - seen.length)).toBeLessThanOrEqual(1);
    expect(withKey).toBe(seen.length);
    expect(r.non2xx).toBe(seen.filter((p) => p.includes('bad')).length);
    expect(r.errors + r.timeouts).toBe(0);
    expect(r.latency.count).toBe(r.ok);
    // a tenth of the answers take 20 ms and more: p50 is fast, p99 is slow
    expect(r.latency.p50_ms).toBeLessThan(10);
    expect(r.latency.p99_ms).toBeGreaterThanOrEqual(19);
    expect(r.latency.max_ms).toBeGreaterThanOrEqual(r.latency.p99_ms);
  }, 20_000);

  it('refuses what wrk cannot do', async () => {
    await expect(runWrkRound({ url, paths: ['/'], startAt: 0, headers: {}, connections: 1, pipelining: 1, durationS: 1, timeoutS: 1, rate: 100 })).rejects.toThrow(/fixed request rate/);
    await expect(runWrkRound({ url, paths: ['/'], startAt: 0, headers: {}, connections: 1, pipelining: 4, durationS: 1, timeoutS: 1 })).rejects.toThrow(/pipelining/);
  });
});
