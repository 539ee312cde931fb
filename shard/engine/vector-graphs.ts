// The ANN graphs of an engine's segments, one per (segment, library), built lazily: the first
// vector query on a segment asks for its graph, which is then built on another thread when the
// owner was given a `GraphBuilder` (the node's graph thread: it writes the graph to a file the
// owner holds while the segment stays), otherwise in small time slices on the owning thread
// (timers, never more than `sliceMs` at a time), so a query never waits for a build; until the
// graph is complete the segment is answered by an exact scan. Small segments never get a graph:
// scanning them is cheaper than searching one. Graphs are derived data, not part of the engine
// snapshot, and a segment that leaves the engine (merged, compacted) takes its graphs (and
// files) with it. Complete graphs can be written beside a snapshot (`save`) and read back with it
// (`load`), so a restart does not rebuild them; query threads `adopt` the files their owner wrote.
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Segment } from './segment.js';
import { ExactVectorIndex, VECTOR_BACKENDS, createGraph, type GraphIndex, type GraphParams, type VectorBackend, type VectorIndex } from './vector-index.js';

export interface VectorGraphOptions {
  /** segments with fewer documents are always scanned (default 2048) */
  exactBelow?: number;
  /** longest build slice in ms (default 4) */
  sliceMs?: number;
  /**
   * 'background' (default): slices on timers; 'sync': build completely on first use (tests,
   * tools); 'external': never build, only graphs handed in by `adopt` are searched (the mirrors of
   * query threads, which read graphs their owner built)
   */
  build?: BuildMode;
  graph?: GraphParams;
}

export type BuildMode = 'background' | 'sync' | 'external';

/**
 * Builds the graph of a segment's vectors on another thread and writes it (`GraphIndex.save`) to
 * a file it returns, which the owner then holds: it reads (or maps) the file, hands it to query
 * threads (`fileOf`) and removes it when the segment leaves. Built from the same vectors in the
 * same order as a build in slices, so the graph is the same.
 */
export interface GraphBuilder {
  buildGraph(seg: Segment, backend: VectorBackend, params: GraphParams): Promise<string>;
  /** A fresh path beside the files it writes, for a graph file read from elsewhere that the owner then holds the same way. */
  keepFile?(backend: VectorBackend): Promise<string>;
}

/** What a query searched a segment with. */
export interface SegmentVectorIndex {
  index: VectorIndex;
  /** 'ann' when the graph of the requested library answered, 'exact' otherwise */
  method: 'ann' | 'exact';
}

export interface GraphStatus {
  backend: VectorBackend;
  /** every segment that needs a graph has a complete one */
  ready: boolean;
  /** vectors in graphs / vectors of the segments that need graphs */
  built: number;
  total: number;
  bytes: number;
}

const DEFAULTS = { exactBelow: 2048, sliceMs: 4, build: 'background' as BuildMode };

/** The manifest of saved graphs: a graph is read back only onto the very vectors it was built from. */
interface SavedGraph {
  /** position of the segment in the engine's segment list */
  segment: number;
  backend: VectorBackend;
  docs: number;
  dims: number;
  /** sha1 of the segment's vectors, and of the graph file */
  vectors: string;
  file: string;
  sha1: string;
}
const MANIFEST = 'graphs.json';
const MANIFEST_VERSION = 1;

export class VectorGraphs {
  private readonly opts: { exactBelow: number; sliceMs: number; build: BuildMode; graph: GraphParams };
  private readonly graphs = new Map<Segment, Map<VectorBackend, GraphIndex>>();
  private readonly exact = new WeakMap<Segment, ExactVectorIndex>();
  private readonly queue: VectorIndex[] = [];
  private timer: NodeJS.Timeout | null = null;
  private waiters: (() => void)[] = [];
  private closed = false;
  private builder: GraphBuilder | null = null;
  /** builder's files are read only when this thread first searches the graph (hnswlib: `GraphIndex.defer`) */
  private deferReads = false;
  /** graphs built by the builder, and those it failed (then built in slices here) */
  private readonly elsewhere = { built: 0, failed: 0 };
  /** the files the builder wrote the complete graphs to, kept while their segment is here */
  private readonly files = new Map<GraphIndex, string>();

  constructor(options: VectorGraphOptions = {}) {
    this.opts = { ...DEFAULTS, graph: {}, ...stripUndefined(options) };
  }

