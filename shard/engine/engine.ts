// SuggestEngine: one index part's search engine. Owns the segment set and its life cycle:
// upserts are buffered and become a new immutable segment on refresh (on demand before a query,
// or once the buffer is full); deletes tombstone in place; a log-structured merge policy keeps
// the number of segments logarithmic by rebuilding neighbours of similar size from their stored
// documents, and compacts segments that are mostly deleted. Queries run on an IndexSnapshot of
// the current segments. `serialize` writes the segments as they are (typed arrays), so loading
// needs no tokenizing; `exportShared` hands the same memory to worker threads.
import type { SuggestDocument } from '../../node/runtime/document.js';
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { displayFields, docFields } from './doc-fields.js';
import { decodeSegments, encodeSegments, ENGINE_FORMAT_VERSION } from './engine-format.js';
import { IndexSnapshot, type CollectionStats } from './index-snapshot.js';
import { lexicalSearch } from './lexical-search.js';
import { Segment, type SegmentMeta, type SegmentMutableState } from './segment.js';
import { SegmentBuilder } from './segment-builder.js';
import { SpellCorrector } from './spell-corrector.js';
import { Arena, type ArenaLayout } from './typed-arena.js';
import { typeahead } from './typeahead.js';
import type { AutocompleteMode, AutocompleteRequest, AutocompleteResult, AutocompleteSuggestion, SuggestResult, TypeaheadRequest, TypeaheadSuggestion } from './types.js';
import { HashedNgramEmbedder, cosine, type Embedder } from './embedder.js';

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
  /** embedder of the fts_rerank mode (default: the built-in hashed n-gram embedder) */
  embedder?: Embedder;
}

export interface EngineStats {
  documents: number;
  deleted: number;
  pending: number;
  segments: number;
  terms: number;
  postings: number;
  suggestions: number;
  bytes: Record<string, number>;
  /** all structures (stored documents included) per live document */
  bytes_per_document: number;
  /** search structures only (stored documents excluded) per live document */
  index_bytes_per_document: number;
  format_version: number;
}

/** What a worker thread needs to query the same segments without copying them. */
export interface SharedEngineState {
  options: EngineOptions;
  segments: { meta: SegmentMeta; layout: ArenaLayout; buffer: SharedArrayBuffer | ArrayBuffer; state: SegmentMutableState }[];
}

const DEFAULTS: Required<Omit<EngineOptions, 'embedder'>> = {
  maxPending: 5000,
  refreshOnRead: true,
  mergeFactor: 2,
  maxSegments: 8,
  compactDeleted: 0.3,
  minSupport: 2,
};

/** Lexical candidates re-ranked in fts_rerank, and the weight of similarity in their score. */
const RERANK_POOL = 50;
const RERANK_WEIGHT = 0.3;

export const MAX_LIMIT = 50;
export const DEFAULT_LIMIT = 10;

export class SuggestEngine {
  private readonly options: Required<Omit<EngineOptions, 'embedder'>>;
  private readonly embedder: Embedder;
  private segments: Segment[] = [];
  private readonly pending = new Map<string, SuggestDocument>();
  private snapshotCache: IndexSnapshot | null = null;
  private correctors: { suggestive: SpellCorrector; any: SpellCorrector } | null = null;

  constructor(options: EngineOptions = {}) {
    const { embedder, ...rest } = options;
    this.options = { ...DEFAULTS, ...rest };
    this.embedder = embedder ?? new HashedNgramEmbedder();
  }

