// Typeahead: completions of what is typed, from the precomputed suggestion tables of every
// segment. The query's words (the last one as a prefix unless followed by a space) are looked up
// at the start of suggestion keys and at later word starts (ranked lower); scores of the same
// suggestion in several segments add up. When that leaves room, the query's spelling
// alternatives are looked up too (ranked lower by typo cost), and then products matching every
// word anywhere (ranked lowest). Scores are sums over supporting documents times match factors,
// so results of several index parts merge by adding the scores of equal ids.
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { decodeEntities } from '../../node/runtime/text/normalize.js';
import { singular } from '../../node/runtime/text/tokenize.js';
import type { IndexSnapshot } from './index-snapshot.js';
import { lexicalSearch } from './lexical-search.js';
import { ClearingMemo, MemoPerOwner } from './memo.js';
import { docWeightOf, type Segment } from './segment.js';
import type { SpellCorrector } from './spell-corrector.js';
import type { StageClock } from './stage-clock.js';
import type { CompletionHit } from './suggestion-index.js';
import type { SuggestResult, TypeaheadSuggestion } from './types.js';

/** A match at a later word of a suggestion ("gal" -> "Samsung Galaxy"). */
export const INNER_FACTOR = 0.5;
/** The suggestion is exactly what was typed. */
export const EXACT_FACTOR = 1.25;
/** Per unit of typo cost of a corrected query. */
export const TYPEAHEAD_TYPO_FACTOR = 0.3;
/** Products found by full-text matching when the tables ran short. */
export const PRODUCT_FALLBACK_FACTOR = 0.2;

interface Candidate {
  /** the suggestion's key, decoded when first needed (see keyOf) */
  key: string | null;
  segment: Segment;
  sug: number;
  factor: number;
  /** the candidate's score once every candidate is gathered (see candidateScore) */
  score: number;
}

/** `clock` (profile=true) times the stages: analyze, tables, spelling, rank, fallback. */
export function typeahead(snapshot: IndexSnapshot, corrector: SpellCorrector, query: string, limit: number, clock: StageClock | null = null): SuggestResult<TypeaheadSuggestion> {
  const q = analyzeQuery(query);
  clock?.lap('analyze');
  const words = q.words.map((w) => w.term);
  if (words.length === 0 || snapshot.liveCount === 0) return { normalized_query: q.normalized, corrected_query: null, suggestions: [] };
  const lastIsPrefix = !q.lastWordComplete;
  const cands = new Map<string | number, Candidate>();
  gather(snapshot, words, lastIsPrefix, 1, limit, cands);
  clock?.lap('tables');

  // Spelling alternatives: when something is unknown or the tables ran short.
  let corrected: string[] | null = null;
  const unknown = words.some((w, i) => (lastIsPrefix && i === words.length - 1 ? !snapshot.hasPrefix(w, 'suggestive') : snapshot.termWeight(w, 'suggestive') === 0));
  if (unknown || (cands.size < limit && corrector.mayChange(words, lastIsPrefix))) {
    const exactCount = cands.size;
    for (const alt of corrector.candidates(words, lastIsPrefix, 4)) {
      if (!alt.changed) continue;
      const before = cands.size;
      gather(snapshot, alt.words, lastIsPrefix, Math.pow(TYPEAHEAD_TYPO_FACTOR, Math.max(1, alt.cost)), limit, cands);
      if (corrected === null && exactCount === 0 && cands.size > before) corrected = alt.words;
    }
    clock?.lap('spelling');
  }

  // score every candidate (cheap), then build only the best ones
  const scored: Candidate[] = [];
  for (const c of cands.values()) {
    c.score = candidateScore(snapshot, c);
    if (c.score > 0) scored.push(c);
  }
  scored.sort(byScoreThenKey);
  const out: TypeaheadSuggestion[] = [];
  const titles = new Set<string>();
  const forms = new Set<string>();
  for (const c of scored) {
    if (out.length >= limit) break;
    // "Toilets" after "Toilet": one form of a phrase is enough
    const form = formOf(c);
    if (forms.has(form)) continue;
    const s = toSuggestion(c, c.score);
    if (s === null) continue;
    const t = s.title.toLowerCase();
    if (titles.has(t)) continue;
    titles.add(t);
    forms.add(form);
    out.push(s);
  }
  clock?.lap('rank');

  if (out.length < limit) {
    // products with every word somewhere (typo-tolerant), below anything the tables matched
    const productQuery = corrected ? analyzeQuery(corrected.join(' ') + (lastIsPrefix ? '' : ' ')) : q;
    const res = lexicalSearch(snapshot, productQuery, { limit, requireAll: true, prefixLast: lastIsPrefix, clock });
    const top = res.hits[0]?.score ?? 1;
    const have = new Set(out.map((s) => s.id));
    for (const h of res.hits) {
      const seg = snapshot.segments[h.segment] as Segment;
      const id = seg.idAt(h.ord);
      const title = decodeEntities(seg.title(h.ord)).trim();
      if (have.has(id) || titles.has(title.toLowerCase())) continue;
      have.add(id);
      titles.add(title.toLowerCase());
      const score = PRODUCT_FALLBACK_FACTOR * docWeightOf(seg.quality[h.ord] as number) * (h.score / top);
      out.push({ id, type: 'product', title, score: round(score) });
    }
    clock?.lap('fallback');
  }

  out.sort(byScoreThenTitle);
  clock?.lap('rank');
  return { normalized_query: q.normalized, corrected_query: corrected ? corrected.join(' ') : null, suggestions: out.slice(0, limit) };
}

