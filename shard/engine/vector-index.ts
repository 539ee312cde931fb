// Nearest-neighbour search over one segment's document vectors, behind one interface with three
// implementations: an exact scan (the reference, and what answers while a graph is being built)
// and HNSW graphs from the two libraries the service offers, `hnswlib-node` (the default) and
// `usearch`. Vectors are L2-normalized, so similarity is the inner product (cosine) and both
// libraries run in their inner-product space (distance = 1 - similarity).
//
// Graphs are built incrementally: `buildUntil(deadline)` adds vectors until the deadline, so the
// owner can build a large graph in small slices between queries (see vector-graphs.ts). Ordinals
// (the document's position in its segment) are the graph labels.
import { copyFileSync, existsSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import hnswlib from 'hnswlib-node';
import { Index as UsearchIndex, MetricKind, ScalarKind } from 'usearch';

export type VectorBackend = 'hnswlib' | 'usearch';
export const VECTOR_BACKENDS: readonly VectorBackend[] = ['hnswlib', 'usearch'];
/**
 * The backend of requests that name none: `SUGGEST_VECTOR_BACKEND` when it names one (read here,
 * so the query threads, which inherit the environment, agree with the event loop), else hnswlib.
 */
export const DEFAULT_VECTOR_BACKEND: VectorBackend = VECTOR_BACKENDS.find((b) => b === process.env.SUGGEST_VECTOR_BACKEND) ?? 'hnswlib';

/** Nearest documents, best first: ordinals and cosine similarities. */
export interface VectorHits {
  ords: number[];
  scores: number[];
}

export interface VectorIndex {
  readonly kind: 'exact' | VectorBackend;
  /** vectors in the index */
  readonly size: number;
  /** vectors the index can search so far */
  readonly built: number;
  readonly ready: boolean;
  /** Adds vectors until `deadline` (a `performance.now()` time); true once every vector is in. */
  buildUntil(deadline: number): boolean;
  /**
   * The k most similar accepted documents (fewer when fewer are accepted). `ef`: the graph's
   * candidate list for this search (default: the index's efSearch; at least k).
   */
  search(query: Float32Array, k: number, accept?: (ord: number) => boolean, ef?: number): VectorHits;
  /** memory held by the index itself (the segment's vectors excluded for the exact scan) */
  bytes(): number;
}

/** Graph parameters shared by both libraries, so that the comparison is like for like. */
export interface GraphParams {
  /** links per node (default 16) */
  m?: number;
  /** candidate list while building (default 200) */
  efConstruction?: number;
  /** candidate list while searching, at least k (default 256) */
  efSearch?: number;
}

// Chosen on the Best Buy catalogue with the built-in embedder (many near-duplicate titles, short
// queries far from every document): with ef 64 some searches stall in a local region (recall@10
// 0.63 hnswlib / 0.76 usearch over 10 queries), 128 gives 0.79 / 0.83, 256 gives 0.92 / 0.92 at
// under 1 ms per 3k-document segment. Queries that stall are those with low similarity to every
// document (0.2), where the vector signal is weak anyway.
const GRAPH_DEFAULTS: Required<GraphParams> = { m: 16, efConstruction: 200, efSearch: 256 };

/** Dot product of row `row` of `matrix` with `q` (unrolled: this is the exact scan's inner loop). */
export function dotRow(matrix: Float32Array, row: number, q: Float32Array, dims: number): number {
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = row * dims;
  let j = 0;
  const end = dims - 3;
  for (; j < end; j += 4, i += 4) {
    s0 += (matrix[i] as number) * (q[j] as number);
    s1 += (matrix[i + 1] as number) * (q[j + 1] as number);
    s2 += (matrix[i + 2] as number) * (q[j + 2] as number);
    s3 += (matrix[i + 3] as number) * (q[j + 3] as number);
  }
  for (; j < dims; j++, i++) s0 += (matrix[i] as number) * (q[j] as number);
  return s0 + s1 + s2 + s3;
}

/** Keeps the k best (ord, score) pairs seen; ties keep the lower ordinal. */
export class TopK {
  readonly ords: number[] = [];
  readonly scores: number[] = [];
  constructor(private readonly k: number) {}

  /** the score a new entry must beat */
  get floor(): number {
    return this.ords.length < this.k ? -Infinity : (this.scores[this.scores.length - 1] as number);
  }

  push(ord: number, score: number): void {
    if (this.k <= 0) return;
    const n = this.ords.length;
    if (n >= this.k && score <= (this.scores[n - 1] as number)) return;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.scores[mid] as number) >= score) lo = mid + 1;
      else hi = mid;
    }
    this.ords.splice(lo, 0, ord);
    this.scores.splice(lo, 0, score);
    if (this.ords.length > this.k) {
      this.ords.pop();
      this.scores.pop();
    }
  }

  hits(): VectorHits {
    return { ords: this.ords, scores: this.scores };
  }
}

/** Brute force over the segment's vector matrix: exact, O(n·d) per query. */
export class ExactVectorIndex implements VectorIndex {
  readonly kind = 'exact' as const;
  readonly size: number;
  readonly ready = true;

