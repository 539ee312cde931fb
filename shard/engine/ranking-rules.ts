// Synonyms and merchandising rules inside one index part, for one query. The router sends only
// what applies to the query (see node/runtime/ranking-payload.ts); this module
//  - turns boost / bury / hide rules into a per-document score factor that lexical search
//    applies while it scores (0 = hidden), so a boosted document outside the plain top-k can
//    still rise into it and a hidden one never takes a place;
//  - merges the synonym readings of the query into the result, each scored x SYNONYM_FACTOR,
//    and remembers which documents only a synonym found (`metadata.synonym`);
//  - finds the pinned documents this part holds (by id, or the best match of an attribute), which
//    the router places after merging the parts;
//  - annotates affected suggestions (`metadata.merchandised`) and reports what it did for debug.
// Rules compile per segment on first use and are cached for the query only.
import { invalid } from '../../node/runtime/errors.js';
import type { PinnedSuggestion, RankingPayload, RuleTarget, ScoringRule, SynonymReading } from '../../node/runtime/ranking-payload.js';
import { canonicalValue, compileFilters, type DocPredicate, type FilterSpec } from './filters.js';
import type { IndexSnapshot } from './index-snapshot.js';
import type { LexicalHit, LexicalResult } from './lexical-search.js';
import type { Segment } from './segment.js';

/** A document found only through a synonym keeps this share of its score. */
export const SYNONYM_FACTOR = 0.85;
/** Synonym readings searched per query, at most (the router sends no more). */
export const MAX_SYNONYM_READINGS = 8;
const MAX_RULES = 1000;
const MAX_TARGET_ITEMS = 1000;

export interface MerchandisedMark {
  id: string;
  action: 'pin' | 'boost' | 'bury' | 'hide';
  factor?: number;
  position?: number;
}

/** What the rules did in this part, for `debug.ranking`. */
export interface RankingReport {
  synonym_readings: { from: string; to: string; query: string; hits: number; kept: number }[];
  /** rule id -> documents of this part's candidates it hid */
  hidden: Record<string, number>;
}

type Compiled = { rule: ScoringRule; test: DocPredicate };

/** Validates the ranking part of a query payload (it comes from a router, but is still input). */
export function parseRankingPayload(raw: unknown): RankingPayload | null {
  if (raw === undefined || raw === null) return null;
  const bad = (what: string): never => invalid(['body', 'ranking'], `ranking payload: ${what}`);
  if (typeof raw !== 'object' || Array.isArray(raw)) bad('expected an object');
  const r = raw as Record<string, unknown>;
  const out: RankingPayload = {};
  if (r.synonyms !== undefined) {
    if (!Array.isArray(r.synonyms) || r.synonyms.length > MAX_SYNONYM_READINGS) bad(`synonyms must be a list of at most ${MAX_SYNONYM_READINGS} readings`);
    out.synonyms = (r.synonyms as unknown[]).map((s) => {
      const o = s as Record<string, unknown>;
      if (typeof o !== 'object' || o === null || typeof o.query !== 'string' || typeof o.from !== 'string' || typeof o.to !== 'string') bad('a synonym reading needs query, from and to strings');
      return { query: o.query as string, from: o.from as string, to: o.to as string };
    });
  }
  const target = (t: unknown): RuleTarget => {
    const o = t as Record<string, unknown>;
    if (typeof o !== 'object' || o === null) return bad('a rule target must be an object');
    if (Array.isArray(o.ids) && o.ids.length <= MAX_TARGET_ITEMS && o.ids.every((x) => typeof x === 'string')) return { ids: o.ids as string[] };
    if (typeof o.field === 'string' && Array.isArray(o.values) && o.values.length <= MAX_TARGET_ITEMS && o.values.every((x) => ['string', 'number', 'boolean'].includes(typeof x))) {
      return { field: o.field, values: o.values as (string | number | boolean)[] };
    }
    return bad('a rule target is {ids} or {field, values}');
  };
  if (r.rules !== undefined) {
    if (!Array.isArray(r.rules) || r.rules.length > MAX_RULES) bad('rules must be a list');
    out.rules = (r.rules as unknown[]).map((x) => {
      const o = x as Record<string, unknown>;
      if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !['boost', 'bury', 'hide'].includes(o.action as string)) bad('a scoring rule needs an id and an action boost, bury or hide');
      const rule: ScoringRule = { id: o.id as string, action: o.action as ScoringRule['action'], target: target(o.target) };
      if (rule.action !== 'hide') {
        if (typeof o.factor !== 'number' || !Number.isFinite(o.factor) || o.factor <= 0) bad(`rule ${rule.id}: factor must be a positive number`);
        rule.factor = o.factor as number;
      }
      return rule;
    });
  }
  if (r.pins !== undefined) {
    if (!Array.isArray(r.pins) || r.pins.length > MAX_RULES) bad('pins must be a list');
    out.pins = (r.pins as unknown[]).map((x) => {
      const o = x as Record<string, unknown>;
      if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || typeof o.position !== 'number' || !Number.isInteger(o.position) || o.position < 1) bad('a pin needs an id and a position from 1');
      return { id: o.id as string, position: o.position as number, target: target(o.target) };
    });
  }
  return out;
}