/**
 * Looks up `words` in every segment's tables and adds the completions to `cands`, by key (the
 * same suggestion in several segments is one candidate). With a single segment and the last word
 * still typed, by suggestion id instead: keys are unique within a table, and only the answer's
 * keys are then decoded (a first-seen prefix decoded two dozen).
 */
function gather(snapshot: IndexSnapshot, words: string[], lastIsPrefix: boolean, factor: number, limit: number, cands: Map<string | number, Candidate>): void {
  const key = words.join(' ');
  // a finished last word must match a whole word: fetch more, keep those continuing with a space
  const k = lastIsPrefix ? limit + 8 : limit * 3 + 8;
  const byId = lastIsPrefix && snapshot.segments.length === 1;
  const hits: CompletionHit[] = [];
  for (const seg of snapshot.segments) {
    if (seg.liveCount === 0) continue;
    hits.length = 0;
    seg.suggestions.complete(key, k, true, seg.deletedSuggestionWeights, hits);
    for (const h of hits) {
      let full: string | null = null;
      let exact: boolean;
      if (byId) {
        // a start-table hit begins with what was typed: the same length is the same key
        exact = !h.inner && seg.suggestions.keyLength(h.sug) === key.length;
      } else {
        full = seg.suggestions.key(h.sug);
        if (!lastIsPrefix && !wholeWords(full, key, h.inner)) continue;
        exact = full === key;
      }
      const f = factor * (h.inner ? INNER_FACTOR : 1) * (exact ? EXACT_FACTOR : 1);
      const id = full ?? h.sug;
      const c = cands.get(id);
      if (c === undefined) cands.set(id, { key: full, segment: seg, sug: h.sug, factor: f, score: 0 });
      else if (f > c.factor) c.factor = f;
    }
  }
}

function keyOf(c: Candidate): string {
  return (c.key ??= c.segment.suggestions.key(c.sug));
}

/**
 * A suggestion's words in singular form, memoized per segment (its keys never change; a few
 * hundred nanoseconds per candidate otherwise), at most MAX_FORMS per segment.
 */
const MAX_FORMS = 65_536;
const formMemo = new MemoPerOwner<Segment, number, string>(() => new ClearingMemo({ maxEntries: MAX_FORMS, entryBytes: 96 }));

function formOf(c: Candidate): string {
  const memo = formMemo.of(c.segment);
  let form = memo.get(c.sug);
  if (form === undefined) {
    form = keyOf(c).split(' ').map((w) => singular(w) ?? w).join(' ');
    memo.set(c.sug, form);
  }
  return form;
}

function wholeWords(full: string, key: string, inner: boolean): boolean {
  if (!inner) return full === key || full.startsWith(`${key} `);
  return full.endsWith(` ${key}`) || full.includes(` ${key} `);
}

/** Score of a candidate: its live support summed over segments, times its match factor. */
function candidateScore(snapshot: IndexSnapshot, c: Candidate): number {
  let base = 0;
  for (const seg of snapshot.segments) {
    const sug = seg === c.segment ? c.sug : seg.suggestions.find(keyOf(c));
    if (sug >= 0) base += seg.suggestions.liveScore(sug, seg.deletedSuggestionWeights);
  }
  return base * c.factor;
}

function toSuggestion(c: Candidate, score: number): TypeaheadSuggestion | null {
  const seg = c.segment;
  const type = seg.suggestions.type(c.sug);
  if (type === 'product') {
    const doc = seg.suggestions.bestDocs[c.sug] as number;
    if (!seg.isLive(doc)) return null;
    return { id: seg.idAt(doc), type, title: decodeEntities(seg.title(doc)).trim(), score: round(score) };
  }
  return { id: `q:${keyOf(c)}`, type, title: seg.suggestions.display(c.sug), score: round(score) };
}

// Comparators answer -1, 0 or 1: a fractional difference is a new heap number on every call.
function byScoreThenKey(a: Candidate, b: Candidate): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  const x = keyOf(a);
  const y = keyOf(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

function byScoreThenTitle(a: TypeaheadSuggestion, b: TypeaheadSuggestion): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return a.title < b.title ? -1 : a.title > b.title ? 1 : 0;
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