  constructor(
    private readonly vectors: Float32Array,
    private readonly dims: number,
  ) {
    this.size = dims === 0 ? 0 : vectors.length / dims;
  }

  get built(): number {
    return this.size;
  }

  buildUntil(): boolean {
    return true;
  }

  search(query: Float32Array, k: number, accept?: (ord: number) => boolean): VectorHits {
    const top = new TopK(k);
    for (let ord = 0; ord < this.size; ord++) {
      if (accept !== undefined && !accept(ord)) continue;
      const s = dotRow(this.vectors, ord, query, this.dims);
      if (s > top.floor) top.push(ord, s);
    }
    return top.hits();
  }

  bytes(): number {
    return 0;
  }
}

/** Shared incremental-build bookkeeping of the two graph wrappers. */
export abstract class GraphIndex implements VectorIndex {
  abstract readonly kind: VectorBackend;
  readonly size: number;
  protected next = 0;
  protected readonly params: Required<GraphParams>;

  constructor(
    protected readonly vectors: Float32Array,
    protected readonly dims: number,
    params: GraphParams,
  ) {
    this.size = dims === 0 ? 0 : vectors.length / dims;
    this.params = { ...GRAPH_DEFAULTS, ...params };
  }

  get built(): number {
    return this.next;
  }

  get ready(): boolean {
    return this.next >= this.size;
  }

  buildUntil(deadline: number): boolean {
    while (this.next < this.size) {
      const batch = Math.min(16, this.size - this.next);
      this.addRange(this.next, this.next + batch);
      this.next += batch;
      if (performance.now() >= deadline) break;
    }
    return this.ready;
  }

  /** Writes the complete graph to `file`, in the library's own format. */
  abstract save(file: string): void;
  /** Like `save`, off the event loop where the library can (hnswlib); at once otherwise. */
  saveAsync(file: string): Promise<void> {
    return new Promise((resolve) => {
      this.save(file);
      resolve();
    });
  }
  /**
   * Reads a graph `save` wrote over these same vectors: true when it holds every vector (the
   * index is then complete); false or an error leaves an index that must not be used.
   */
  abstract load(file: string): boolean;
  /**
   * Like `load`, but where the library can, the file is mapped instead of read: every thread and
   * process that views one file shares its pages (the index is then read-only, and the file must
   * stay until the index is dropped; Linux keeps a removed file's mapped pages).
   */
  view(file: string): boolean {
    return this.load(file);
  }

