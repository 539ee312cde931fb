import { describe, expect, it } from 'vitest';
import { LatencyStats, percentile, summarize } from '../load/latency-stats.js';

describe('nearest-rank percentiles', () => {
  const oneToHundred = Float64Array.from({ length: 100 }, (_, i) => i + 1);

  it('picks the sample at rank ceil(p/100 * n)', () => {
    expect(percentile(oneToHundred, 50)).toBe(50);
    expect(percentile(oneToHundred, 90)).toBe(90);
    expect(percentile(oneToHundred, 99)).toBe(99);
    expect(percentile(oneToHundred, 99.9)).toBe(100);
    expect(percentile(oneToHundred, 0)).toBe(1);
    expect(percentile(oneToHundred, 100)).toBe(100);
    const thousand = Float64Array.from({ length: 1000 }, (_, i) => i + 1);
    expect(percentile(thousand, 99.9)).toBe(999);
    expect(percentile(thousand, 50.05)).toBe(501);
  });

  it('handles tiny and empty inputs, rejects nonsense', () => {
    expect(percentile([7], 50)).toBe(7);
    expect(percentile([7], 99.9)).toBe(7);
    expect(percentile([1, 2], 50)).toBe(1);
    expect(percentile([1, 2], 51)).toBe(2);
    expect(percentile([], 50)).toBeNaN();
    expect(() => percentile([1], 101)).toThrow(RangeError);
    expect(() => percentile([1], -1)).toThrow(RangeError);
  });

  it('summarizes unsorted samples without reordering them', () => {
    const s = Float64Array.from([5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
    expect(summarize(s)).toEqual({ count: 10, mean_ms: 5.5, p50_ms: 5, p90_ms: 9, p99_ms: 10, p999_ms: 10, max_ms: 10 });
    expect(Array.from(s)).toEqual([5, 1, 4, 2, 3, 10, 9, 8, 7, 6]);
  });

  it('grows past its initial buffer and merges', () => {
    const a = new LatencyStats();
    for (let i = 1; i <= 100_000; i++) a.add(i / 1000);
    const b = new LatencyStats();
    b.add(1000);
    b.addAll(a);
    expect(b.count).toBe(100_001);
    // 100,001 samples: rank ceil(50,000.5) = 50,001
    expect(b.summary().p50_ms).toBe(50.001);
    expect(b.summary().max_ms).toBe(1000);
  });
});
