// The ranking configuration of an index as the router uses it: synonyms from the index schema and
// merchandising rules, checked when they are written (422 issues a person can act on), packed
// once per index record (normalized phrases, parsed times, a content version) and, per query,
// narrowed to what applies now: the synonym readings of the query and the enabled rules in their
// time window whose `when` matches. That selection goes to the shards with the query; the
// version (plus which timed rules are live) goes into the response-cache key, so a PUT is
// visible on the next query and a rule that starts or ends changes the key at that moment.
import { createHash } from 'node:crypto';
import type { IndexRecord } from '../coordinator/coordinator.js';
import type { ValidationIssue } from '../node/runtime/errors.js';
import type { PinnedSuggestion, PinRule, RankingPayload, RuleTarget, ScoringRule, SynonymReading } from '../node/runtime/ranking-payload.js';
import { analyzeQuery } from '../node/runtime/text/analyze-query.js';

/** Limits of the merchandising configuration (published in the OpenAPI schema). */
export const MERCH_LIMITS = {
  rules: 200,
  ruleIdLength: 64,
  targetIds: 100,
  targetValues: 100,
  valueLength: 256,
  fieldLength: 256,
  whenLength: 256,
  maxPosition: 50,
  minFactor: 0.01,
  maxFactor: 100,
} as const;
export const DEFAULT_BOOST = 2;
export const DEFAULT_BURY = 0.5;

/** Limits of `synonyms` in the index schema. */
export const SYNONYM_LIMITS = { entries: 5000, termsPerEntry: 20, termLength: 100, wordsPerTerm: 6 } as const;
/** Synonym readings of one query, at most (each costs one more search per part). */
export const MAX_READINGS = 8;

export type RuleAction = 'pin' | 'boost' | 'bury' | 'hide';
export const RULE_ACTIONS: readonly RuleAction[] = ['pin', 'boost', 'bury', 'hide'];

/** A rule as stored (the PUT body, validated). */
export interface MerchandisingRule {
  id: string;
  action: RuleAction;
  target: { ids?: string[]; field?: string; values?: (string | number | boolean)[] };
  position?: number;
  factor?: number;
  when?: { query?: string; contains?: string };
  enabled?: boolean;
  starts_at?: string;
  ends_at?: string;
}

interface PackedRule {
  index: number;
  id: string;
  action: RuleAction;
  target: RuleTarget;
  position: number;
  factor: number;
  /** normalized whole query the rule needs, or null */
  query: string | null;
  /** normalized words the query must contain in a row, or null */
  contains: string[] | null;
  enabled: boolean;
  startsAt: number | null;
  endsAt: number | null;
}

export interface PackedRanking {
  /** content version: equal configurations share cached answers */
  version: string;
  /** normalized phrase -> the phrases a query may use instead */
  synonyms: Map<string, string[]>;
  /** longest synonym phrase, in words */
  maxPhrase: number;
  rules: PackedRule[];
  /** some rule has a time window: which rules are live goes into the cache key */
  scheduled: boolean;
  /** selections already made (see RankingConfig.select) */
  memo: Map<string, RankingSelection>;
}

/** Selections remembered per configuration; the map starts over when full. */
const MEMO_ENTRIES = 4096;

/** Indexes of the enabled rules inside their time window at `now`. */
function liveRules(p: PackedRanking, now: number): string {
  let out = '';
  for (const r of p.rules) if (r.enabled && (r.startsAt === null || now >= r.startsAt) && (r.endsAt === null || now < r.endsAt)) out += `${r.index},`;
  return out;
}

export type RuleStatus = 'applied' | 'disabled' | 'not_started' | 'ended' | 'query_mismatch' | 'not_on_typeahead';

/** Per query: what to send to the parts, the cache-key part, and what the debug object shows. */
export interface RankingSelection {
  payload: RankingPayload | null;
  cacheKey: string;
  pins: PinRule[];
  debug: { config_version: string; synonyms: SynonymReading[]; rules: { id: string; action: RuleAction; status: RuleStatus }[] };
}

