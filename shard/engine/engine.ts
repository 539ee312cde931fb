// SuggestEngine: one index part's search engine. Owns the segment set and its life cycle:
// upserts are buffered and become a new immutable segment on refresh (on demand before a query,
// or once the buffer is full); deletes tombstone in place; a log-structured merge policy keeps
// the number of segments logarithmic by rebuilding neighbours of similar size from their stored
// documents (inline, or planned here and built on another thread), and compacts segments that
// are largely deleted. Queries run on an IndexSnapshot of
// the current segments. `serialize` writes the segments as they are (typed arrays), so loading
// needs no tokenizing; `exportShared` hands the same memory to worker threads.
import type { FileHandle } from 'node:fs/promises';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { analyzeQuery, analyzeTyped, withMixedNumberPrefix } from '../../node/runtime/text/analyze-query.js';
import { displayFields } from './doc-fields.js';
import { decodeSegments, encodeSegmentPieces, encodeSegments, ENGINE_FORMAT_VERSION, readSegments, type DecodedEngine } from './engine-format.js';
import { IndexSnapshot, type CollectionStats } from './index-snapshot.js';
import { everyWordHits, lexicalSearch, type LexicalHit, type LexicalResult } from './lexical-search.js';
import { ClearingMemo, MemoPerOwner } from './memo.js';
import { RankingRules } from './ranking-rules.js';
import { regroupWords } from './regroup.js';
import { Segment, type SharedSegment } from './segment.js';
import { SegmentBuilder } from './segment-builder.js';
import { SpellCorrector } from './spell-corrector.js';
import { round3, StageClock } from './stage-clock.js';
import { typeahead } from './typeahead.js';
import { predictCandidates, type PredictRequest } from './predict.js';
import type { PredictPartResult } from '../../node/runtime/predict-types.js';
import type { AutocompleteMode, AutocompleteRequest, AutocompleteResult, AutocompleteSuggestion, SuggestResult, TypeaheadRequest, TypeaheadSuggestion } from './types.js';
import { HashedNgramEmbedder, type Embedder } from './embedder.js';
import type { FilterSpec } from './filters.js';
import { DEFAULT_AUTOCOMPLETE_MODE, type VectorBackendTiming, type VectorBenchmark, type VectorDebug } from './types.js';
import { VectorGraphs, type GraphBuilder, type VectorGraphOptions } from './vector-graphs.js';
import { DEFAULT_VECTOR_BACKEND, VECTOR_BACKENDS, dotRow, type GraphIndex, type VectorBackend } from './vector-index.js';
import { searchable, vectorSearch, type VectorHit, type VectorSearchResult } from './vector-search.js';

export interface EngineOptions {
  /** buffered upserts that trigger a refresh by themselves (default 5000) */
  maxPending?: number;
  /** refresh before a query when upserts are buffered (default true: reads see writes) */
  refreshOnRead?: boolean;
  /** merge the newest segment into the previous one while it is at least 1/mergeFactor of its size (default 2) */
  mergeFactor?: number;
  /** hard cap on segments (default 8) */
  maxSegments?: number;
  /** rebuild a segment once this share of it is deleted (default 0.3) */
  compactDeleted?: number;
  /** documents a mined phrase needs (default 2) */
  minSupport?: number;
  /**
   * merge segments inline when the policy says so (default true); off, the caller runs
   * `planMerge` / `commitMerge`, building the merged segment on another thread
   */
  autoMerge?: boolean;
  /** embedder of documents and queries in the vector modes (default: the built-in hashed n-gram embedder) */
  embedder?: Embedder;
  /** when and how ANN graphs are built (vector_only, hybrid) */
  vectors?: VectorGraphOptions;
}

/** Segments to rebuild as one, from `planMerge`. */
export interface MergePlan {
  readonly segments: readonly Segment[];
  /** their live documents when planned, in order: what the merged segment is built from */
  readonly documents: SuggestDocument[];
  /** their tombstones when planned; later deletes are replayed on commit */
  readonly tombstones: readonly Uint8Array[];
}

export interface EngineStats {
  documents: number;
  deleted: number;
  pending: number;
  /** documents written that queries cannot find yet: buffered, or in a segment being built */
  indexing: number;
  segments: number;
  terms: number;
  postings: number;
  suggestions: number;
  bytes: Record<string, number>;
  /** all structures (stored documents included) per live document */
  bytes_per_document: number;
  /** search structures only (stored documents excluded) per live document */
  index_bytes_per_document: number;
  /** document vectors plus the ANN graphs built so far, per live document */
  vector_bytes_per_document: number;
  format_version: number;
}

/** What a worker thread needs to query the same segments without copying them. */
export interface SharedEngineState {
  options: EngineOptions;
  segments: SharedSegment[];
}

const DEFAULTS: Required<Omit<EngineOptions, 'embedder' | 'vectors'>> & { vectors: VectorGraphOptions } = {
  maxPending: 5000,
  refreshOnRead: true,
  mergeFactor: 2,
  maxSegments: 8,
  compactDeleted: 0.3,
  minSupport: 2,
  autoMerge: true,
  vectors: {},
};

/** Documents found only through the corrected reading of a query keep this share of their score. */
const CORRECTED_FACTOR = 0.5;
/** Documents found only through the regrouped reading of a query (regroup.ts) keep this share of their score. */
const REGROUPED_FACTOR = 0.8;
/** Typeahead suggestions fetched beyond the limit when hide rules may remove some. */
const HIDE_SPARE = 10;

/** Candidates each retriever contributes to fts_rerank and hybrid. */
const CANDIDATE_POOL = 50;
/** Weight of similarity in the fts_rerank score factor. */
const RERANK_WEIGHT = 0.3;
/**
 * hybrid: score = LEX_WEIGHT * lex / (lex + LEX_HALF) + (1 - LEX_WEIGHT) * max(0, cosine). The
 * lexical score saturates (a BM25F score of LEX_HALF counts half), so both parts live in [0, 1];
 * weights chosen on the Home Depot judged queries (loadtest/relevance).
 */
