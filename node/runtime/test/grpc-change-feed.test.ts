// The client side of the change feed against a scripted transport and fake timers: when it is
// live, when it tells caches to forget everything, how it reconnects.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type * as pb from '../../../proto/gen/shard.js';
import { GrpcChangeFeed, type ChangeStreamHandlers } from '../grpc-change-feed.js';
import { createLogger, setLogLevel } from '../log.js';
import { Metrics } from '../metrics.js';

interface FakeCall {
  address: string;
  handlers: ChangeStreamHandlers;
  cancelled: boolean;
  seq: number;
  send(kind: string, tenantId?: string, physicalIndexId?: string): void;
}

function transport() {
  const calls: FakeCall[] = [];
  const open = (address: string, _req: pb.WatchChangesRequest, handlers: ChangeStreamHandlers) => {
    const call: FakeCall = {
      address,
      handlers,
      cancelled: false,
      seq: 0,
      send(kind, tenantId = '', physicalIndexId = '') {
        handlers.message({ seq: ++call.seq, kind, tenantId, physicalIndexId, part: 0, nodeId: '' });
      },
    };
    calls.push(call);
    return { cancel: () => (call.cancelled = true) };
  };
  return { calls, open, last: (address: string) => calls.filter((c) => c.address === address).at(-1)! };
}

function setup(overrides: Partial<ConstructorParameters<typeof GrpcChangeFeed>[0]> = {}) {
  const t = transport();
  const metrics = new Metrics({ defaultMetrics: false });
  const feed = new GrpcChangeFeed({
    open: t.open,
    heartbeatMs: 100,
    staleAfterMs: 500,
    connectTimeoutMs: 2_000,
    initialBackoffMs: 100,
    maxBackoffMs: 800,
    random: () => 1, // no jitter: delays are exactly initial × 2^failures
    metrics,
    log: createLogger(),
    ...overrides,
  });
  const changes: string[] = [];
  let resets = 0;
  feed.subscribe(
    (tenant, physical) => changes.push(`${tenant}/${physical}`),
    () => resets++,
  );
  return { feed, t, metrics, changes, resets: () => resets };
}

const members = (...entries: [string, string][]) => new Map(entries);
const value = async (m: Metrics, name: string, labels: Record<string, string> = {}) => {
  const metric = m.registry.getSingleMetric(name);
  const got = await metric!.get();
  return got.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
};

