// Process-wide Prometheus metrics (prom-client). One registry per process, exposed by the router
// at GET /metrics; every role registers its own series on `metrics.registry`. HTTP series are
// labelled by route template (never the raw path) so cardinality stays bounded.
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';

type HttpLabels = 'route' | 'method' | 'status';

/** What a response cache reports at scrape time (router/response-cache.ts). */
export interface CacheSize {
  readonly entries: number;
  readonly bytes: number;
  readonly evictions: number;
}

export class Metrics {
  readonly registry: Registry;
  // recorded on every request: series of hot-metrics.ts, not prom-client's own
  readonly httpRequests: HotCounter<HttpLabels>;
  readonly httpDuration: HotHistogram<HttpLabels>;
  readonly cacheLookups: HotCounter<'cache' | 'result'>;
  /** the response caches alive, by name (held weakly: a closed router's cache goes with it) */
  private readonly caches = new Map<string, Set<WeakRef<CacheSize>>>();

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    this.registry = new Registry();
    if (opts.defaultMetrics ?? true) {
      collectDefaultMetrics({ register: this.registry });
      // One event loop answers typeahead, routing and HTTP: its busy share of a core is what
      // says a node needs more of them (rate() of this counter; near 1, the loop is the limit).
      // Event-loop lag alone does not show it: a loop answering 10 µs requests back to back lags
      // little while it turns clients away.
      this.sampled('counter', [
        [
          'suggest_event_loop_busy_seconds_total',
          "Seconds this process's event loop spent running callbacks rather than waiting for events (rate(): the share of a core it uses; near 1 it limits throughput).",
          () => performance.eventLoopUtilization().active / 1000,
        ],
      ]);
    }
    this.httpRequests = new HotCounter('suggest_http_requests_total', 'HTTP requests by route template, method and status.', ['route', 'method', 'status'], this.registry);
    // Buckets start at 250µs: typeahead answers from memory in well under a millisecond.
    this.httpDuration = new HotHistogram(
      'suggest_http_request_duration_seconds',
      'HTTP request latency by route template, method and status.',
      ['route', 'method', 'status'],
      [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      this.registry,
    );
    this.cacheLookups = new HotCounter('suggest_cache_lookups_total', 'Cache lookups by cache and result (hit, miss); the hit ratio is hit / (hit + miss).', ['cache', 'result'], this.registry);
    const live = (): [string, CacheSize[]][] => this.liveCaches();
    const sum = (caches: CacheSize[], field: 'entries' | 'bytes') => caches.reduce((n, c) => n + c[field], 0);
    new Gauge({
      name: 'suggest_response_cache_entries',
      help: 'Rendered answers held by each response cache.',
      labelNames: ['cache'],
      registers: [this.registry],
      collect() {
        for (const [cache, caches] of live()) this.set({ cache }, sum(caches, 'entries'));
      },
    });
    new Gauge({
      name: 'suggest_response_cache_bytes',
      help: 'Estimated memory of the keys and bodies held by each response cache (bounded by SUGGEST_RESPONSE_CACHE_MB).',
      labelNames: ['cache'],
      registers: [this.registry],
      collect() {
        for (const [cache, caches] of live()) this.set({ cache }, sum(caches, 'bytes'));
      },
    });
    // what each cache object has evicted so far was counted: a cache gone since keeps its share
    const counted = new WeakMap<CacheSize, number>();
    new Counter({
      name: 'suggest_response_cache_evictions_total',
      help: 'Answers each response cache let go to stay within its memory bound.',
      labelNames: ['cache'],
      registers: [this.registry],
      collect() {
        for (const [cache, caches] of live()) {
          let grew = 0;
          for (const c of caches) {
            grew += c.evictions - (counted.get(c) ?? 0);
            counted.set(c, c.evictions);
          }
          this.inc({ cache }, grew);
        }
      },
    });
  }

  /** The hit and miss counters of cache `name` (`suggest_cache_lookups_total{cache=name}`). */
  cacheLookupsOf(name: string): { hit: { inc(): void }; miss: { inc(): void } } {
    return { hit: this.cacheLookups.labels(name, 'hit'), miss: this.cacheLookups.labels(name, 'miss') };
  }

  /** Reports `cache` under `name` at every scrape while it is alive. */
  cacheSize(name: string, cache: CacheSize): void {
    let refs = this.caches.get(name);
    if (refs === undefined) this.caches.set(name, (refs = new Set()));
    refs.add(new WeakRef(cache));
  }

  /** The caches alive, by name (references to collected ones are dropped). */
  private liveCaches(): [string, CacheSize[]][] {
    return [...this.caches].map(([name, refs]) => {
      const caches: CacheSize[] = [];
      for (const ref of refs) {
        const cache = ref.deref();
        if (cache === undefined) refs.delete(ref);
        else caches.push(cache);
      }
      return [name, caches];
    });
  }

  /**
   * Series read at scrape time, registered once per registry: gauges from `read`, counters from a
   * running total `read` returns (each scrape adds what it grew by).
   */
  sampled(kind: 'gauge' | 'counter', series: readonly (readonly [name: string, help: string, read: () => number])[]): void {
    for (const [name, help, read] of series) {
      if (this.registry.getSingleMetric(name) !== undefined) continue;
      if (kind === 'gauge') {
        new Gauge({
          name,
          help,
          registers: [this.registry],
          collect() {
            this.set(read());
          },
        });
        continue;
      }
      let counted = 0;
      new Counter({
        name,
        help,
        registers: [this.registry],
        collect() {
          const now = read();
          this.inc(now - counted);
          counted = now;
        },
      });
    }
  }

  /**
   * A gauge with labels, read at scrape time: `read` gives every series now (label values and
   * value); series it no longer gives are dropped (a partition that moved away, say).
   */
  labelledGauge<L extends string>(name: string, help: string, labelNames: readonly L[], read: () => Iterable<readonly [labels: Record<L, string>, value: number]>): void {
    if (this.registry.getSingleMetric(name) !== undefined) return;
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [labels, value] of read()) this.set(labels as Partial<Record<L, string | number>>, value);
      },
    });
  }

  /**
   * A counter with labels, read at scrape time from running totals `read` gives per series (each
   * scrape adds what a series grew by).
   */
  labelledCounter<L extends string>(name: string, help: string, labelNames: readonly L[], read: () => Iterable<readonly [labels: Record<L, string>, total: number]>): void {
    if (this.registry.getSingleMetric(name) !== undefined) return;
    const counted = new Map<string, number>();
    new Counter<L>({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect() {
        for (const [labels, total] of read()) {
          const key = labelNames.map((l) => labels[l]).join('\0');
          const grew = total - (counted.get(key) ?? 0);
          if (grew > 0) this.inc(labels as Partial<Record<L, string | number>>, grew);
          else if (!counted.has(key)) this.inc(labels as Partial<Record<L, string | number>>, 0);
          counted.set(key, total);
        }
      },
    });
  }

  /** Text exposition format for a scrape. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

/**
 * `make(registry)`, called once per registry: series a component registers itself (several
 * instances of it may share a registry, as tests do) are created at its first instance only.
 */
export function perRegistry<T>(make: (registry: Registry) => T): (registry: Registry) => T {
  const made = new WeakMap<Registry, T>();
  return (registry) => {
    let series = made.get(registry);
    if (series === undefined) made.set(registry, (series = make(registry)));
    return series;
  };
}

/** The registry of this process. */
export const metrics = new Metrics();
