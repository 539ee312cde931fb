// A bounded memo for the engine's lookup caches: it forgets everything at once when full, which
// costs nothing per hit (no recency list) and suits caches whose hot entries come back at once.
// Bounded by entries and, optionally, by a weight summed over the values (the matches of fuzzy
// walks, the expansions of words), so a few large values cannot hold much memory either.
//
// Every memo also charges its estimated bytes to one budget per process (`memoBudget`): memos are
// kept per segment and per snapshot, so a node serving many busy indexes would otherwise hold
// their sum. Past the budget, the memos written least recently are cleared first.

export interface MemoOptions<V> {
  /** entries kept before everything is forgotten (default: no bound) */
  maxEntries?: number;
  /** summed weight kept before everything is forgotten (default: no bound) */
  maxWeight?: number;
  weightOf?: (value: V) => number;
  /** estimated bytes of one entry (key, map slot, the value's fixed part) */
  entryBytes: number;
  /** estimated bytes of one unit of weight */
  weightBytes?: number;
  /** default: the process's `memoBudget` */
  budget?: MemoBudget;
}

export class ClearingMemo<K, V> {
  private readonly map = new Map<K, V>();
  private weight = 0;
  private readonly maxEntries: number;
  private readonly maxWeight: number;
  private readonly weightOf: (value: V) => number;
  private readonly entryBytes: number;
  private readonly weightBytes: number;
  private readonly budget: MemoBudget;
  private account: MemoAccount | null = null;

  constructor(options: MemoOptions<V>) {
    this.maxEntries = options.maxEntries ?? Number.POSITIVE_INFINITY;
    this.maxWeight = options.maxWeight ?? Number.POSITIVE_INFINITY;
    this.weightOf = options.weightOf ?? (() => 0);
    this.entryBytes = options.entryBytes;
    this.weightBytes = options.weightBytes ?? 0;
    this.budget = options.budget ?? memoBudget;
  }

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  get size(): number {
    return this.map.size;
  }

  /** Stores `value`, first forgetting everything when it would not fit. */
  set(key: K, value: V): void {
    const w = this.weightOf(value);
    if (this.map.size >= this.maxEntries || this.weight + w > this.maxWeight) this.clear();
    this.map.set(key, value);
    this.weight += w;
    this.account ??= this.budget.open(this);
    this.budget.charge(this.account, this.entryBytes + w * this.weightBytes);
  }

  clear(): void {
    this.map.clear();
    this.weight = 0;
    if (this.account !== null) this.budget.release(this.account);
  }
}

/** One memo per owner (a segment, a snapshot), made on first use and dropped with its owner. */
export class MemoPerOwner<O extends object, K, V> {
  private readonly memos = new WeakMap<O, ClearingMemo<K, V>>();

  constructor(private readonly make: () => ClearingMemo<K, V>) {}

  of(owner: O): ClearingMemo<K, V> {
    let memo = this.memos.get(owner);
    if (memo === undefined) this.memos.set(owner, (memo = this.make()));
    return memo;
  }
}

/** What the budget knows of one memo: its bytes and when it was last written. */
class MemoAccount {
  bytes = 0;
  lastWrite = 0;
  constructor(readonly memo: WeakRef<{ clear(): void }>) {}
}

export interface MemoBudgetStats {
  /** estimated bytes held by live memos */
  bytes: number;
  limitBytes: number;
  /** memos holding entries */
  memos: number;
  /** memos cleared to stay within the budget */
  evictions: number;
}

/**
 * The estimated bytes of every memo of the process, bounded: a write that passes the limit clears
 * the memos written least recently (the memo being written last) until a tenth of the budget is
 * free again. Memos of dropped segments and snapshots leave the sum when they are collected.
 */
export class MemoBudget {
  private total = 0;
  private clock = 0;
  private evictions = 0;
  private readonly accounts = new Set<MemoAccount>();
  private readonly collected = new FinalizationRegistry<MemoAccount>((a) => {
    this.total -= a.bytes;
    a.bytes = 0;
    this.accounts.delete(a);
  });

  constructor(private limitBytes: number) {}

  setLimit(bytes: number): void {
    this.limitBytes = bytes;
  }

  open(memo: { clear(): void }): MemoAccount {
    const a = new MemoAccount(new WeakRef(memo));
    this.accounts.add(a);
    this.collected.register(memo, a);
    return a;
  }

  charge(a: MemoAccount, bytes: number): void {
    a.bytes += bytes;
    a.lastWrite = ++this.clock;
    this.total += bytes;
    if (this.total > this.limitBytes) this.evict(a);
  }

  release(a: MemoAccount): void {
    this.total -= a.bytes;
    a.bytes = 0;
  }

  stats(): MemoBudgetStats {
    let memos = 0;
    for (const a of this.accounts) if (a.bytes > 0) memos++;
    return { bytes: this.total, limitBytes: this.limitBytes, memos, evictions: this.evictions };
  }

  private evict(writing: MemoAccount): void {
    const target = this.limitBytes * 0.9;
    const oldest = [...this.accounts].filter((a) => a.bytes > 0 && a !== writing).sort((x, y) => x.lastWrite - y.lastWrite);
    oldest.push(writing);
    for (const a of oldest) {
      if (this.total <= target) break;
      const memo = a.memo.deref();
      if (memo === undefined) this.release(a);
      else memo.clear();
      this.evictions++;
    }
  }
}

/** The memo budget of this process (SUGGEST_MEMO_BUDGET_MB sets it on a node; 256 MB by default). */
export const memoBudget = new MemoBudget(256 * 1024 * 1024);
