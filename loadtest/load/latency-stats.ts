// Latency samples and their percentiles. autocannon's own histogram keeps whole milliseconds,
// too coarse for sub-millisecond answers on loopback, so the driver records every response
// time itself (float ms from process.hrtime) and ranks them here.
//
// Percentile rule (nearest rank): the p-th percentile of n sorted samples is the sample at
// 1-based rank ceil(p/100 * n), so p99 of 1,000 samples is the 990th smallest. No interpolation:
// every reported value is a latency that was actually observed.

/** Nearest-rank percentile of ascending `sorted`; NaN for no samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile ${p} is outside 0..100`);
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  // p * n / 100 in floating point can land a hair above an integer (99.9% of 1,000 gives
  // 999.0000000000001): the epsilon keeps such ranks exact. Legitimate fractions are far larger.
  const rank = Math.max(1, Math.ceil((p * n) / 100 - 1e-7));
  return sorted[Math.min(rank, n) - 1]!;
}

export interface LatencySummary {
  count: number;
  mean_ms: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
}

export function summarize(samples: Float64Array): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const x of sorted) sum += x;
  const n = sorted.length;
  return {
    count: n,
    mean_ms: n ? sum / n : Number.NaN,
    p50_ms: percentile(sorted, 50),
    p90_ms: percentile(sorted, 90),
    p99_ms: percentile(sorted, 99),
    p999_ms: percentile(sorted, 99.9),
    max_ms: n ? sorted[n - 1]! : Number.NaN,
  };
}

/** An append-only, growable buffer of samples. */
export class LatencyStats {
  private buf = new Float64Array(1 << 16);
  private n = 0;

  add(ms: number): void {
    if (this.n === this.buf.length) {
      const bigger = new Float64Array(this.buf.length * 2);
      bigger.set(this.buf);
      this.buf = bigger;
    }
    this.buf[this.n++] = ms;
  }

  addAll(other: LatencyStats): void {
    const s = other.samples();
    for (let i = 0; i < s.length; i++) this.add(s[i]!);
  }

  get count(): number {
    return this.n;
  }

  samples(): Float64Array {
    return this.buf.subarray(0, this.n);
  }

  summary(): LatencySummary {
    return summarize(this.samples());
  }
}
