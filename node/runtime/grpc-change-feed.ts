// The change feed of a cluster router: one WatchChanges stream to every live shard node, so the
// router's response caches learn of every write wherever it was applied. What it guarantees:
//
// - `live` is true only while the stream of every live shard node is open (its `open` message
//   read: the node listens from then on) and has been heard from within `staleAfterMs`
//   (shard nodes send heartbeats when they have nothing else to say). Caches must not answer
//   while it is false.
// - Whenever a stream opens, drops, goes silent or skips a sequence number, every subscriber is
//   told to forget everything (`reset`): a write may have been applied that no message announced.
// - Writes this process forwarded are announced by the pool (grpc-client-pool.ts) as soon as the
//   shard acknowledges them, before the shard's own announcement arrives: read-your-writes
//   through the same router; other routers follow within the feed's delivery delay.
//
// A silent connection (a partition, a frozen node) is noticed after `staleAfterMs` at most, so
// that is the worst case for how long a router may answer from a cache that missed a write.
import type * as pb from '../../proto/gen/shard.js';
import { log as rootLog, type Logger } from './log.js';
import { perRegistry, type Metrics } from './metrics.js';
import { Counter, Gauge, type Registry } from 'prom-client';

/** The transport: opens one WatchChanges call to an address. */
export type OpenChangeStream = (address: string, req: pb.WatchChangesRequest, handlers: ChangeStreamHandlers) => { cancel(): void };

export interface ChangeStreamHandlers {
  message(m: pb.IndexChange): void;
  /** the call ended (null: the node ended it normally, e.g. while stopping) */
  closed(err: Error | null): void;
}

export type ChangeListener = (tenantId: string, physicalIndexId: string) => void;

export interface GrpcChangeFeedOptions {
  open: OpenChangeStream;
  /** heartbeat period asked of shard nodes, ms (default 250) */
  heartbeatMs?: number;
  /** a stream silent for longer is dropped and the feed is not live meanwhile, ms (default 1500) */
  staleAfterMs?: number;
  /** a stream that has not opened after this long is given up and retried, ms (default 5000) */
  connectTimeoutMs?: number;
  /** reconnect delay after the first failure, doubled per failure up to `maxBackoffMs` (defaults 100, 5000) */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  metrics?: Metrics;
  log?: Logger;
  /** for tests */
  now?: () => number;
  random?: () => number;
}

type State = 'connecting' | 'open' | 'waiting';

interface NodeFeed {
  nodeId: string;
  address: string;
  state: State;
  /** identifies the current call: callbacks of an older one are ignored */
  token: object | null;
  cancel: (() => void) | null;
  seq: number;
  /** last message, or when connecting started */
  lastHeard: number;
  failures: number;
  everOpened: boolean;
  retry: ReturnType<typeof setTimeout> | null;
  /** left membership while its stream was open: kept until the stream ends, not required for `live` */
  departed: boolean;
}

export type DropReason = 'error' | 'ended' | 'stale' | 'gap' | 'timeout' | 'moved' | 'left';

export class GrpcChangeFeed {
  private readonly nodes = new Map<string, NodeFeed>();
  private readonly changeListeners = new Set<ChangeListener>();
  private readonly resetListeners = new Set<() => void>();
  private readonly opts: Required<Omit<GrpcChangeFeedOptions, 'metrics' | 'log'>>;
  private readonly log: Logger;
  private readonly metrics: Metrics | null;
  private series: FeedSeries | null = null;
  private membersKnown = false;
  private started = false;
  private closed = false;
  private isLive = false;
  private ticker: ReturnType<typeof setInterval> | null = null;

  constructor(options: GrpcChangeFeedOptions) {
    const heartbeatMs = options.heartbeatMs ?? 250;
    this.opts = {
      open: options.open,
      heartbeatMs,
      staleAfterMs: options.staleAfterMs ?? Math.max(1_500, heartbeatMs * 4),
      connectTimeoutMs: options.connectTimeoutMs ?? 5_000,
      initialBackoffMs: options.initialBackoffMs ?? 100,
      maxBackoffMs: options.maxBackoffMs ?? 5_000,
      now: options.now ?? Date.now,
      random: options.random ?? Math.random,
    };
    this.log = (options.log ?? rootLog).child({ component: 'change-feed' });
    this.metrics = options.metrics ?? null;
  }

