// How engagement changes what autocomplete and typeahead return. Every document's score is
// multiplied by a behaviour factor (1 + the sum of the boosts below), which depends only on the
// document, the query and the user, never on the other candidates, so scores stay comparable
// across index parts:
//
//  - popularity: decayed weighted events on the document, saturating (POPULARITY_WEIGHT at most);
//  - query: the document's share of the choices made after this query (and the known queries
//    that continue it, while the last word is being typed), times a confidence that grows with
//    the amount of evidence (QUERY_WEIGHT at most);
//  - graph: the share of those choices that went to the document's brand and categories
//    (query -> concept -> document, GRAPH_WEIGHT at most);
//  - personal (paid plans, `user_id`): the user's own choices of the document and of its brand
//    and categories.
//
// Documents chosen after the query that lexical retrieval did not return are added (they are
// the point of learning from clicks) at half the best lexical score before their factor.
// Typeahead additionally offers mined queries: queries typed by at least `min_query_count`
// visitors and not excluded by the index schema become completions of what is typed.
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { queryKey, type BehaviorModel, type ConceptKey } from './behavior.js';
import { displayFields, docFields } from './doc-fields.js';
import type { AutocompleteSuggestion, BehaviorSignal, SuggestResult, TypeaheadSuggestion } from './types.js';
import type { SuggestDocument } from '../../node/runtime/document.js';

export const POPULARITY_WEIGHT = 0.25;
/** decayed weighted events at which popularity gives 63% of its weight */
export const POPULARITY_SCALE = 20;
export const QUERY_WEIGHT = 2;
/** decayed weighted choices after the query at which the query boost is 63% confident */
export const QUERY_SCALE = 2;
export const GRAPH_WEIGHT = 0.3;
export const PERSONAL_DOC_WEIGHT = 0.5;
export const PERSONAL_CONCEPT_WEIGHT = 0.3;
/** injected documents start from this share of the best lexical score */
export const INJECTED_BASE = 0.5;
/** typed prefixes shorter than this (characters) do not expand to the queries that continue them */
export const MIN_EXPANSION_CHARS = 2;

/** Index-level settings from the index schema's `events` object (defaults published in OpenAPI). */
export interface BehaviorSettings {
  /** behaviour changes ranking (default true) */
  enabled: boolean;
  /** visitors who must have typed a query before typeahead suggests it (default 3) */
  minQueryCount: number;
  /** normalized queries never suggested */
  excludedQueries: ReadonlySet<string>;
}

export const DEFAULT_BEHAVIOR_SETTINGS: BehaviorSettings = { enabled: true, minQueryCount: 3, excludedQueries: new Set() };

/** Reads the `behavior` object of a query payload (sent by the router from the index schema). */
export function behaviorSettings(raw: unknown): BehaviorSettings {
  if (typeof raw !== 'object' || raw === null) return DEFAULT_BEHAVIOR_SETTINGS;
  const o = raw as Record<string, unknown>;
  const min = typeof o.min_query_count === 'number' && Number.isInteger(o.min_query_count) && o.min_query_count >= 1 ? o.min_query_count : DEFAULT_BEHAVIOR_SETTINGS.minQueryCount;
  const excluded = Array.isArray(o.excluded_queries) ? o.excluded_queries.filter((q): q is string => typeof q === 'string').map(queryKey).filter(Boolean) : [];
  return { enabled: o.enabled !== false, minQueryCount: min, excludedQueries: new Set(excluded) };
}

export interface RankContext {
  model: BehaviorModel;
  query: string;
  userId?: string | undefined;
  now?: number;
  settings?: BehaviorSettings;
}

/** What the ranking needs of the engine: a live document by id. */
export interface DocumentSource {
  get(id: string): SuggestDocument | null;
}

const saturate = (x: number, scale: number) => 1 - Math.exp(-x / scale);
const r4 = (x: number) => Math.round(x * 1e4) / 1e4;

/**
 * How much of the weight behind `shares` went to a document's concepts, in [0, 1]: the mean of
 * the best brand share and the best category share (a shared brand and category count fully,
 * either one alone half).
 */
function conceptAffinity(shares: ReadonlyMap<ConceptKey, number>, concepts: readonly ConceptKey[]): number {
  if (shares.size === 0) return 0;
  let brand = 0;
  let category = 0;
  for (const c of concepts) {
    const s = shares.get(c) ?? 0;
    if (c.startsWith('brand:')) brand = Math.max(brand, s);
    else category = Math.max(category, s);
  }
  return Math.min(1, (brand + category) / 2);
}

/**
 * Lexical candidates to re-rank for a list of `limit`: a wider pool only when the query (or the
 * queries it continues into) led somewhere or the user has a history, the evidence that can lift
 * a document from below the cut; otherwise popularity re-orders the list itself.
 */
export function candidatePool(model: BehaviorModel, query: string, userId: string | undefined, limit: number, max: number): number {
  if (userId !== undefined && model.hasUser(userId)) return Math.min(max, 2 * limit + 10);
  const q = analyzeQuery(query);
  const key = q.words.map((w) => w.term).join(' ');
  const prefix = !q.lastWordComplete && key.length >= MIN_EXPANSION_CHARS;
  return model.relatedQueries(key, prefix, 1).length > 0 ? Math.min(max, 2 * limit + 10) : limit;
}

/** Per-query state shared by every candidate of one request. */
class QueryEvidence {
  readonly docs: Map<string, number>;
  readonly total: number;
  readonly concepts: Map<ConceptKey, number>;
  readonly user: ReturnType<BehaviorModel['user']>;
  readonly now: number;

