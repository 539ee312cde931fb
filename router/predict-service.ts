// Answers POST /v1/predict: resolves the index and its schema's `predict` configuration (409
// `predict_disabled` when it is switched off), sends the query to every part of the physical
// index (each part returns typed candidates from its suggestion tables and document retrieval,
// see shard/engine/predict.ts), merges them, adds the schema's intent rules, scores every
// candidate with the calibrated confidence model (predict-model.ts), maps it to an action
// (action_mappings, else the type's default action) and renders one primary prediction plus up to
// `limit` alternatives. Answers are cached per (tenant, physical index, write generation,
// placement epoch, index record version, request) while the shard directory's change feed is
// live (response-cache.ts), like search-service.ts.
import { pack, unpack } from 'msgpackr';
import type { IndexRecord } from '../coordinator/coordinator.js';
import { fail } from '../node/runtime/errors.js';
import type { TenantId } from '../node/runtime/ids.js';
import type { Metrics } from '../node/runtime/metrics.js';
import { PREDICTION_TYPES, type PredictCandidate, type PredictPartResult, type PredictionType } from '../node/runtime/predict-types.js';
import type { ShardDirectory } from '../node/runtime/shard-api.js';
import { ResponseCache, sawEveryWrite, unseenDocuments } from './response-cache.js';
import { analyzeQuery } from '../node/runtime/text/analyze-query.js';
import { singular } from '../node/runtime/text/tokenize.js';
import type { DataPlane } from './data-plane.js';
import { PREDICT_MODEL } from './predict-coefficients.js';
import {
  BEHAVIOR_LOG_ODDS,
  boosted,
  MERCHANDISED_LOG_ODDS,
  RULE_LOG_ODDS,
  confidenceOf,
  featuresOf,
  logOdds,
  primaryConfidence,
  promoted,
  queryView,
  reasonCodes,
  type Features,
  type QueryView,
  type ReasonCode,
} from './predict-model.js';
import { RankingConfig } from './ranking-config.js';
import { Reply } from './route.js';

export const PREDICT_DEFAULT_LIMIT = 5;
export const PREDICT_MAX_LIMIT = 20;
/** Candidates each part returns per source (suggestion tables, documents). */
export const CANDIDATES_PER_SOURCE = 20;
/** Supporting suggestions returned at most. */
export const SUPPORTING_SUGGESTIONS = 10;

export interface PredictParams {
  tenant: TenantId;
  index: string;
  query: string;
  limit?: number | undefined;
  userId?: string | undefined;
  filters?: unknown;
  context?: Record<string, string | undefined> | undefined;
  allowedTypes?: PredictionType[] | undefined;
  include?: { alternatives?: boolean | undefined; supporting_suggestions?: boolean | undefined; debug?: boolean | undefined } | undefined;
}

export interface ActionMapping {
  target_field: string;
  label_field: string;
}

export interface IntentRule {
  intent: string;
  match_terms: string[];
  target: string;
  label: string;
  type: PredictionType;
}

export interface PredictConfig {
  enabled?: boolean;
  default_types?: PredictionType[];
  action_mappings?: Partial<Record<PredictionType, ActionMapping>>;
  intent_rules?: IntentRule[];
}

export interface PredictAction {
  kind: 'navigate' | 'search' | 'apply_filter' | 'start_workflow';
  target: string;
  method: 'GET' | 'POST';
}

/** The action kind each type leads to when no action mapping gives a navigation target. */
export const KIND_BY_TYPE: Record<PredictionType, PredictAction['kind']> = {
  destination: 'navigate',
  product: 'navigate',
  content: 'navigate',
  category: 'apply_filter',
  intent: 'search',
  workflow: 'start_workflow',
};

interface Scored {
  c: PredictCandidate;
  features: Features | null;
  z: number;
  /** the part of z from signals the calibration data does not carry (behaviour, merchandising) */
  extra: number;
  confidence: number;
  codes: ReasonCode[];
  action: PredictAction;
  label: string;
  rule: IntentRule | null;
  ruleStrength: number;
}

export class PredictService {
  private readonly cache: ResponseCache;
  private readonly ranking = new RankingConfig();

  /** `cacheBytes`: the bound of the response cache's estimated memory (0: nothing cached) */
  constructor(
    private readonly data: DataPlane,
    shards: ShardDirectory,
    metrics: Metrics,
    cacheBytes: number,
  ) {
    this.cache = new ResponseCache('predict_response', shards, metrics, cacheBytes);
  }

