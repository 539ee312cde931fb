// The engine's public request and result shapes (the suggestion objects follow the contract
// fixed in ARCHITECTURE.md: the router adds query, original_query, mode, index, took_ms, debug).
import type { FilterSpec } from './filters.js';
import type { CollectionStats } from './index-snapshot.js';
import type { SuggestionType } from './suggestion-miner.js';
import type { VectorBackend } from './vector-index.js';
import type { PinnedSuggestion, RankingPayload } from '../../node/runtime/ranking-payload.js';
import type { MerchandisedMark, RankingReport } from './ranking-rules.js';
import type { EngineProfile } from './stage-clock.js';

export type { SuggestionType } from './suggestion-miner.js';
export type { FilterSpec } from './filters.js';
export type { CollectionStats } from './index-snapshot.js';
export type { VectorBackend } from './vector-index.js';
export type { EngineProfile } from './stage-clock.js';
export { VECTOR_BACKENDS, DEFAULT_VECTOR_BACKEND } from './vector-index.js';

export type AutocompleteMode = 'fts_only' | 'vector_only' | 'hybrid' | 'fts_rerank';
export const AUTOCOMPLETE_MODES: readonly AutocompleteMode[] = ['fts_only', 'vector_only', 'hybrid', 'fts_rerank'];
/** The mode of an autocomplete request that names none. */
export const DEFAULT_AUTOCOMPLETE_MODE: AutocompleteMode = 'fts_only';

export interface TypeaheadRequest {
  query: string;
  /** 1 to 50, default 10 */
  limit?: number;
  /**
   * Phrase suggestions wanted beyond `limit` (0 to 50, default 0): an index in parts, whose
   * router adds each phrase's scores up over its parts, asks each part for more phrases than it
   * shows, so that one just outside a part's first `limit` is summed whole. The product fallback
   * still fills only up to `limit`.
   */
  spare?: number;
  /** the index's synonyms and merchandising rules that apply to this query (typeahead: hides only) */
  ranking?: RankingPayload | null;
  /** report per-stage timings in the result's `profile` */
  profile?: boolean;
}

export interface AutocompleteRequest {
  query: string;
  /** 1 to 50, default 10 */
  limit?: number;
  /** validated filters (see `validateFilters` in filters.ts) */
  filters?: FilterSpec | null;
  /** default DEFAULT_AUTOCOMPLETE_MODE */
  mode?: AutocompleteMode;
  /** collection statistics of the whole index, to score every part on one scale */
  stats?: CollectionStats;
  /** the ANN library of the vector modes (default hnswlib) */
  vectorBackend?: VectorBackend;
  /** run the vector retrieval with both libraries (and an exact scan) and report timings and overlap */
  benchmark?: boolean;
  /** the index's synonyms and merchandising rules that apply to this query */
  ranking?: RankingPayload | null;
  /** add `ranking` (what the rules did) and `debug.vector` (what the vector retrieval did) to the result */
  debug?: boolean;
  /** report per-stage timings in the result's `profile` */
  profile?: boolean;
}

export interface TypeaheadSuggestion {
  /** the document id for a product, `q:<normalized text>` otherwise (stable across parts) */
  id: string;
  type: SuggestionType;
  title: string;
  score: number;
}

export interface AutocompleteSuggestion {
  id: string;
  type: 'product';
  title: string;
  subtitle: string;
  description: string;
  url: string | null;
  image: string | null;
  price: number | null;
  currency: string | null;
  score: number;
  metadata: {
    concepts: string[];
    /** query words the document matched, and the typo cost of those matches */
    matched_words: number;
    typos: number;
    /** how engagement changed the score; present once the index part has events */
    behavior?: BehaviorSignal;
    /** found only through this synonym of a query word */
    synonym?: { from: string; to: string };
    /** merchandising rules that acted on the suggestion */
    merchandised?: MerchandisedMark[];
  };
}

/** The behaviour signal a suggestion carries in `metadata.behavior` (see behavior-ranking.ts). */
export interface BehaviorSignal {
  /** the factor the score was multiplied by (1 = no effect) */
  boost: number;
  popularity: number;
  query: number;
  graph: number;
  personal: number;
  /** added from click evidence, not found by lexical retrieval */
  injected: boolean;
}

export interface SuggestResult<S> {
  normalized_query: string;
  /** the query as corrected from the index's vocabulary, null when unchanged */
  corrected_query: string | null;
  suggestions: S[];
  /** per-stage timings, when the request asked for them */
  profile?: EngineProfile;
}

/** Timing of one library's vector retrieval in a benchmark. */
export interface VectorBackendTiming {
  ms: number;
  /** 'ann': its graphs answered; 'exact': a graph was not complete yet, the exact scan answered */
  method: 'ann' | 'exact' | 'mixed' | 'none';
  graph_ready: boolean;
  /** share of the exact top k it found (a hit as similar as the exact k-th counts as found) */
  recall_at_k: number;
}

export interface VectorBenchmark {
  k: number;
  backends: Record<VectorBackend, VectorBackendTiming>;
  /** |top k of hnswlib ∩ top k of usearch| / k */
  overlap_at_k: number;
  exact_ms: number;
}

export interface VectorDebug {
  backend: VectorBackend;
  embedder: string;
  dimensions: number;
  /** how the vector candidates were found ('none': the mode needs none, or no searchable vectors) */
  method: 'ann' | 'exact' | 'mixed' | 'none';
  graph: { ready: boolean; built: number; total: number };
  candidates: number;
  ms: number;
  benchmark?: VectorBenchmark;
  /** fts_rerank with an embeddings endpoint: 'ok', or 'fallback: <reason>' when the built-in embedder answered */
  provider?: string;
}

export type TypeaheadResult = SuggestResult<TypeaheadSuggestion>;

export interface AutocompleteResult extends SuggestResult<AutocompleteSuggestion> {
  /** the mode actually used */
  mode: AutocompleteMode;
  /** present when the request asked for debug or benchmark */
  debug?: { vector: VectorDebug };
  /** pinned documents this part holds (the router places them after merging the parts) */
  pinned?: PinnedSuggestion<AutocompleteSuggestion>[];
  /** what synonyms and rules did in this part (debug only) */
  ranking?: RankingReport;
}
