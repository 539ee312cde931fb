// SuggestEngine: one index part's search engine. Owns the segment set and its life cycle:
// upserts are buffered and become a new immutable segment on refresh (on demand before a query,
// or once the buffer is full); deletes tombstone in place; a log-structured merge policy keeps
// the number of segments logarithmic by rebuilding neighbours of similar size from their stored
// documents (inline, or planned here and built on another thread), and compacts segments that
// are largely deleted. Queries run on an IndexSnapshot of
// the current segments. `serialize` writes the segments as they are (typed arrays), so loading
// needs no tokenizing; `exportShared` hands the same memory to worker threads.
import type { SuggestDocument } from '../../node/runtime/document.js';
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { displayFields, docFields } from './doc-fields.js';
import { decodeSegments, encodeSegments, ENGINE_FORMAT_VERSION } from './engine-format.js';
import { IndexSnapshot, type CollectionStats } from './index-snapshot.js';
import { lexicalSearch, type LexicalHit } from './lexical-search.js';
import { RankingRules } from './ranking-rules.js';
import { Segment, type SharedSegment } from './segment.js';
import { SegmentBuilder } from './segment-builder.js';
import { SpellCorrector } from './spell-corrector.js';
import { typeahead } from './typeahead.js';
import { predictCandidates, type PredictRequest } from './predict.js';
import type { PredictPartResult } from '../../node/runtime/predict-types.js';
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
  /**
   * merge segments inline when the policy says so (default true); off, the caller runs
   * `planMerge` / `commitMerge`, building the merged segment on another thread
   */
  autoMerge?: boolean;
  /** embedder of the fts_rerank mode (default: the built-in hashed n-gram embedder) */
  embedder?: Embedder;
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
  segments: SharedSegment[];
}

const DEFAULTS: Required<Omit<EngineOptions, 'embedder'>> = {
  maxPending: 5000,
  refreshOnRead: true,
  mergeFactor: 2,
  maxSegments: 8,
  compactDeleted: 0.3,
  minSupport: 2,
  autoMerge: true,
};

/** Documents found only through the corrected reading of a query keep this share of their score. */
const CORRECTED_FACTOR = 0.5;
/** Lexical candidates re-ranked in fts_rerank, and the weight of similarity in their score. */
const RERANK_POOL = 50;
const RERANK_WEIGHT = 0.3;

/** Typeahead suggestions fetched beyond the limit when hide rules may remove some. */
const HIDE_SPARE = 10;

export const MAX_LIMIT = 50;
export const DEFAULT_LIMIT = 10;

