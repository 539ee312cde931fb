// The coordination backend of the single node: metadata in a RocksDB of its own (every write
// synced), watch fan-out, lease timers and elections in process. It owns the on-disk layout:
//   k/{key}        -> {"v": value, "c": createRevision, "m": modRevision, "n": version, "l": lease}
//   x/rev          -> the store revision
//   x/lease/{key}  -> lease id of a leased key, so a reopen can drop every leased key: leases
//                     live in this process only, so after a restart none of them exists.
// Writes go through one queue, which gives transactions their atomicity and watchers their
// commit order; reads go straight to RocksDB (a batch is applied atomically, so a read sees a
// transaction entirely or not at all).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import {
  assertUniqueKeys,
  prefixEnd,
  type BackendCampaign,
  type BackendLease,
  type CampaignHandlers,
  type Compare,
  type CoordinationHealth,
  type CoordinationBackend,
  type JsonValue,
  type KeyValue,
  type RangeOptions,
  type TxnOp,
  type TxnResult,
  type Unwatch,
  type WatchEvent,
} from './coordination-backend.js';

// --- the slice of the `rocksdb` (abstract-leveldown 7) API used here; the package has no types
type Callback = (err: Error | null | undefined) => void;
type RocksOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };
interface RocksIterator {
  next(cb: (err: Error | null | undefined, key?: string, value?: string) => void): void;
  end(cb: Callback): void;
}
interface RocksDb {
  open(opts: { createIfMissing: boolean }, cb: Callback): void;
  close(cb: Callback): void;
  get(key: string, opts: { asBuffer: false }, cb: (err: Error | null | undefined, value?: string) => void): void;
  batch(ops: RocksOp[], opts: { sync: boolean }, cb: Callback): void;
  iterator(opts: { gte: Buffer; lt: Buffer; reverse: boolean; limit: number; keyAsBuffer: false; valueAsBuffer: false }): RocksIterator;
}
const requireCjs = createRequire(import.meta.url);
const openRocks = requireCjs('rocksdb') as (location: string) => RocksDb;

const call = (fn: (cb: Callback) => void) => new Promise<void>((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));

interface Entry {
  v: JsonValue;
  c: number;
  m: number;
  n: number;
  l: string | null;
}

const DATA = 'k/';
const REV = 'x/rev';
const LEASED = 'x/lease/';

interface LeaseState {
  id: string;
  ttlSeconds: number;
  keys: Set<string>;
  timer: NodeJS.Timeout | undefined;
  ended: boolean;
  resolveLost: () => void;
}

interface Watcher {
  prefix: string;
  onEvent: (e: WatchEvent) => void;
}

interface Candidate {
  value: string;
  handlers: CampaignHandlers;
}

function toKeyValue(key: string, e: Entry): KeyValue {
  return { key, value: e.v, createRevision: e.c, modRevision: e.m, version: e.n, lease: e.l };
}

function holds(c: Compare, e: Entry | undefined): boolean {
  if ('absent' in c) return e === undefined;
  if ('modRevision' in c) return (e?.m ?? 0) === c.modRevision;
  if ('version' in c) return (e?.n ?? 0) === c.version;
  return e !== undefined && JSON.stringify(e.v) === JSON.stringify(c.value);
}

export class EmbeddedBackend implements CoordinationBackend {
  readonly kind = 'embedded' as const;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly leases = new Map<string, LeaseState>();
  private readonly watchers = new Set<Watcher>();
  private readonly elections = new Map<string, Candidate[]>();
  private closed = false;

  private constructor(
    private readonly db: RocksDb,
    private revision: number,
    private readonly log: Logger,
  ) {}

  /** Opens (creating if needed) the store in `dir`; keys of leases from a previous run are dropped. */
  static async open(dir: string, opts: { log?: Logger } = {}): Promise<EmbeddedBackend> {
    mkdirSync(dir, { recursive: true });
    const db = openRocks(dir);
    await call((cb) => db.open({ createIfMissing: true }, cb));
    const backend = new EmbeddedBackend(db, 0, opts.log ?? rootLog.child({ component: 'embedded-backend' }));
    try {
      const rev = await backend.rawGet(REV);
      backend.revision = rev === undefined ? 0 : Number(rev);
      const stale = await backend.rawRange(LEASED, {});
      if (stale.length > 0) {
        const batch: RocksOp[] = [];
        for (const [markerKey] of stale) {
          batch.push({ type: 'del', key: DATA + markerKey.slice(LEASED.length) }, { type: 'del', key: markerKey });
        }
        backend.revision += 1;
        batch.push({ type: 'put', key: REV, value: String(backend.revision) });
        await backend.rawBatch(batch);
      }
    } catch (err) {
      await call((cb) => db.close(cb));
      throw err;
    }
    return backend;
  }