  constructor(readonly model: BehaviorModel, query: string, userId: string | undefined, now: number) {
    this.now = now;
    const q = analyzeQuery(query);
    const key = q.words.map((w) => w.term).join(' ');
    const prefix = !q.lastWordComplete && key.length >= MIN_EXPANSION_CHARS;
    const related = model.relatedQueries(key, prefix);
    const { docs, total } = model.queryDocuments(related, now);
    this.docs = docs;
    this.total = total;
    this.concepts = model.queryConcepts(related);
    this.user = userId ? model.user(userId, now) : null;
  }

  signal(docId: string, concepts: readonly ConceptKey[], injected: boolean): BehaviorSignal {
    const popularity = POPULARITY_WEIGHT * saturate(this.model.popularity(docId, this.now), POPULARITY_SCALE);
    const chosen = this.docs.get(docId) ?? 0;
    const query = this.total > 0 ? QUERY_WEIGHT * (chosen / this.total) * saturate(this.total, QUERY_SCALE) : 0;
    const graph = GRAPH_WEIGHT * conceptAffinity(this.concepts, concepts);
    let personal = 0;
    if (this.user && this.user.total > 0) {
      const own = this.user.docs.get(docId) ?? 0;
      personal = PERSONAL_DOC_WEIGHT * saturate(own, 1) + PERSONAL_CONCEPT_WEIGHT * conceptAffinity(this.user.concepts, concepts);
    }
    return { boost: r4(1 + popularity + query + graph + personal), popularity: r4(popularity), query: r4(query), graph: r4(graph), personal: r4(personal), injected };
  }
}

/**
 * Re-ranks an autocomplete candidate pool (asked of the engine with a larger limit) and cuts it
 * to `limit`. `allowInjection` is false when the request has filters (an added document would
 * not have been checked against them).
 */
export function rankAutocomplete(
  pool: AutocompleteSuggestion[],
  docs: DocumentSource,
  ctx: RankContext,
  limit: number,
  allowInjection: boolean,
): AutocompleteSuggestion[] {
  const settings = ctx.settings ?? DEFAULT_BEHAVIOR_SETTINGS;
  if (!settings.enabled || ctx.model.isEmpty) return pool.slice(0, limit);
  const ev = new QueryEvidence(ctx.model, ctx.query, ctx.userId, ctx.now ?? Date.now());
  const out: AutocompleteSuggestion[] = pool.map((s) => {
    const signal = ev.signal(s.id, ctx.model.concepts(s.id), false);
    return { ...s, score: r4(s.score * signal.boost), metadata: { ...s.metadata, behavior: signal } };
  });
  if (allowInjection && ev.docs.size > 0) {
    const have = new Set(pool.map((s) => s.id));
    const top = pool[0]?.score ?? 1;
    const chosen = [...ev.docs].filter(([id]) => !have.has(id)).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, limit);
    for (const [id] of chosen) {
      const doc = docs.get(id);
      if (!doc) continue;
      const fields = docFields(doc);
      const d = displayFields(doc, fields);
      const signal = ev.signal(id, ctx.model.concepts(id), true);
      out.push({
        id,
        type: 'product',
        title: d.title,
        subtitle: d.subtitle,
        description: d.description,
        url: d.url,
        image: d.image,
        price: d.price,
        currency: d.currency,
        score: r4(top * INJECTED_BASE * signal.boost),
        metadata: { concepts: d.concepts, matched_words: 0, typos: 0, behavior: signal },
      });
    }
  }
  out.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out.slice(0, limit);
}

/**
 * Typeahead with engagement: product completions get their behaviour factor, and mined queries
 * that continue the typed text join the list (a mined query the tables already had adds to it).
 */
export function rankTypeahead(result: SuggestResult<TypeaheadSuggestion>, ctx: RankContext, limit: number): SuggestResult<TypeaheadSuggestion> {
  const settings = ctx.settings ?? DEFAULT_BEHAVIOR_SETTINGS;
  if (!settings.enabled || ctx.model.isEmpty) return result;
  const now = ctx.now ?? Date.now();
  const q = analyzeQuery(ctx.query);
  const key = q.words.map((w) => w.term).join(' ');
  const ev = new QueryEvidence(ctx.model, ctx.query, ctx.userId, now);
  const byId = new Map<string, TypeaheadSuggestion>();
  let top = 1e-4;
  for (const s of result.suggestions) {
    const scored = s.type === 'product' ? { ...s, score: r4(s.score * ev.signal(s.id, ctx.model.concepts(s.id), false).boost) } : { ...s };
    byId.set(s.id, scored);
    top = Math.max(top, scored.score);
  }
  // mined queries: the most typed one lands just above the best of what the tables offer
  const mined = ctx.model.minedCompletions(key, settings.minQueryCount, limit * 2).filter((m) => !settings.excludedQueries.has(m.key));
  const most = mined[0]?.count ?? 0;
  for (const m of mined) {
    const id = `q:${m.key}`;
    const share = 0.5 + 0.55 * (Math.log1p(m.count) / Math.log1p(most));
    const score = r4(top * share * (m.key === key ? 1.25 : 1));
    const existing = byId.get(id);
    if (existing) existing.score = r4(existing.score + score);
    else byId.set(id, { id, type: 'query', title: m.display, score });
  }
  const titles = new Set<string>();
  const suggestions = [...byId.values()]
    .sort((a, b) => b.score - a.score || (a.title < b.title ? -1 : a.title > b.title ? 1 : 0))
    .filter((s) => {
      const t = s.title.toLowerCase().replace(/\s+/g, ' ').trim();
      if (titles.has(t) || (s.type === 'query' && settings.excludedQueries.has(s.id.slice(2)))) return false;
      titles.add(t);
      return true;
    })
    .slice(0, limit);
  return { ...result, suggestions };
}
