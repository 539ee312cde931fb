// The hot-path series print exactly what prom-client's own Counter and Histogram print for the
// same observations (names, labels, cumulative buckets, +Inf, sum, count), reset alike, and are
// found again by their label values rather than created twice.
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HotCounter, HotHistogram } from '../hot-metrics.js';

const BUCKETS = [0.00025, 0.001, 0.01, 0.1, 1];

function both() {
  const theirs = new Registry();
  const ours = new Registry();
  return {
    theirs,
    ours,
    counters: [new Counter({ name: 'x_requests_total', help: 'Requests.', labelNames: ['route', 'status'], registers: [theirs] }), new HotCounter('x_requests_total', 'Requests.', ['route', 'status'], ours)] as const,
    histograms: [
      new Histogram({ name: 'x_duration_seconds', help: 'Latency.', labelNames: ['route', 'status'], buckets: BUCKETS, registers: [theirs] }),
      new HotHistogram('x_duration_seconds', 'Latency.', ['route', 'status'], BUCKETS, ours),
    ] as const,
  };
}

describe('hot metrics', () => {
  it('print what prom-client prints for the same observations', async () => {
    const { theirs, ours, counters, histograms } = both();
    const observations: [string, string, number][] = [
      ['/v1/typeahead', '200', 0.0002],
      ['/v1/typeahead', '200', 0.00025], // on a bound: counted in it
      ['/v1/typeahead', '200', 0.003],
      ['/v1/typeahead', '422', 0.5],
      ['/v1/autocomplete', '200', 7], // above every bound
      ['/v1/typeahead', '200', 0.0009],
    ];
    for (const [route, status, seconds] of observations) {
      counters[0].labels(route, status).inc();
      counters[1].labels(route, status).inc();
      histograms[0].labels(route, status).observe(seconds);
      histograms[1].labels(route, status).observe(seconds);
    }
    counters[0].labels('/v1/typeahead', '200').inc(5);
    counters[1].labels('/v1/typeahead', '200').inc(5);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('x_duration_seconds_bucket{le="0.00025",route="/v1/typeahead",status="200"} 2');
    // the same child every time
    expect(counters[1].labels('/v1/typeahead', '200')).toBe(counters[1].labels('/v1/typeahead', '200'));
    theirs.resetMetrics();
    ours.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(() => counters[1].labels('/only-one')).toThrow(/2 label values/);
  });

  it('reads like prom-client through get()', async () => {
    const { counters } = both();
    counters[1].labels('a', 'hit').inc();
    counters[1].labels('a', 'hit').inc();
    counters[1].labels('a', 'miss').inc();
    const got = await counters[1].get();
    expect(got.type).toBe('counter');
    expect(got.values.map((v) => `${v.labels.status}=${v.value}`).sort()).toEqual(['hit=2', 'miss=1']);
  });
});
