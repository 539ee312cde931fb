// The paced driver against a real HTTP server on loopback: requests arrive evenly spaced at the
// offered rate (not in bursts of one per connection), in stream order from where the round
// starts, with the headers given; a server that stalls is charged for the requests that came due
// meanwhile (their times run from when they were due); non-2xx answers, dropped connections and
// timeouts are counted apart from the latencies.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPacedRound } from '../load/paced-round.js';

let server: Server;
let url: string;
const arrivals: { path: string; at: number; key: string | undefined }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '';
    arrivals.push({ path, at: performance.now(), key: req.headers['x-api-key'] as string | undefined });
    if (path.includes('drop')) return req.socket.destroy();
    if (path.includes('hang')) return undefined;
    const answer = () => res.writeHead(path.includes('bad') ? 503 : 200, { 'content-type': 'application/json' }).end('{}');
    if (path.includes('stall')) setTimeout(answer, 300);
    else answer();
    return undefined;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('runPacedRound', () => {
  it('spaces requests evenly at the offered rate, in stream order, with the headers given', async () => {
    const paths = Array.from({ length: 1000 }, (_, n) => `/q?n=${n}`);
    arrivals.length = 0;
    const r = await runPacedRound({ url, paths, startAt: 100, headers: { 'x-api-key': 'k1' }, connections: 8, pipelining: 1, durationS: 1, timeoutS: 5, rate: 200 });
    expect(r.ok).toBe(200);
    // sent in stream order; over several connections (some still opening) a few may cross on the
    // way, more when the machine stalls the test process and several requests come due at once
    const sent = paths.slice(100, 300);
    expect(arrivals.map((a) => a.path).sort()).toEqual([...sent].sort());
    const displaced = arrivals.map((a, i) => Math.abs(sent.indexOf(a.path) - i));
    displaced.forEach((d, i) => expect(d, arrivals[i]!.path).toBeLessThanOrEqual(16));
    expect(displaced.filter((d) => d <= 2).length).toBeGreaterThanOrEqual(arrivals.length * 0.8);
    expect(arrivals.every((a) => a.key === 'k1')).toBe(true);
    // about 5 ms apart: never eight at once, as per-connection timers firing together would send
    const gaps = arrivals.slice(1).map((a, i) => a.at - arrivals[i]!.at);
    const bunched = gaps.filter((g) => g < 1).length;
    expect(bunched).toBeLessThan(gaps.length / 4);
    expect(Math.max(...arrivals.slice(7).map((a, i) => a.at - arrivals[i]!.at))).toBeGreaterThan(20);
    expect(r.latency.p50_ms).toBeLessThan(20);
  });

  it('charges a stall to the requests that came due during it, and counts failures apart', async () => {
    // 100 req/s on one connection; the server holds the 20th answer 300 ms, while 30 more come due
    const paths = Array.from({ length: 200 }, (_, n) => `/q?n=${n}${n === 20 ? '&stall' : ''}${n === 60 ? '&bad' : ''}${n === 70 ? '&drop' : ''}`);
    const r = await runPacedRound({ url, paths, startAt: 0, headers: {}, connections: 1, pipelining: 1, durationS: 1, timeoutS: 5, rate: 100 });
    expect([r.ok, r.non2xx, r.errors, r.timeouts]).toEqual([98, 1, 1, 0]);
    expect(r.status_counts['503']).toBe(1);
    // timed from when they were due, the requests queued behind the stall show it (timed from
    // when they were sent, they would look as fast as the rest)
    const slow = [...r.stats.samples()].filter((ms) => ms >= 100).length;
    expect(slow).toBeGreaterThanOrEqual(15);
    expect(r.latency.max_ms).toBeGreaterThanOrEqual(295);
  });

  it('counts a request with no answer within the timeout as a timeout', async () => {
    const paths = ['/q?hang', ...Array.from({ length: 9 }, (_, n) => `/q?n=${n}`)];
    const r = await runPacedRound({ url, paths, startAt: 0, headers: {}, connections: 2, pipelining: 1, durationS: 1, timeoutS: 1, rate: 10 });
    expect([r.ok, r.timeouts, r.errors]).toEqual([9, 1, 0]);
  });
});