const HYBRID_LEX_WEIGHT = 0.8;
/** Vector candidates of hybrid, and the graph candidate list they are searched with. */
const HYBRID_VECTOR_POOL = 20;
const HYBRID_EF = 64;
const HYBRID_LEX_HALF = 8;

export const MAX_LIMIT = 50;
export const DEFAULT_LIMIT = 10;

export class SuggestEngine {
  private readonly options: typeof DEFAULTS;
  private readonly embedder: Embedder;
  private readonly graphs: VectorGraphs;
  private segments: Segment[] = [];
  private readonly pending = new PendingDocs();
  /**
   * Upserts taken out of `pending` to be built into a segment elsewhere (`takePending`), until
   * `publish`; `superseded` holds those of their ids written or deleted again meanwhile. Queries
   * do not see them: the owner answers queries only once they are published.
   */
  private readonly inflight = new Map<string, SuggestDocument>();
  private readonly superseded = new Set<string>();
  private snapshotCache: IndexSnapshot | null = null;
  private correctors: { suggestive: SpellCorrector; any: SpellCorrector } | null = null;
  /** segments in a merge plan that is not committed yet */
  private readonly merging = new Set<Segment>();
  /** false while `published` runs a read: buffered upserts are then left buffered */
  private readBuffered = true;

  /**
   * Changes whenever what queries see may change (writes, refreshes, merges, deletes); unique in
   * the process, so a mirror of another engine never takes it for its own.
   */
  private version = nextVersion();
  /**
   * The format of the snapshot the engine was read from, ENGINE_FORMAT_VERSION for one built
   * here. An older one (read with INTERIM_READABLE_VERSION) reads its documents' text as the
   * build that wrote it did: an interim engine, never to be written as a snapshot of this format.
   */
  snapshotFormat = ENGINE_FORMAT_VERSION;

  constructor(options: EngineOptions = {}, graphs?: VectorGraphs) {
    const { embedder, ...rest } = options;
    this.options = { ...DEFAULTS, ...rest };
    this.embedder = embedder ?? new HashedNgramEmbedder();
    this.graphs = graphs ?? new VectorGraphs(this.options.vectors);
  }

  /**
   * A query-only engine over segments this thread wraps from another's shared memory, with
   * graphs kept by the caller across mirrors (they follow the segment objects, which the caller
   * reuses), so a new mirror after a write neither rebuilds nor reloads a graph.
   */
  static mirror(segments: Segment[], options: EngineOptions, graphs: VectorGraphs): SuggestEngine {
    const engine = new SuggestEngine({ ...options, refreshOnRead: false }, graphs);
    engine.segments = segments.filter((s) => s.docCount > 0);
    return engine;
  }

  /**
   * The segments a query sees now (buffered upserts indexed first, as a query would) and the
   * version they go with: what another thread needs to answer the next query like this one.
   */
  view(): { version: number; segments: readonly Segment[]; options: EngineOptions } {
    this.refreshForRead();
    return { version: this.version, segments: this.segments, options: this.options };
  }

  /** The segments as they are (nothing is refreshed): what another thread may still hold of them. */
  get currentSegments(): readonly Segment[] {
    return this.segments;
  }

  /** Starts building the ANN graphs of the current segments for `backend` (no query needed). */
  prepareVectors(backend: VectorBackend): void {
    this.graphs.prepare(this.snapshot().segments, backend);
  }

  /** How far the graphs of the current segments for `backend` are built (`debug.vector.graph`). */
  graphStatus(backend: VectorBackend): { ready: boolean; built: number; total: number } {
    const { ready, built, total } = this.graphs.status(this.snapshot().segments, backend);
    return { ready, built, total };
  }

  /**
   * ANN graphs are built by `builder` (another thread) from now on; null: in slices on this
   * thread. `deferReads`: this engine's vector queries are answered elsewhere (query threads),
   * so it reads an hnswlib graph's file only if it searches the graph itself.
   */
  useGraphBuilder(builder: GraphBuilder | null, opts: { deferReads?: boolean } = {}): void {
    this.graphs.useBuilder(builder, opts);
  }

  /**
   * The file the graph builder wrote the complete graph of `segment` to, or null. The engine
   * removes it when the segment leaves.
   */
  graphFile(segment: Segment, backend: VectorBackend): string | null {
    return this.graphs.fileOf(segment, backend);
  }

  /** The complete graph of `segment` for `backend`, or null (none needed, or still building). */
  completeGraph(segment: Segment, backend: VectorBackend): GraphIndex | null {
    return this.graphs.complete(segment, backend);
  }

  private invalidate(): void {
    this.snapshotCache = null;
    this.version = nextVersion();
  }

  /** Live documents, buffered upserts included. */
  get documentCount(): number {
    let n = this.pending.size + this.inflight.size - this.superseded.size;
    for (const s of this.segments) n += s.liveCount;
    return n;
  }

  /**
   * Inserts or replaces documents (by id). Returns how many were written and how many of
   * those were new ids.
   */
  upsert(docs: Iterable<SuggestDocument>): { upserted: number; created: number } {
    let upserted = 0;
    let created = 0;
    for (const doc of docs) {
      const existed = this.pending.has(doc.id) || this.supersede(doc.id) || this.deleteFromSegments(doc.id);
      if (!existed) created++;
      this.pending.delete(doc.id); // keep insertion order = latest write last
      this.pending.set(doc.id, doc);
      upserted++;
    }
    this.invalidate();
    if (this.pending.size >= this.options.maxPending) this.refresh();
    return { upserted, created };
  }

  /** Deletes documents by id; returns how many existed. */
  remove(ids: Iterable<string>): number {
    let removed = 0;
    for (const id of ids) {
      const inPending = this.pending.delete(id);
      const inFlight = this.supersede(id);
      const inSegments = this.deleteFromSegments(id);
      if (inPending || inFlight || inSegments) removed++;
    }
    if (removed > 0) {
      this.invalidate();
      this.maybeMerge();
    }
    return removed;
  }