  /**
   * Background builds from now on go to `builder` (null: slices on this thread). A build the
   * builder fails is done in slices here instead. With `deferReads` (an owner whose vector
   * searches run on query threads), an hnswlib file is read here only if this thread searches it.
   */
  useBuilder(builder: GraphBuilder | null, opts: { deferReads?: boolean } = {}): void {
    this.builder = builder;
    this.deferReads = opts.deferReads === true;
  }

  /** Graphs the builder built, and those it failed. */
  get builtElsewhere(): { built: number; failed: number } {
    return { ...this.elsewhere };
  }

  /** The exact scan of a segment (always available). */
  exactFor(seg: Segment): ExactVectorIndex {
    let e = this.exact.get(seg);
    if (e === undefined) {
      e = new ExactVectorIndex(seg.vectors, seg.meta.vectorDims);
      this.exact.set(seg, e);
    }
    return e;
  }

  /** The index to search `seg` with: its graph when complete, else the exact scan (and the graph starts building). */
  indexFor(seg: Segment, backend: VectorBackend): SegmentVectorIndex {
    if (!this.needsGraph(seg)) return { index: this.exactFor(seg), method: 'exact' };
    const g = this.opts.build === 'external' ? this.complete(seg, backend) : this.graphOf(seg, backend);
    if (g?.ready === true) {
      if (g.readDeferred()) return { index: g, method: 'ann' };
      // a deferred file that turned out not to fit: scanned until it is built again
      if (this.opts.build !== 'external') this.failedElsewhere(seg, backend);
    }
    return { index: this.exactFor(seg), method: 'exact' };
  }

  /** Starts building the graphs of these segments (no-op for those that have them or need none). */
  prepare(segments: readonly Segment[], backend: VectorBackend): void {
    if (this.opts.build === 'external') return;
    for (const s of segments) if (this.needsGraph(s)) this.graphOf(s, backend);
  }

  /** The complete graph of `seg` for `backend`, or null. */
  complete(seg: Segment, backend: VectorBackend): GraphIndex | null {
    const g = this.graphs.get(seg)?.get(backend);
    return g !== undefined && g.ready ? g : null;
  }

  /**
   * Reads the graph another thread built over this same segment and wrote with `GraphIndex.save`
   * (false, leaving the exact scan, when the file is gone or does not fit the segment). With
   * `mapped`, a library that can maps the file instead (usearch): the threads that view one
   * file share its memory; the file must then stay while the segment is searched.
   */
  adopt(seg: Segment, backend: VectorBackend, file: string, mapped = false): boolean {
    if (!this.needsGraph(seg) || this.complete(seg, backend) !== null) return false;
    const g = createGraph(backend, seg.vectors, seg.meta.vectorDims, this.opts.graph);
    let ok: boolean;
    try {
      ok = mapped ? g.view(file) : g.load(file);
    } catch {
      ok = false;
    }
    if (!ok) return false;
    this.put(seg, backend, g);
    return true;
  }

  /**
   * `adopt` (not mapped) with the file read off the event loop where the library can (hnswlib).
   * With `held`, the file becomes the engine's as the builder's files are (see `buildElsewhere`):
   * removed with the segment, or at once when it is not taken, and an owner that defers its
   * reads does not read it.
   */
  async adoptAsync(seg: Segment, backend: VectorBackend, file: string, held = false): Promise<boolean> {
    let g: GraphIndex | null = null;
    if (this.needsGraph(seg) && this.complete(seg, backend) === null) {
      const read = createGraph(backend, seg.vectors, seg.meta.vectorDims, this.opts.graph);
      let ok: boolean;
      try {
        ok = held && this.deferReads ? read.defer(file) : await read.viewAsync(file);
      } catch {
        ok = false;
      }
      // not closed, nor given a graph of this segment meanwhile
      if (ok && !this.closed && this.complete(seg, backend) === null) g = read;
    }
    if (g === null) {
      if (held) rmSync(file, { force: true });
      return false;
    }
    this.put(seg, backend, g);
    if (held) this.files.set(g, file);
    return true;
  }