describe('GrpcChangeFeed', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    setLogLevel('error');
  });
  afterEach(() => {
    vi.useRealTimers();
    setLogLevel('info');
  });

  it('is live only once every shard node has opened its stream, and forgets everything at each open', async () => {
    const { feed, t, metrics, changes, resets } = setup();
    expect(feed.live).toBe(false); // membership not known yet
    feed.setMembers(members(['a', 'a:1'], ['b', 'b:1']));
    expect(t.calls.map((c) => c.address)).toEqual(['a:1', 'b:1']);
    expect(feed.live).toBe(false);
    t.last('a:1').send('open');
    expect(feed.live).toBe(false);
    expect(resets()).toBe(1);
    t.last('b:1').send('open');
    expect(feed.live).toBe(true);
    expect(resets()).toBe(2);
    t.last('a:1').send('upsert', 'acme', 'p1');
    t.last('b:1').send('heartbeat');
    t.last('b:1').send('events', 'acme', 'p2');
    expect(changes).toEqual(['acme/p1', 'acme/p2']);
    expect(await value(metrics, 'suggest_change_feed_events_total', { kind: 'upsert' })).toBe(1);
    expect(await value(metrics, 'suggest_change_feed_live')).toBe(1);
    feed.announce('acme', 'p3'); // a write this process forwarded
    expect(changes.at(-1)).toBe('acme/p3');
    feed.close();
    expect(feed.live).toBe(false);
    expect(t.calls.every((c) => c.cancelled)).toBe(true);
  });

  it('on a dropped stream: not live, forgets everything, reconnects with doubling backoff', async () => {
    const { feed, t, metrics, resets } = setup();
    feed.setMembers(members(['a', 'a:1']));
    t.last('a:1').send('open');
    expect(feed.live).toBe(true);
    const before = resets();
    t.last('a:1').handlers.closed(new Error('connection reset'));
    expect(feed.live).toBe(false);
    expect(resets()).toBe(before + 1);
    // failure 1: 100 ms, then 200, 400, 800, 800 (capped)
    for (const delay of [100, 200, 400, 800, 800]) {
      const n = t.calls.length;
      vi.advanceTimersByTime(delay - 1);
      expect(t.calls.length).toBe(n);
      vi.advanceTimersByTime(1);
      expect(t.calls.length).toBe(n + 1);
      t.last('a:1').handlers.closed(new Error('refused'));
    }
    vi.advanceTimersByTime(800);
    t.last('a:1').send('open');
    expect(feed.live).toBe(true);
    expect(await value(metrics, 'suggest_change_feed_reconnects_total')).toBe(1);
    expect(await value(metrics, 'suggest_change_feed_drops_total', { reason: 'error' })).toBe(6);
    // an open resets the backoff
    t.last('a:1').handlers.closed(null);
    const n = t.calls.length;
    vi.advanceTimersByTime(100);
    expect(t.calls.length).toBe(n + 1);
    feed.close();
  });

  it('drops a silent stream after staleAfterMs and a stream that skips a sequence number', () => {
    const { feed, t, resets } = setup();
    feed.setMembers(members(['a', 'a:1']));
    const first = t.last('a:1');
    first.send('open');
    vi.advanceTimersByTime(300);
    first.send('heartbeat');
    vi.advanceTimersByTime(450);
    expect(feed.live).toBe(true);
    const before = resets();
    vi.advanceTimersByTime(100); // 550 ms since the last message
    expect(feed.live).toBe(false);
    expect(first.cancelled).toBe(true);
    expect(resets()).toBe(before + 1);
    vi.advanceTimersByTime(100);
    const second = t.last('a:1');
    expect(second).not.toBe(first);
    // messages of the cancelled call are ignored
    first.send('upsert', 'acme', 'p1');
    expect(feed.live).toBe(false);
    second.send('open');
    expect(feed.live).toBe(true);
    second.seq++; // one message lost
    second.send('upsert', 'acme', 'p1');
    expect(feed.live).toBe(false);
    expect(second.cancelled).toBe(true);
    feed.close();
  });

  it('gives up on a stream that never opens', () => {
    const { feed, t } = setup();
    feed.setMembers(members(['a', 'a:1']));
    const first = t.last('a:1');
    vi.advanceTimersByTime(2_100);
    expect(first.cancelled).toBe(true);
    vi.advanceTimersByTime(100);
    expect(t.last('a:1')).not.toBe(first);
    feed.close();
  });

  it('follows membership: a new node must open first, a restarted one is reconnected at once, a departed one is not waited for', () => {
    const { feed, t, changes } = setup();
    feed.setMembers(members(['a', 'a:1']));
    t.last('a:1').send('open');
    expect(feed.live).toBe(true);
    feed.setMembers(members(['a', 'a:1'], ['b', 'b:1']));
    expect(feed.live).toBe(false);
    t.last('b:1').send('open');
    expect(feed.live).toBe(true);
    // b restarted on another port
    const old = t.last('b:1');
    feed.setMembers(members(['a', 'a:1'], ['b', 'b:2']));
    expect(old.cancelled).toBe(true);
    expect(feed.live).toBe(false);
    t.last('b:2').send('open');
    expect(feed.live).toBe(true);
    // a leaves membership with its stream open: still heard, no longer required
    feed.setMembers(members(['b', 'b:2']));
    expect(feed.live).toBe(true);
    t.last('a:1').send('delete', 'acme', 'p9');
    expect(changes.at(-1)).toBe('acme/p9');
    t.last('a:1').handlers.closed(new Error('gone'));
    expect(feed.live).toBe(true);
    vi.advanceTimersByTime(10_000);
    expect(t.calls.filter((c) => c.address === 'a:1')).toHaveLength(1); // not reconnected
    feed.close();
  });

  it('opens no stream until a cache subscribes', () => {
    const t = transport();
    const feed = new GrpcChangeFeed({ open: t.open });
    feed.setMembers(members(['a', 'a:1']));
    expect(t.calls).toHaveLength(0);
    expect(feed.live).toBe(false);
    feed.subscribe(() => undefined);
    expect(t.calls).toHaveLength(1);
    feed.close();
  });
});
