// Steady document writes against a running service over HTTP, for placement tests and the
// settle benchmark: `concurrency` writers each POST batches to indexes round-robin, and every
// acknowledged (200) document id is remembered, so the caller can prove afterwards that none
// was lost. Failures are counted with their status and detail, and each write's latency is kept.
import { percentile as nearestRank } from '../load/latency-stats.js';

export interface WriteLoadOptions {
  urls: string[];
  key: string;
  indexes: string[];
  /** documents per request (default 10) */
  batch?: number;
  /** writers in parallel (default 2) */
  concurrency?: number;
  /** id prefix, so several runs can write the same indexes */
  prefix?: string;
}

export interface WriteFailure {
  at: number;
  index: string;
  status: number;
  detail: string;
}

export class WriteLoad {
  /** acknowledged document ids per index */
  readonly acknowledged = new Map<string, Set<string>>();
  readonly failures: WriteFailure[] = [];
  /** latency of each acknowledged write, ms, in completion order, with its start time */
  readonly latencies: { at: number; ms: number }[] = [];
  private running = false;
  private loops: Promise<void>[] = [];
  private seq = 0;

  constructor(private readonly opts: WriteLoadOptions) {
    for (const index of opts.indexes) this.acknowledged.set(index, new Set());
  }

  get acknowledgedCount(): number {
    let n = 0;
    for (const s of this.acknowledged.values()) n += s.size;
    return n;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    const concurrency = this.opts.concurrency ?? 2;
    for (let w = 0; w < concurrency; w++) this.loops.push(this.loop(w));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Writes `count` documents (spread over the indexes) as fast as one writer can, then returns. */
  async fill(count: number): Promise<void> {
    const batch = Math.max(this.opts.batch ?? 10, 100);
    for (let written = 0; written < count; written += batch) {
      const index = this.opts.indexes[(written / batch) % this.opts.indexes.length]!;
      await this.write(0, index, Math.min(batch, count - written));
    }
  }

  private async loop(w: number): Promise<void> {
    let turn = w;
    while (this.running) {
      const index = this.opts.indexes[turn++ % this.opts.indexes.length]!;
      await this.write(w, index, this.opts.batch ?? 10);
    }
  }

  private async write(w: number, index: string, n: number): Promise<void> {
    const url = this.opts.urls[w % this.opts.urls.length]!;
    const start = this.seq;
    this.seq += n;
    const prefix = this.opts.prefix ?? 'w';
    const documents = Array.from({ length: n }, (_, i) => ({
      id: `${prefix}-${start + i}`,
      title: `Placement document ${start + i}`,
      desc: 'written while the cluster changes shape',
      manufacturer: ['Acme', 'Globex', 'Initech'][(start + i) % 3]!,
      raw: { category: 'test', price: (start + i) % 100 },
    }));
    const began = Date.now();
    try {
      const res = await fetch(`${url}/v1/indexes/${index}/documents`, {
        method: 'POST',
        headers: { 'x-api-key': this.opts.key, 'content-type': 'application/json' },
        body: JSON.stringify({ documents }),
      });
      const text = await res.text();
      if (res.status === 200) {
        const ids = this.acknowledged.get(index)!;
        for (const d of documents) ids.add(d.id);
        this.latencies.push({ at: began, ms: Date.now() - began });
      } else {
        this.failures.push({ at: began, index, status: res.status, detail: text.slice(0, 300) });
      }
    } catch (err) {
      this.failures.push({ at: began, index, status: 0, detail: String((err as Error)?.message ?? err) });
    }
  }
}

/** Percentile of a list of numbers (nearest rank); NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  return nearestRank([...values].sort((a, b) => a - b), p);
}

/** Ids missing from each index: every acknowledged id is listed back through the documents route. */
export async function missingDocuments(url: string, key: string, acknowledged: Map<string, Set<string>>): Promise<{ index: string; missing: string[]; total: number }[]> {
  const out: { index: string; missing: string[]; total: number }[] = [];
  for (const [index, ids] of acknowledged) {
    const seen = new Set<string>();
    let total: number;
    for (let page = 1; ; page++) {
      const res = await fetch(`${url}/v1/indexes/${index}/documents?page=${page}&page_size=100`, { headers: { 'x-api-key': key } });
      if (res.status !== 200) throw new Error(`listing ${index} page ${page}: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as { items: { id: string }[]; total: number };
      total = body.total;
      for (const d of body.items) seen.add(d.id);
      if (body.items.length < 100) break;
    }
    out.push({ index, missing: [...ids].filter((id) => !seen.has(id)), total });
  }
  return out;
}