const EMPTY: PackedRanking = { version: '0', synonyms: new Map(), maxPhrase: 0, rules: [], scheduled: false, memo: new Map() };

/** Packed configurations kept by content, for records re-read with nothing changed. */
const BY_CONTENT_ENTRIES = 1000;

/**
 * Packs configurations once per index record object (records are replaced, never mutated), and
 * once per content: the data plane re-reads records when its cache entry expires, and packing
 * thousands of synonyms on the request path every minute would show in its latency.
 */
export class RankingConfig {
  private readonly packed = new WeakMap<IndexRecord, PackedRanking>();
  private readonly byContent = new Map<string, PackedRanking>();

  of(rec: IndexRecord): PackedRanking {
    let p = this.packed.get(rec);
    if (p === undefined) {
      const synonyms = rec.schema?.synonyms;
      const rules = rec.merchandising?.rules;
      if (synonyms === undefined && rules === undefined) p = EMPTY;
      else {
        const content = createHash('sha1').update(JSON.stringify([synonyms ?? null, rules ?? null])).digest('base64url');
        p = this.byContent.get(content);
        if (p === undefined) {
          p = pack(synonyms, rules);
          if (this.byContent.size >= BY_CONTENT_ENTRIES) this.byContent.delete(this.byContent.keys().next().value as string);
          this.byContent.set(content, p);
        }
      }
      this.packed.set(rec, p);
    }
    return p;
  }

  /** When the rules live for `rec` next change (a scheduled rule starts or ends); Infinity when never. */
  stableUntil(rec: IndexRecord, now = Date.now()): number {
    const p = this.of(rec);
    if (!p.scheduled) return Number.POSITIVE_INFINITY;
    let next = Number.POSITIVE_INFINITY;
    for (const r of p.rules) {
      if (r.startsAt !== null && r.startsAt > now) next = Math.min(next, r.startsAt);
      if (r.endsAt !== null && r.endsAt > now) next = Math.min(next, r.endsAt);
    }
    return next;
  }

  /**
   * What applies to `query` now. Memoized per packed configuration (by kind, query and, for
   * timed rules, which rules are live), so a cached answer costs no query analysis.
   */
  select(rec: IndexRecord, kind: 'typeahead' | 'autocomplete', query: string, now = Date.now()): RankingSelection {
    const p = this.of(rec);
    if (p === EMPTY) return select(p, kind, query, now);
    const key = `${kind}\0${p.scheduled ? liveRules(p, now) : ''}\0${query}`;
    let sel = p.memo.get(key);
    if (sel === undefined) {
      if (p.memo.size >= MEMO_ENTRIES) p.memo.clear();
      sel = select(p, kind, query, now);
      p.memo.set(key, sel);
    }
    return sel;
  }
}

const phrase = (text: string): string[] => analyzeQuery(text, SYNONYM_LIMITS.wordsPerTerm + 1).words.map((w) => w.term);