export class SuggestEngine {
  private readonly options: Required<Omit<EngineOptions, 'embedder'>>;
  private readonly embedder: Embedder;
  private segments: Segment[] = [];
  private readonly pending = new Map<string, SuggestDocument>();
  private snapshotCache: IndexSnapshot | null = null;
  private correctors: { suggestive: SpellCorrector; any: SpellCorrector } | null = null;
  /** segments in a merge plan that is not committed yet */
  private readonly merging = new Set<Segment>();

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
      this.maybeMerge();
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
      this.maybeMerge();
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
    const limit = clampLimit(req.limit);
    const rules = req.ranking ? new RankingRules(req.ranking) : RankingRules.none;
    if (!rules.active) return typeahead(snap, this.corrector('suggestive'), req.query, limit);
    // typeahead honours hide rules only (products it lists); a few spare suggestions fill the gaps
    const result = typeahead(snap, this.corrector('suggestive'), req.query, limit + HIDE_SPARE);
    const suggestions = result.suggestions.filter((s) => s.type !== 'product' || !rules.hidden(snap, s.id)).slice(0, limit);
    return { ...result, suggestions };
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
    const rules = req.ranking ? new RankingRules(req.ranking) : RankingRules.none;
    const options = { limit: poolSize, filters: req.filters ?? null, prefixLast: lastIsPrefix, ...(req.stats ? { stats: req.stats } : {}), ...rules.lexicalOptions() };
    let result = lexicalSearch(snap, q, options);
    if (corrected) {
      // The corrected reading competes with the query as typed (whose own typo matching is
      // stricter): its documents count at a discount, each document keeps its better score.
      const cq = analyzeQuery(corrected.join(' ') + (lastIsPrefix ? '' : ' '));
      const alt = lexicalSearch(snap, cq, options);
      const best = new Map<string, LexicalHit>();
      for (const h of result.hits) best.set(`${h.segment}:${h.ord}`, h);
      for (const h of alt.hits) {
        const k = `${h.segment}:${h.ord}`;
        const score = h.score * CORRECTED_FACTOR;
        const prev = best.get(k);
        if (prev === undefined || prev.score < score) best.set(k, { ...h, score, typos: h.typos + 1 });
      }
      const hits = [...best.values()].sort((a, b) => b.score - a.score || a.segment - b.segment || a.ord - b.ord).slice(0, poolSize);
      result = { hits, total: Math.max(result.total, alt.total), words: result.words };
    }
    result = rules.withSynonyms(result, (text) => lexicalSearch(snap, analyzeQuery(text + (lastIsPrefix ? '' : ' ')), options), poolSize);
    if (mode === 'fts_rerank' && result.hits.length > 0) {
      // a per-document factor keeps scores comparable across parts
      const [qv] = this.embedder.embed([(corrected ?? words).join(' ')]);
      const dv = this.embedder.embed(result.hits.map((h) => (snap.segments[h.segment] as Segment).title(h.ord)));
      const hits = result.hits.map((h, i) => ({ ...h, score: h.score * (1 - RERANK_WEIGHT + RERANK_WEIGHT * Math.max(0, cosine(qv as Float32Array, dv[i] as Float32Array))) }));
      hits.sort((a, b) => b.score - a.score || a.segment - b.segment || a.ord - b.ord);
      result = { ...result, hits: hits.slice(0, limit) };
    }
    const suggestions = result.hits.map((h) => {
      const s = renderSuggestion(snap, h.segment, h.ord, h.score, h);
      if (rules.active) Object.assign(s.metadata, rules.marks(snap, h));
      return s;
    });
    const out: AutocompleteResult = { normalized_query: q.normalized, corrected_query: corrected ? corrected.join(' ') : null, mode, suggestions };
    if (rules.active) {
      const pinned = rules.pinned(snap, options.filters, (seg, ord, score) => renderSuggestion(snap, seg, ord, score, null), (spec) => lexicalSearch(snap, q, { ...options, limit: 1, filters: spec }).hits[0] ?? null);
      if (pinned.length > 0) out.pinned = pinned;
      if (req.debug) out.ranking = rules.debugReport();
    }
    return out;
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
      segments: this.segments.map((s) => s.toShared()),
    };
  }

  /** A query-only engine over shared segment memory (writes belong to the exporting thread). */
  static fromShared(shared: SharedEngineState): SuggestEngine {
    const engine = new SuggestEngine({ ...shared.options, refreshOnRead: false });
    engine.segments = shared.segments.map((s) => Segment.fromShared(s));
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
   * The next merge the policy wants, or null. Log-structured merging: while the newest segment
   * is at least 1/mergeFactor the size of the one before (or there are more than maxSegments),
   * the two merge; sizes then grow geometrically, so there are O(log n) segments and each
   * document is rebuilt O(log n) times. A segment with `compactDeleted` of its documents deleted
   * is rebuilt alone. With `autoMerge` off the caller builds `plan.documents` into a segment
   * (on a worker thread: SegmentBuilder needs nothing else) and hands it to `commitMerge`;
   * writes in between are replayed on commit.
   */
  planMerge(): MergePlan | null {
    const free = this.segments.filter((s) => !this.merging.has(s));
    let parts: Segment[] | null = null;
    const worn = free.find((s) => s.deletedCount > 0 && s.deletedCount >= this.options.compactDeleted * s.docCount);
    if (worn !== undefined) parts = [worn];
    else {
      const n = this.segments.length;
      const last = this.segments[n - 1];
      const prev = this.segments[n - 2];
      if (last !== undefined && prev !== undefined && free.includes(last) && free.includes(prev)) {
        if (last.liveCount * this.options.mergeFactor >= prev.liveCount || n > this.options.maxSegments) parts = [prev, last];
      }
    }
    if (parts === null) return null;
    for (const p of parts) this.merging.add(p);
    return {
      segments: parts,
      documents: parts.flatMap((p) => [...p.liveDocuments()]),
      tombstones: parts.map((p) => p.tombstones.slice()),
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
    this.snapshotCache = null;
    return true;
  }

  /** Runs the merges the policy wants, here and now (autoMerge). */
  private maybeMerge(): void {
    if (!this.options.autoMerge) return;
    for (let plan = this.planMerge(); plan !== null; plan = this.planMerge()) {
      const merged = plan.documents.length > 0 ? new SegmentBuilder({ minSupport: this.options.minSupport }).addAll(plan.documents).build() : null;
      this.commitMerge(plan, merged);
    }
  }

  private merge(parts: Segment[]): Segment {
    const builder = new SegmentBuilder({ minSupport: this.options.minSupport });
    for (const p of parts) builder.addAll(p.liveDocuments());
    this.snapshotCache = null;
    return builder.build();
  }
}

/** One suggestion object of autocomplete for a document (`hit` null: a pinned document the query may not match). */
function renderSuggestion(snap: IndexSnapshot, segment: number, ord: number, score: number, hit: LexicalHit | null): AutocompleteSuggestion {
  const seg = snap.segments[segment] as Segment;
  const doc = seg.document(ord);
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
    score: Math.round(score * 1e4) / 1e4,
    metadata: { concepts: d.concepts, matched_words: hit?.matched ?? 0, typos: hit?.typos ?? 0 },
  };
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEFAULT_LIMIT;
  return Math.max(1, Math.min(MAX_LIMIT, Math.floor(limit)));
}