  // --- reads

  async get(key: string): Promise<KeyValue | undefined> {
    this.assertOpen();
    const e = await this.readEntry(key);
    return e ? toKeyValue(key, e) : undefined;
  }

  async range(prefix: string, opts: RangeOptions = {}): Promise<KeyValue[]> {
    this.assertOpen();
    const rows = await this.rawRange(DATA + prefix, opts);
    return rows.map(([k, v]) => toKeyValue(k.slice(DATA.length), JSON.parse(v) as Entry));
  }

  // --- writes

  async put(key: string, value: JsonValue, opts: { lease?: string } = {}): Promise<number> {
    const op: TxnOp = opts.lease === undefined ? { type: 'put', key, value } : { type: 'put', key, value, lease: opts.lease };
    return (await this.txn([], [op])).revision;
  }

  async delete(key: string): Promise<boolean> {
    return this.exclusive(async () => {
      const existed = (await this.readEntry(key)) !== undefined;
      if (existed) await this.commit([], [{ type: 'delete', key }]);
      return existed;
    });
  }

  async deletePrefix(prefix: string): Promise<number> {
    return this.exclusive(async () => {
      const rows = await this.rawRange(DATA + prefix, {});
      await this.commit([], rows.map(([k]) => ({ type: 'delete', key: k.slice(DATA.length) })));
      return rows.length;
    });
  }

  async txn(compares: Compare[], ops: TxnOp[]): Promise<TxnResult> {
    assertUniqueKeys(ops);
    for (const op of ops) if (op.type === 'put' && op.value === undefined) throw new Error(`undefined value for '${op.key}'`);
    return this.exclusive(() => this.commit(compares, ops));
  }

  // --- leases

  async grantLease(ttlSeconds: number): Promise<BackendLease> {
    this.assertOpen();
    if (!(ttlSeconds >= 1)) throw new RangeError(`lease TTL must be at least 1 second, got ${ttlSeconds}`);
    const id = randomBytes(8).toString('hex');
    let resolveLost!: () => void;
    const lost = new Promise<void>((r) => (resolveLost = r));
    const state: LeaseState = { id, ttlSeconds, keys: new Set(), timer: undefined, ended: false, resolveLost };
    this.leases.set(id, state);
    return {
      id,
      ttlSeconds,
      lost,
      revoke: () => this.endLease(state),
      release: () => {
        // in process the keepalive is implicit; releasing starts the TTL countdown a dead
        // holder would have left behind
        if (state.ended || state.timer) return;
        state.timer = setTimeout(() => {
          this.endLease(state).catch((err: unknown) => this.log.error('lease expiry failed', { lease: id, err }));
        }, ttlSeconds * 1000);
        state.timer.unref();
      },
    };
  }

  private async endLease(state: LeaseState): Promise<void> {
    if (state.ended) return;
    state.ended = true;
    if (state.timer) clearTimeout(state.timer);
    try {
      if (this.closed) return;
      await this.exclusive(async () => {
        const ops: TxnOp[] = [];
        for (const key of state.keys) {
          const e = await this.readEntry(key);
          if (e?.l === state.id) ops.push({ type: 'delete', key });
        }
        await this.commit([], ops);
      });
    } finally {
      this.leases.delete(state.id);
      state.resolveLost();
    }
  }

  // --- watches

  async watch(prefix: string, onEvent: (e: WatchEvent) => void): Promise<Unwatch> {
    this.assertOpen();
    const w: Watcher = { prefix, onEvent };
    this.watchers.add(w);
    return async () => {
      this.watchers.delete(w);
    };
  }

  // --- election: one process, so the first candidate in line leads

  campaign(name: string, value: string, handlers: CampaignHandlers): BackendCampaign {
    this.assertOpen();
    const line = this.elections.get(name) ?? [];
    this.elections.set(name, line);
    const me: Candidate = { value, handlers };
    line.push(me);
    if (line.length === 1) queueMicrotask(() => this.elect(line, me));
    return {
      resign: async () => {
        const i = line.indexOf(me);
        if (i < 0) return;
        line.splice(i, 1);
        const next = line[0];
        if (i === 0 && next) queueMicrotask(() => this.elect(line, next));
      },
    };
  }

  private elect(line: Candidate[], c: Candidate): void {
    if (this.closed || line[0] !== c) return;
    try {
      c.handlers.elected();
    } catch (err) {
      this.log.error('election callback failed', { err });
    }
  }

