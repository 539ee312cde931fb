// Typeahead: completions of what is typed, from the precomputed suggestion tables of every
// segment. The query's words (the last one as a prefix unless followed by a space) are looked up
// at the start of suggestion keys and at later word starts (ranked lower); scores of the same
// suggestion in several segments add up. When that leaves room, the query's spelling
// alternatives are looked up too (ranked lower by typo cost), and then products matching every
// word anywhere (ranked lowest; when none has every word and nothing else was found, those with
// every word but the joining ones, or else every word but one). Scores are sums over
// supporting documents times match factors, so results of several index parts merge by adding
// the scores of equal ids.
import { analyzeQuery, analyzeTyped, queryWordKey, withMixedNumberPrefix, type AnalyzedQuery, type QueryWord } from '../../node/runtime/text/analyze-query.js';
import { decodeEntities } from '../../node/runtime/text/normalize.js';
import { singular } from '../../node/runtime/text/tokenize.js';
import type { IndexSnapshot } from './index-snapshot.js';
import { lexicalSearch, MAX_DROP_WORDS, MIN_LONE_PREFIX, type LexicalResult } from './lexical-search.js';
import { ClearingMemo, MemoPerOwner } from './memo.js';
import { docWeightOf, type Segment } from './segment.js';
import { regroupWords } from './regroup.js';
import type { SpellCorrector } from './spell-corrector.js';
import type { StageClock } from './stage-clock.js';
import { CompletionHits } from './suggestion-index.js';
import { TypeaheadCandidates } from './typeahead-candidates.js';
import type { SuggestResult, TypeaheadSuggestion } from './types.js';

/** A match at a later word of a suggestion ("gal" -> "Samsung Galaxy"). */
export const INNER_FACTOR = 0.5;
/** The suggestion is exactly what was typed. */
export const EXACT_FACTOR = 1.25;
/** Per unit of typo cost of a corrected query. */
export const TYPEAHEAD_TYPO_FACTOR = 0.3;
/** Suggestions of a spelling reading other than the corrector's best, below that one's. */
export const LATER_READING_FACTOR = 0.1;
/** Suggestions of the words typed in another form: a plural's singular, joined or split (see gatherAlike). */
export const ALIKE_FACTOR = 0.8;
/** Products found by full-text matching when the tables ran short. */
export const PRODUCT_FALLBACK_FACTOR = 0.2;
/** The products' search asks for this many times `limit` (see typeahead). */
const FALLBACK_FETCH = 3;
/**
 * Products found with some words left out: below those with every word, which another part of
 * the index may have found (parts answer alone, their lists are merged by score).
 */
export const RELAXED_FALLBACK_FACTOR = 0.02;
/** A list shorter than this goes on with the products of every word but one (see typeahead). */
const FILL_BELOW = 3;
/**
 * Words that only join others ("paint for deck"): left out of the products' search when no
 * product has every word. Not "in", "x", "no", "plus": they carry sizes and meaning in products.
 */
const JOINING_WORDS = new Set(['a', 'an', 'and', 'or', 'the', 'of', 'for', 'with', 'w', 'to', 'on', 'at', 'by', 'from', 'into', 'onto', 'your', 'my', 'that', 'this', 'de', 'la', 'le', 'et', 'und', 'mit', 'fur']);

// Scratch memory of the thread, reused by every keystroke: typeahead is synchronous and never
// nested, and leaves nothing in it that the next query reads (each use starts with a reset).
const candidates = new TypeaheadCandidates();
const completions = new CompletionHits();
/** candidate indexes in rank order (see typeahead) */
let order = new Int32Array(64);

/**
 * `clock` (profile=true) times the stages: analyze, tables, spelling, rank, fallback. `spare`:
 * table suggestions wanted beyond `limit` (TypeaheadRequest.spare); the product fallback fills
 * up to `limit` only.
 */
