import { describe, expect, it } from 'vitest';
import { Metrics } from '../metrics.js';

/** The value of an unlabelled series in a scrape. */
function valueOf(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`${name} is not in the scrape`);
  return Number(line.slice(name.length + 1));
}

/** Keeps the event loop busy for `ms`. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
  if (x < 0) throw new Error('unreachable');
}

describe('suggest_event_loop_busy_seconds_total', () => {
  it('grows by the time the event loop was busy, not by the time it waited', async () => {
    const metrics = new Metrics();
    const name = 'suggest_event_loop_busy_seconds_total';
    const t0 = valueOf(await metrics.render(), name);
    spin(300);
    // the loop must turn for the busy stretch to be accounted
    await new Promise((r) => setImmediate(r));
    const t1 = valueOf(await metrics.render(), name);
    expect(t1 - t0).toBeGreaterThanOrEqual(0.25);
    expect(t1 - t0).toBeLessThan(2);
    await new Promise((r) => setTimeout(r, 400));
    const t2 = valueOf(await metrics.render(), name);
    // 400 ms of waiting adds next to nothing
    expect(t2 - t1).toBeLessThan(0.15);
    expect(t2).toBeGreaterThanOrEqual(t1);
  });

  it('is one of the default series only', async () => {
    expect(await new Metrics({ defaultMetrics: false }).render()).not.toContain('suggest_event_loop_busy_seconds_total');
  });
});
