// A bounded memo for the engine's lookup caches: it forgets everything at once when full, which
// costs nothing per hit (no recency list) and suits caches whose hot entries come back at once.
// Bounded by entries and, optionally, by a weight summed over the values (the matches of fuzzy
// walks, the expansions of words), so a few large values cannot hold much memory either.

export class ClearingMemo<K, V> {
  private readonly map = new Map<K, V>();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight = Number.POSITIVE_INFINITY,
    private readonly weightOf: (value: V) => number = () => 0,
  ) {}

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** Stores `value`, first forgetting everything when it would not fit. */
  set(key: K, value: V): void {
    const w = this.weightOf(value);
    if (this.map.size >= this.maxEntries || this.weight + w > this.maxWeight) {
      this.map.clear();
      this.weight = 0;
    }
    this.map.set(key, value);
    this.weight += w;
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
