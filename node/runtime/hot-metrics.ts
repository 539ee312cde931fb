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

abstract class HotMetric<L extends string, C> {
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
  abstract reset(): void;

  protected each(): Iterable<{ labels: Record<L, string>; child: C }> {
    return this.children.values();
  }

  /** Series are printed once recorded to, and again after a reset only once recorded to again (as prom-client does). */
  get(): Promise<MetricData> {
    const values: MetricValue[] = [];
    for (const { labels, child } of this.children.values()) if ((child as { live: boolean }).live) values.push(...this.values(labels, child));
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' });
  }
}

export interface HotCounterSeries {
  inc(by?: number): void;
}

class CounterSeries implements HotCounterSeries {
  value = 0;
  live = false;
  inc(by = 1): void {
    this.value += by;
    this.live = true;
  }
}

export class HotCounter<L extends string> extends HotMetric<L, HotCounterSeries> {
  protected readonly type = 'counter';
  protected create(): HotCounterSeries {
    return new CounterSeries();
  }
  protected values(labels: Record<L, string>, child: HotCounterSeries): MetricValue[] {
    return [{ labels, value: (child as CounterSeries).value }];
  }
  reset(): void {
    for (const { child } of this.each()) {
      (child as CounterSeries).value = 0;
      (child as CounterSeries).live = false;
    }
  }
}

export interface HotHistogramSeries {
  observe(value: number): void;
}

class HistogramSeries implements HotHistogramSeries {
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
}

export class HotHistogram<L extends string> extends HotMetric<L, HotHistogramSeries> {
  protected readonly type = 'histogram';
  private readonly bounds: Float64Array;

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
    this.bounds = Float64Array.from([...buckets].sort((a, b) => a - b));
  }

  protected create(): HotHistogramSeries {
    return new HistogramSeries(this.bounds);
  }

  protected values(labels: Record<L, string>, child: HotHistogramSeries): MetricValue[] {
    const s = child as HistogramSeries;
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

  reset(): void {
    for (const { child } of this.each()) {
      const s = child as HistogramSeries;
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
      s.live = false;
    }
  }
}
