// The probe asks one request at a time until stopped, and reads back the latencies of the
// requests sent within a stretch of time.
import { describe, expect, it } from 'vitest';
import { LatencyProbe } from '../load/latency-probe.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LatencyProbe', () => {
  it('times one request at a time and reads back the requests sent within a window', async () => {
    let inFlight = 0;
    let most = 0;
    // the requests after the 5th take about 30 ms: a "stall" the window must show
    const probe = new LatencyProbe(async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await sleep(i >= 5 ? 30 : 1);
      inFlight--;
    }, 1);
    const from = performance.now();
    probe.start();
    await sleep(200);
    await probe.stop();
    const all = probe.window(from, performance.now());
    expect(most).toBe(1);
    expect(all.requests).toBeGreaterThan(6);
    expect(all.max_ms).toBeGreaterThanOrEqual(25);
    expect(all.p50_ms).toBeGreaterThanOrEqual(25);
    // before the probe started: nothing
    expect(probe.window(0, from).requests).toBe(0);
  });

  it('stops with the error of a failed request', async () => {
    const probe = new LatencyProbe(async (i) => {
      if (i === 2) throw new Error('HTTP 500');
    }, 1);
    probe.start();
    await sleep(50);
    await expect(probe.stop()).rejects.toThrow('HTTP 500');
  });
});