  /** The live document with this id, or null. */
  get(id: string): SuggestDocument | null {
    const p = this.pending.get(id) ?? (this.superseded.has(id) ? undefined : this.inflight.get(id));
    if (p) return p;
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i] as Segment;
      const ord = s.ordinalOf(id);
      if (ord >= 0 && s.isLive(ord)) return s.document(ord);
    }
    return null;
  }

  /** Buffered upserts not yet indexed (taken ones excluded). */
  get pendingCount(): number {
    return this.pending.size;
  }

  /**
   * Whether indexing what is buffered is at most `limit` work (`indexingWork`): a few documents
   * may still be a long build (one with 100,000 tags), which must not be done in place.
   */
  pendingWorkWithin(limit: number): boolean {
    return this.pending.work <= limit;
  }

  /** Upserts taken by `takePending` and not published yet. */
  get inflightCount(): number {
    return this.inflight.size;
  }

  /** Documents written that queries cannot find yet: buffered, or in a segment being built. */
  get indexingCount(): number {
    return this.pending.size + this.inflight.size;
  }

  /**
   * Takes up to `max` of the oldest buffered upserts to build into a segment elsewhere (a worker
   * thread); hand the segment to `publish`. One batch at a time: empty while one is out.
   */
  takePending(max: number): SuggestDocument[] {
    if (this.inflight.size > 0) return [];
    const out: SuggestDocument[] = [];
    for (const [id, doc] of this.pending) {
      if (out.length >= max) break;
      out.push(doc);
      this.inflight.set(id, doc);
    }
    for (const doc of out) this.pending.delete(doc.id);
    return out;
  }

  /**
   * Adds the segment built from the batch `takePending` returned; the ids written or deleted
   * again since are tombstoned in it, so each id stays live in one place only.
   */
  publish(segment: Segment): void {
    for (const id of this.superseded) {
      const ord = segment.ordinalOf(id);
      if (ord >= 0 && segment.isLive(ord)) segment.delete(ord);
    }
    this.inflight.clear();
    this.superseded.clear();
    if (segment.docCount > 0) this.segments.push(segment);
    this.invalidate();
    this.maybeMerge();
  }

  /** Returns a taken batch unbuilt (its build failed): still-current documents are buffered again, ahead of later writes. */
  restorePending(): void {
    const later = [...this.pending];
    this.pending.clear();
    for (const [id, doc] of this.inflight) if (!this.superseded.has(id)) this.pending.set(id, doc);
    for (const [id, doc] of later) this.pending.set(id, doc);
    this.inflight.clear();
    this.superseded.clear();
    this.invalidate();
  }

  /** An engine over segments built elsewhere (a first load on a worker thread). */
  static fromSegments(segments: Segment[], options: EngineOptions = {}): SuggestEngine {
    const engine = new SuggestEngine(options);
    engine.segments = segments.filter((s) => s.docCount > 0);
    return engine;
  }

  /** Indexes buffered upserts as a new segment and runs the merge policy. */
  refresh(): void {
    if (this.pending.size > 0) {
      const segment = new SegmentBuilder({ minSupport: this.options.minSupport, embedder: this.embedder }).addAll(this.pending.values()).build();
      this.pending.clear();
      this.segments.push(segment);
      this.maybeMerge();
    }
    this.invalidate();
  }

  /** Rebuilds everything into one segment (after a bulk load, before serializing for good). */
  optimize(): void {
    this.refresh();
    if (this.segments.length > 1 || (this.segments[0]?.deletedCount ?? 0) > 0) {
      this.segments = this.segments.length === 0 ? [] : [this.merge(this.segments)];
      this.invalidate();
    }
  }

  typeahead(req: TypeaheadRequest): SuggestResult<TypeaheadSuggestion> {
    const clock = req.profile === true ? new StageClock() : null;
    const snap = this.snapshot();
    clock?.lap('snapshot');
    const limit = clampLimit(req.limit);
    const spare = Math.max(0, Math.min(MAX_LIMIT, Math.floor(req.spare ?? 0)));
    const rules = req.ranking ? new RankingRules(req.ranking) : RankingRules.none;
    if (!rules.active) {
      const result = typeahead(snap, this.corrector('suggestive'), req.query, limit, clock, spare);
      return clock === null ? result : { ...result, profile: clock.report() };
    }
    // typeahead honours hide rules only (products it lists); a few spare suggestions fill the gaps
    const result = typeahead(snap, this.corrector('suggestive'), req.query, limit + HIDE_SPARE, clock, spare);
    const suggestions = result.suggestions.filter((s) => s.type !== 'product' || !rules.hidden(snap, s.id)).slice(0, limit + spare);
    clock?.lap('rules');
    return { ...result, suggestions, ...(clock === null ? {} : { profile: clock.report() }) };
  }

  autocomplete(req: AutocompleteRequest): AutocompleteResult {
    // stages (profile=true): snapshot, analyze, correct, lexical (after lexicalSearch's own
    // lexical_expand, _strict, _drop, _loose), lexical_corrected, lexical_regrouped, synonyms,
    // embed, fuse, vector, rerank, debug (vector debug and benchmark), render, pins
    const clock = req.profile === true ? new StageClock() : null;
    const snap = this.snapshot();
    clock?.lap('snapshot');
    const limit = clampLimit(req.limit);
    const q = withMixedNumberPrefix(analyzeQuery(req.query), req.query, (prefix) => snap.hasPrefix(prefix, 'any'));
    clock?.lap('analyze');
    const mode: AutocompleteMode = req.mode ?? DEFAULT_AUTOCOMPLETE_MODE;
    const backend = req.vectorBackend ?? DEFAULT_VECTOR_BACKEND;
    const poolSize = mode === 'fts_only' ? limit : Math.max(CANDIDATE_POOL, limit);
    const lastIsPrefix = !q.lastWordComplete;
    const words = q.words.map((w) => w.term);
    let corrected: string[] | null = null;
    // words the index does not know, or knows only from a rare typo in a title ("florescent",
    // in two; "fluorescent" in hundreds): the corrector decides
    if (this.corrector('any').mayChange(words, lastIsPrefix)) corrected = this.corrector('any').correct(words, lastIsPrefix);
    clock?.lap('correct');
    const rules = req.ranking ? new RankingRules(req.ranking) : RankingRules.none;
    // hybrid applies boost/bury once, to the fused score; every mode keeps hidden documents out
    const options = { limit: poolSize, ...(mode === 'hybrid' || mode === 'fts_rerank' ? { enough: limit } : {}), filters: req.filters ?? null, prefixLast: lastIsPrefix, ...(req.stats ? { stats: req.stats } : {}), ...rules.lexicalOptions(mode === 'hybrid'), clock };
    let result: LexicalResult = { hits: [], total: 0, words: words.length };
    if (mode !== 'vector_only') {
      result = lexicalSearch(snap, q, options);
      clock?.lap('lexical');
      if (corrected) {
        // The corrected reading competes with the query as typed (whose own typo matching is
        // stricter): its documents count at a discount, each document keeps its better score.
        const alt = lexicalSearch(snap, analyzeTyped(corrected.join(' '), lastIsPrefix), options);
        result = withReading(result, alt, CORRECTED_FACTOR, 1, poolSize);
        clock?.lap('lexical_corrected');
      } else if (everyWordHits(result) < limit) {
        // Known words regrouped as titles write them ("dish washer": "Dishwasher"; regroup.ts),
        // when few documents have every word as typed: documents of either reading compete.
        const regrouped = regroupWords(snap, words, lastIsPrefix, 'any');
        if (regrouped !== null) {
          // its documents with every word: the words as typed have filled the rest
          const alt = lexicalSearch(snap, analyzeTyped(regrouped.join(' '), lastIsPrefix), { ...options, requireAll: true });
          result = withReading(result, alt, REGROUPED_FACTOR, 0, poolSize);
          clock?.lap('lexical_regrouped');
        }
      }
      result = rules.withSynonyms(result, (text) => lexicalSearch(snap, analyzeTyped(text, lastIsPrefix), options), poolSize);
      if (rules.active) clock?.lap('synonyms');
    }
    const wantVectors = mode !== 'fts_only' || req.benchmark === true;
    const qv = wantVectors ? this.queryVector((corrected ?? words).join(' '), lastIsPrefix) : null;
    if (qv !== null) clock?.lap('embed');
    let vdebug: VectorDebug | undefined;
    let hits: LexicalHit[] = result.hits;
    const vectorStarted = performance.now();
    let vs: VectorSearchResult | null = null;
    // hybrid scores its lexical candidates first: when the last of the answer's size already
    // outscores anything a document found only by vectors could reach, the graph is not searched
    const fused = mode === 'hybrid' && qv !== null ? fuseLexical(snap, result.hits, qv, this.embedder.name) : null;
    const settled = fused !== null && !rules.active && req.debug !== true && req.benchmark !== true && this.embedder.unitVectors === true && lexicalSettles(fused, limit);
    if (fused !== null) clock?.lap('fuse');
    if (qv !== null && (mode === 'vector_only' || (mode === 'hybrid' && !settled))) {
      // hybrid's vector candidates only complete the lexical ones (which carry 0.8 of the score):
      // a smaller pool and candidate list keep it cheap
      const hybrid = mode === 'hybrid';
      const k = mode === 'vector_only' && !rules.active ? limit : hybrid ? Math.max(HYBRID_VECTOR_POOL, limit) : Math.max(poolSize, CANDIDATE_POOL);
      vs = vectorSearch(snap, this.graphs, qv, { k, backend, filters: req.filters ?? null, embedder: this.embedder.name, ...(hybrid ? { ef: HYBRID_EF } : {}) });
      if (rules.active) vs = { ...vs, hits: rules.adjust(snap, vs.hits, mode === 'hybrid') };
      clock?.lap('vector');
    }
    if (mode === 'vector_only' && vs !== null) {
      // a similarity of zero or less shares nothing with the query
      hits = vs.hits.filter((h) => h.score > 0).map((h) => ({ ...h, matched: 0, typos: 0 }));
    } else if (fused !== null) {
      hits = rules.adjust(snap, withVectorCandidates(fused, vs?.hits ?? []));
      clock?.lap('fuse');
    } else if (mode === 'fts_rerank' && qv !== null && hits.length > 0) {
      // a per-document factor keeps scores comparable across parts
      hits = hits.map((h) => ({ ...h, score: h.score * (1 - RERANK_WEIGHT + RERANK_WEIGHT * Math.max(0, similarity(snap, h, qv, this.embedder.name))) }));
      hits.sort(byScore);
      clock?.lap('rerank');
    }
    hits = hits.slice(0, limit);
    if (req.debug === true || req.benchmark === true) {
      vdebug = {
        backend,
        embedder: this.embedder.name,
        dimensions: this.embedder.dimensions,
        method: vs === null ? 'none' : methodOf(vs),
        graph: this.graphStatus(backend),
        candidates: vs?.hits.length ?? 0,
        ms: vs === null ? 0 : round3(performance.now() - vectorStarted),
      };
      if (req.benchmark === true && qv !== null) vdebug.benchmark = this.benchmark(snap, qv, limit, req.filters ?? null);
      clock?.lap('debug');
    }
    const suggestions = hits.map((h) => {
      const s = renderSuggestion(snap, h.segment, h.ord, h.score, h);
      if (rules.active) Object.assign(s.metadata, rules.marks(snap, h));
      return s;
    });
    const out: AutocompleteResult = { normalized_query: q.normalized, corrected_query: corrected ? this.corrector('any').shown(corrected, words, lastIsPrefix) : null, mode, suggestions };
    clock?.lap('render');
    if (rules.active) {
      const pinned = rules.pinned(snap, options.filters, (seg, ord, score) => renderSuggestion(snap, seg, ord, score, null), (spec) => lexicalSearch(snap, q, { ...options, limit: 1, filters: spec }).hits[0] ?? null);
      if (pinned.length > 0) out.pinned = pinned;
      if (req.debug) out.ranking = rules.debugReport();
      clock?.lap('pins');
    }
    if (vdebug !== undefined) out.debug = { vector: vdebug };
    if (clock !== null) out.profile = clock.report();
    return out;
  }

  /**
   * Resolves once the ANN graphs of the current segments are complete for `backend` (they are
   * otherwise built in the background after the first vector query).
   */
  whenVectorsReady(backend: VectorBackend = DEFAULT_VECTOR_BACKEND): Promise<void> {
    return this.graphs.whenReady(this.snapshot().segments, backend);
  }

  /** Stops background graph builds; the engine still answers (by exact scan). */
  close(): void {
    this.graphs.close();
  }

  private queryVector(text: string, lastIsPrefix: boolean): Float32Array {
    const e = this.embedder;
    return e.embedQuery ? e.embedQuery(text, lastIsPrefix) : (e.embed([text])[0] as Float32Array);
  }

  /** Both libraries and the exact scan on the same query: timings, recall against exact, overlap. */
  private benchmark(snap: IndexSnapshot, qv: Float32Array, k: number, filters: FilterSpec | null): VectorBenchmark {
    const base = { k, filters, embedder: this.embedder.name };
    let t = performance.now();
    const exact = vectorSearch(snap, this.graphs, qv, { ...base, backend: DEFAULT_VECTOR_BACKEND, exact: true });
    const exactMs = performance.now() - t;
    const keyOf = (h: VectorHit) => `${h.segment}:${h.ord}`;
    const reference = new Set(exact.hits.map(keyOf));
    // Recall counts a hit as found when it is in the exact top k or as similar as its last one:
    // catalogues hold many documents with the same vector (colour variants), and which of those
    // equals a search returns is arbitrary.
    const floor = exact.hits.length > 0 ? (exact.hits[exact.hits.length - 1] as VectorHit).score - 1e-6 : Infinity;
    const runs = {} as Record<VectorBackend, { keys: Set<string>; timing: VectorBackendTiming }>;
    for (const b of VECTOR_BACKENDS) {
      t = performance.now();
      const r = vectorSearch(snap, this.graphs, qv, { ...base, backend: b });
      const ms = performance.now() - t;
      const keys = new Set(r.hits.map(keyOf));
      let found = 0;
      for (const h of r.hits) if (reference.has(keyOf(h)) || h.score >= floor) found++;
      runs[b] = {
        keys,
        timing: { ms: round3(ms), method: methodOf(r), graph_ready: this.graphs.status(snap.segments, b).ready, recall_at_k: reference.size === 0 ? 1 : round3(found / reference.size) },
      };
    }
    let common = 0;
    for (const key of runs.hnswlib.keys) if (runs.usearch.keys.has(key)) common++;
    const denom = Math.max(runs.hnswlib.keys.size, runs.usearch.keys.size);
    return {
      k,
      backends: { hnswlib: runs.hnswlib.timing, usearch: runs.usearch.timing },
      overlap_at_k: denom === 0 ? 1 : round3(common / denom),
      exact_ms: round3(exactMs),
    };
  }

  /** Predict candidates of every type from the suggestion tables and document retrieval. */
  predict(req: PredictRequest): PredictPartResult {
    return predictCandidates(this, req);
  }

  /** Whether the hide rules of `ranking` keep document `id` out of suggestions (asked before behaviour ranking adds one). */
  hiddenBy(ranking: AutocompleteRequest['ranking'], id: string): boolean {
    if (!ranking) return false;
    const rules = new RankingRules(ranking);
    return rules.active && rules.hidden(this.snapshot(), id);
  }

  /**
   * This part's collection statistics for the given terms. A caller querying several parts can
   * sum them (docCount, df; average lengths weighted by docCount) and pass the sum as
   * `stats` so that every part scores on the same scale.
   */
  collectionStats(terms: readonly string[] = []): CollectionStats {
    const snap = this.snapshot();
    const df: Record<string, number> = {};
    for (const t of terms) df[t] = snap.df(t);
    return { docCount: snap.docCount, avgFieldLength: snap.avgFieldLength, df };
  }

  /**
   * Statistics of the segments; buffered writes are indexed first unless `refresh` is false
   * (then they are only counted: the shard's cheap path, which must not build a segment).
   */
  /**
   * Segments, the bytes of their memory (arenas and per-segment mutable arrays) and of the ANN
   * graphs held: arithmetic over the segments, cheap enough for every metrics scrape (`stats`
   * walks every section and may index buffered writes first).
   */
  memory(): { segments: number; segmentBytes: number; graphBytes: number } {
    let segmentBytes = 0;
    for (const s of this.segments) segmentBytes += s.memoryBytes;
    const graphs = this.graphs.bytes();
    return { segments: this.segments.length, segmentBytes, graphBytes: graphs.hnswlib + graphs.usearch };
  }

  stats(opts: { refresh?: boolean } = {}): EngineStats {
    if ((opts.refresh ?? true) && this.options.refreshOnRead && this.inflight.size === 0) this.refresh();
    this.graphs.retain(this.segments);
    const bytes: Record<string, number> = {};
    let terms = 0;
    let postings = 0;
    let suggestions = 0;
    let deleted = 0;
    for (const s of this.segments) {
      for (const [k, v] of Object.entries(s.bytes())) bytes[k] = (bytes[k] ?? 0) + v;
      terms += s.meta.termCount;
      postings += s.meta.postingCount;
      suggestions += s.suggestions.size;
      deleted += s.deletedCount;
    }
    const graphBytes = this.graphs.bytes();
    bytes.graph_hnswlib = graphBytes.hnswlib;
    bytes.graph_usearch = graphBytes.usearch;
    const total = Object.values(bytes).reduce((a, b) => a + b, 0);
    bytes.total = total;
    const vectorBytes = (bytes.vectors ?? 0) + graphBytes.hnswlib + graphBytes.usearch;
    let live = 0;
    for (const s of this.segments) live += s.liveCount;
    return {
      documents: this.documentCount,
      deleted,
      pending: this.pending.size,
      indexing: this.indexingCount,
      segments: this.segments.length,
      terms,
      postings,
      suggestions,
      bytes,
      bytes_per_document: live > 0 ? Math.round(total / live) : 0,
      index_bytes_per_document: live > 0 ? Math.round((total - (bytes.store ?? 0)) / live) : 0,
      vector_bytes_per_document: live > 0 ? Math.round(vectorBytes / live) : 0,
      format_version: ENGINE_FORMAT_VERSION,
    };
  }

  /** The engine as bytes (buffered upserts are indexed first). */
  serialize(): Uint8Array {
    this.refresh();
    return encodeSegments(this.segments, { ...this.options });
  }

  /** `serialize` as byte ranges to write in order, without copying the segments' memory (see `encodeSegmentPieces`). */
  serializePieces(): Uint8Array[] {
    this.refresh();
    return encodeSegmentPieces(this.segments, { ...this.options });
  }

  /**
   * The engine of a snapshot. `oldest`: the oldest format taken (default OLDEST_READABLE_VERSION;
   * INTERIM_READABLE_VERSION for an interim engine, see `snapshotFormat`).
   */
  static deserialize(bytes: Uint8Array, options: EngineOptions = {}, oldest?: number): SuggestEngine {
    return SuggestEngine.fromDecoded(decodeSegments(bytes, oldest), options);
  }

  /** `deserialize` of the snapshot at `offset` in `file`, read straight into shared memory off the event loop. */
  static async readFrom(file: FileHandle, offset: number, options: EngineOptions = {}, oldest?: number): Promise<SuggestEngine> {
    return SuggestEngine.fromDecoded(await readSegments(file, offset, oldest), options);
  }

  private static fromDecoded(decoded: DecodedEngine, options: EngineOptions): SuggestEngine {
    const engine = new SuggestEngine({ ...(decoded.options as EngineOptions), ...options });
    engine.segments = decoded.segments;
    engine.snapshotFormat = decoded.version;
    return engine;
  }

  /**
   * Writes the complete ANN graphs into the directory `dir` (replaced), to be read back by
   * `loadGraphs` on an engine deserialized from the same snapshot. Returns the graphs written.
   */
  saveGraphs(dir: string): number {
    this.refresh();
    return this.graphs.save(this.segments, dir);
  }

  /** `saveGraphs` with the file work off the event loop (large engines: see `VectorGraphs.saveAsync`). */
  saveGraphsAsync(dir: string): Promise<number> {
    this.refresh();
    return this.graphs.saveAsync(this.segments, dir);
  }

  /** Reads the graphs `saveGraphs` wrote, where they fit this engine's segments exactly. */
  loadGraphs(dir: string): number {
    return this.graphs.load(this.segments, dir);
  }

  /** `loadGraphs` with the file work off the event loop. */
  loadGraphsAsync(dir: string): Promise<number> {
    return this.graphs.loadAsync(this.segments, dir);
  }

  /** Segment memory for worker threads (post it; rebuild with `fromShared`). */
  exportShared(): SharedEngineState {
    this.refresh();
    return {
      options: { ...this.options },
      segments: this.segments.map((s) => s.toShared()),
    };
  }

  /** A query-only engine over shared segment memory (writes belong to the exporting thread). */
  static fromShared(shared: SharedEngineState): SuggestEngine {
    return SuggestEngine.mirror(
      shared.segments.map((s) => Segment.fromShared(s)),
      shared.options,
      new VectorGraphs(shared.options.vectors),
    );
  }

  /**
   * Runs `read` over the segments published so far: upserts still buffered are not indexed in
   * place first (as reads otherwise do with `refreshOnRead`) but left to whoever builds them, off
   * this thread. For a query that will not wait for a bulk load to be indexed.
   */
  published<T>(read: () => T): T {
    const outer = this.readBuffered;
    this.readBuffered = false;
    try {
      return read();
    } finally {
      this.readBuffered = outer;
    }
  }

  private refreshForRead(): void {
    if (this.options.refreshOnRead && this.readBuffered && this.pending.size > 0) this.refresh();
  }

  private snapshot(): IndexSnapshot {
    this.refreshForRead();
    if (this.snapshotCache === null) {
      this.snapshotCache = new IndexSnapshot(this.segments);
      this.correctors = null;
      this.graphs.retain(this.segments);
    }
    return this.snapshotCache;
  }

  private corrector(kind: 'suggestive' | 'any'): SpellCorrector {
    const snap = this.snapshot();
    if (this.correctors === null) this.correctors = { suggestive: new SpellCorrector(snap, 'suggestive'), any: new SpellCorrector(snap, 'any') };
    return this.correctors[kind];
  }

  /** Marks a taken, unpublished upsert of `id` as overwritten or deleted; true if there was a live one. */
  private supersede(id: string): boolean {
    if (!this.inflight.has(id) || this.superseded.has(id)) return false;
    this.superseded.add(id);
    return true;
  }

  /** Tombstones the live copy of `id` in the segments; true if there was one. */
  private deleteFromSegments(id: string): boolean {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i] as Segment;
      const ord = s.ordinalOf(id);
      if (ord >= 0 && s.isLive(ord)) {
        s.delete(ord);
        return true;
      }
    }
    return false;
  }

  /**
   * The next merge the policy wants, or null. Log-structured merging: the newest segments merge,
   * as far back as each older one holds at most mergeFactor times the documents of the newer ones
   * together (or the newest two, when there are more than maxSegments); sizes then grow
   * geometrically, so there are O(log n) segments and each document is rebuilt O(log n) times.
   * The whole run merges at once: segments that piled up while the pool was busy with a bulk load
   * (a dozen of 5,000 documents, say) used to be merged two at a time into one growing segment,
   * which rebuilt it once per segment (quadratic: 325,000 documents rebuilt for Home Depot's
   * 55,000, minutes of merging on a busy node). A segment with `compactDeleted` of its documents
   * deleted is rebuilt alone. With `autoMerge` off the caller builds `plan.documents` into a
   * segment (on a worker thread: SegmentBuilder needs nothing else) and hands it to
   * `commitMerge`; writes in between are replayed on commit.
   */
  planMerge(): MergePlan | null {
    const segs = this.segments;
    const worn = segs.find((s) => !this.merging.has(s) && s.deletedCount > 0 && s.deletedCount >= this.options.compactDeleted * s.docCount);
    if (worn !== undefined) return this.planOf([worn]);
    let from = segs.length;
    let newer = 0;
    while (from > 0) {
      const s = segs[from - 1] as Segment;
      if (this.merging.has(s) || (from < segs.length && s.liveCount > this.options.mergeFactor * newer)) break;
      newer += s.liveCount;
      from--;
    }
    if (segs.length - from >= 2) return this.planOf(segs.slice(from));
    const n = segs.length;
    const last = segs[n - 1];
    const prev = segs[n - 2];
    if (n > this.options.maxSegments && last !== undefined && prev !== undefined && !this.merging.has(last) && !this.merging.has(prev)) return this.planOf([prev, last]);
    return null;
  }

  /**
   * A merge of every segment into one, for an index whose writes have stopped (after a bulk
   * load, say): a query then looks each word up once instead of once per segment, which costs
   * about half as much with three segments. Null unless the segments besides the largest hold
   * at least `minShare` of the documents, so a trickle of writes into a large index never
   * rebuilds it, and each rebuild follows a growth of at least that share. Null as well above
   * `maxDocs` live documents: the merged copy is built beside the segments it replaces, and the
   * geometric merges already bound a large index to O(log n) segments.
   */
  planCompaction(minShare: number, maxDocs = Number.POSITIVE_INFINITY): MergePlan | null {
    const segs = this.segments;
    if (segs.length < 2 || segs.some((s) => this.merging.has(s))) return null;
    let live = 0;
    let largest = 0;
    for (const s of segs) {
      live += s.liveCount;
      largest = Math.max(largest, s.liveCount);
    }
    if (live === 0 || live > maxDocs || (live - largest) / live < minShare) return null;
    return this.planOf([...segs]);
  }

  private planOf(parts: Segment[]): MergePlan {
    for (const p of parts) this.merging.add(p);
    const tombstones = parts.map((p) => p.tombstones.slice());
    let documents: SuggestDocument[] | null = null;
    // decoded on demand: a merge built on another thread reads the segments there instead
    return {
      segments: parts,
      get documents() {
        documents ??= parts.flatMap((p, i) => {
          const dead = tombstones[i] as Uint8Array;
          const out: SuggestDocument[] = [];
          for (let ord = 0; ord < p.docCount; ord++) if (dead[ord] === 0) out.push(p.document(ord));
          return out;
        });
        return documents;
      },
      tombstones,
    };
  }

  /**
   * Replaces the planned segments by `merged` (null when the plan had no live documents), first
   * deleting from it what was deleted or overwritten since the plan. False when the plan is
   * stale (its segments are gone).
   */
  commitMerge(plan: MergePlan, merged: Segment | null): boolean {
    for (const p of plan.segments) this.merging.delete(p);
    const at = this.segments.indexOf(plan.segments[0] as Segment);
    if (at < 0 || plan.segments.some((p, i) => this.segments[at + i] !== p)) return false;
    if (merged !== null) {
      plan.segments.forEach((p, i) => {
        const before = plan.tombstones[i] as Uint8Array;
        for (let ord = 0; ord < p.docCount; ord++) {
          if (p.tombstones[ord] !== 0 && before[ord] === 0) {
            const o = merged.ordinalOf(p.idAt(ord));
            if (o >= 0) merged.delete(o);
          }
        }
      });
    }
    this.segments.splice(at, plan.segments.length, ...(merged !== null && merged.docCount > 0 ? [merged] : []));
    this.invalidate();
    return true;
  }

  /** Gives up a planned merge (its build failed): its segments may be planned again. */
  cancelMerge(plan: MergePlan): void {
    for (const p of plan.segments) this.merging.delete(p);
  }

  /** Runs the merges the policy wants, here and now (autoMerge). */
  private maybeMerge(): void {
    if (!this.options.autoMerge) return;
    for (let plan = this.planMerge(); plan !== null; plan = this.planMerge()) {
      const merged = plan.documents.length > 0 ? new SegmentBuilder({ minSupport: this.options.minSupport, embedder: this.embedder }).addAll(plan.documents).build() : null;
      this.commitMerge(plan, merged);
    }
  }

  private merge(parts: Segment[]): Segment {
    const builder = new SegmentBuilder({ minSupport: this.options.minSupport, embedder: this.embedder });
    for (const p of parts) builder.addAll(p.liveDocuments());
    this.invalidate();
    return builder.build();
  }
}