  /** True while no write anywhere can go unannounced (see the header). O(1): the hot path asks it. */
  get live(): boolean {
    return this.isLive;
  }

  /**
   * Follows membership: the shard nodes (id → gRPC address) whose writes must be announced.
   * Streams start with the first subscriber.
   */
  setMembers(members: ReadonlyMap<string, string>): void {
    if (this.closed) return;
    this.membersKnown = true;
    for (const [id, n] of this.nodes) {
      const address = members.get(id);
      if (address === undefined) {
        // a node that left may still apply a write it had accepted: keep listening while its stream is open
        if (n.state === 'open' && !n.departed) n.departed = true;
        else if (n.state !== 'open') this.forget(n);
      } else if (address !== n.address) {
        // a restarted node listens on a new port: nothing it applied since is known to us
        n.departed = false;
        this.drop(n, 'moved');
        n.address = address;
        n.failures = 0;
        this.connectNow(n);
      } else if (n.departed) {
        n.departed = false;
      }
    }
    for (const [id, address] of members) {
      if (this.nodes.has(id)) continue;
      const n: NodeFeed = { nodeId: id, address, state: 'waiting', token: null, cancel: null, seq: 0, lastHeard: 0, failures: 0, everOpened: false, retry: null, departed: false };
      this.nodes.set(id, n);
      if (this.started) this.connect(n);
    }
    this.recompute();
  }

  /**
   * `changed` for every announced write, `reset` whenever announcements may have been missed
   * (forget everything). The first subscription starts the streams.
   */
  subscribe(changed: ChangeListener, reset?: () => void): () => void {
    this.changeListeners.add(changed);
    if (reset) this.resetListeners.add(reset);
    if (!this.started && !this.closed) this.start();
    return () => {
      this.changeListeners.delete(changed);
      if (reset) this.resetListeners.delete(reset);
    };
  }

  /** Announces a write this process saw acknowledged (or saw fail: it may have been applied). */
  announce(tenantId: string, physicalIndexId: string): void {
    for (const l of this.changeListeners) l(tenantId, physicalIndexId);
  }

  /** Nodes by state, for metrics and tests. */
  states(): Record<string, State> {
    const out: Record<string, State> = {};
    for (const [id, n] of this.nodes) out[id] = n.state;
    return out;
  }

  close(): void {
    this.closed = true;
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    for (const n of [...this.nodes.values()]) this.forget(n);
    this.recompute();
  }

  // ---- internals ----

  private start(): void {
    this.started = true;
    // registered here: only a process whose caches subscribe (a router) shows these series
    if (this.metrics) this.series = feedSeries(this.metrics.registry);
    for (const n of this.nodes.values()) this.connect(n);
    this.ticker = setInterval(() => this.tick(), Math.max(10, Math.floor(this.opts.heartbeatMs / 2)));
    this.ticker.unref?.();
    this.recompute();
  }

  private connectNow(n: NodeFeed): void {
    if (n.retry) clearTimeout(n.retry);
    n.retry = null;
    if (this.started) this.connect(n);
  }

  private connect(n: NodeFeed): void {
    if (this.closed) return;
    n.retry = null;
    const token = {};
    n.token = token;
    n.state = 'connecting';
    n.seq = 0;
    n.lastHeard = this.opts.now();
    try {
      const call = this.opts.open(n.address, { heartbeatMs: this.opts.heartbeatMs }, {
        message: (m) => {
          if (n.token === token) this.onMessage(n, m);
        },
        closed: (err) => {
          if (n.token !== token) return;
          if (err) this.log.debug('change feed stream failed', { node: n.nodeId, address: n.address, err: err.message });
          this.drop(n, err ? 'error' : 'ended');
        },
      });
      // the handlers may already have dropped this call
      if (n.token === token) n.cancel = () => call.cancel();
      else call.cancel();
    } catch (err) {
      this.log.warn('change feed stream could not start', { node: n.nodeId, address: n.address, err });
      if (n.token === token) this.drop(n, 'error');
    }
  }