  async predict(p: PredictParams): Promise<Reply> {
    const started = performance.now();
    const resolved = await this.data.resolve(p.tenant, p.index);
    const config = predictConfigOf(resolved.index);
    if (config.enabled === false) fail('predict_disabled', { index: p.index });
    // synonyms and merchandising rules apply as they do to autocomplete (documents) and typeahead
    const ranking = this.ranking.select(resolved.index, 'autocomplete', p.query);
    const suggestRanking = this.ranking.select(resolved.index, 'typeahead', p.query);
    const debug = p.include?.debug === true;
    const useCache = this.cache.enabled && !debug;
    const physical = resolved.physical;
    let cacheKey = '';
    if (useCache) {
      const gen = this.cache.generation(p.tenant, physical.physical_index_id);
      cacheKey = JSON.stringify([p.tenant, physical.physical_index_id, gen, this.data.placementEpoch, resolved.index.updated_at, ranking.cacheKey, suggestRanking.cacheKey, p.index, p.query, p.limit, p.userId, p.filters, p.allowedTypes, p.include]);
      const hit = this.cache.get(cacheKey);
      if (hit !== undefined) return Reply.text(`{"took_ms":${round(performance.now() - started)},${hit}`, 'application/json');
      this.cache.missed();
    }

    const types = new Set<PredictionType>(p.allowedTypes ?? (config.default_types && config.default_types.length > 0 ? config.default_types : PREDICTION_TYPES));
    const mappings = config.action_mappings ?? {};
    const fields = [...new Set(Object.values(mappings).flatMap((m) => (m ? [m.target_field, m.label_field] : [])))];
    const value = {
      query: p.query,
      candidates: CANDIDATES_PER_SOURCE,
      fields,
      ...(p.filters !== undefined ? { filters: p.filters } : {}),
      ...(p.userId ? { user_id: p.userId } : {}),
      ...(ranking.payload ? { ranking: ranking.payload } : {}),
      ...(suggestRanking.payload ? { suggest_ranking: suggestRanking.payload } : {}),
      ...(resolved.index.schema?.events !== undefined ? { behavior: resolved.index.schema.events } : {}),
    };
    const payload = pack(value);
    let deferring: Buffer | null = null;
    // a follower in its turn declines while its engine of the part loads (see SearchService)
    const parts = await this.data.queryAllParts(p.tenant, physical, async (api, ref, _node, turn) =>
      unpack((await api.query({ ref, kind: 'predict', payload: turn === 'follower' ? (deferring ??= pack({ ...value, defer_loading: true })) : payload })).result) as PredictPartResult,
    );
    const gathered = performance.now();

    const corrected = pickCorrection(parts);
    const effective = corrected ?? p.query;
    const q = queryView(effective + (/\s$/.test(p.query) ? ' ' : ''), corrected !== null);
    const merged = mergeCandidates(parts);
    const scored: Scored[] = [];
    const sums = { suggestion: 0, document: 0 };
    const maxes = { suggestion: 0, document: 0 };
    const counts = { suggestion: 0, document: 0 };
    for (const c of merged) {
      sums[c.source] += c.score;
      counts[c.source]++;
      maxes[c.source] = Math.max(maxes[c.source], c.score);
    }
    for (const c of merged) {
      if (!types.has(c.type)) continue;
      const f = featuresOf(c, q, sums[c.source], maxes[c.source], counts[c.source]);
      const extra = (boosted(c.signals.behavior) ? BEHAVIOR_LOG_ODDS : 0) + (promoted(c.signals.merchandised) ? MERCHANDISED_LOG_ODDS : 0);
      const z = logOdds(f) + extra;
      const mapping = mappings[c.type];
      const target = mapping ? c.fields[mapping.target_field] : undefined;
      // the label comes from the mapping only when the mapping gives the action (the document
      // has its target field); otherwise the candidate keeps its own label with its type's action
      const label = (target !== undefined && mapping && c.fields[mapping.label_field]) || c.label;
      const action: PredictAction = target !== undefined ? { kind: 'navigate', target, method: 'GET' } : defaultAction(c, label);
      scored.push({ c, features: f, z, extra, confidence: confidenceOf(z), codes: reasonCodes(c, f, { rule: false, mapped: target !== undefined }), action, label, rule: null, ruleStrength: 0 });
    }
    const typed = queryView(p.query, false);
    for (const rule of config.intent_rules ?? []) {
      if (!types.has(rule.type)) continue;
      const asTyped = ruleStrength(rule, typed);
      const strength = Math.max(ruleStrength(rule, q), asTyped);
      if (strength <= 0) continue;
      const z = RULE_LOG_ODDS - 4 * (1 - strength);
      const c: PredictCandidate = {
        key: `r:${rule.intent}`,
        type: rule.type,
        object: 'intent_rule',
        id: rule.intent,
        label: rule.label,
        source: 'suggestion',
        score: strength,
        rank: 0,
        matched: 0,
        typos: 0,
        suggested: false,
        fields: {},
        signals: {},
      };
      const codes: ReasonCode[] = asTyped < strength ? ['spell_corrected', 'intent_match'] : ['intent_match'];
      scored.push({ c, features: null, z, extra: 0, confidence: confidenceOf(z), codes, action: { kind: KIND_BY_TYPE[rule.type], target: rule.target, method: KIND_BY_TYPE[rule.type] === 'start_workflow' ? 'POST' : 'GET' }, label: rule.label, rule, ruleStrength: strength });
    }
    scored.sort((a, b) => b.z - a.z || b.c.score - a.c.score || (a.c.key < b.c.key ? -1 : 1));
    const ranked: Scored[] = [];
    const seen = new Set<string>();
    for (const s of scored) {
      const k = `${s.c.type}\0${s.label.toLowerCase()}`;
      if (seen.has(k)) continue;
      seen.add(k);
      ranked.push(s);
    }

    const limit = p.limit ?? PREDICT_DEFAULT_LIMIT;
    const first = ranked[0];
    if (first) {
      // the winner of the candidates is recalibrated as a winner (predict-model.ts); an intent
      // rule keeps its fixed confidence. A candidate ranked below it is never shown as surer.
      if (first.features) first.confidence = primaryConfidence(first.z - first.extra, first.extra);
      for (const s of ranked.slice(1)) s.confidence = Math.min(s.confidence, first.confidence);
    }
    const indexing = unseenDocuments(parts);
    const body = {
      query: effective,
      original_query: p.query,
      normalized_query: parts[0]?.normalized_query ?? q.normalized,
      corrected_query: corrected,
      mode: 'predict',
      index: p.index,
      prediction: first
        ? {
            type: first.c.type,
            label: first.label,
            action: first.action,
            entity: { id: first.c.id, object: first.c.object },
            confidence: first.confidence,
            reason_codes: first.codes,
          }
        : null,
      alternatives:
        p.include?.alternatives === false
          ? []
          : ranked.slice(1, 1 + limit).map((s) => ({
              type: s.c.type,
              label: s.label,
              action: s.action,
              entity: { id: s.c.id, object: s.c.object },
              confidence: s.confidence,
              reason_codes: s.codes,
            })),
      supporting_suggestions: p.include?.supporting_suggestions === false ? [] : supporting(parts),
      // documents written before the query that it did not see (a bulk load being indexed)
      ...(indexing > 0 ? { documents_indexing: indexing } : {}),
      debug: null as unknown,
    };
    if (debug) {
      body.debug = {
        physical_index_id: physical.physical_index_id,
        parts: physical.parts,
        model: PREDICT_MODEL.version,
        ranking: ranking.debug,
        allowed_types: [...types],
        context: p.context ?? null,
        effective_query: { words: q.words, last_word_is_prefix: q.lastIsPrefix, corrected: q.corrected },
        scatter_gather_ms: round(gathered - started),
        candidates: ranked.map((s) => ({
          key: s.c.key,
          type: s.c.type,
          label: s.label,
          source: s.rule ? 'intent_rule' : s.c.source,
          object: s.c.object,
          score: s.c.score,
          rank: s.c.rank,
          features: s.features,
          rule_strength: s.rule ? s.ruleStrength : null,
          log_odds: Math.round(s.z * 1e4) / 1e4,
          confidence: s.confidence,
          reason_codes: s.codes,
        })),
      };
    }
    const rest = JSON.stringify(body).slice(1);
    if (useCache && sawEveryWrite(parts)) this.cache.set(cacheKey, rest);
    return Reply.text(`{"took_ms":${round(performance.now() - started)},${rest}`, 'application/json');
  }
}