let versions = 0;
const nextVersion = () => ++versions;

/**
 * Roughly what indexing `doc` costs, in units of a short field: one for the document, one per
 * raw value (each element of an array: each is a filter value and may be mined) and one per 64
 * characters of title (descriptions are cut to a fixed length before indexing).
 */
export function indexingWork(doc: SuggestDocument): number {
  let work = 1 + Math.ceil((doc.title ?? '').length / 64);
  for (const v of Object.values(doc.raw ?? {})) work += Array.isArray(v) ? v.length : 1;
  return work;
}

/** Buffered upserts by id, in write order, with the sum of their `indexingWork` kept as they come and go. */
class PendingDocs extends Map<string, SuggestDocument> {
  work = 0;

  override set(id: string, doc: SuggestDocument): this {
    const prev = super.get(id);
    if (prev !== undefined) this.work -= indexingWork(prev);
    this.work += indexingWork(doc);
    return super.set(id, doc);
  }

  override delete(id: string): boolean {
    const prev = super.get(id);
    if (prev === undefined) return false;
    this.work -= indexingWork(prev);
    return super.delete(id);
  }

  override clear(): void {
    this.work = 0;
    super.clear();
  }
}

function methodOf(r: VectorSearchResult): VectorDebug['method'] {
  if (r.ann_documents > 0) return r.exact_documents > 0 ? 'mixed' : 'ann';
  return r.exact_documents > 0 ? 'exact' : 'none';
}

