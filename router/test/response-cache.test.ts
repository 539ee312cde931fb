import { describe, expect, it } from 'vitest';
import { Metrics } from '../../node/runtime/metrics.js';
import type { ShardDirectory } from '../../node/runtime/shard-api.js';
import { ResponseCache } from '../response-cache.js';

/** A directory whose change feed the test drives (the only part the cache uses). */
function changeFeed(): { shards: ShardDirectory; announce(tenant: string, physical: string): void } {
  const listeners: ((t: string, p: string) => void)[] = [];
  const shards = { subscribeChanges: (l: (t: string, p: string) => void) => (listeners.push(l), () => undefined) } as unknown as ShardDirectory;
  return { shards, announce: (t, p) => listeners.forEach((l) => l(t, p)) };
}

const lookups = async (m: Metrics) => (await m.cacheLookups.get()).values.map((v) => `${v.labels.result}=${v.value}`).sort();

describe('ResponseCache', () => {
  it('bumps the generation of exactly the announced index, so its old keys stop matching', () => {
    const feed = changeFeed();
    const cache = new ResponseCache('test_response', feed.shards, new Metrics({ defaultMetrics: false }), 10);
    expect(cache.enabled).toBe(true);
    expect(cache.generation('t1', 'p1')).toBe(0);
    feed.announce('t1', 'p1');
    feed.announce('t1', 'p1');
    expect(cache.generation('t1', 'p1')).toBe(2);
    expect(cache.generation('t1', 'p2')).toBe(0);
    expect(cache.generation('t2', 'p1')).toBe(0);
    cache.invalidate('t2', 'p1');
    expect(cache.generation('t2', 'p1')).toBe(1);
  });

  it('evicts the oldest entry at its bound and counts hits and misses', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const cache = new ResponseCache('test_response', changeFeed().shards, metrics, 2);
    cache.set('a', 'A');
    cache.set('b', 'B');
    cache.set('c', 'C');
    expect(cache.get('a')).toBeUndefined();
    expect([cache.get('b'), cache.get('c')]).toEqual(['B', 'C']);
    cache.missed();
    expect(await lookups(metrics)).toEqual(['hit=2', 'miss=1']);
  });

  it('answers only while the feed is live, and forgets everything on a reset', () => {
    const listeners: (() => void)[] = [];
    let live = false;
    const shards = {
      subscribeChanges: (_l: (t: string, p: string) => void, reset?: () => void) => (reset && listeners.push(reset), () => undefined),
      changesLive: () => live,
    } as unknown as ShardDirectory;
    const cache = new ResponseCache('test_response', shards, new Metrics({ defaultMetrics: false }), 10);
    expect(cache.enabled).toBe(false);
    live = true;
    expect(cache.enabled).toBe(true);
    cache.invalidate('t1', 'p1');
    cache.invalidate('t1', 'p1');
    const before = [cache.generation('t1', 'p1'), cache.generation('t1', 'p2')];
    cache.set('k', 'body');
    listeners.forEach((reset) => reset());
    expect(cache.get('k')).toBeUndefined();
    // every index moves to a generation none of them had before: no old key matches again
    const after = [cache.generation('t1', 'p1'), cache.generation('t1', 'p2')];
    for (const g of after) expect(g).toBeGreaterThan(Math.max(...before));
    cache.invalidate('t1', 'p2');
    expect(cache.generation('t1', 'p2')).toBeGreaterThan(after[1]!);
  });

  it('is disabled where shard nodes announce no changes', () => {
    const cache = new ResponseCache('test_response', {} as ShardDirectory, new Metrics({ defaultMetrics: false }), 2);
    expect(cache.enabled).toBe(false);
  });
});