/** Packs stored configuration. Input was validated when written; anything malformed is skipped. */
export function pack(synonyms: unknown, rules: unknown): PackedRanking {
  const map = new Map<string, string[]>();
  let maxPhrase = 0;
  const link = (from: string[], to: string[]): void => {
    if (from.length === 0 || to.length === 0) return;
    const f = from.join(' ');
    const t = to.join(' ');
    if (f === t) return;
    const list = map.get(f) ?? [];
    if (!list.includes(t)) list.push(t);
    map.set(f, list);
    maxPhrase = Math.max(maxPhrase, from.length);
  };
  if (Array.isArray(synonyms)) {
    for (const entry of synonyms) {
      if (Array.isArray(entry)) {
        const group = entry.filter((x): x is string => typeof x === 'string').map(phrase);
        for (const a of group) for (const b of group) link(a, b);
      } else if (entry !== null && typeof entry === 'object') {
        const e = entry as { from?: unknown; to?: unknown };
        const froms = (Array.isArray(e.from) ? e.from : [e.from]).filter((x): x is string => typeof x === 'string');
        const tos = (Array.isArray(e.to) ? e.to : [e.to]).filter((x): x is string => typeof x === 'string');
        for (const f of froms) for (const t of tos) link(phrase(f), phrase(t));
      }
    }
  }
  const packedRules: PackedRule[] = [];
  if (Array.isArray(rules)) {
    rules.forEach((raw: unknown, index) => {
      const r = raw as MerchandisingRule;
      if (r === null || typeof r !== 'object' || typeof r.id !== 'string' || !RULE_ACTIONS.includes(r.action)) return;
      const t = r.target ?? {};
      let target: RuleTarget;
      if (Array.isArray(t.ids) && t.ids.length > 0) target = { ids: t.ids.filter((x) => typeof x === 'string') };
      else if (typeof t.field === 'string' && Array.isArray(t.values)) target = { field: t.field, values: t.values };
      else return;
      const time = (v: unknown): number | null => (typeof v === 'string' && Number.isFinite(Date.parse(v)) ? Date.parse(v) : null);
      const q = typeof r.when?.query === 'string' ? analyzeQuery(r.when.query).normalized : null;
      const c = typeof r.when?.contains === 'string' ? phrase(r.when.contains) : null;
      packedRules.push({
        index,
        id: r.id,
        action: r.action,
        target,
        position: typeof r.position === 'number' ? r.position : 1,
        factor: typeof r.factor === 'number' ? r.factor : r.action === 'bury' ? DEFAULT_BURY : DEFAULT_BOOST,
        query: q,
        contains: c && c.length > 0 ? c : null,
        enabled: r.enabled !== false,
        startsAt: time(r.starts_at),
        endsAt: time(r.ends_at),
      });
    });
  }
  if (map.size === 0 && packedRules.length === 0) return EMPTY;
  const version = createHash('sha1')
    .update(JSON.stringify([[...map].sort((a, b) => (a[0] < b[0] ? -1 : 1)), packedRules]))
    .digest('base64url')
    .slice(0, 16);
  return { version, synonyms: map, maxPhrase, rules: packedRules, scheduled: packedRules.some((r) => r.startsAt !== null || r.endsAt !== null), memo: new Map() };
}

function containsRun(words: string[], run: string[]): boolean {
  outer: for (let i = 0; i + run.length <= words.length; i++) {
    for (let j = 0; j < run.length; j++) if (words[i + j] !== run[j]) continue outer;
    return true;
  }
  return false;
}

/** What applies to `query` at time `now`. */
export function select(p: PackedRanking, kind: 'typeahead' | 'autocomplete', query: string, now: number): RankingSelection {
  const debug: RankingSelection['debug'] = { config_version: p.version, synonyms: [], rules: [] };
  if (p === EMPTY) return { payload: null, cacheKey: '', pins: [], debug };
  const q = analyzeQuery(query);
  const words = q.words.map((w) => w.term);
  const live: number[] = [];
  const rules: ScoringRule[] = [];
  const pins: PinRule[] = [];
  for (const r of p.rules) {
    let status: RuleStatus = 'applied';
    if (!r.enabled) status = 'disabled';
    else if (r.startsAt !== null && now < r.startsAt) status = 'not_started';
    else if (r.endsAt !== null && now >= r.endsAt) status = 'ended';
    if (status === 'applied') live.push(r.index);
    if (status === 'applied' && ((r.query !== null && r.query !== q.normalized) || (r.contains !== null && !containsRun(words, r.contains)))) status = 'query_mismatch';
    if (status === 'applied' && kind === 'typeahead' && r.action !== 'hide') status = 'not_on_typeahead';
    debug.rules.push({ id: r.id, action: r.action, status });
    if (status !== 'applied') continue;
    if (r.action === 'pin') pins.push({ id: r.id, target: r.target, position: r.position });
    else rules.push(r.action === 'hide' ? { id: r.id, action: 'hide', target: r.target } : { id: r.id, action: r.action, target: r.target, factor: r.factor });
  }
  const synonyms = kind === 'autocomplete' ? readings(p, words) : [];
  debug.synonyms = synonyms;
  const payload: RankingPayload = {};
  if (synonyms.length > 0) payload.synonyms = synonyms;
  if (rules.length > 0) payload.rules = rules;
  if (pins.length > 0) payload.pins = pins;
  const cacheKey = p.scheduled ? `${p.version}:${live.join(',')},` : p.version;
  return { payload: Object.keys(payload).length > 0 ? payload : null, cacheKey, pins, debug };
}

