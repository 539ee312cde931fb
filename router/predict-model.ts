// Predict's confidence model: features of one merged candidate -> a logistic confidence in
// [0, 1] and the reason codes that explain it. The weights of the lexical features are fitted
// on real judged queries by loadtest/relevance/predict-calibration.ts (router/predict-coefficients.ts)
// so that a confidence c means "right about c of the time" on that evaluation data; the primary
// prediction goes through an isotonic map fitted on primaries (`primaryConfidence`). Signals the
// calibration data cannot carry (intent rules, click behaviour, merchandising) add fixed
// log-odds, documented in DESIGN.md ("Predict") and, through REASON_CODES, in the OpenAPI
// description, and are marked as such.
import type { PredictCandidate } from '../node/runtime/predict-types.js';
import { analyzeQuery } from '../node/runtime/text/analyze-query.js';
import { singular } from '../node/runtime/text/tokenize.js';
import { PREDICT_MODEL } from './predict-coefficients.js';

export const FEATURES = ['document', 'share', 'relative', 'top', 'rank', 'source_size', 'coverage', 'exact', 'starts', 'corrected', 'query_length', 'extra_words', 'suggested', 'typos'] as const;
export type Feature = (typeof FEATURES)[number];
export type Features = Record<Feature, number>;

/** Reason codes a prediction can carry, and what each one means. */
export const REASON_CODES = {
  spell_corrected: 'The query was spell-corrected from the index vocabulary before matching.',
  intent_match: "The query matches one of the index schema's intent rules (predict.intent_rules).",
  exact_match: 'The label is exactly the (corrected) query.',
  prefix_match: 'The label starts with what was typed (a completion).',
  word_match: 'The label contains every query word, not at its start.',
  partial_match: 'The label matches only some of the query words.',
  popular_suggestion: 'The candidate comes from the precomputed suggestions and leads its list.',
  top_document: 'The candidate is the best document retrieved for the query.',
  behavioral_boost: 'Click events raised the candidate (metadata.behavior.boost above 1).',
  synonym: "The candidate was found through a synonym of the index schema's synonyms (metadata.synonym).",
  merchandised: 'A merchandising rule pinned or boosted the candidate (metadata.merchandised; buries do not count).',
  personalized: "The user's own clicks count in the candidate's behaviour signal (user_id, paid plans; metadata.behavior.personal above 0).",
  action_mapping: "The action comes from the index schema's action_mappings.",
} as const;
export type ReasonCode = keyof typeof REASON_CODES;

/**
 * Fixed log-odds of signals the calibration data does not carry. An intent rule that matches the
 * whole query is a merchant's explicit statement: it starts from log-odds 2.2 (~0.9); one only
 * started by a typing prefix scales with the share typed.
 */
export const RULE_LOG_ODDS = 2.2;
export const BEHAVIOR_LOG_ODDS = 0.6;
export const MERCHANDISED_LOG_ODDS = 0.4;

export interface QueryView {
  /** normalized words of the effective (corrected) query */
  words: string[];
  normalized: string;
  lastIsPrefix: boolean;
  corrected: boolean;
  chars: number;
}

export function queryView(effective: string, corrected: boolean): QueryView {
  const q = analyzeQuery(effective);
  return { words: q.words.map((w) => w.term), normalized: q.normalized, lastIsPrefix: !q.lastWordComplete, corrected, chars: Array.from(effective.trim()).length };
}

const fold = (w: string) => singular(w) ?? w;

/** Features of a candidate among the merged candidates of its source. */
export function featuresOf(c: PredictCandidate, q: QueryView, sourceSum: number, sourceMax: number, sourceCount = 20): Features {
  const label = analyzeQuery(c.label).words.map((w) => w.term);
  const labelSet = new Set(label.map(fold));
  let covered = 0;
  q.words.forEach((w, i) => {
    const last = i === q.words.length - 1;
    if (labelSet.has(fold(w)) || (last && q.lastIsPrefix && label.some((l) => l.startsWith(w)))) covered++;
  });
  const coverage = q.words.length === 0 ? 0 : covered / q.words.length;
  const labelNorm = label.join(' ');
  return {
    document: c.source === 'document' ? 1 : 0,
    share: sourceSum > 0 ? c.score / sourceSum : 0,
    relative: sourceMax > 0 ? c.score / sourceMax : 0,
    top: c.rank === 0 ? 1 : 0,
    rank: Math.min(1, Math.log1p(c.rank) / Math.log1p(20)),
    source_size: Math.min(1, sourceCount / 20),
    coverage,
    exact: labelNorm === q.normalized ? 1 : 0,
    starts: labelNorm.startsWith(q.normalized) ? 1 : 0,
    corrected: q.corrected ? 1 : 0,
    query_length: Math.min(1, Math.log1p(q.chars) / Math.log1p(40)),
    extra_words: Math.min(1, Math.max(0, label.length - covered) / 10),
    suggested: c.suggested ? 1 : 0,
    typos: Math.min(3, c.typos) / 3,
  };
}