/**
 * The rules of one query in one part. Cheap to build; predicates compile per segment on first
 * use. `RankingRules.none` stands for "no rules" and costs nothing.
 */
export class RankingRules {
  static readonly none = new RankingRules(null);

  private readonly scoring: ScoringRule[];
  private readonly bySegment = new Map<Segment, Compiled[]>();
  /** `${segment}:${ord}` of hits only a synonym reading found -> that reading */
  private readonly viaSynonym = new Map<string, SynonymReading>();
  private readonly report: RankingReport = { synonym_readings: [], hidden: {} };
  /** rule id -> ids of the documents it kept out */
  private readonly hiddenIds = new Map<string, Set<string>>();

  constructor(readonly payload: RankingPayload | null) {
    this.scoring = payload?.rules ?? [];
  }

  get active(): boolean {
    return this.payload !== null && (this.scoring.length > 0 || (this.payload.synonyms?.length ?? 0) > 0 || (this.payload.pins?.length ?? 0) > 0);
  }

  get synonyms(): readonly SynonymReading[] {
    return this.payload?.synonyms ?? [];
  }

  /**
   * The per-segment document factor for lexical search (null: no scoring rules). Hidden
   * documents get 0; several matching rules multiply.
   */
  readonly docFactor = (seg: Segment): ((ord: number) => number) | null => {
    if (this.scoring.length === 0) return null;
    const compiled = this.compiled(seg);
    if (compiled.length === 0) return null;
    return (ord) => {
      let f = 1;
      for (const c of compiled) {
        if (!c.test(ord)) continue;
        if (c.rule.action === 'hide') {
          this.noteHidden(c.rule.id, seg.idAt(ord));
          return 0;
        }
        f *= c.rule.factor ?? 1;
      }
      return f;
    };
  };

  /**
   * Options to spread into lexical search options. `hidesOnly`: hidden documents stay out but
   * scores are left as they are, for a caller that applies the factors after fusing lexical
   * scores with another signal (`adjust`).
   */
  lexicalOptions(hidesOnly = false): { docFactor?: (seg: Segment) => ((ord: number) => number) | null } {
    if (this.scoring.length === 0) return {};
    if (!hidesOnly) return { docFactor: this.docFactor };
    return {
      docFactor: (seg) => {
        const f = this.docFactor(seg);
        return f === null ? null : (ord) => (f(ord) === 0 ? 0 : 1);
      },
    };
  }

  /**
   * Hits of another retrieval (vector search, or a fusion of lexical and vector scores): hidden
   * documents dropped, the others' scores multiplied by their factor (`hidesOnly`: kept), best
   * first.
   */
  adjust<H extends { segment: number; ord: number; score: number }>(snap: IndexSnapshot, hits: readonly H[], hidesOnly = false): H[] {
    if (this.scoring.length === 0) return [...hits];
    const factors = new Map<number, ((ord: number) => number) | null>();
    const out: H[] = [];
    for (const h of hits) {
      let f = factors.get(h.segment);
      if (f === undefined) factors.set(h.segment, (f = this.docFactor(snap.segments[h.segment] as Segment)));
      const x = f === null ? 1 : f(h.ord);
      if (x === 0) continue;
      out.push(hidesOnly || x === 1 ? h : { ...h, score: h.score * x });
    }
    return out.sort(byScore);
  }

  /**
   * Merges the synonym readings' results into `base`: a document keeps its best score, a
   * reading's scores count x SYNONYM_FACTOR, and documents the query as typed did not find are
   * remembered as found through the synonym.
   */
  withSynonyms(base: LexicalResult, search: (text: string) => LexicalResult, limit: number): LexicalResult {
    const readings = this.synonyms;
    if (readings.length === 0) return base;
    const best = new Map<string, LexicalHit>();
    for (const h of base.hits) best.set(`${h.segment}:${h.ord}`, h);
    const typed = new Set(best.keys());
    let total = base.total;
    for (const reading of readings) {
      const alt = search(reading.query);
      total = Math.max(total, alt.total);
      let kept = 0;
      for (const h of alt.hits) {
        const k = `${h.segment}:${h.ord}`;
        const score = h.score * SYNONYM_FACTOR;
        const prev = best.get(k);
        if (prev === undefined || prev.score < score) {
          best.set(k, { ...h, score });
          if (!typed.has(k)) this.viaSynonym.set(k, reading);
          kept++;
        }
      }
      this.report.synonym_readings.push({ from: reading.from, to: reading.to, query: reading.query, hits: alt.hits.length, kept });
    }
    const hits = [...best.values()].sort(byScore).slice(0, limit);
    return { hits, total, words: base.words };
  }