/** The schema's predict object; none stored means enabled with every type and no rules. */
export function predictConfigOf(index: IndexRecord): PredictConfig {
  const p = (index.schema ?? {})['predict'];
  return p !== null && typeof p === 'object' ? (p as PredictConfig) : {};
}

const enc = encodeURIComponent;
const slug = (s: string) =>
  s
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '') || 'item';

/** The action of a candidate without an action mapping: a route per type. */
export function defaultAction(c: PredictCandidate, label: string): PredictAction {
  switch (c.type) {
    case 'product':
      return { kind: 'navigate', target: `/products/${enc(c.id)}`, method: 'GET' };
    case 'content':
      return { kind: 'navigate', target: `/content/${enc(c.id)}`, method: 'GET' };
    case 'destination':
      return { kind: 'navigate', target: c.object === 'brand' ? `/brands/${slug(label)}` : `/pages/${enc(c.id)}`, method: 'GET' };
    case 'category':
      return { kind: 'apply_filter', target: `/search?filters=${enc(JSON.stringify({ category: [label] }))}`, method: 'GET' };
    case 'intent':
      return { kind: 'search', target: `/search?q=${enc(label)}`, method: 'GET' };
    case 'workflow':
      return { kind: 'start_workflow', target: `/workflows/${enc(c.id)}`, method: 'POST' };
  }
}

