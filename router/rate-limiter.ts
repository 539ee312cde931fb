// Token buckets per API key: `rate` tokens per second refill a bucket of `burst` tokens; a
// request takes as many tokens as it carries units (events) and is refused, with the seconds to
// wait, when the bucket holds fewer. Buckets live in this router process only: with several
// routers a key's effective rate is their sum (the limit protects each router and the shard
// writes it forwards, it is not a billing quota). Idle buckets are forgotten once full again.

export type Take = { ok: true; remaining: number } | { ok: false; retryAfterSeconds: number };

interface Bucket {
  tokens: number;
  at: number;
}

const MAX_BUCKETS = 100_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    readonly rate: number,
    readonly burst: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    if (!(rate > 0) || !Number.isFinite(rate)) throw new Error(`rate must be a positive number, got ${rate}`);
    if (!(burst >= 1) || !Number.isFinite(burst)) throw new Error(`burst must be at least 1, got ${burst}`);
  }

  /** Takes `n` tokens (at most `burst`: a request larger than the bucket waits for a full one). */
  take(key: string, n = 1): Take {
    const now = this.clock();
    const want = Math.min(Math.max(1, n), this.burst);
    let b = this.buckets.get(key);
    if (!b) {
      if (this.buckets.size >= MAX_BUCKETS) this.sweep(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(key, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
      b.at = now;
    }
    if (b.tokens >= want) {
      b.tokens -= want;
      return { ok: true, remaining: Math.floor(b.tokens) };
    }
    return { ok: false, retryAfterSeconds: Math.max(1, Math.ceil((want - b.tokens) / this.rate)) };
  }

  get size(): number {
    return this.buckets.size;
  }

  /** Drops buckets that have refilled completely (they hold no information). */
  private sweep(now: number): void {
    for (const [k, b] of this.buckets) {
      if (b.tokens + ((now - b.at) / 1000) * this.rate >= this.burst) this.buckets.delete(k);
    }
  }
}