  /** Makes `g` the graph of `seg` for `backend` and wakes whoever waits for graphs. */
  private put(seg: Segment, backend: VectorBackend, g: GraphIndex): void {
    let m = this.graphs.get(seg);
    if (m === undefined) this.graphs.set(seg, (m = new Map()));
    m.set(backend, g);
    this.wake();
  }

  /**
   * The file the builder wrote the complete graph of `seg` to (`GraphIndex.save` format), or null.
   * It stays until the segment leaves the engine or the engine closes: readers that map it (usearch)
   * keep their mapping after it is removed.
   */
  fileOf(seg: Segment, backend: VectorBackend): string | null {
    const g = this.complete(seg, backend);
    return g === null ? null : (this.files.get(g) ?? null);
  }

  /** Forgets the graphs of segments that are no longer in the engine (and removes their files). */
  retain(segments: readonly Segment[]): void {
    const keep = new Set(segments);
    for (const seg of [...this.graphs.keys()]) {
      if (keep.has(seg)) continue;
      const dropped = this.graphs.get(seg);
      this.graphs.delete(seg);
      if (dropped === undefined) continue;
      for (const g of dropped.values()) {
        const at = this.queue.indexOf(g);
        if (at >= 0) this.queue.splice(at, 1);
        this.removeFile(g);
      }
    }
    this.wake();
  }

  private removeFile(g: GraphIndex): void {
    const file = this.files.get(g);
    if (file === undefined) return;
    this.files.delete(g);
    rmSync(file, { force: true });
  }

  status(segments: readonly Segment[], backend: VectorBackend): GraphStatus {
    let built = 0;
    let total = 0;
    let bytes = 0;
    for (const s of segments) {
      if (!this.needsGraph(s)) continue;
      total += s.docCount;
      const g = this.graphs.get(s)?.get(backend);
      if (g) {
        built += g.built;
        bytes += g.bytes();
      }
    }
    return { backend, ready: built === total, built, total, bytes };
  }

  /** Memory of every graph held, by library. */
  bytes(): Record<VectorBackend, number> {
    const out: Record<VectorBackend, number> = { hnswlib: 0, usearch: 0 };
    for (const m of this.graphs.values()) for (const [b, g] of m) out[b] += g.bytes();
    return out;
  }

  /** Resolves once the graphs of these segments for `backend` are complete (building them if needed). */
  whenReady(segments: readonly Segment[], backend: VectorBackend): Promise<void> {
    this.prepare(segments, backend);
    const done = () => segments.every((s) => !this.needsGraph(s) || this.graphs.get(s)?.get(backend)?.ready === true);
    if (done()) return Promise.resolve();
    return new Promise((resolve) => {
      const check = () => {
        if (done() || this.closed) resolve();
        else this.waiters.push(check);
      };
      this.waiters.push(check);
    });
  }

  /**
   * Writes the complete graphs of `segments` into the directory `dir` (replaced), with a manifest
   * that ties each to its segment's vectors. Returns the graphs written.
   */
  save(segments: readonly Segment[], dir: string): number {
    rmSync(dir, { recursive: true, force: true });
    const saved: SavedGraph[] = [];
    for (const { index, seg, backend, graph } of this.completeGraphs(segments)) {
      if (saved.length === 0) mkdirSync(dir, { recursive: true });
      const file = `${index}.${backend}`;
      graph.save(path.join(dir, file));
      saved.push({ segment: index, backend, docs: seg.docCount, dims: seg.meta.vectorDims, vectors: vectorsHash(seg), file, sha1: sha1(readFileSync(path.join(dir, file))) });
    }
    if (saved.length > 0) writeFileSync(path.join(dir, MANIFEST), JSON.stringify({ v: MANIFEST_VERSION, graphs: saved }));
    return saved.length;
  }

  /**
   * `save` for large engines: the files are written and read back off the event loop, which only
   * hashes, in slices (a 100k-document segment's vectors and graph are some hundreds of MB).
   */
  async saveAsync(segments: readonly Segment[], dir: string): Promise<number> {
    const todo = this.completeGraphs(segments);
    await rm(dir, { recursive: true, force: true });
    const saved: SavedGraph[] = [];
    for (const { index, seg, backend, graph } of todo) {
      if (saved.length === 0) await mkdir(dir, { recursive: true });
      const file = `${index}.${backend}`;
      await graph.saveAsync(path.join(dir, file));
      saved.push({ segment: index, backend, docs: seg.docCount, dims: seg.meta.vectorDims, vectors: await sha1InSlices(vectorBytes(seg)), file, sha1: await sha1OfFile(path.join(dir, file)) });
    }
    if (saved.length > 0) await writeFile(path.join(dir, MANIFEST), JSON.stringify({ v: MANIFEST_VERSION, graphs: saved }));
    return saved.length;
  }