export interface Weights {
  bias: number;
  [feature: string]: number;
}

export function logOdds(f: Features, weights: Weights = PREDICT_MODEL.weights): number {
  let z = weights.bias;
  for (const name of FEATURES) z += (weights[name] ?? 0) * f[name];
  return z;
}

export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** Confidence rounded to 4 decimals, clamped inside [0, 1]. */
export const confidenceOf = (z: number) => Math.round(sigmoid(z) * 1e4) / 1e4;

/**
 * The isotonic map `knots` ([model probability, observed rate], both increasing) applied to p:
 * linear between knots, flat beyond the first and the last. Monotone, so it never reorders.
 */
export function recalibrated(p: number, knots: readonly (readonly [number, number])[]): number {
  const first = knots[0];
  const last = knots[knots.length - 1];
  if (!first || !last) return p;
  if (p <= first[0]) return first[1];
  if (p >= last[0]) return last[1];
  let i = 1;
  while (knots[i]![0] < p) i++;
  const [x0, y0] = knots[i - 1]!;
  const [x1, y1] = knots[i]!;
  return y0 + ((p - x0) / (x1 - x0)) * (y1 - y0);
}

/**
 * Confidence of the primary prediction when it is a scored candidate. The primary is the best of
 * some forty candidates, so a model calibrated per candidate is optimistic about the one that
 * wins (most at the top end, e.g. the single completion of an unfinished prefix): the model's
 * probability of its lexical features goes through the isotonic map fitted on the primaries of
 * the calibration data (PREDICT_MODEL.primary_calibration), then the fixed log-odds of the
 * signals that data does not carry (`extra`: behaviour, merchandising) are added as before.
 */
export function primaryConfidence(lexicalZ: number, extra: number, knots: readonly (readonly [number, number])[] = PREDICT_MODEL.primary_calibration): number {
  const p = recalibrated(sigmoid(lexicalZ), knots);
  if (extra === 0) return Math.round(p * 1e4) / 1e4;
  const q = Math.min(1 - 1e-6, Math.max(1e-6, p));
  return confidenceOf(Math.log(q / (1 - q)) + extra);
}

export function reasonCodes(c: PredictCandidate, f: Features, extra: { rule: boolean; mapped: boolean }): ReasonCode[] {
  const codes: ReasonCode[] = [];
  if (f.corrected) codes.push('spell_corrected');
  if (extra.rule) codes.push('intent_match');
  if (f.exact) codes.push('exact_match');
  else if (f.starts) codes.push('prefix_match');
  else if (f.coverage === 1) codes.push('word_match');
  else codes.push('partial_match');
  if (!extra.rule && f.top) codes.push(c.source === 'suggestion' ? 'popular_suggestion' : 'top_document');
  if (boosted(c.signals.behavior)) codes.push('behavioral_boost');
  if (signal(c.signals.synonym)) codes.push('synonym');
  if (promoted(c.signals.merchandised)) codes.push('merchandised');
  if (signal(c.signals.personalized) || personal(c.signals.behavior)) codes.push('personalized');
  if (extra.mapped) codes.push('action_mapping');
  return codes;
}

/**
 * The click-behaviour signal (`metadata.behavior`: `{boost, popularity, query, graph, personal,
 * injected}`) raised the candidate: its boost factor is above 1 (a bare positive number counts too).
 */
export function boosted(v: unknown): boolean {
  if (typeof v === 'number') return v > 1;
  if (v !== null && typeof v === 'object' && 'boost' in v) return typeof v.boost === 'number' && v.boost > 1;
  return v === true;
}

/** The behaviour signal has a part from the user's own history. */
export function personal(v: unknown): boolean {
  return v !== null && typeof v === 'object' && 'personal' in v && typeof v.personal === 'number' && v.personal > 0;
}

/**
 * Merchandising marks (`[{id, action, factor?, position?}]`) that raise a candidate: a pin, or a
 * boost. A bury is merchandising too, but it is no reason to predict the candidate.
 */
export function promoted(v: unknown): boolean {
  if (!Array.isArray(v)) return signal(v);
  return v.some((m) => {
    const mark = m as { action?: unknown; factor?: unknown };
    return mark.action === 'pin' || (mark.action === 'boost' && (typeof mark.factor !== 'number' || mark.factor > 1));
  });
}

/** A metadata signal counts when it is true, a positive number, or a non-empty string/object. */
export function signal(v: unknown): boolean {
  if (v === undefined || v === null || v === false) return false;
  if (typeof v === 'number') return v > 0;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return v === true;
}