/** The query with one synonym phrase replaced, for each phrase found (longest match first). */
function readings(p: PackedRanking, words: string[]): SynonymReading[] {
  const out: SynonymReading[] = [];
  if (p.synonyms.size === 0) return out;
  const seen = new Set<string>([words.join(' ')]);
  for (let i = 0; i < words.length && out.length < MAX_READINGS; i++) {
    for (let len = Math.min(p.maxPhrase, words.length - i); len >= 1; len--) {
      const from = words.slice(i, i + len).join(' ');
      const alts = p.synonyms.get(from);
      if (alts === undefined) continue;
      for (const to of alts) {
        const text = [...words.slice(0, i), to, ...words.slice(i + len)].join(' ');
        if (seen.has(text) || out.length >= MAX_READINGS) continue;
        seen.add(text);
        out.push({ query: text, from, to });
      }
      break;
    }
  }
  return out;
}

// ------------------------------------------------------------------ after the gather

/** What one part reports of its rules (debug). */
export interface PartRankingReport {
  synonym_readings: { from: string; to: string; query: string; hits: number; kept: number }[];
  hidden: Record<string, number>;
}

export interface PlacedPin {
  id: string;
  rule: string;
  position: number;
}

/**
 * Places pinned documents into the merged list: each pin's documents at its position (several
 * ids of one pin in the positions that follow, in their order), earlier positions first, a pin
 * never pushing an earlier one down; a document pinned twice keeps its first place. A pinned
 * document also found by the query keeps that suggestion (and its score); otherwise the part's
 * rendering of it is used (score 0: the query did not rank it).
 */
export function placePins<Suggestion extends { id: string; score: number; metadata?: unknown }>(merged: Suggestion[], pinned: PinnedSuggestion<Suggestion>[], ranking: RankingSelection, limit: number, placed: PlacedPin[]): Suggestion[] {
  const ruleOrder = new Map(ranking.pins.map((pin, i) => [pin.id, i]));
  // per rule: id pins in their listed order; an attribute pin's best match over the parts
  const byRule = new Map<string, PinnedSuggestion<Suggestion>[]>();
  for (const x of pinned) {
    const list = byRule.get(x.rule) ?? [];
    list.push(x);
    byRule.set(x.rule, list);
  }
  const wanted: { rule: string; at: number; rank: number; order: number; s: Suggestion }[] = [];
  for (const [rule, list] of byRule) {
    const pin = ranking.pins.find((x) => x.id === rule);
    if (!pin) continue;
    if ('ids' in pin.target) {
      list.sort((a, b) => a.order - b.order);
      list.forEach((x, k) => wanted.push({ rule, at: x.position + k, rank: ruleOrder.get(rule) ?? 0, order: x.order, s: x.suggestion }));
    } else {
      const best = list.reduce((a, b) => (b.suggestion.score > a.suggestion.score || (b.suggestion.score === a.suggestion.score && b.suggestion.id < a.suggestion.id) ? b : a));
      wanted.push({ rule, at: best.position, rank: ruleOrder.get(rule) ?? 0, order: 0, s: best.suggestion });
    }
  }
  wanted.sort((a, b) => a.at - b.at || a.rank - b.rank || a.order - b.order);
  const byId = new Map(merged.map((s) => [s.id, s]));
  const chosen = new Set<string>();
  const picks = wanted.filter((w) => (chosen.has(w.s.id) ? false : (chosen.add(w.s.id), true)));
  const out = merged.filter((s) => !chosen.has(s.id));
  let floor = 0;
  for (const w of picks) {
    const idx = Math.max(floor, Math.min(w.at - 1, out.length));
    const base = byId.get(w.s.id) ?? w.s;
    const meta: Record<string, unknown> = { ...((base.metadata as Record<string, unknown> | undefined) ?? {}) };
    const marks = Array.isArray(meta.merchandised) ? [...(meta.merchandised as unknown[])] : [];
    marks.push({ id: w.rule, action: 'pin', position: idx + 1 });
    meta.merchandised = marks;
    out.splice(idx, 0, { ...base, metadata: meta });
    placed.push({ id: w.s.id, rule: w.rule, position: idx + 1 });
    floor = idx + 1;
  }
  return out.slice(0, limit);
}