  private completeGraphs(segments: readonly Segment[]): { index: number; seg: Segment; backend: VectorBackend; graph: GraphIndex }[] {
    const out: { index: number; seg: Segment; backend: VectorBackend; graph: GraphIndex }[] = [];
    segments.forEach((seg, index) => {
      for (const backend of VECTOR_BACKENDS) {
        const graph = this.complete(seg, backend);
        if (graph !== null) out.push({ index, seg, backend, graph });
      }
    });
    return out;
  }

  /**
   * Reads the graphs `save` wrote for these segments: each one only when its segment holds the
   * same vectors and its file is intact (anything else is left to be built as usual). Returns
   * the graphs read.
   */
  load(segments: readonly Segment[], dir: string): number {
    let manifest: string;
    try {
      manifest = readFileSync(path.join(dir, MANIFEST), 'utf8');
    } catch {
      return 0;
    }
    let read = 0;
    for (const { saved, seg } of this.fitting(segments, parseManifest(manifest))) {
      if (vectorsHash(seg) !== saved.vectors) continue;
      const file = path.join(dir, path.basename(saved.file));
      // the libraries trust their files: only one byte-identical to the one written is read
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        continue;
      }
      if (sha1(bytes) === saved.sha1 && this.adopt(seg, saved.backend, file)) read++;
    }
    return read;
  }

  /** `load` with its reads off the event loop and its hashing in slices (see `saveAsync`). */
  async loadAsync(segments: readonly Segment[], dir: string): Promise<number> {
    let manifest: string;
    try {
      manifest = await readFile(path.join(dir, MANIFEST), 'utf8');
    } catch {
      return 0;
    }
    let read = 0;
    for (const { saved, seg } of this.fitting(segments, parseManifest(manifest))) {
      if ((await sha1InSlices(vectorBytes(seg))) !== saved.vectors) continue;
      const file = path.join(dir, path.basename(saved.file));
      let hash: string;
      try {
        hash = await sha1OfFile(file);
      } catch {
        continue;
      }
      if (hash !== saved.sha1 || this.closed) continue;
      // with a builder, the file moves beside the builder's and is held as one of them: an owner
      // that defers its reads (its searches run on query threads) never reads it, and the threads
      // are handed it as it is
      const kept = this.builder?.keepFile ? await keep(file, await this.builder.keepFile(saved.backend)) : null;
      if (await this.adoptAsync(seg, saved.backend, kept ?? file, kept !== null)) read++;
    }
    return read;
  }

  /** The manifest's graphs that fit a segment of `segments` which has no such graph yet (vectors not compared). */
  private fitting(segments: readonly Segment[], manifest: SavedGraph[]): { saved: SavedGraph; seg: Segment }[] {
    const out: { saved: SavedGraph; seg: Segment }[] = [];
    for (const saved of manifest) {
      const seg = segments[saved.segment];
      if (seg === undefined || !VECTOR_BACKENDS.includes(saved.backend) || !this.needsGraph(seg) || this.graphs.get(seg)?.has(saved.backend)) continue;
      if (seg.docCount !== saved.docs || seg.meta.vectorDims !== saved.dims) continue;
      out.push({ saved, seg });
    }
    return out;
  }

  /** Stops building (the engine is being dropped) and removes the builder's files. */
  close(): void {
    this.closed = true;
    for (const g of [...this.files.keys()]) this.removeFile(g);
    this.queue.length = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.wake();
  }

  private needsGraph(seg: Segment): boolean {
    return seg.meta.vectorDims > 0 && seg.docCount >= this.opts.exactBelow;
  }

  private graphOf(seg: Segment, backend: VectorBackend): GraphIndex {
    let m = this.graphs.get(seg);
    if (m === undefined) {
      m = new Map();
      this.graphs.set(seg, m);
    }
    let g = m.get(backend);
    if (g === undefined) {
      g = createGraph(backend, seg.vectors, seg.meta.vectorDims, this.opts.graph);
      m.set(backend, g);
      if (this.opts.build === 'sync') g.buildUntil(Infinity);
      else if (this.closed) return g;
      else if (this.builder !== null) this.buildElsewhere(this.builder, seg, backend, g);
      else this.buildInSlices(g);
    }
    return g;
  }

  private buildInSlices(g: GraphIndex): void {
    this.queue.push(g);
    this.schedule();
  }

  /** `g` (empty) takes the graph the builder writes; on failure it is built in slices here. */
  private buildElsewhere(builder: GraphBuilder, seg: Segment, backend: VectorBackend, g: GraphIndex): void {
    const current = () => !this.closed && this.graphs.get(seg)?.get(backend) === g;
    // read off the event loop (hnswlib), or mapped where the library can (usearch: the owner and
    // the query threads that read the same file share its pages)
    const read = async (file: string): Promise<boolean> => {
      if (!current()) return false;
      try {
        return this.deferReads ? g.defer(file) : await g.viewAsync(file);
      } catch {
        return false; // a file the library cannot read: as one that does not fit
      }
    };
    builder.buildGraph(seg, backend, this.opts.graph).then(
      async (file) => {
        const ok = (await read(file)) && current();
        if (ok) {
          this.files.set(g, file);
          this.elsewhere.built++;
          this.wake();
        } else {
          rmSync(file, { force: true });
          if (current()) this.failedElsewhere(seg, backend);
        }
      },
      () => {
        if (current()) this.failedElsewhere(seg, backend);
      },
    );
  }

  /** A fresh graph (a failed read may have left the first one in any state) built in slices here. */
  private failedElsewhere(seg: Segment, backend: VectorBackend): void {
    this.elsewhere.failed++;
    const failed = this.graphs.get(seg)?.get(backend);
    if (failed !== undefined) this.removeFile(failed);
    const g = createGraph(backend, seg.vectors, seg.meta.vectorDims, this.opts.graph);
    this.graphs.get(seg)?.set(backend, g);
    this.buildInSlices(g);
  }

  private schedule(): void {
    if (this.timer !== null || this.queue.length === 0) return;
    this.timer = setTimeout(() => this.slice(), 0);
    // a build in progress must not keep a process alive that is otherwise done
    this.timer.unref();
  }

  private slice(): void {
    this.timer = null;
    const deadline = performance.now() + this.opts.sliceMs;
    while (this.queue.length > 0 && performance.now() < deadline) {
      const g = this.queue[0] as VectorIndex;
      if (g.buildUntil(deadline)) {
        this.queue.shift();
        this.wake();
      }
    }
    this.schedule();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const check of w) check();
  }
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function sha1(bytes: Uint8Array): string {
  return createHash('sha1').update(bytes).digest('hex');
}

