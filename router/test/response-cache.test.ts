import { describe, expect, it } from 'vitest';
import { Metrics } from '../../node/runtime/metrics.js';
import type { ShardDirectory } from '../../node/runtime/shard-api.js';
import { ResponseCache, stringBytes } from '../response-cache.js';

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
    const cache = new ResponseCache('test_response', feed.shards, new Metrics({ defaultMetrics: false }), 1 << 20);
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

  it('counts hits and misses', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const cache = new ResponseCache('test_response', changeFeed().shards, metrics, 1 << 20);
    cache.set('a', 'A');
    expect([cache.get('a'), cache.get('a'), cache.get('b')]).toEqual(['A', 'A', undefined]);
    cache.missed();
    expect(await lookups(metrics)).toEqual(['hit=2', 'miss=1']);
  });

  it('stays within its memory bound, letting the oldest unserved answers go first', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const body = 'x'.repeat(1000);
    const one = stringBytes('k00') + stringBytes(body) + 120;
    // room for 20 entries
    const cache = new ResponseCache('test_response', changeFeed().shards, metrics, 20 * one);
    const key = (i: number) => `k${String(i).padStart(2, '0')}`;
    for (let i = 0; i < 20; i++) cache.set(key(i), body);
    expect([cache.entries, cache.bytes, cache.evictions]).toEqual([20, 20 * one, 0]);
    // served ones get a second chance: k00 and k05 stay while k01..k04, k06, k07 make room
    cache.get(key(0));
    cache.get(key(5));
    for (let i = 20; i < 26; i++) cache.set(key(i), body);
    expect(cache.bytes).toBeLessThanOrEqual(20 * one);
    const kept = Array.from({ length: 26 }, (_, i) => i).filter((i) => cache.get(key(i)) !== undefined);
    expect(kept).toEqual([0, 5, ...Array.from({ length: 18 }, (_, i) => i + 8)]);
    expect(cache.evictions).toBe(6);
    // spared once, then unserved: they go in turn like the rest
    for (let i = 26; i < 50; i++) cache.set(key(i), body);
    expect(cache.get(key(0))).toBeUndefined();
    expect(cache.entries).toBe(20);
    const text = await metrics.render();
    expect(text).toMatch(/^suggest_response_cache_entries\{cache="test_response"\} 20$/m);
    expect(text).toMatch(new RegExp(`^suggest_response_cache_bytes\\{cache="test_response"\\} ${20 * one}$`, 'm'));
    expect(text).toMatch(/^suggest_response_cache_evictions_total\{cache="test_response"\} 30$/m);
  });

  it('replaces an answer stored again under its key, counting its memory once', () => {
    const cache = new ResponseCache('test_response', changeFeed().shards, new Metrics({ defaultMetrics: false }), 1 << 20);
    cache.set('k', 'short');
    cache.set('k', 'a longer body');
    expect(cache.get('k')).toBe('a longer body');
    expect([cache.entries, cache.bytes]).toEqual([1, stringBytes('k') + stringBytes('a longer body') + 120]);
  });

  it('counts two bytes per character for text beyond Latin-1, and keeps no answer over a sixteenth of its bound', () => {
    expect(stringBytes('drill')).toBe(5);
    expect(stringBytes('perceuse à percussion')).toBe(21);
    expect(stringBytes('電動ドリル')).toBe(10);
    expect(stringBytes('drill 🔧')).toBe(16);
    const cache = new ResponseCache('test_response', changeFeed().shards, new Metrics({ defaultMetrics: false }), 16 * 1000);
    cache.set('big', 'x'.repeat(1000));
    cache.set('small', 'x'.repeat(500));
    expect([cache.get('big'), cache.get('small')?.length]).toEqual([undefined, 500]);
  });

  it('keeps nothing with a bound of 0', () => {
    const cache = new ResponseCache('test_response', changeFeed().shards, new Metrics({ defaultMetrics: false }), 0);
    cache.set('k', 'v');
    expect([cache.get('k'), cache.entries, cache.bytes]).toEqual([undefined, 0, 0]);
  });

  it('holds its bound and the last body of every key it keeps over a random mix of writes and reads', () => {
    let seed = 42;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const bound = 50_000;
    const cache = new ResponseCache('test_response', changeFeed().shards, new Metrics({ defaultMetrics: false }), bound);
    const last = new Map<string, string>();
    for (let op = 0; op < 20_000; op++) {
      const k = `q${Math.floor(rnd() * rnd() * 400)}`;
      if (rnd() < 0.4) {
        const body = `${k}:${op}:${'é'.repeat(Math.floor(rnd() * 2))}${'b'.repeat(Math.floor(rnd() * 2000))}`;
        cache.set(k, body);
        last.set(k, body);
      } else {
        const got = cache.get(k);
        if (got !== undefined) expect(got).toBe(last.get(k));
      }
      expect(cache.bytes).toBeLessThanOrEqual(bound);
    }
    // the memory counted is the memory of what is held
    let held = 0;
    for (const [k, body] of last) if (cache.get(k) !== undefined) held += stringBytes(k) + stringBytes(body) + 120;
    expect(cache.bytes).toBe(held);
  });

  it('answers only while the feed is live, and forgets everything on a reset', () => {
    const listeners: (() => void)[] = [];
    let live = false;
    const shards = {
      subscribeChanges: (_l: (t: string, p: string) => void, reset?: () => void) => (reset && listeners.push(reset), () => undefined),
      changesLive: () => live,
    } as unknown as ShardDirectory;
    const cache = new ResponseCache('test_response', shards, new Metrics({ defaultMetrics: false }), 1 << 20);
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
    const cache = new ResponseCache('test_response', {} as ShardDirectory, new Metrics({ defaultMetrics: false }), 1 << 20);
    expect(cache.enabled).toBe(false);
  });
});