const fold = (w: string) => singular(w) ?? w;

/**
 * How strongly a rule matches: 1 when one of its terms occurs in the query as whole words (the
 * query contains the term); the share typed when the query so far is the start of a term (at
 * least 3 characters); 0 otherwise.
 */
export function ruleStrength(rule: IntentRule, q: QueryView): number {
  let best = 0;
  const qw = q.words.map(fold);
  for (const term of rule.match_terms) {
    const t = analyzeQuery(term);
    const tw = t.words.map((w) => fold(w.term));
    if (tw.length === 0) continue;
    for (let i = 0; i + tw.length <= qw.length; i++) {
      if (tw.every((w, j) => qw[i + j] === w)) return 1;
    }
    if (q.lastIsPrefix && q.normalized.length >= 3 && t.normalized.startsWith(q.normalized)) best = Math.max(best, q.normalized.length / t.normalized.length);
  }
  return best;
}

/** Candidates of all parts: suggestion scores add up (support sums), a document keeps its best. */
export function mergeCandidates(parts: PredictPartResult[]): PredictCandidate[] {
  const byKey = new Map<string, PredictCandidate>();
  for (const part of parts) {
    for (const c of part.candidates) {
      const seen = byKey.get(c.key);
      if (!seen) byKey.set(c.key, { ...c });
      else if (seen.source === 'suggestion' && c.source === 'suggestion' && c.key.startsWith('s:')) seen.score += c.score;
      else if (c.source === 'document' && seen.source === 'suggestion') byKey.set(c.key, { ...c, suggested: true });
      else if (c.source === seen.source && c.score > seen.score) byKey.set(c.key, { ...c, suggested: c.suggested || seen.suggested });
      else if (c.source === 'suggestion') seen.suggested = true;
    }
  }
  const all = [...byKey.values()];
  for (const source of ['suggestion', 'document'] as const) {
    all
      .filter((c) => c.source === source)
      .sort((a, b) => b.score - a.score || (a.key < b.key ? -1 : 1))
      .forEach((c, i) => (c.rank = i));
  }
  return all;
}

function supporting(parts: PredictPartResult[]): { id: string; type: string; title: string; score: number }[] {
  const byId = new Map<string, { id: string; type: string; title: string; score: number }>();
  for (const p of parts)
    for (const s of p.suggestions) {
      const seen = byId.get(s.id);
      if (seen) seen.score += s.score;
      else byId.set(s.id, { ...s });
    }
  const list = [...byId.values()].sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1)).slice(0, SUPPORTING_SUGGESTIONS);
  const top = list[0]?.score ?? 0;
  return list.map((s) => ({ ...s, score: top > 0 ? Math.round((s.score / top) * 1e4) / 1e4 : 0 }));
}

/** The correction most parts agree on. */
function pickCorrection(parts: PredictPartResult[]): string | null {
  const votes = new Map<string, number>();
  for (const p of parts) if (p.corrected_query) votes.set(p.corrected_query, (votes.get(p.corrected_query) ?? 0) + 1);
  let best: string | null = null;
  let n = 0;
  for (const [q, c] of votes) if (c > n) [best, n] = [q, c];
  return best;
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;
