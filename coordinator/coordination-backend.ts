// The small key-value contract the metadata logic is written against. Two implementations:
// etcd (clusters) and an embedded RocksDB store (the single node). Semantics follow etcd's, so
// code that is correct over one is correct over the other:
//  - every committed write gets a new, larger store revision; a transaction is one revision;
//  - keys put under a lease vanish (with delete events) when the lease lapses or is revoked;
//  - watchers see put/delete events in commit order.

/** Values are JSON. Comparing a value compares its JSON.stringify bytes. */
export type JsonValue = unknown;

export interface KeyValue {
  key: string;
  value: JsonValue;
  /** store revision of the transaction that created the key */
  createRevision: number;
  /** store revision of the last write to the key */
  modRevision: number;
  /** writes since the key was created (1 after the first put) */
  version: number;
  /** lease the key is attached to, or null */
  lease: string | null;
}

/** One condition of a transaction; all must hold for the success branch to run. */
export type Compare =
  | { key: string; absent: true }
  | { key: string; modRevision: number }
  | { key: string; version: number }
  | { key: string; value: JsonValue };

export type TxnOp =
  | { type: 'put'; key: string; value: JsonValue; lease?: string }
  | { type: 'delete'; key: string };

export interface TxnResult {
  succeeded: boolean;
  /** store revision after the transaction */
  revision: number;
}

export interface RangeOptions {
  /** at most this many keys */
  limit?: number;
  /** descending key order */
  reverse?: boolean;
}

export interface WatchEvent {
  type: 'put' | 'delete';
  key: string;
  /** the new value; undefined for deletes */
  value: JsonValue;
  modRevision: number;
}

export type Unwatch = () => Promise<void>;

export interface BackendLease {
  readonly id: string;
  readonly ttlSeconds: number;
  /** resolves once the lease is gone: revoked, expired, or kept alive no longer than its TTL */
  readonly lost: Promise<void>;
  /** ends the lease now; its keys are deleted */
  revoke(): Promise<void>;
  /** stops the keepalive without revoking, as a crashed holder would: the lease lapses after its TTL */
  release(): void;
}

export interface CampaignHandlers {
  /** this candidate became the leader */
  elected(): void;
  /** the candidacy ended without a resign (its lease was lost); campaign again to continue */
  lost(err: Error): void;
}

export interface BackendCampaign {
  /** withdraw: a leader steps down and the next candidate is elected */
  resign(): Promise<void>;
}

export interface CoordinationBackend {
  readonly kind: 'etcd' | 'embedded';
  get(key: string): Promise<KeyValue | undefined>;
  /** keys starting with `prefix`, in key order */
  range(prefix: string, opts?: RangeOptions): Promise<KeyValue[]>;
  /** returns the revision of the write */
  put(key: string, value: JsonValue, opts?: { lease?: string }): Promise<number>;
  /** true when the key existed */
  delete(key: string): Promise<boolean>;
  /** number of keys deleted */
  deletePrefix(prefix: string): Promise<number>;
  /**
   * If every compare holds, apply `ops` atomically as one revision. A key may appear at most once
   * in `ops` (as in etcd). Puts naming an unknown or lapsed lease throw.
   */
  txn(compares: Compare[], ops: TxnOp[]): Promise<TxnResult>;
  /** a lease kept alive automatically until revoked or released */
  grantLease(ttlSeconds: number): Promise<BackendLease>;
  /**
   * Events for keys under `prefix` committed after the returned promise resolves, in commit
   * order. The callback runs synchronously per event; exceptions from it are swallowed.
   */
  watch(prefix: string, onEvent: (e: WatchEvent) => void): Promise<Unwatch>;
  /** join election `name` with `value`; candidates are elected one at a time in arrival order */
  campaign(name: string, value: string, handlers: CampaignHandlers): BackendCampaign;
  /** whether the last call reached the store, and how many calls could not (see CoordinationHealth) */
  health(): CoordinationHealth;
  /** releases every handle; held leases are released (the embedded ones end with the process) */
  close(): Promise<void>;
}

/** What a process knows of its coordination store's reachability, from its own calls. */
export interface CoordinationHealth {
  /** false from a call that could not reach the store until one that did */
  reachable: boolean;
  /** calls that failed because the store was out of reach, since start */
  unreachableCalls: number;
}

/** The exclusive upper bound of the keys starting with `prefix` (as etcd computes it). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  // all 0xff (or empty): no upper bound, etcd spells that as a single zero byte
  return Buffer.from([0]);
}

export function assertUniqueKeys(ops: TxnOp[]): void {
  const seen = new Set<string>();
  for (const op of ops) {
    if (seen.has(op.key)) throw new Error(`transaction names key '${op.key}' twice`);
    seen.add(op.key);
  }
}