export function typeahead(snapshot: IndexSnapshot, corrector: SpellCorrector, query: string, limit: number, clock: StageClock | null = null, spare = 0): SuggestResult<TypeaheadSuggestion> {
  const q = withMixedNumberPrefix(analyzeQuery(query), query, (prefix) => snapshot.hasPrefix(prefix, 'any'));
  clock?.lap('analyze');
  const words = q.words.map((w) => w.term);
  if (words.length === 0 || snapshot.liveCount === 0) return { normalized_query: q.normalized, corrected_query: null, suggestions: [] };
  const lastIsPrefix = !q.lastWordComplete;
  // by suggestion id with a single segment (see gather)
  const cands = candidates.reset(snapshot.segments.length === 1);
  const wanted = limit + spare;
  let regroupedAlike = gatherAlike(snapshot, words, lastIsPrefix, 1, wanted, cands);
  clock?.lap('tables');

  // Spelling alternatives: when something is unknown or the tables ran short.
  let corrected: string[] | null = null;
  // the best reading that splits a glued word or joins a split one ("doorknobs" -> "door knobs",
  // "nu tone" -> "nutone"): the product search's typo tolerance finds most other corrections
  // itself, not these
  let regrouped: string[] | null = null;
  const unknown = words.some((w, i) => (lastIsPrefix && i === words.length - 1 ? !snapshot.hasPrefix(w, 'suggestive') : snapshot.termWeight(w, 'suggestive') === 0));
  if (unknown || (cands.count < limit && corrector.mayChange(words, lastIsPrefix))) {
    const exactCount = cands.count;
    let readings = 0;
    for (const alt of corrector.candidates(words, lastIsPrefix, 4)) {
      if (!alt.changed) continue;
      if (regrouped === null && alt.words.length !== words.length) regrouped = alt.words;
      const before = cands.count;
      // the corrector's best reading leads, the others follow it ("hamer": "Hammer" before the
      // far more popular "American", a first letter added being the less likely typo)
      const factor = Math.pow(TYPEAHEAD_TYPO_FACTOR, Math.max(1, alt.cost)) * (readings++ === 0 ? 1 : LATER_READING_FACTOR);
      regroupedAlike ??= gatherAlike(snapshot, alt.words, lastIsPrefix, factor, wanted, cands);
      if (corrected === null && exactCount === 0 && cands.count > before) corrected = alt.words;
    }
    clock?.lap('spelling');
  }

  // score every candidate (cheap), then build only the best ones
  if (order.length < cands.count) order = new Int32Array(cands.count * 2);
  let ranked = 0;
  for (let i = 0; i < cands.count; i++) {
    const score = candidateScore(snapshot, cands, i);
    cands.score[i] = score;
    if (score > 0) order[ranked++] = i;
  }
  // score, then key: a total order (keys are unique), so the rank never depends on gathering order
  order.subarray(0, ranked).sort((a, b) => {
    const x = cands.score[a] as number;
    const y = cands.score[b] as number;
    if (x !== y) return x > y ? -1 : 1;
    // a table's ids are in key order: no key decoded to break a tie within a segment
    if (cands.segment[a] === cands.segment[b]) return (cands.sug[a] as number) < (cands.sug[b] as number) ? -1 : 1;
    const ka = keyOf(cands, a);
    const kb = keyOf(cands, b);
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
  const out: TypeaheadSuggestion[] = [];
  // of them, the suggestions of the words in another form only: the products' search treats the
  // list as empty when it has nothing else
  let alikeShown = 0;
  // at most `limit` each: a list is cheaper to search than a set is to fill
  const titles: string[] = [];
  const forms: string[] = [];
  for (let r = 0; r < ranked && out.length < wanted; r++) {
    const c = order[r] as number;
    const shown = renderedOf(cands, c);
    // "Toilets" after "Toilet": one form of a phrase is enough
    if (forms.includes(shown.form)) continue;
    const seg = cands.segment[c] as Segment;
    if (shown.doc >= 0 && !seg.isLive(shown.doc)) continue;
    if (titles.includes(shown.lower)) continue;
    if (cands.alike[c] === 1) alikeShown++;
    titles.push(shown.lower);
    forms.push(shown.form);
    out.push({ id: shown.id, type: shown.type, title: shown.title, score: round(cands.score[c] as number) });
  }
  clock?.lap('rank');

  if (out.length < limit) {
    // products with every word somewhere (typo-tolerant), below anything the tables matched
    let productQuery = corrected ? analyzeTyped(corrected.join(' '), lastIsPrefix) : q;
    // more than `limit`: products sharing a title ("Krosswood Doors ..." in eleven sizes) are
    // shown once, and the list is filled from the next ones
    const fetch = limit * FALLBACK_FETCH;
    const everyWord = (query: AnalyzedQuery): LexicalResult => lexicalSearch(snapshot, query, { limit: fetch, requireAll: true, prefixLast: lastIsPrefix, clock });
    let res = everyWord(productQuery);
    // the words regrouped as the tables know them, when the corrector had nothing to regroup
    regrouped ??= regroupedAlike;
    if (res.hits.length === 0 && out.length === alikeShown && corrected === null && regrouped !== null) {
      // no product has every word as typed: the words split where they were glued (or joined)
      const split = analyzeTyped(regrouped.join(' '), lastIsPrefix);
      const found = everyWord(split);
      if (found.hits.length > 0) {
        res = found;
        productQuery = split;
        corrected = regrouped;
      }
    }
    // Nothing found, and no product has every word: first without the words that only join
    // others ("knobs for cabinet" finds "Cabinet Knob"), then with every word but one, each left
    // out in turn ("lg top loader washer ste": no title says "loader"), rather than an empty list.
    const productWords = productQuery.words;
    // a last word of a letter or two being typed: its completions are too many to mean anything
    // (see MIN_LONE_PREFIX), and cost most of a search with a word left out
    const shortLast = lastIsPrefix && (productWords[productWords.length - 1] as QueryWord).term.length < MIN_LONE_PREFIX;
    // the words that carry meaning, and those before the last
    const content = productWords.filter((w, i) => i === productWords.length - 1 || !JOINING_WORDS.has(w.term));
    const head = content.slice(0, -1);
    let relaxed = false;
    if (out.length === alikeShown && res.hits.length === 0 && productWords.length > 1) {
      relaxed = true;
      if (content.length < productWords.length) res = relaxedSearch(snapshot, content, lastIsPrefix, false, fetch, clock);
      // A short last word is left out: the words before it are searched as at the keystroke
      // before (memoized): with every word, then every word but one.
      if (res.hits.length === 0 && shortLast && head.length > 0) res = relaxedSearch(snapshot, head, false, false, fetch, clock);
      const words = shortLast ? head : content;
      if (res.hits.length === 0 && words.length > 1 && words.length <= MAX_DROP_WORDS) res = relaxedSearch(snapshot, words, lastIsPrefix && !shortLast, true, fetch, clock);
      // past MAX_DROP_WORDS words, too many to leave each out in turn: the words before the last
      else if (res.hits.length === 0 && !shortLast && head.length > 0) res = relaxedSearch(snapshot, head, false, false, fetch, clock);
      // still nothing ("echo rapid feed straigh": no title has three of the four words): the
      // words before the last of those, each left out in turn, as the keystrokes before them
      // asked (memoized), rather than an empty list
      const before = words.slice(0, -1);
      if (res.hits.length === 0 && before.length > 1 && before.length <= MAX_DROP_WORDS) res = relaxedSearch(snapshot, before, false, true, fetch, clock);
    }
    const have = new Set(out.map((s) => s.id));
    const append = (list: LexicalResult, factor: number): void => {
      const top = list.hits[0]?.score ?? 1;
      for (const h of list.hits) {
        if (out.length >= limit) break;
        const seg = snapshot.segments[h.segment] as Segment;
        const id = seg.idAt(h.ord);
        const title = decodeEntities(seg.title(h.ord)).trim();
        if (have.has(id) || titles.includes(title.toLowerCase())) continue;
        have.add(id);
        titles.push(title.toLowerCase());
        const score = factor * docWeightOf(seg.quality[h.ord] as number) * (h.score / top);
        out.push({ id, type: 'product', title, score: round(score) });
      }
    };
    append(res, relaxed ? RELAXED_FALLBACK_FACTOR : PRODUCT_FALLBACK_FACTOR);
    // A list of one or two ("kitchen countertop": one title has both words; products sharing a
    // title count once) goes on with the products of every word but one, below them. Not while
    // the last word has a letter or two: left out, it leaves the words before it (next), and
    // kept, it matches far too much on its own.
    if (!relaxed && out.length < FILL_BELOW && productWords.length > 1 && productWords.length <= MAX_DROP_WORDS && !shortLast) {
      append(relaxedSearch(snapshot, productWords, lastIsPrefix, true, fetch, clock), RELAXED_FALLBACK_FACTOR);
    }
    // A short last word being typed matches only the most frequent completions of its letter or
    // two ("back pack s": "switch", "steel", not "sprayer"): a list it leaves short goes on with
    // the products of the words before it, those of the keystroke before, below.
    if (!relaxed && shortLast && out.length < limit && head.length > 0) {
      append(relaxedSearch(snapshot, head, false, false, fetch, clock), RELAXED_FALLBACK_FACTOR);
    }
    clock?.lap('fallback');
  }

  out.sort(byScoreThenTitle);
  clock?.lap('rank');
  // the thread's scratch must not keep this query's segments alive on a thread that goes quiet
  cands.reset(false);
  return { normalized_query: q.normalized, corrected_query: corrected ? corrector.shown(corrected, words, lastIsPrefix) : null, suggestions: out.slice(0, wanted) };
}

/**
 * The relaxed queries of typeahead's products, memoized per snapshot: every keystroke of a last
 * word that matches nothing asks for the same words before it ("batman a", "batman ar"...).
 */
const relaxedMemo = new MemoPerOwner<IndexSnapshot, string, LexicalResult>(() => new ClearingMemo({ maxEntries: 16_384, entryBytes: 800 }));

/**
 * Products with every one of the query's `words` (the last a prefix when `prefixLast`), or,
 * `oneOut`, with every word but one. The words as analyzed, not their text: a typed foot mark's
 * reading as inches is an alternative of its word only.
 */
function relaxedSearch(snapshot: IndexSnapshot, words: readonly QueryWord[], prefixLast: boolean, oneOut: boolean, limit: number, clock: StageClock | null): LexicalResult {
  const memo = relaxedMemo.of(snapshot);
  let key = `${oneOut ? 1 : 0}${prefixLast ? 1 : 0}${limit}`;
  for (const w of words) key += `\u0000${queryWordKey(w)}`;
  let res = memo.get(key);
  if (res === undefined) {
    const query = { normalized: words.map((w) => w.term).join(' '), words: [...words], lastWordComplete: !prefixLast };
    res = lexicalSearch(snapshot, query, { limit, ...(oneOut ? { dropOnly: true } : { requireAll: true }), prefixLast, clock });
    memo.set(key, res);
  }
  return res;
}

/**
 * `gather`, and when that finds fewer than FILL_BELOW suggestions, the same words in the other
 * forms titles use, a little below: a plural whose singular the index knows, as the whole phrase
 * or its last word ("hammers": "Hammer", "Claw Hammer"; the tables hold phrases as titles say
 * them, mostly in the singular; not "Hammer Drill", a hammer drill is no hammer); then two words
 * as one or one word as two, when the index knows that form (regroup.ts: "dish washer":
 * "Dishwasher"; "lawnmower", in two titles: "Lawn Mower", in hundreds). At most FILL_BELOW of
 * each per segment, leaving the rest of the list to the products of the words as typed. Returns
 * the regrouped words when their phrases were found (the products' search may take them too).
 */
function gatherAlike(snapshot: IndexSnapshot, words: string[], lastIsPrefix: boolean, factor: number, limit: number, cands: TypeaheadCandidates): string[] | null {
  const before = cands.count;
  gather(snapshot, words, lastIsPrefix, factor, limit, cands);
  if (cands.count - before >= FILL_BELOW) return null;
  const from = cands.count;
  const last = words[words.length - 1] as string;
  const one = singular(last);
  if (one !== null && snapshot.termWeight(one, 'suggestive') > 0) gather(snapshot, [...words.slice(0, -1), one], false, factor * ALIKE_FACTOR, limit, cands, true, FILL_BELOW);
  let found: string[] | null = null;
  if (cands.count - before < FILL_BELOW) {
    const regrouped = regroupWords(snapshot, words, lastIsPrefix, 'suggestive');
    const at = cands.count;
    if (regrouped !== null) gather(snapshot, regrouped, lastIsPrefix, factor * ALIKE_FACTOR, limit, cands, false, FILL_BELOW);
    if (cands.count > at) found = regrouped;
  }
  cands.markAlike(from);
  return found;
}

/**
 * Looks up `words` in every segment's tables and adds the completions to `cands`, by key (the
 * same suggestion in several segments is one candidate: told by the key's code units, read in
 * place). With a single segment, by suggestion id instead (`cands.byId`): keys are unique within
 * a table. With the last word still typed only the answer's keys are decoded (a first-seen
 * prefix decoded two dozen, and with several segments every key gathered); a finished last word
 * decodes each key to keep whole-word matches.
 */
function gather(snapshot: IndexSnapshot, words: string[], lastIsPrefix: boolean, factor: number, limit: number, cands: TypeaheadCandidates, ending = false, most = Infinity): void {
  const key = words.join(' ');
  // a finished last word must match a whole word: fetch more, keep those continuing with a space
  const k = lastIsPrefix ? limit + 8 : limit * 3 + 8;
  const hits = completions;
  for (const seg of snapshot.segments) {
    if (seg.liveCount === 0) continue;
    seg.suggestions.complete(key, k, true, seg.deletedSuggestionWeights, hits.clear());
    let taken = 0;
    for (let i = 0; i < hits.count && taken < most; i++) {
      const sug = hits.sug[i] as number;
      const inner = hits.inner[i] === 1;
      let full: string | null = null;
      let exact: boolean;
      if (lastIsPrefix) {
        // a start-table hit begins with what was typed: the same length is the same key
        exact = !inner && seg.suggestions.keyLength(sug) === key.length;
      } else {
        full = seg.suggestions.key(sug);
        if (ending ? full !== key && !full.endsWith(` ${key}`) : !wholeWords(full, key, inner)) continue;
        exact = full === key;
      }
      cands.add(seg, sug, full, factor * (inner ? INNER_FACTOR : 1) * (exact ? EXACT_FACTOR : 1));
      taken++;
    }
  }
}

function keyOf(cands: TypeaheadCandidates, i: number): string {
  return (cands.key[i] ??= (cands.segment[i] as Segment).suggestions.key(cands.sug[i] as number));
}

/** What a suggestion shows, and the form it is told apart by ("Toilets" after "Toilet"). */
interface Rendered {
  id: string;
  type: TypeaheadSuggestion['type'];
  title: string;
  /** `title` in lower case: two suggestions of one title are one */
  lower: string;
  /** the key's words in singular form */
  form: string;
  /** the product a product suggestion shows (its liveness is checked at each use), else -1 */
  doc: number;
}

/**
 * A suggestion as shown, memoized per segment (its keys, products and titles never change; a
 * microsecond or more per suggestion of string decoding otherwise), at most MAX_RENDERED per
 * segment.
 */
const MAX_RENDERED = 65_536;
const renderedMemo = new MemoPerOwner<Segment, number, Rendered>(() => new ClearingMemo({ maxEntries: MAX_RENDERED, entryBytes: 320 }));

function renderedOf(cands: TypeaheadCandidates, i: number): Rendered {
  const seg = cands.segment[i] as Segment;
  const sug = cands.sug[i] as number;
  const memo = renderedMemo.of(seg);
  let shown = memo.get(sug);
  if (shown === undefined) {
    const key = keyOf(cands, i);
    const form = key.split(' ').map((w) => singular(w) ?? w).join(' ');
    const type = seg.suggestions.type(sug);
    if (type === 'product') {
      const doc = seg.suggestions.bestDocs[sug] as number;
      const title = decodeEntities(seg.title(doc)).trim();
      shown = { id: seg.idAt(doc), type, title, lower: title.toLowerCase(), form, doc };
    } else {
      const title = seg.suggestions.display(sug);
      shown = { id: `q:${key}`, type, title, lower: title.toLowerCase(), form, doc: -1 };
    }
    memo.set(sug, shown);
  }
  return shown;
}

function wholeWords(full: string, key: string, inner: boolean): boolean {
  if (!inner) return full === key || full.startsWith(`${key} `);
  return full.endsWith(` ${key}`) || full.includes(` ${key} `);
}

/** Score of candidate `i`: its live support summed over segments, times its match factor. */
function candidateScore(snapshot: IndexSnapshot, cands: TypeaheadCandidates, i: number): number {
  const own = cands.segment[i] as Segment;
  const ownSug = cands.sug[i] as number;
  let base = 0;
  for (const seg of snapshot.segments) {
    const sug = seg === own ? ownSug : seg.suggestions.findKeyOf(own.suggestions, ownSug);
    if (sug >= 0) base += seg.suggestions.liveScore(sug, seg.deletedSuggestionWeights);
  }
  return base * (cands.factor[i] as number);
}

// Comparators answer -1, 0 or 1: a fractional difference is a new heap number on every call.

function byScoreThenTitle(a: TypeaheadSuggestion, b: TypeaheadSuggestion): number {
  if (a.score !== b.score) return a.score > b.score ? -1 : 1;
  return a.title < b.title ? -1 : a.title > b.title ? 1 : 0;
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