/** Cosine similarity of a document's stored vector with the query vector (0 without one). */
function similarity(snap: IndexSnapshot, h: { segment: number; ord: number }, qv: Float32Array, embedder: string): number {
  const seg = snap.segments[h.segment] as Segment;
  return searchable(seg, embedder, qv.length) ? dotRow(seg.vectors, h.ord, qv, qv.length) : 0;
}

/** Best first: higher score, then earlier segment, then earlier document (an integer: see lexical-search.ts compareHits). */
function byScore(a: { score: number; segment: number; ord: number }, b: { score: number; segment: number; ord: number }): number {
  const x = a.score;
  const y = b.score;
  if (x !== y) return x > y ? -1 : 1;
  return a.segment - b.segment || a.ord - b.ord;
}

/**
 * hybrid: the union of the lexical and the vector candidates, each scored by both signals (a
 * document the lexical pass did not return counts lexical 0; one the vector pass did not return
 * gets its similarity from its stored vector). This part scores the lexical candidates, best
 * first (those scoring 0 dropped); `withVectorCandidates` adds the others.
 */
function fuseLexical(snap: IndexSnapshot, lexical: readonly LexicalHit[], qv: Float32Array, embedder: string): LexicalHit[] {
  const byKey = new Map<number, LexicalHit>();
  for (const h of lexical) {
    const cos = similarity(snap, h, qv, embedder);
    const score = HYBRID_LEX_WEIGHT * (h.score / (h.score + HYBRID_LEX_HALF)) + (1 - HYBRID_LEX_WEIGHT) * Math.max(0, cos);
    byKey.set(hitKey(h), { segment: h.segment, ord: h.ord, score, matched: h.matched, typos: h.typos });
  }
  const out: LexicalHit[] = [];
  for (const h of byKey.values()) if (h.score > 0) out.push(h);
  return out.sort(byScore);
}