  /** Live documents, buffered upserts included. */
  get documentCount(): number {
    let n = this.pending.size;
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
      const existed = this.pending.has(doc.id) || this.deleteFromSegments(doc.id);
      if (!existed) created++;
      this.pending.delete(doc.id); // keep insertion order = latest write last
      this.pending.set(doc.id, doc);
      upserted++;
    }
    this.snapshotCache = null;
    if (this.pending.size >= this.options.maxPending) this.refresh();
    return { upserted, created };
  }

  /** Deletes documents by id; returns how many existed. */
  remove(ids: Iterable<string>): number {
    let removed = 0;
    for (const id of ids) {
      const inPending = this.pending.delete(id);
      const inSegments = this.deleteFromSegments(id);
      if (inPending || inSegments) removed++;
    }
    if (removed > 0) {
      this.snapshotCache = null;
      this.compact();
    }
    return removed;
  }

  /** The live document with this id, or null. */
  get(id: string): SuggestDocument | null {
    const p = this.pending.get(id);
    if (p) return p;
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const s = this.segments[i] as Segment;
      const ord = s.ordinalOf(id);
      if (ord >= 0 && s.isLive(ord)) return s.document(ord);
    }
    return null;
  }

  /** Indexes buffered upserts as a new segment and runs the merge policy. */
  refresh(): void {
    if (this.pending.size > 0) {
      const segment = new SegmentBuilder({ minSupport: this.options.minSupport }).addAll(this.pending.values()).build();
      this.pending.clear();
      this.segments.push(segment);
      this.mergePolicy();
    }
    this.snapshotCache = null;
  }

  /** Rebuilds everything into one segment (after a bulk load, before serializing for good). */
  optimize(): void {
    this.refresh();
    if (this.segments.length > 1 || (this.segments[0]?.deletedCount ?? 0) > 0) {
      this.segments = this.segments.length === 0 ? [] : [this.merge(this.segments)];
      this.snapshotCache = null;
    }
  }

  typeahead(req: TypeaheadRequest): SuggestResult<TypeaheadSuggestion> {
    const snap = this.snapshot();
    return typeahead(snap, this.corrector('suggestive'), req.query, clampLimit(req.limit));
  }

  autocomplete(req: AutocompleteRequest): AutocompleteResult {
    const snap = this.snapshot();
    const limit = clampLimit(req.limit);
    const q = analyzeQuery(req.query);
    // fts_rerank re-ranks lexical candidates by embedding similarity; the modes that need a
    // vector index (vector_only, hybrid) are not built yet and answer as fts_only, which the
    // result reports.
    const mode: AutocompleteMode = req.mode === 'fts_rerank' ? 'fts_rerank' : 'fts_only';
    const poolSize = mode === 'fts_rerank' ? Math.max(RERANK_POOL, limit) : limit;
    const lastIsPrefix = !q.lastWordComplete;
    const words = q.words.map((w) => w.term);
    let corrected: string[] | null = null;
    const unknown = words.some((w, i) => (lastIsPrefix && i === words.length - 1 ? !snap.hasPrefix(w, 'any') : snap.df(w) === 0));
    if (unknown) corrected = this.corrector('any').correct(words, lastIsPrefix);
    let result = lexicalSearch(snap, q, { limit: poolSize, filters: req.filters ?? null, prefixLast: lastIsPrefix, ...(req.stats ? { stats: req.stats } : {}) });
    if (result.hits.length === 0 && corrected) {
      const cq = analyzeQuery(corrected.join(' ') + (lastIsPrefix ? '' : ' '));
      result = lexicalSearch(snap, cq, { limit: poolSize, filters: req.filters ?? null, prefixLast: lastIsPrefix, ...(req.stats ? { stats: req.stats } : {}) });
    }
    if (mode === 'fts_rerank' && result.hits.length > 0) {
      // a per-document factor keeps scores comparable across parts
      const [qv] = this.embedder.embed([(corrected ?? words).join(' ')]);
      const dv = this.embedder.embed(result.hits.map((h) => (snap.segments[h.segment] as Segment).title(h.ord)));
      const hits = result.hits.map((h, i) => ({ ...h, score: h.score * (1 - RERANK_WEIGHT + RERANK_WEIGHT * Math.max(0, cosine(qv as Float32Array, dv[i] as Float32Array))) }));
      hits.sort((a, b) => b.score - a.score || a.segment - b.segment || a.ord - b.ord);
      result = { ...result, hits: hits.slice(0, limit) };
    }
    const suggestions: AutocompleteSuggestion[] = result.hits.map((h) => {
      const seg = snap.segments[h.segment] as Segment;
      const doc = seg.document(h.ord);
      const fields = docFields(doc);
      const d = displayFields(doc, fields);
      return {
        id: doc.id,
        type: 'product',
        title: doc.title,
        subtitle: d.subtitle,
        description: d.description,
        url: d.url,
        image: d.image,
        price: d.price,
        currency: d.currency,
        score: Math.round(h.score * 1e4) / 1e4,
        metadata: { concepts: d.concepts, matched_words: h.matched, typos: h.typos },
      };
    });
    return { normalized_query: q.normalized, corrected_query: corrected ? corrected.join(' ') : null, mode, suggestions };
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

  stats(): EngineStats {
    if (this.options.refreshOnRead) this.refresh();
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
    const total = Object.values(bytes).reduce((a, b) => a + b, 0);
    bytes.total = total;
    const live = this.documentCount - this.pending.size;
    return {
      documents: this.documentCount,
      deleted,
      pending: this.pending.size,
      segments: this.segments.length,
      terms,
      postings,
      suggestions,
      bytes,
      bytes_per_document: live > 0 ? Math.round(total / live) : 0,
      index_bytes_per_document: live > 0 ? Math.round((total - (bytes.store ?? 0)) / live) : 0,
      format_version: ENGINE_FORMAT_VERSION,
    };
  }

  /** The engine as bytes (buffered upserts are indexed first). */
  serialize(): Uint8Array {
    this.refresh();
    return encodeSegments(this.segments, { ...this.options });
  }

  static deserialize(bytes: Uint8Array, options: EngineOptions = {}): SuggestEngine {
    const decoded = decodeSegments(bytes);
    const engine = new SuggestEngine({ ...(decoded.options as EngineOptions), ...options });
    engine.segments = decoded.segments;
    return engine;
  }

  /** Segment memory for worker threads (post it; rebuild with `fromShared`). */
  exportShared(): SharedEngineState {
    this.refresh();
    return {
      options: { ...this.options },
      segments: this.segments.map((s) => ({ meta: s.meta, layout: s.arena.layout, buffer: s.arena.buffer, state: s.state() })),
    };
  }

  /** A query-only engine over shared segment memory (writes belong to the exporting thread). */
  static fromShared(shared: SharedEngineState): SuggestEngine {
    const engine = new SuggestEngine({ ...shared.options, refreshOnRead: false });
    engine.segments = shared.segments.map((s) => new Segment(new Arena(s.buffer, s.layout), s.meta, s.state));
    return engine;
  }

  private snapshot(): IndexSnapshot {
    if (this.options.refreshOnRead && this.pending.size > 0) this.refresh();
    if (this.snapshotCache === null) {
      this.snapshotCache = new IndexSnapshot(this.segments);
      this.correctors = null;
    }
    return this.snapshotCache;
  }

  private corrector(kind: 'suggestive' | 'any'): SpellCorrector {
    const snap = this.snapshot();
    if (this.correctors === null) this.correctors = { suggestive: new SpellCorrector(snap, 'suggestive'), any: new SpellCorrector(snap, 'any') };
    return this.correctors[kind];
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
   * Log-structured merging: while the newest segment is at least 1/mergeFactor the size of the
   * one before, merge them; sizes then grow geometrically, so there are O(log n) segments and
   * each document is rebuilt O(log n) times.
   */
  private mergePolicy(): void {
    const f = this.options.mergeFactor;
    for (;;) {
      const n = this.segments.length;
      if (n < 2) break;
      const last = this.segments[n - 1] as Segment;
      const prev = this.segments[n - 2] as Segment;
      if (last.liveCount * f < prev.liveCount && n <= this.options.maxSegments) break;
      this.segments.splice(n - 2, 2, this.merge([prev, last]));
    }
    this.compact();
  }

  private compact(): void {
    this.segments = this.segments
      .map((s) => (s.deletedCount > 0 && s.deletedCount >= this.options.compactDeleted * s.docCount ? (s.liveCount === 0 ? null : this.merge([s])) : s))
      .filter((s): s is Segment => s !== null);
  }

  private merge(parts: Segment[]): Segment {
    const builder = new SegmentBuilder({ minSupport: this.options.minSupport });
    for (const p of parts) builder.addAll(p.liveDocuments());
    this.snapshotCache = null;
    return builder.build();
  }
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.max(1, Math.min(MAX_LIMIT, Math.floor(limit)));
}
