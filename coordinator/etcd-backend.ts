// The coordination backend of a cluster: etcd through the `etcd3` client, every key under one
// configurable prefix (default `/suggest/`). Transactions are etcd transactions, leases are etcd
// leases kept alive by the client, watches are etcd watches (the client resubscribes after a
// reconnect and replays from the last revision it saw), elections are etcd3's Election recipe.
import { circuitBreaker, ConsecutiveBreaker, handleWhen, noop } from 'cockatiel';
import { CompareResult, CompareTarget, Etcd3, isRecoverableError, type ICompare, type IKeyValue, type IOptions, type IRequestOp, type Namespace, type Watcher } from 'etcd3';
import { SuggestError, suggestError } from '../node/runtime/errors.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import { withTimeout } from '../node/runtime/timeout.js';
import {
  assertUniqueKeys,
  type BackendCampaign,
  type BackendLease,
  type CampaignHandlers,
  type CoordinationHealth,
  type Compare,
  type CoordinationBackend,
  type JsonValue,
  type KeyValue,
  type RangeOptions,
  type TxnOp,
  type TxnResult,
  type Unwatch,
  type WatchEvent,
} from './coordination-backend.js';

export interface EtcdBackendOptions {
  endpoints: string[];
  /** every key lives under this prefix; default `/suggest/` */
  prefix?: string;
  /** how long `connect` keeps trying to reach etcd; default 10 s */
  connectTimeoutMs?: number;
  /** TTL of election candidacies: how long a dead leader keeps the role; default 5 s */
  electionTtlSeconds?: number;
  log?: Logger;
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type WatchBackoff = NonNullable<FaultHandling['watchBackoff']>;

/**
 * What the client does after failed calls to one etcd endpoint. Its default circuit breaker
 * refuses every call to an endpoint for 5 s after 3 failures in a row, and one failure resets
 * every stream of the endpoint (watches, lease keepalives), whose failures count too: a single
 * refused call could stall a node's placement watch and keepalives for 5 s after etcd was fine
 * again (a shard node then refuses reads with an old placement, and may lose its lease). With
 * one endpoint there is nowhere else to send a call, so nothing is refused; with several, an
 * endpoint is skipped for 1 s after 5 failures in a row.
 */
function hostPolicy(endpoints: string[]): FaultHandling['host'] {
  if (endpoints.length === 1) return () => noop;
  return () => circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: 1_000, breaker: new ConsecutiveBreaker(5) });
}

/** Reconnect a broken watch stream quickly (the client's default waits up to 30 s). */
function watchBackoff(ms: number): WatchBackoff {
  return { duration: ms, next: () => watchBackoff(Math.min(ms * 2, 2_000)) };
}

function decode(buf: Buffer): JsonValue {
  const s = buf.toString('utf8');
  try {
    return JSON.parse(s) as JsonValue;
  } catch {
    return s; // written by something other than this backend
  }
}

function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: decode(kv.value),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: kv.lease && kv.lease !== '0' ? String(kv.lease) : null,
  };
}