/** The fused lexical candidates with the vector candidates they do not hold (lexical 0), best first. */
function withVectorCandidates(fused: readonly LexicalHit[], vector: readonly VectorHit[]): LexicalHit[] {
  if (vector.length === 0) return fused.slice();
  const out = fused.slice();
  const have = new Set(fused.map(hitKey));
  for (const v of vector) {
    const score = (1 - HYBRID_LEX_WEIGHT) * Math.max(0, v.score);
    if (score > 0 && !have.has(hitKey(v))) out.push({ segment: v.segment, ord: v.ord, score, matched: 0, typos: 0 });
  }
  return out.sort(byScore);
}

/**
 * Whether hybrid's answer of `limit` is decided by its lexical candidates alone: a document only
 * the vector search finds scores at most (1 - LEX_WEIGHT) x its similarity, and similarities of
 * unit vectors are at most 1 (the margin covers rounding).
 */
function lexicalSettles(fused: readonly LexicalHit[], limit: number): boolean {
  const last = fused[limit - 1];
  return last !== undefined && last.score > (1 - HYBRID_LEX_WEIGHT) * (1 + 1e-6);
}

/** One number per (segment, document ordinal): ordinals stay below 2^32. */
function hitKey(h: { segment: number; ord: number }): number {
  return h.segment * 0x1_0000_0000 + h.ord;
}

