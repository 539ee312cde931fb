// A probe for what one operation costs a node's other requests: one request at a time, a few
// milliseconds apart, all along a script, each timed; the latencies of any stretch of time are
// then read back as a window (the quiet seconds before an operation, the operation itself).
import { percentile } from './latency-stats.js';

export interface ProbeWindow {
  requests: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export class LatencyProbe {
  private readonly samples: { at: number; ms: number }[] = [];
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  /** the error of the request that ended the probe early, kept for stop() */
  private failure: unknown = null;

  /** `ask(i)`: the probe's i-th request, resolved once its answer is read whole. */
  constructor(
    private readonly ask: (i: number) => Promise<void>,
    private readonly gapMs = 5,
  ) {}

  start(): void {
    this.running = true;
    this.loop = (async () => {
      for (let i = 0; this.running; i++) {
        const at = performance.now();
        await this.ask(i);
        this.samples.push({ at, ms: performance.now() - at });
        await new Promise((r) => setTimeout(r, this.gapMs));
      }
    })().catch((err: unknown) => {
      this.running = false;
      this.failure = err;
    });
  }

  /** Stops after the request in flight; rejects with the error of a request that failed. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    if (this.failure !== null) throw this.failure;
  }

  /** The requests sent in `[from, until)` (performance.now() times). */
  window(from: number, until: number): ProbeWindow {
    const s = this.samples.filter((x) => x.at >= from && x.at < until).map((x) => x.ms).sort((a, b) => a - b);
    const r = (v: number) => Math.round(v * 100) / 100;
    return { requests: s.length, p50_ms: r(percentile(s, 50)), p99_ms: r(percentile(s, 99)), max_ms: r(s[s.length - 1] ?? 0) };
  }
}