/** `debug.ranking`: the configuration version, what applied to this query, and what the parts did. */
export function rankingDebug(ranking: RankingSelection, parts: readonly { ranking?: PartRankingReport }[], placed: PlacedPin[]): Record<string, unknown> {
  const hidden: Record<string, number> = {};
  const readings = new Map<string, { from: string; to: string; query: string; hits: number; kept: number }>();
  for (const part of parts) {
    for (const [rule, n] of Object.entries(part.ranking?.hidden ?? {})) hidden[rule] = (hidden[rule] ?? 0) + n;
    for (const r of part.ranking?.synonym_readings ?? []) {
      const prev = readings.get(r.query);
      if (prev) {
        prev.hits += r.hits;
        prev.kept += r.kept;
      } else readings.set(r.query, { ...r });
    }
  }
  return {
    config_version: ranking.debug.config_version,
    synonyms: ranking.debug.synonyms.map((s) => readings.get(s.query) ?? { ...s, hits: 0, kept: 0 }),
    rules: ranking.debug.rules.map((r) => ({ ...r, ...(hidden[r.id] !== undefined ? { hidden: hidden[r.id] } : {}) })),
    pins: placed,
  };
}

// ------------------------------------------------------------------ validation of writes

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Checks beyond the JSON schema (which fixes types and sizes): what a rule's action needs, that
 * a target names documents one way, that `when` texts are searchable words, time windows, and
 * unique rule ids.
 */
