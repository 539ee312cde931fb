// Counters and histograms for the per-request path. prom-client turns the labels into a hash key
// on every `inc` and `observe`, even through a child from `labels()`: a cached typeahead answer
// spends some 13 µs of CPU in all, and prom-client's share of it was about a fifth (BENCHMARKS.md
// "The load generator was the ceiling"). Here a child is a plain record found once by its label
// values; recording is an addition and, for a histogram, a walk over its bounds. The series are
// registered on a prom-client Registry as metrics of its own shape, formatted by it at a scrape
// like any other.
import type { Registry } from 'prom-client';

interface MetricValue {
  labels: Record<string, string | number>;
  value: number;
  metricName?: string;
}

interface MetricData {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: MetricValue[];
  aggregator: 'sum';
}

abstract class HotMetric<L extends string, C extends Series> {
  private readonly children = new Map<string, { labels: Record<L, string>; child: C }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    // prom-client's registry takes any object with its metrics' name, get() and reset()
    registry.registerMetric(this as never);
  }

  /** The series of these label values, in the order of the label names. */
  labels(...values: string[]): C {
    const key = values.join('\0');
    let entry = this.children.get(key);
    if (entry === undefined) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.name} takes ${this.labelNames.length} label values, got ${values.length}`);
      const labels = Object.fromEntries(this.labelNames.map((n, i) => [n, values[i]])) as Record<L, string>;
      entry = { labels, child: this.create() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  protected abstract create(): C;
  protected abstract values(labels: Record<L, string>, child: C): MetricValue[];
  protected abstract readonly type: MetricData['type'];

  /** Series are printed once recorded to, and again after a reset only once recorded to again (as prom-client does). */
  get(): Promise<MetricData> {
    const values: MetricValue[] = [];
    for (const { labels, child } of this.children.values()) if (child.live) values.push(...this.values(labels, child));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' });
  }

  reset(): void {
    for (const { child } of this.children.values()) child.reset();
  }
}

/** What every series of this module has: whether it was recorded to since the last reset. */
interface Series {
  live: boolean;
  reset(): void;
}

export interface HotCounterSeries {
  inc(by?: number): void;
}

class CounterSeries implements HotCounterSeries, Series {
  value = 0;
  live = false;
  inc(by = 1): void {
    this.value += by;
    this.live = true;
  }
  reset(): void {
    this.value = 0;
    this.live = false;
  }
}

export class HotCounter<L extends string> extends HotMetric<L, CounterSeries> {
  protected readonly type = 'counter';
  protected create(): CounterSeries {
    return new CounterSeries();
  }
  protected values(labels: Record<L, string>, child: CounterSeries): MetricValue[] {
    return [{ labels, value: child.value }];
  }
}

export interface HotHistogramSeries {
  observe(value: number): void;
}

class HistogramSeries implements HotHistogramSeries, Series {
  /** observations at or below each bound, not cumulated (the last: above every bound) */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  live = false;

  constructor(private readonly bounds: Float64Array) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    let i = 0;
    while (i < this.bounds.length && value > (this.bounds[i] as number)) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
    this.live = true;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
    this.live = false;
  }
}

export class HotHistogram<L extends string> extends HotMetric<L, HistogramSeries> {
  protected readonly type = 'histogram';
  private readonly bounds: Float64Array;

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
    this.bounds = Float64Array.from([...buckets].sort((a, b) => a - b));
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  protected values(labels: Record<L, string>, s: HistogramSeries): MetricValue[] {
    const out: MetricValue[] = [];
    let cumulated = 0;
    this.bounds.forEach((le, i) => {
      cumulated += s.counts[i] as number;
      out.push({ metricName: `${this.name}_bucket`, labels: { le, ...labels }, value: cumulated });
    });
    out.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: s.count });
    out.push({ metricName: `${this.name}_sum`, labels, value: s.sum });
    out.push({ metricName: `${this.name}_count`, labels, value: s.count });
    return out;
  }
}
