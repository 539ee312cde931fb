// Token buckets per key with a controlled clock: burst, refill, waiting time, oversized requests.
import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../rate-limiter.js';

describe('RateLimiter', () => {
  it('lets a burst through, then refills at the rate, per key', () => {
    let now = 0;
    const l = new RateLimiter(2, 5, () => now);
    expect(l.take('a', 5)).toEqual({ ok: true, remaining: 0 });
    expect(l.take('a', 1)).toEqual({ ok: false, retryAfterSeconds: 1 });
    expect(l.take('b', 3)).toEqual({ ok: true, remaining: 2 });
    now = 499;
    expect(l.take('a').ok).toBe(false);
    now = 500;
    expect(l.take('a')).toEqual({ ok: true, remaining: 0 });
    now = 10_000;
    expect(l.take('a', 1)).toEqual({ ok: true, remaining: 4 }); // never above the burst
  });

  it('says how long to wait for the tokens asked for, and caps a request at the burst', () => {
    let now = 0;
    const l = new RateLimiter(2, 10, () => now);
    l.take('k', 10);
    expect(l.take('k', 7)).toEqual({ ok: false, retryAfterSeconds: 4 });
    expect(l.take('k', 500)).toEqual({ ok: false, retryAfterSeconds: 5 });
    now = 5_000;
    expect(l.take('k', 500).ok).toBe(true);
  });

  it('refuses nonsense settings', () => {
    expect(() => new RateLimiter(0, 5)).toThrow(/rate/);
    expect(() => new RateLimiter(1, 0)).toThrow(/burst/);
    expect(() => new RateLimiter(Number.NaN, 5)).toThrow(/rate/);
  });
});