  /** What the rules did to one returned hit: metadata keys to add (none when untouched). */
  marks(snap: IndexSnapshot, hit: LexicalHit): { synonym?: { from: string; to: string }; merchandised?: MerchandisedMark[] } {
    const out: { synonym?: { from: string; to: string }; merchandised?: MerchandisedMark[] } = {};
    const reading = this.viaSynonym.get(`${hit.segment}:${hit.ord}`);
    if (reading) out.synonym = { from: reading.from, to: reading.to };
    if (this.scoring.length > 0) {
      const seg = snap.segments[hit.segment] as Segment;
      const m: MerchandisedMark[] = [];
      for (const c of this.compiled(seg)) if (c.rule.action !== 'hide' && c.test(hit.ord)) m.push({ id: c.rule.id, action: c.rule.action, factor: c.rule.factor as number });
      if (m.length > 0) out.merchandised = m;
    }
    return out;
  }

  /** True when a hide rule matches the live document `id` of this part. */
  hidden(snap: IndexSnapshot, id: string): boolean {
    if (!this.scoring.some((r) => r.action === 'hide')) return false;
    const at = locate(snap, id);
    if (at === null) return false;
    for (const c of this.compiled(at.seg)) {
      if (c.rule.action === 'hide' && c.test(at.ord)) {
        this.noteHidden(c.rule.id, id);
        return true;
      }
    }
    return false;
  }

  /**
   * The pinned documents this part holds: every live id of an id pin that passes the request's
   * filters and no hide rule, and for an attribute pin the best match of the query having the
   * attribute (`bestWith` runs that search).
   */
  pinned<S>(
    snap: IndexSnapshot,
    filters: FilterSpec | null,
    render: (seg: number, ord: number, score: number) => S,
    bestWith: (attribute: FilterSpec) => LexicalHit | null,
  ): PinnedSuggestion<S>[] {
    const out: PinnedSuggestion<S>[] = [];
    for (const pin of this.payload?.pins ?? []) {
      const t = pin.target;
      if ('ids' in t) {
        t.ids.forEach((id, order) => {
          const at = locate(snap, id);
          if (at === null) return;
          if (filters !== null && !compileFilters(filters, at.seg)(at.ord)) return;
          const factor = this.docFactor(at.seg)?.(at.ord) ?? 1;
          if (factor === 0) return;
          out.push({ rule: pin.id, position: pin.position, order, suggestion: render(at.index, at.ord, 0) });
        });
      } else {
        const clause = { kind: 'in' as const, field: t.field, values: canonicalValues(t.values) };
        const spec: FilterSpec = { clauses: [...(filters?.clauses ?? []), clause] };
        const h = bestWith(spec);
        if (h !== null) out.push({ rule: pin.id, position: pin.position, order: 0, suggestion: render(h.segment, h.ord, h.score) });
      }
    }
    return out;
  }

  debugReport(): RankingReport {
    for (const [rule, ids] of this.hiddenIds) this.report.hidden[rule] = ids.size;
    return this.report;
  }

  private noteHidden(rule: string, id: string): void {
    let set = this.hiddenIds.get(rule);
    if (set === undefined) this.hiddenIds.set(rule, (set = new Set()));
    set.add(id);
  }

  private compiled(seg: Segment): Compiled[] {
    let list = this.bySegment.get(seg);
    if (list === undefined) {
      list = this.scoring.map((rule) => ({ rule, test: targetPredicate(rule.target, seg) }));
      this.bySegment.set(seg, list);
    }
    return list;
  }
}

function canonicalValues(values: readonly (string | number | boolean)[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    const c = canonicalValue(v);
    if (c !== null && !out.includes(c)) out.push(c);
  }
  return out;
}

/** A predicate over a segment's ordinals for a rule target (ids exact; attributes as filters match). */
export function targetPredicate(target: RuleTarget, seg: Segment): DocPredicate {
  if ('ids' in target) {
    const ords = new Set<number>();
    for (const id of target.ids) {
      const ord = seg.ordinalOf(id);
      if (ord >= 0) ords.add(ord);
    }
    if (ords.size === 0) return () => false;
    return (ord) => ords.has(ord);
  }
  const values = canonicalValues(target.values);
  if (values.length === 0) return () => false;
  return compileFilters({ clauses: [{ kind: 'in', field: target.field, values }] }, seg);
}

/** The live copy of document `id` in a snapshot (newest segment first), or null. */
function locate(snap: IndexSnapshot, id: string): { seg: Segment; index: number; ord: number } | null {
  for (let i = snap.segments.length - 1; i >= 0; i--) {
    const seg = snap.segments[i] as Segment;
    const ord = seg.ordinalOf(id);
    if (ord >= 0 && seg.isLive(ord)) return { seg, index: i, ord };
  }
  return null;
}

/**
 * Best first: higher score, then earlier segment, then earlier document. An integer (see
 * lexical-search.ts compareHits: each module keeps its own copy, which sees few object shapes).
 */
function byScore(a: { score: number; segment: number; ord: number }, b: { score: number; segment: number; ord: number }): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return a.segment - b.segment || a.ord - b.ord;
}