/** Hashing a large buffer yields to the event loop every HASH_SLICE bytes (about a millisecond of SHA-1). */
const HASH_SLICE = 1024 * 1024;

async function sha1InSlices(bytes: Uint8Array): Promise<string> {
  const hash = createHash('sha1');
  for (let at = 0; at < bytes.byteLength; at += HASH_SLICE) {
    if (at > 0) await new Promise((resolve) => setImmediate(resolve));
    hash.update(bytes.subarray(at, at + HASH_SLICE));
  }
  return hash.digest('hex');
}

/** Moves `file` to `to` (copies it across file systems); null when neither worked. */
async function keep(file: string, to: string): Promise<string | null> {
  try {
    await rename(file, to);
    return to;
  } catch {
    try {
      await copyFile(file, to);
      return to;
    } catch {
      await rm(to, { force: true });
      return null;
    }
  }
}

async function sha1OfFile(file: string): Promise<string> {
  const hash = createHash('sha1');
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function vectorBytes(seg: Segment): Uint8Array {
  const v = seg.vectors;
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

function vectorsHash(seg: Segment): string {
  return sha1(vectorBytes(seg));
}

/** The graphs of a manifest's text; none when it is not one, or of another version. */
function parseManifest(text: string): SavedGraph[] {
  try {
    const manifest = JSON.parse(text) as { v: number; graphs: SavedGraph[] };
    return manifest.v === MANIFEST_VERSION && Array.isArray(manifest.graphs) ? manifest.graphs : [];
  } catch {
    return [];
  }
}
