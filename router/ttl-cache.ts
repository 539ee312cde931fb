// A small bounded map with per-entry expiry for the router's metadata caches (keys, tenants,
// indexes). Watches keep entries fresh; the expiry only bounds how long a missed watch event
// could matter. Eviction drops the oldest insertion: cheap, and good enough for caches whose
// working set fits (the bound is a memory guard, not a policy).
export class TtlCache<K, V> {
  private readonly map = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
  ) {}

  /** The live entry; `undefined` when absent or expired. */
  get(key: K, now = Date.now()): { value: V } | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    if (e.expires <= now) {
      this.map.delete(key);
      return undefined;
    }
    return e;
  }

  set(key: K, value: V, ttlMs = this.ttlMs, now = Date.now()): void {
    this.map.delete(key);
    if (this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
    this.map.set(key, { value, expires: now + ttlMs });
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  get size(): number {
    return this.map.size;
  }
}
