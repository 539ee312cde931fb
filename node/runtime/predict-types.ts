// The prediction vocabulary shared by the router (validation, response) and the shard engine
// (candidate generation): prediction types and the wire shape of one part's predict answer.

export const PREDICTION_TYPES = ['destination', 'intent', 'product', 'category', 'content', 'workflow'] as const;
export type PredictionType = (typeof PREDICTION_TYPES)[number];

export const isPredictionType = (v: unknown): v is PredictionType => typeof v === 'string' && (PREDICTION_TYPES as readonly string[]).includes(v);

/** Where a candidate came from: the precomputed suggestion tables or document retrieval. */
export type CandidateSource = 'suggestion' | 'document';

/** One candidate of one index part, before the router merges parts and scores confidence. */
export interface PredictCandidate {
  /** identity across parts: `s:<suggestion id>` or `d:<document id>` */
  key: string;
  type: PredictionType;
  /** entity.object: product, brand, category, query, attribute, document */
  object: string;
  /** entity.id: the document id, or `q:<normalized text>` for a suggestion */
  id: string;
  label: string;
  source: CandidateSource;
  /** suggestions: support score (adds up across parts); documents: lexical score */
  score: number;
  /** position in its source list on this part (0 = first) */
  rank: number;
  /** query words the document matched and their typo cost (documents only) */
  matched: number;
  typos: number;
  /** a document that the suggestion tables also offered as a product suggestion */
  suggested: boolean;
  /** values of the document fields the router asked for (action mappings) */
  fields: Record<string, string>;
  /** ranking signals other features attach to documents (behavior, synonym, merchandised) */
  signals: Record<string, unknown>;
}

/** One part's answer to a predict query. */
export interface PredictPartResult {
  normalized_query: string;
  corrected_query: string | null;
  /** the typeahead suggestions of this part (the response's supporting_suggestions) */
  suggestions: { id: string; type: string; title: string; score: number }[];
  /** candidates of every type, each source in its own rank order */
  candidates: PredictCandidate[];
  /** documents written before the query that it did not see (a bulk load still being indexed) */
  indexing?: number;
}