  private onMessage(n: NodeFeed, m: pb.IndexChange): void {
    n.lastHeard = this.opts.now();
    if (m.seq !== n.seq + 1) {
      this.log.warn('change feed skipped messages; forgetting cached answers', { node: n.nodeId, expected: n.seq + 1, got: m.seq });
      this.drop(n, 'gap');
      return;
    }
    n.seq = m.seq;
    if (m.kind === 'open') {
      n.state = 'open';
      n.failures = 0;
      if (n.everOpened) this.series?.reconnects.inc();
      n.everOpened = true;
      this.log.info('change feed open', { node: n.nodeId, address: n.address });
      // anything applied before the node started listening for us went unannounced
      this.reset();
      this.recompute();
      return;
    }
    if (m.kind === 'heartbeat') return;
    if (n.state !== 'open') {
      this.drop(n, 'gap');
      return;
    }
    this.series?.events.inc({ kind: m.kind });
    this.announce(m.tenantId, m.physicalIndexId);
  }

  /** Ends the current call of `n` (if any), forgets everything cached, retries after a backoff. */
  private drop(n: NodeFeed, reason: DropReason): void {
    const wasOpen = n.state === 'open';
    if (this.endCall(n)) {
      this.series?.drops.inc({ reason });
      if (wasOpen) this.log.warn('change feed stream lost; cached answers forgotten', { node: n.nodeId, address: n.address, reason });
      // writes may have been applied that no message of this stream will announce
      this.reset();
    }
    if (n.departed || this.closed) {
      this.forget(n);
    } else if (this.started && n.retry === null && reason !== 'moved') {
      const delay = Math.min(this.opts.maxBackoffMs, this.opts.initialBackoffMs * 2 ** Math.min(n.failures, 20));
      n.failures++;
      // jitter, so routers do not all reconnect to a restarted node in the same instant
      n.retry = setTimeout(() => this.connect(n), Math.round(delay * (0.5 + this.opts.random() / 2)));
      n.retry.unref?.();
    }
    this.recompute();
  }

  private forget(n: NodeFeed): void {
    if (n.retry) clearTimeout(n.retry);
    n.retry = null;
    const had = this.endCall(n);
    this.nodes.delete(n.nodeId);
    if (had && !this.closed) this.reset();
  }

  /** Cancels the current call of `n` and ignores its callbacks from now on; whether there was one. */
  private endCall(n: NodeFeed): boolean {
    const had = n.token !== null;
    const cancel = n.cancel;
    n.token = null;
    n.cancel = null;
    n.state = 'waiting';
    cancel?.();
    return had;
  }

  private tick(): void {
    const now = this.opts.now();
    for (const n of [...this.nodes.values()]) {
      if (n.state === 'open' && now - n.lastHeard > this.opts.staleAfterMs) {
        this.log.warn('change feed stream silent; reconnecting', { node: n.nodeId, silent_ms: now - n.lastHeard });
        this.drop(n, 'stale');
      } else if (n.state === 'connecting' && now - n.lastHeard > this.opts.connectTimeoutMs) {
        this.drop(n, 'timeout');
      }
    }
  }

  private reset(): void {
    for (const r of this.resetListeners) r();
  }

  private recompute(): void {
    let live = this.started && this.membersKnown && !this.closed;
    if (live) {
      for (const n of this.nodes.values()) {
        if (!n.departed && n.state !== 'open') {
          live = false;
          break;
        }
      }
    }
    this.isLive = live;
    this.series?.live.set(live ? 1 : 0);
  }
}

interface FeedSeries {
  events: Counter<'kind'>;
  reconnects: Counter;
  drops: Counter<'reason'>;
  live: Gauge;
}

/** The feed's series on a registry, registered once (a registry may see several pools in tests). */
const feedSeries = perRegistry(newFeedSeries);

function newFeedSeries(registry: Registry): FeedSeries {
  return {
    events: new Counter({
      name: 'suggest_change_feed_events_total',
      help: 'Writes announced to this router by shard nodes over the change feed, by kind (upsert, delete, drop, events).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    reconnects: new Counter({
      name: 'suggest_change_feed_reconnects_total',
      help: 'Change-feed streams re-opened to a shard node after an earlier one ended (every re-open forgets the cached answers).',
      registers: [registry],
    }),
    drops: new Counter({
      name: 'suggest_change_feed_drops_total',
      help: 'Change-feed streams lost, by reason (error, ended, stale: silent too long, gap: messages skipped, timeout: never opened, moved, left).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    live: new Gauge({
      name: 'suggest_change_feed_live',
      help: '1 while the change feed of every live shard node is open, so the response cache may answer; 0 otherwise.',
      registers: [registry],
    }),
  };
}
