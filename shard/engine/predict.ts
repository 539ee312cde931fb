// Predict candidates of one index part, from the structures typeahead and autocomplete already
// use: the precomputed suggestion tables (brands -> destination, categories -> category, mined
// phrases and attributes -> intent, product suggestions -> product) and lexical retrieval of
// documents (products, or the type a document declares in `raw.predict_type`). The query is
// normalized and spell-corrected exactly as typeahead and autocomplete do it. Confidence is not
// decided here: the router merges the parts' candidates and scores them (router/predict-model.ts).
import type { SuggestDocument } from '../../node/runtime/document.js';
import { isPredictionType, type PredictCandidate, type PredictPartResult, type PredictionType } from '../../node/runtime/predict-types.js';
import type { RankingPayload } from '../../node/runtime/ranking-payload.js';
import type { FilterSpec } from './filters.js';
import type { AutocompleteRequest, AutocompleteResult, SuggestResult, SuggestionType, TypeaheadRequest, TypeaheadSuggestion } from './types.js';

export interface PredictRequest {
  query: string;
  /** candidates per source (default 20, at most 50) */
  candidates?: number;
  filters?: FilterSpec | null;
  /** document fields whose values the caller needs (action mappings' target and label fields) */
  fields?: readonly string[];
  /** the index's synonyms and merchandising rules for document retrieval (as autocomplete) */
  ranking?: RankingPayload | null;
  /** the rules that apply to the suggestion tables (as typeahead: hides) */
  suggestRanking?: RankingPayload | null;
}

/** What predict needs of the engine (SuggestEngine implements it). */
export interface PredictSource {
  typeahead(req: TypeaheadRequest): SuggestResult<TypeaheadSuggestion>;
  autocomplete(req: AutocompleteRequest): AutocompleteResult;
  get(id: string): SuggestDocument | null;
}

export const DEFAULT_CANDIDATES = 20;
/** Raw key a document may carry to say what it is (`content`, `destination`, `workflow`...). */
export const PREDICT_TYPE_KEY = 'predict_type';
/** Metadata keys of document signals that reason codes follow, when ranking features set them. */
const SIGNAL_KEYS = ['behavior', 'synonym', 'merchandised', 'personalized'] as const;

const SUGGESTION_PREDICTION: Record<SuggestionType, PredictionType> = {
  brand: 'destination',
  category: 'category',
  query: 'intent',
  attribute: 'intent',
  product: 'product',
};

export function predictCandidates(source: PredictSource, req: PredictRequest): PredictPartResult {
  const k = Math.max(1, Math.min(50, req.candidates ?? DEFAULT_CANDIDATES));
  const ta = source.typeahead({ query: req.query, limit: k, ranking: req.suggestRanking ?? null });
  const ac = source.autocomplete({ query: req.query, limit: k, mode: 'fts_only', filters: req.filters ?? null, ranking: req.ranking ?? null });
  const fields = req.fields ?? [];
  const candidates: PredictCandidate[] = [];
  const suggestedProducts = new Set<string>();

  ta.suggestions.forEach((s, rank) => {
    if (s.type === 'product') {
      suggestedProducts.add(s.id);
      // a filtered request keeps only the products retrieval let through
      if (req.filters) return;
    }
    const type = SUGGESTION_PREDICTION[s.type];
    const isDoc = s.type === 'product';
    candidates.push({
      key: isDoc ? `d:${s.id}` : `s:${s.id}`,
      type,
      object: s.type,
      id: s.id,
      label: s.title,
      source: 'suggestion',
      score: s.score,
      rank,
      matched: 0,
      typos: 0,
      suggested: isDoc,
      fields: isDoc ? fieldsOf(source.get(s.id), fields) : {},
      signals: {},
    });
  });

  // pinned documents the query did not retrieve join the documents, marked as merchandised
  const retrieved = new Set(ac.suggestions.map((s) => s.id));
  const pinned = (ac.pinned ?? []).filter((p) => !retrieved.has(p.suggestion.id));
  const pinMarks = new Map<string, unknown[]>();
  for (const p of ac.pinned ?? []) {
    const marks = pinMarks.get(p.suggestion.id) ?? [];
    marks.push({ id: p.rule, action: 'pin', position: p.position });
    pinMarks.set(p.suggestion.id, marks);
  }
  // a pin is the merchant's statement that the document belongs at its position: it gets the
  // score of the document retrieved there (or the last one) instead of the 0 the query gave it
  const topScore = (pos: number) => ac.suggestions[Math.min(pos, ac.suggestions.length) - 1]?.score ?? 1;
  const docs = [...ac.suggestions, ...pinned.map((p) => ({ ...p.suggestion, score: topScore(p.position) }))];

  docs.forEach((s, rank) => {
    const doc = source.get(s.id);
    const declared = doc?.raw?.[PREDICT_TYPE_KEY];
    const type: PredictionType = isPredictionType(declared) ? declared : 'product';
    const signals: Record<string, unknown> = {};
    for (const key of SIGNAL_KEYS) if (s.metadata && key in s.metadata) signals[key] = (s.metadata as Record<string, unknown>)[key];
    const pins = pinMarks.get(s.id);
    if (pins) signals.merchandised = [...(Array.isArray(signals.merchandised) ? (signals.merchandised as unknown[]) : []), ...pins];
    candidates.push({
      key: `d:${s.id}`,
      type,
      object: type === 'product' ? 'product' : 'document',
      id: s.id,
      label: s.title,
      source: 'document',
      score: s.score,
      rank,
      matched: s.metadata.matched_words,
      typos: s.metadata.typos,
      suggested: suggestedProducts.has(s.id),
      fields: fieldsOf(doc, fields),
      signals,
    });
  });

  return {
    normalized_query: ac.normalized_query,
    corrected_query: ac.corrected_query ?? ta.corrected_query,
    // supporting suggestions follow the same rule: no product the filters did not let through
    suggestions: ta.suggestions.filter((s) => !req.filters || s.type !== 'product' || retrieved.has(s.id)).map((s) => ({ id: s.id, type: s.type, title: s.title, score: s.score })),
    candidates,
  };
}

/** The requested fields of a document as strings: id, title, desc, manufacturer, or a raw key. */
export function fieldsOf(doc: SuggestDocument | null, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if (!doc) return out;
  for (const name of names) {
    let v: unknown;
    if (name === 'id' || name === 'title' || name === 'desc' || name === 'manufacturer') v = doc[name];
    else v = doc.raw?.[name];
    if (Array.isArray(v)) v = v[0];
    if (typeof v === 'string' && v.trim() !== '') out[name] = v.trim();
    else if (typeof v === 'number' && Number.isFinite(v)) out[name] = String(v);
  }
  return out;
}