const encode = (v: JsonValue): Buffer => {
  const s = JSON.stringify(v);
  if (s === undefined) throw new Error('value is not JSON');
  return Buffer.from(s, 'utf8');
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * How long one etcd call may take. etcd answers in milliseconds; a call still pending after this
 * is to an etcd that is down or cut off (a refused connection fails at once, a silent one would
 * hang the request that waits for it).
 */
const CALL_TIMEOUT_MS = 5_000;

/**
 * An etcd call that failed because etcd could not be reached: the network or etcd itself
 * (errors the client marks recoverable), the client's circuit breaker, open after a run of such
 * failures, or no answer in time. To the caller that is a 503 to retry shortly, not an internal
 * error: the cluster's metadata is briefly out of reach, nothing is wrong with the request.
 * Searches do not wait for etcd (routers keep their caches), so only the control plane's
 * routes (indexes, jobs, tenants, writes that check job state) answer it.
 */
function unreachable(err: unknown): SuggestError | undefined {
  if (err instanceof SuggestError) return undefined;
  const e = err as { isBrokenCircuitError?: unknown; message?: unknown } | null;
  const broken = e !== null && typeof e === 'object' && e.isBrokenCircuitError === true;
  if (!broken && !(err instanceof Error && isRecoverableError(err))) return undefined;
  // the client learns that etcd is out of reach, not where it lives (the cause keeps that for the log)
  return outOfReach(broken ? ': after repeated failures, calls to it pause for a moment' : ': it could not be reached', err);
}

/** The `unavailable` error of an etcd out of reach; `why` ends the sentence the client reads. */
function outOfReach(why: string, cause?: unknown): SuggestError {
  return suggestError('unavailable', { reason: `The coordination service (etcd) did not answer${why}` }, { cause, headers: { 'Retry-After': '1' } });
}

export class EtcdBackend implements CoordinationBackend {
  readonly kind = 'etcd' as const;
  private readonly client: Etcd3;
  private readonly ns: Namespace;
  private readonly log: Logger;
  private readonly electionTtl: number;
  private readonly closers = new Set<() => Promise<void>>();
  private closed = false;
  private reachable = true;
  private unreachableCalls = 0;

  constructor(opts: EtcdBackendOptions) {
    if (opts.endpoints.length === 0) throw new Error('no etcd endpoints');
    let prefix = opts.prefix ?? '/suggest/';
    if (!prefix.endsWith('/')) prefix += '/';
    this.client = new Etcd3({
      hosts: opts.endpoints,
      faultHandling: { host: hostPolicy(opts.endpoints), watchBackoff: watchBackoff(100) },
      // notice a dead connection (etcd restarted, network cut) without waiting for a call to fail
      grpcOptions: { 'grpc.keepalive_time_ms': 10_000, 'grpc.keepalive_timeout_ms': 5_000 },
    });
    this.ns = this.client.namespace(prefix);
    this.log = opts.log ?? rootLog.child({ component: 'etcd-backend' });
    this.electionTtl = opts.electionTtlSeconds ?? 5;
  }

  /** Creates the backend and waits until etcd answers (or `connectTimeoutMs` passes). */
  static async connect(opts: EtcdBackendOptions): Promise<EtcdBackend> {
    const backend = new EtcdBackend(opts);
    const deadline = Date.now() + (opts.connectTimeoutMs ?? 10_000);
    for (;;) {
      try {
        await backend.ns.get('placement').exec();
        return backend;
      } catch (err) {
        if (Date.now() >= deadline) {
          await backend.close();
          throw new Error(`etcd at ${opts.endpoints.join(',')} did not answer: ${(err as Error).message}`, { cause: err });
        }
        await sleep(200);
      }
    }
  }

  /**
   * One etcd call, bounded by CALL_TIMEOUT_MS; etcd out of reach becomes `unavailable` (see
   * `unreachable`). A write that timed out may still have been applied, as with any store reached
   * over a network: a client that retries may find it done (an index that now exists: 409).
   */
  private async call<T>(op: () => Promise<T>): Promise<T> {
    try {
      const result = await withTimeout(op(), CALL_TIMEOUT_MS, () => outOfReach(` within ${CALL_TIMEOUT_MS} ms`));
      this.reachable = true;
      return result;
    } catch (err) {
      const out = unreachable(err);
      if (out !== undefined || (err instanceof SuggestError && err.code === 'unavailable')) {
        if (this.reachable) this.log.warn('etcd out of reach', { err });
        this.reachable = false;
        this.unreachableCalls++;
      } else {
        // etcd answered (a refused compare, a lapsed lease): it is reachable
        this.reachable = true;
      }
      throw out ?? err;
    }
  }

  health(): CoordinationHealth {
    return { reachable: this.reachable, unreachableCalls: this.unreachableCalls };
  }

  async get(key: string): Promise<KeyValue | undefined> {
    const res = await this.call(() => this.ns.get(key).exec());
    const kv = res.kvs[0];
    // a single-key read comes back with the namespace prefix still on the key
    return kv ? { ...toKeyValue(kv), key } : undefined;
  }

  async range(prefix: string, opts: RangeOptions = {}): Promise<KeyValue[]> {
    if (opts.limit !== undefined && opts.limit <= 0) return [];
    let b = this.ns.getAll().prefix(prefix).sort('Key', opts.reverse ? 'Descend' : 'Ascend');
    if (opts.limit !== undefined) b = b.limit(opts.limit);
    const res = await this.call(() => b.exec());
    return res.kvs.map(toKeyValue);
  }

  async put(key: string, value: JsonValue, opts: { lease?: string } = {}): Promise<number> {
    const op: TxnOp = opts.lease === undefined ? { type: 'put', key, value } : { type: 'put', key, value, lease: opts.lease };
    return (await this.txn([], [op])).revision;
  }

  async delete(key: string): Promise<boolean> {
    const res = await this.call(() => this.ns.delete().key(key).exec());
    return Number(res.deleted) > 0;
  }

  async deletePrefix(prefix: string): Promise<number> {
    const res = await this.call(() => this.ns.delete().prefix(prefix).exec());
    return Number(res.deleted);
  }

  async txn(compares: Compare[], ops: TxnOp[]): Promise<TxnResult> {
    assertUniqueKeys(ops);
    const full = (k: string) => Buffer.concat([this.ns.prefix, Buffer.from(k, 'utf8')]);
    const compare: ICompare[] = compares.map((c) => {
      const key = full(c.key);
      if ('absent' in c) return { key, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 };
      if ('modRevision' in c) return { key, target: CompareTarget.Mod, result: CompareResult.Equal, mod_revision: c.modRevision };
      if ('version' in c) return { key, target: CompareTarget.Version, result: CompareResult.Equal, version: c.version };
      return { key, target: CompareTarget.Value, result: CompareResult.Equal, value: encode(c.value) };
    });
    const success: IRequestOp[] = ops.map((op) =>
      op.type === 'put'
        ? { request_put: { key: full(op.key), value: encode(op.value), ...(op.lease !== undefined ? { lease: op.lease } : {}) } }
        : { request_delete_range: { key: full(op.key) } },
    );
    const res = await this.call(() => this.ns.kv.txn({ compare, success, failure: [] }));
    return { succeeded: res.succeeded, revision: Number(res.header.revision) };
  }

  async grantLease(ttlSeconds: number): Promise<BackendLease> {
    const lease = this.ns.lease(ttlSeconds);
    let resolveLost!: () => void;
    const lost = new Promise<void>((r) => (resolveLost = r));
    let timer: NodeJS.Timeout | undefined;
    lease.on('lost', (err) => {
      this.log.warn('etcd lease lost', { err });
      resolveLost();
    });
    const id = await this.call(() => lease.grant());
    let done = false;
    const finish = () => {
      done = true;
      this.closers.delete(closer);
    };
    const release = () => {
      if (done) return;
      finish();
      lease.release();
      // etcd drops the lease one TTL after the last keepalive; nothing tells this client when
      timer = setTimeout(resolveLost, ttlSeconds * 1000);
      timer.unref();
    };
    const closer = async () => {
      release();
      if (timer) clearTimeout(timer);
      resolveLost();
    };
    this.closers.add(closer);
    return {
      id,
      ttlSeconds,
      lost,
      revoke: async () => {
        if (!done) finish();
        if (timer) clearTimeout(timer);
        try {
          await lease.revoke();
        } finally {
          resolveLost();
        }
      },
      release,
    };
  }

  async watch(prefix: string, onEvent: (e: WatchEvent) => void): Promise<Unwatch> {
    let active = true;
    let current: Watcher | undefined;
    let retry: NodeJS.Timeout | undefined;
    const deliver = (type: 'put' | 'delete') => (kv: IKeyValue) => {
      if (!active) return;
      try {
        onEvent({ type, key: kv.key.toString('utf8'), value: type === 'put' ? decode(kv.value) : undefined, modRevision: Number(kv.mod_revision) });
      } catch (err) {
        this.log.error('watch callback failed', { err });
      }
    };
    const start = async (): Promise<void> => {
      const w = await this.ns.watch().prefix(prefix).create();
      if (!active) {
        await w.cancel();
        return;
      }
      current = w;
      w.on('put', deliver('put'));
      w.on('delete', deliver('delete'));
      w.on('disconnected', (err) => this.log.debug('etcd watch disconnected; resuming', { prefix, err }));
      // 'error' means etcd cancelled the watch (e.g. its revision was compacted away): the
      // client will not resume it, so start a new one from now
      w.on('error', (err) => {
        if (!active) return;
        this.log.warn('etcd watch cancelled by the server; restarting, events may have been missed', { prefix, err });
        retry = setTimeout(() => {
          start().catch((e: unknown) => this.log.error('etcd watch restart failed', { prefix, err: e }));
        }, 500);
        retry.unref();
      });
    };
    await start();
    const unwatch = async () => {
      if (!active) return;
      active = false;
      this.closers.delete(unwatch);
      if (retry) clearTimeout(retry);
      await current?.cancel();
    };
    this.closers.add(unwatch);
    return unwatch;
  }

  campaign(name: string, value: string, handlers: CampaignHandlers): BackendCampaign {
    const c = this.ns.election(name, this.electionTtl).campaign(value);
    let done = false;
    const resign = async () => {
      if (done) return;
      done = true;
      this.closers.delete(resign);
      await c.resign();
    };
    c.on('elected', () => {
      if (done) return;
      try {
        handlers.elected();
      } catch (err) {
        this.log.error('election callback failed', { err });
      }
    });
    c.on('error', (err) => {
      if (done) return;
      done = true;
      this.closers.delete(resign);
      c.resign().catch(() => undefined);
      handlers.lost(err);
    });
    this.closers.add(resign);
    return { resign };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // bounded: with etcd unreachable a resign or watch cancel would wait for a reply forever
    const pending = [...this.closers].map((f) => withTimeout(f(), 2_000).catch((err: unknown) => this.log.debug('close step failed', { err })));
    await Promise.all(pending);
    this.client.close();
  }
}