  /** In-process: always within reach. */
  health(): CoordinationHealth {
    return { reachable: true, unreachableCalls: 0 };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // let queued writes finish, then refuse new ones
    await this.exclusive(async () => {
      this.closed = true;
    });
    for (const state of this.leases.values()) {
      if (state.timer) clearTimeout(state.timer);
      state.ended = true;
      state.resolveLost();
    }
    this.leases.clear();
    this.watchers.clear();
    this.elections.clear();
    await call((cb) => this.db.close(cb));
  }

  // --- internals

  private assertOpen(): void {
    if (this.closed) throw new Error('the embedded coordination store is closed');
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      this.assertOpen();
      return fn();
    });
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Must run inside `exclusive`. */
  private async commit(compares: Compare[], ops: TxnOp[]): Promise<TxnResult> {
    for (const c of compares) {
      if (!holds(c, await this.readEntry(c.key))) return { succeeded: false, revision: this.revision };
    }
    for (const op of ops) {
      if (op.type === 'put' && op.lease !== undefined) {
        const l = this.leases.get(op.lease);
        if (!l || l.ended) throw new Error(`lease ${op.lease} not found (expired or revoked)`);
      }
    }
    const rev = this.revision + 1;
    const batch: RocksOp[] = [];
    const events: WatchEvent[] = [];
    const after: (() => void)[] = [];
    for (const op of ops) {
      const prev = await this.readEntry(op.key);
      if (op.type === 'put') {
        const lease = op.lease ?? null;
        const e: Entry = { v: op.value, c: prev ? prev.c : rev, m: rev, n: (prev?.n ?? 0) + 1, l: lease };
        batch.push({ type: 'put', key: DATA + op.key, value: JSON.stringify(e) });
        if (lease) batch.push({ type: 'put', key: LEASED + op.key, value: lease });
        else if (prev?.l) batch.push({ type: 'del', key: LEASED + op.key });
        events.push({ type: 'put', key: op.key, value: op.value, modRevision: rev });
        after.push(() => {
          if (prev?.l && prev.l !== lease) this.leases.get(prev.l)?.keys.delete(op.key);
          if (lease) this.leases.get(lease)?.keys.add(op.key);
        });
      } else if (prev) {
        batch.push({ type: 'del', key: DATA + op.key });
        if (prev.l) batch.push({ type: 'del', key: LEASED + op.key });
        events.push({ type: 'delete', key: op.key, value: undefined, modRevision: rev });
        after.push(() => {
          if (prev.l) this.leases.get(prev.l)?.keys.delete(op.key);
        });
      }
    }
    // like etcd, a transaction that changes nothing does not advance the revision
    if (batch.length === 0) return { succeeded: true, revision: this.revision };
    batch.push({ type: 'put', key: REV, value: String(rev) });
    await this.rawBatch(batch);
    this.revision = rev;
    for (const f of after) f();
    for (const e of events) this.emit(e);
    return { succeeded: true, revision: rev };
  }

  private emit(e: WatchEvent): void {
    for (const w of this.watchers) {
      if (!e.key.startsWith(w.prefix)) continue;
      try {
        w.onEvent(e);
      } catch (err) {
        this.log.error('watch callback failed', { key: e.key, err });
      }
    }
  }

  private async readEntry(key: string): Promise<Entry | undefined> {
    const raw = await this.rawGet(DATA + key);
    return raw === undefined ? undefined : (JSON.parse(raw) as Entry);
  }

  private rawGet(key: string): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      this.db.get(key, { asBuffer: false }, (err, value) => {
        if (err) {
          if (/NotFound/i.test(err.message)) resolve(undefined);
          else reject(err);
        } else resolve(value);
      });
    });
  }

  private rawBatch(ops: RocksOp[]): Promise<void> {
    return call((cb) => this.db.batch(ops, { sync: true }, cb));
  }

  private async rawRange(prefix: string, opts: RangeOptions): Promise<[string, string][]> {
    if (opts.limit !== undefined && opts.limit <= 0) return [];
    const start = Buffer.from(prefix, 'utf8');
    const it = this.db.iterator({
      gte: start,
      lt: prefixEnd(start),
      reverse: opts.reverse ?? false,
      limit: opts.limit ?? -1,
      keyAsBuffer: false,
      valueAsBuffer: false,
    });
    const rows: [string, string][] = [];
    return new Promise((resolve, reject) => {
      const finish = (err: Error | null | undefined) => it.end((endErr) => (err || endErr ? reject(err ?? endErr) : resolve(rows)));
      const step = () =>
        it.next((err, key, value) => {
          if (err) return finish(err);
          if (key === undefined) return finish(undefined);
          rows.push([key, value ?? '']);
          step();
        });
      step();
    });
  }
}