/** What a suggestion shows of a document: fixed by the segment, so memoized per segment. */
interface RenderedDocument {
  id: string;
  display: ReturnType<typeof displayFields>;
}

/** Documents rendered per segment: about 1 KB each, so at most 16 MB per segment and thread, within the memo budget. */
const MAX_RENDERED_PER_SEGMENT = 16_384;
const rendered = new MemoPerOwner<Segment, number, RenderedDocument>(() => new ClearingMemo({ maxEntries: MAX_RENDERED_PER_SEGMENT, entryBytes: 1_024 }));

/** One suggestion object of autocomplete for a document (`hit` null: a pinned document the query may not match). */
function renderSuggestion(snap: IndexSnapshot, segment: number, ord: number, score: number, hit: LexicalHit | null): AutocompleteSuggestion {
  const seg = snap.segments[segment] as Segment;
  const memo = rendered.of(seg);
  let r = memo.get(ord);
  if (r === undefined) {
    const doc = seg.document(ord);
    r = { id: doc.id, display: displayFields(doc) };
    memo.set(ord, r);
  }
  const d = r.display;
  return {
    id: r.id,
    type: 'product',
    title: d.title,
    subtitle: d.subtitle,
    description: d.description,
    url: d.url,
    image: d.image,
    price: d.price,
    currency: d.currency,
    score: Math.round(score * 1e4) / 1e4,
    // a fresh list per answer: later stages may add to the metadata
    metadata: { concepts: [...d.concepts], matched_words: hit?.matched ?? 0, typos: hit?.typos ?? 0 },
  };
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.max(1, Math.min(MAX_LIMIT, Math.floor(limit)));
}

/**
 * `result` with the documents of another reading of the query, each at `factor` of its score
 * and `typos` more typos: every document keeps its better score, the best `poolSize` are kept.
 */
function withReading(result: LexicalResult, alt: LexicalResult, factor: number, typos: number, poolSize: number): LexicalResult {
  const best = new Map<string, LexicalHit>();
  for (const h of result.hits) best.set(`${h.segment}:${h.ord}`, h);
  for (const h of alt.hits) {
    const k = `${h.segment}:${h.ord}`;
    const score = h.score * factor;
    const prev = best.get(k);
    if (prev === undefined || prev.score < score) best.set(k, { ...h, score, typos: h.typos + typos });
  }
  const hits = [...best.values()].sort(byScore).slice(0, poolSize);
  return { hits, total: Math.max(result.total, alt.total), words: result.words };
}