  /** Like `view`, reading off the event loop where the library can (hnswlib); at once otherwise. */
  viewAsync(file: string): Promise<boolean> {
    try {
      return Promise.resolve(this.view(file));
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /**
   * Takes a complete graph another thread wrote to `file` (which must stay until the index is
   * dropped) without reading it where the library allows (hnswlib): it is read on the first
   * `readDeferred`, so an owner whose searches all run on other threads never holds a copy.
   * Elsewhere it is `view`.
   */
  defer(file: string): boolean {
    return this.view(file);
  }

  /** Reads a deferred file (true: nothing deferred, or read; false: the file does not fit, the index must not be used). */
  readDeferred(): boolean {
    return true;
  }

  /** After a successful `load`: nothing is left to build. */
  protected loaded(): true {
    this.next = this.size;
    return true;
  }

  protected abstract addRange(from: number, to: number): void;
  abstract search(query: Float32Array, k: number, accept?: (ord: number) => boolean, ef?: number): VectorHits;
  abstract bytes(): number;
}

export class HnswlibVectorIndex extends GraphIndex {
  readonly kind = 'hnswlib' as const;
  private graph: hnswlib.HierarchicalNSW;

  constructor(vectors: Float32Array, dims: number, params: GraphParams = {}) {
    super(vectors, dims, params);
    this.graph = new hnswlib.HierarchicalNSW('ip', Math.max(1, dims));
    // fixed seed: the same segment always gets the same graph
    this.graph.initIndex({ maxElements: Math.max(1, this.size), m: this.params.m, efConstruction: this.params.efConstruction, randomSeed: 100 });
    this.graph.setEf(this.params.efSearch);
  }

  /** the complete graph's file, until it is read (`defer`) */
  private deferred: string | null = null;

  // The binding reports a failed write by nothing at all: a file that is not there afterwards is
  // the failure.
  save(file: string): void {
    if (this.deferred !== null) copyFileSync(this.deferred, file);
    else this.graph.writeIndexSync(file);
    written(file);
  }

  override async saveAsync(file: string): Promise<void> {
    if (this.deferred !== null) await copyFile(this.deferred, file);
    else await this.graph.writeIndex(file);
    written(file);
  }

  override defer(file: string): boolean {
    if (!existsSync(file)) return false;
    this.deferred = file;
    return this.loaded();
  }

  override readDeferred(): boolean {
    const file = this.deferred;
    if (file === null) return true;
    this.deferred = null;
    try {
      if (this.load(file)) return true;
    } catch {
      // unreadable: as a file that does not fit
    }
    this.next = 0;
    return false;
  }

  load(file: string): boolean {
    // read into a fresh index: a read that fails into one already initialized leaves it to crash
    // the process when it is freed (hnswlib-node 3.0)
    const read = new hnswlib.HierarchicalNSW('ip', Math.max(1, this.dims));
    read.readIndexSync(file);
    return this.take(read);
  }

  /** Reads on a libuv thread: a 100k-document graph is some 100 MB, too much to read on the event loop. */
  override async viewAsync(file: string): Promise<boolean> {
    const read = new hnswlib.HierarchicalNSW('ip', Math.max(1, this.dims));
    await read.readIndex(file);
    return this.take(read);
  }

  private take(read: hnswlib.HierarchicalNSW): boolean {
    if (read.getCurrentCount() !== this.size || read.getNumDimensions() !== Math.max(1, this.dims)) return false;
    read.setEf(this.params.efSearch);
    this.graph = read;
    return this.loaded();
  }

  protected addRange(from: number, to: number): void {
    const d = this.dims;
    // the binding takes plain arrays only
    for (let ord = from; ord < to; ord++) this.graph.addPoint(Array.from(this.vectors.subarray(ord * d, ord * d + d)), ord);
  }

  search(query: Float32Array, k: number, accept?: (ord: number) => boolean, ef?: number): VectorHits {
    if (this.next === 0 || k <= 0 || !this.readDeferred()) return { ords: [], scores: [] };
    this.graph.setEf(Math.max(ef ?? this.params.efSearch, k));
    const r = this.graph.searchKnn(Array.from(query), Math.min(k, this.next), accept);
    // hnswlib returns the nearest first; ties in distance keep its order
    return { ords: r.neighbors, scores: r.distances.map((x) => 1 - x) };
  }

  bytes(): number {
    if (this.deferred !== null) return 0;
    // per element: the vector, level-0 links (2M ids + count), label; upper levels are ~1/M of that
    const perElement = this.dims * 4 + (2 * this.params.m + 1) * 4 + 8;
    return Math.round(this.next * perElement * (1 + 1 / this.params.m));
  }
}

export class UsearchVectorIndex extends GraphIndex {
  readonly kind = 'usearch' as const;
  private readonly graph: UsearchIndex;
  private mapped = false;

  constructor(vectors: Float32Array, dims: number, params: GraphParams = {}) {
    super(vectors, dims, params);
    this.graph = new UsearchIndex({
      dimensions: Math.max(1, dims),
      metric: MetricKind.IP,
      quantization: ScalarKind.F32,
      connectivity: this.params.m,
      expansion_add: this.params.efConstruction,
      expansion_search: this.params.efSearch,
      multi: false,
    });
  }

  save(file: string): void {
    this.graph.save(file);
  }

  load(file: string): boolean {
    this.graph.load(file);
    return this.fits() && this.loaded();
  }

  override view(file: string): boolean {
    this.graph.view(file);
    this.mapped = true;
    return this.fits() && this.loaded();
  }

  private fits(): boolean {
    return this.graph.size() === this.size && this.graph.dimensions() === Math.max(1, this.dims);
  }

  protected addRange(from: number, to: number): void {
    const keys = new BigUint64Array(to - from);
    for (let i = 0; i < keys.length; i++) keys[i] = BigInt(from + i);
    // one thread: the node's other work shares the cores
    this.graph.add(keys, this.vectors.subarray(from * this.dims, to * this.dims), 1);
  }

  search(query: Float32Array, k: number, accept?: (ord: number) => boolean): VectorHits {
    // (the binding fixes expansion_search at construction: a per-search ef is not available)
    if (this.next === 0 || k <= 0) return { ords: [], scores: [] };
    // usearch's JavaScript binding has no filter callback: ask for more until enough pass
    let fetch = accept === undefined ? k : Math.min(this.next, k * 2);
    for (;;) {
      const r = this.graph.search(query, Math.min(fetch, this.next), 1);
      const ords: number[] = [];
      const scores: number[] = [];
      for (let i = 0; i < r.keys.length && ords.length < k; i++) {
        const ord = Number(r.keys[i]);
        if (accept !== undefined && !accept(ord)) continue;
        ords.push(ord);
        scores.push(1 - (r.distances[i] as number));
      }
      if (ords.length >= k || fetch >= this.next) return { ords, scores };
      fetch = Math.min(this.next, fetch * 4);
    }
  }

  bytes(): number {
    // a mapped file is the page cache's, shared by every viewer
    if (this.mapped) return 0;
    // vectors plus a level-0 neighbour list of 2M u32 slots, upper levels ~1/M of that
    const perElement = this.dims * 4 + 2 * this.params.m * 4 + 16;
    return Math.round(this.next * perElement * (1 + 1 / this.params.m));
  }
}

function written(file: string): void {
  if (!existsSync(file)) throw new Error(`the graph was not written to ${file}`);
}

/** A fresh (empty, not yet built) graph of the named library over a segment's vectors. */
export function createGraph(backend: VectorBackend, vectors: Float32Array, dims: number, params: GraphParams = {}): GraphIndex {
  return backend === 'usearch' ? new UsearchVectorIndex(vectors, dims, params) : new HnswlibVectorIndex(vectors, dims, params);
}