export function checkMerchandising(body: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const add = (loc: (string | number)[], msg: string, type = 'value_error') => issues.push({ loc: ['body', ...loc], msg, type });
  if (!isObj(body)) return issues;
  const rules = body.rules;
  if (!Array.isArray(rules)) return issues;
  const ids = new Map<string, number>();
  rules.forEach((raw: unknown, i) => {
    if (!isObj(raw)) return;
    const r = raw as unknown as MerchandisingRule;
    const at = (...loc: (string | number)[]) => ['rules', i, ...loc];
    if (typeof r.id === 'string') {
      const prev = ids.get(r.id);
      if (prev !== undefined) add(at('id'), `Rule id '${r.id}' is already used by rule ${prev}; rule ids must be unique.`, 'duplicate');
      else ids.set(r.id, i);
    }
    const t = isObj(r.target) ? r.target : null;
    if (t) {
      const hasIds = t.ids !== undefined;
      const hasField = t.field !== undefined || t.values !== undefined;
      if (hasIds && hasField) add(at('target'), 'Give either ids or field and values, not both.');
      else if (!hasIds && !hasField) add(at('target'), 'Give the documents by id ({"ids": ["sku-1"]}) or by attribute ({"field": "brand", "values": ["Acme"]}).', 'missing');
      else if (hasField && (t.field === undefined || t.values === undefined)) add(at('target', t.field === undefined ? 'field' : 'values'), 'An attribute target needs both field and values.', 'missing');
      if (typeof t.field === 'string' && t.field.trim() === '') add(at('target', 'field'), 'The field name is blank.');
    }
    if (r.action === 'pin') {
      if (r.position === undefined) add(at('position'), `A pin needs a position from 1 to ${MERCH_LIMITS.maxPosition} (1 = first suggestion).`, 'missing');
      if (r.factor !== undefined) add(at('factor'), 'A pin takes a position, not a factor.', 'extra_forbidden');
      if (t && Array.isArray(t.ids) && typeof r.position === 'number' && r.position + t.ids.length - 1 > MERCH_LIMITS.maxPosition) {
        add(at('target', 'ids'), `Pinned documents take positions ${r.position} to ${r.position + t.ids.length - 1}; the last position is ${MERCH_LIMITS.maxPosition}.`);
      }
    } else {
      if (r.position !== undefined) add(at('position'), `Only a pin takes a position; a ${r.action} rule does not.`, 'extra_forbidden');
      if (r.action === 'hide' && r.factor !== undefined) add(at('factor'), 'A hide rule takes no factor.', 'extra_forbidden');
      if (r.action === 'boost' && typeof r.factor === 'number' && !(r.factor > 1)) add(at('factor'), `A boost multiplies scores by more than 1 (default ${DEFAULT_BOOST}); use a bury rule to lower them.`);
      if (r.action === 'bury' && typeof r.factor === 'number' && !(r.factor < 1)) add(at('factor'), `A bury multiplies scores by less than 1 (default ${DEFAULT_BURY}); use a boost rule to raise them.`);
    }
    if (isObj(r.when)) {
      if (r.when.query === undefined && r.when.contains === undefined) add(at('when'), 'Give when.query (the whole query) or when.contains (words the query contains), or leave when out to apply the rule to every query.', 'missing');
      for (const k of ['query', 'contains'] as const) {
        const v = r.when[k];
        if (typeof v === 'string' && analyzeQuery(v).words.length === 0) add(at('when', k), 'This text has no searchable words.');
      }
    }
    const start = typeof r.starts_at === 'string' ? Date.parse(r.starts_at) : null;
    const end = typeof r.ends_at === 'string' ? Date.parse(r.ends_at) : null;
    if (start !== null && end !== null && Number.isFinite(start) && Number.isFinite(end) && end <= start) add(at('ends_at'), 'ends_at must be later than starts_at.');
  });
  return issues;
}

/** Checks of `synonyms` in an index schema beyond its JSON schema: every term must be searchable words. */
export function checkSynonyms(schema: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!isObj(schema) || !Array.isArray(schema.synonyms)) return issues;
  const term = (v: unknown, loc: (string | number)[]) => {
    if (typeof v !== 'string') return;
    const n = phrase(v).length;
    if (n === 0) issues.push({ loc: ['body', 'synonyms', ...loc], msg: 'This term has no searchable words.', type: 'value_error' });
    else if (n > SYNONYM_LIMITS.wordsPerTerm) issues.push({ loc: ['body', 'synonyms', ...loc], msg: `A synonym term has at most ${SYNONYM_LIMITS.wordsPerTerm} words.`, type: 'value_error' });
  };
  schema.synonyms.forEach((e: unknown, i) => {
    if (Array.isArray(e)) e.forEach((v, j) => term(v, [i, j]));
    else if (isObj(e)) {
      term(e.from, [i, 'from']);
      if (Array.isArray(e.to)) e.to.forEach((v, j) => term(v, [i, 'to', j]));
      else term(e.to, [i, 'to']);
    }
  });
  return issues.slice(0, 20);
}
