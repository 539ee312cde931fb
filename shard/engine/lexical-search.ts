// Full-text retrieval and ranking for autocomplete (fts_only) and the product fallback of
// typeahead. BM25F over the five fields (title > brand > category > attributes > description,
// each with its own length normalization), with every query word expanded to its equivalent
// spellings, its typo neighbours (penalized by typo cost) and, for the last word still being
// typed, its completions (penalized by how much is left to type). A word scores a document by
// its best expansion; words add up; documents missing words are ranked below complete matches;
// words found next to each other, in order, at the start of the title earn a proximity bonus;
// a popularity/rating prior breaks near-ties. Documents are accumulated in dense scratch arrays
// per segment, so cost follows the postings touched; a pass with one word required reads each
// expansion's best postings first and stops once nothing left can make the answer (topOneWord).
// Every shortcut gives the full scan's answer, to the last bit of every score.
import { queryWordKey, type AnalyzedQuery, type QueryWord } from '../../node/runtime/text/analyze-query.js';
import { FIELD_COUNT } from './doc-fields.js';
import { compileFilters, type DocPredicate, type FilterSpec } from './filters.js';
import { maxEditsFor, typoCost } from './fuzzy.js';
import { clearScratch, normsFor, type CollectionStats, type IndexSnapshot } from './index-snapshot.js';
import { ClearingMemo, MemoPerOwner } from './memo.js';
import type { StageClock } from './stage-clock.js';
import { NO_POSITION, TERM_PRIMARY, TERM_TOP_THRESHOLD, TF_BITS, TF_MAX, ALT_ONLY, PART_ONLY, type Segment } from './segment.js';

/** Field weights and length normalization, in FIELD order (title, brand, category, attr, desc). */
export const FIELD_WEIGHTS = [3.0, 2.0, 1.5, 1.0, 0.4];
export const FIELD_B = [0.6, 0.3, 0.3, 0.3, 0.75];
export const K1 = 1.2;
/** Score factor per unit of typo cost. */
export const TYPO_FACTOR = 0.35;
/** An equivalent spelling (singular, canonical unit) scores a little below the word itself. */
const ALT_FACTOR = 0.92;
const PREFIX_ALT_FACTOR = 0.5;
/** A term present in the document only as an equivalent spelling (its singular, a unit). */
const ALT_ONLY_FACTOR = 0.9;
/** A term present only as a piece of a compound ("case" in "Case-Mate"): weak evidence. */
const PART_ONLY_FACTOR = 0.55;
/** A document missing one query word keeps this share of its score (per missing word). */
const MISSING_WORD_FACTOR = 0.2;
const PRIOR_WEIGHT = 0.5;
/** A title that starts with the first query word: what a shopper typing a product name means. */
const TITLE_START_BONUS = 0.15;
/**
 * A word matched only in the description is weak evidence of what the product is ("case" in a
 * phone's description); each such word costs this factor.
 */
const DESC_ONLY_FACTOR = 0.5;
/** tf bits of the title, brand, category and attribute fields */
const STRONG_FIELDS = (1 << (4 * TF_BITS)) - 1;
/**
 * Completions kept for the last word: the most frequent terms of its prefix range, fewer for
 * very short prefixes, whose results the most frequent completions decide anyway.
 */
const MAX_PREFIX_EXPANSIONS = 48;
function maxExpansions(prefixLength: number): number {
  return prefixLength <= 1 ? 16 : prefixLength === 2 ? 32 : MAX_PREFIX_EXPANSIONS;
}
const MAX_WORDS = 12;
/**
 * MISSING_WORD_FACTOR and DESC_ONLY_FACTOR to the power of 0..MAX_WORDS (split compounds may
 * add words: Math.pow beyond); Math.pow per document cost 13 % of a loose pass.
 */
const MISSING_WORD_POW = Array.from({ length: MAX_WORDS + 1 }, (_, k) => Math.pow(MISSING_WORD_FACTOR, k));
const DESC_ONLY_POW = Array.from({ length: MAX_WORDS + 1 }, (_, k) => Math.pow(DESC_ONLY_FACTOR, k));
/** Up to this many words, "every word but one" is tried word by word before anything looser. */
export const MAX_DROP_WORDS = 6;
/** In the loosest pass, terms found in more than this share of a segment are skipped. */
const LOOSE_MAX_SHARE = 0.15;
/**
 * A posting list longer than this many times the documents still in the running is probed for
 * them (galloping search) rather than scanned; the scores are the same either way.
 */
const PROBE_COST = 16;
/** A last word typed this far can match a document without the query's other words. */
export const MIN_LONE_PREFIX = 3;
/** A word found in this many documents is taken as typed (no typo expansion). */
const KNOWN_DF = 3;
/** Digits and the marks inside numbers only: "10000", "70-1/2", "2.5". */
const NUMBER_WORD = /^[\d.,/-]+$/;

export interface LexicalOptions {
  limit: number;
  filters?: FilterSpec | null;
  /** the last word is still being typed: match it as a prefix (default: unless it is complete) */
  prefixLast?: boolean;
  fuzzy?: boolean;
  /** return only documents that match every word (typeahead fallback) */
  requireAll?: boolean;
  /**
   * Only the documents with every word but one, each word left out in turn (up to MAX_DROP_WORDS
   * words; none beyond): for a caller whose search with every word has just found nothing
   * (typeahead's relaxed products). No pass with any word.
   */
  dropOnly?: boolean;
  /**
   * Documents that make a full answer (default `limit`): looser passes (a word missing, any word)
   * run only while fewer were found with every word. A candidate pool larger than the answer
   * (hybrid, fts_rerank) sets it to the answer's size: documents missing a word score a fifth and
   * rarely outrank complete matches (same Home Depot relevance), so filling the pool with them
   * bought little but time.
   */
  enough?: number;
  /** collection statistics shared by several parts, for comparable scores */
  stats?: CollectionStats;
  /**
   * Per-segment document score factor (merchandising boost/bury; 0 leaves the document out),
   * applied before the top-k cut; null for a segment without affected documents.
   */
  docFactor?: (seg: Segment) => ((ord: number) => number) | null;
  /** profile=true: times expansion and each pass (lexical_expand, _strict, _drop, _loose) */
  clock?: StageClock | null;
}

export interface LexicalHit {
  segment: number;
  ord: number;
  score: number;
  /** query words matched */
  matched: number;
  /** total typo cost of the matched words */
  typos: number;
}

export interface LexicalResult {
  hits: LexicalHit[];
  /** documents that matched at least one word (before the limit) */
  total: number;
  /** query words used (after compound words without matches were split) */
  words: number;
}

interface Expansion {
  term: string;
  factor: number;
  typos: number;
  /** the term's id in `seg`, when the expansion came from that segment's table (saves a lookup) */
  seg: Segment | null;
  id: number;
  /** documents containing the term, over the snapshot's segments */
  df: number;
}

/**
 * Expansions of a word depend only on the word and the snapshot's segments, and typing repeats
 * words: every keystroke of "gears of wa" expands "gears" and "of" again, and popular prefixes
 * recur across sessions. They are memoized per snapshot (a write starts a new one), bounded by
 * the expansions kept (about 10 MB; the whole benchmark keystroke stream, 16,000 distinct words,
 * needs 67,000).
 */
const MAX_MEMO_EXPANSIONS = 100_000;
const expansionMemo = new MemoPerOwner<IndexSnapshot, string, Expansion[]>(
  () => new ClearingMemo({ maxWeight: MAX_MEMO_EXPANSIONS, weightOf: (list) => list.length, entryBytes: 96, weightBytes: 96 }),
);

function expandMemoized(snapshot: IndexSnapshot, w: QueryWord, isPrefix: boolean, fuzzy: boolean): Expansion[] {
  const memo = expansionMemo.of(snapshot);
  const key = `${isPrefix ? 1 : 0}${fuzzy ? 1 : 0}${w.term}\u0000${w.alternatives.join('\u0000')}`;
  let list = memo.get(key);
  if (list === undefined) {
    list = expand(snapshot, w, isPrefix, fuzzy);
    memo.set(key, list);
  }
  return list;
}

/**
 * The BM25F term-frequency part of every posting of a term, the compound factors included and
 * the idf left out: `tf (K1 + 1) / (K1 + tf)` over the field-weighted, length-normalized counts.
 * It depends only on the posting and the segment's norms, and the decoding of five packed
 * counts with a norm each was a third of a posting's cost, so the lists of the terms queries
 * scan are memoized per norms (per segment and gridded average lengths, so they outlive writes
 * and serve shared statistics too: index-snapshot.ts `normsFor`), bounded by the postings they
 * hold.
 */
const MAX_MEMO_IMPACTS = 4_000_000;
/** Shorter lists cost less to score than to look up. */
const MIN_MEMO_IMPACTS = 256;
const impactMemo = new MemoPerOwner<Float32Array, number, Float64Array>(
  () => new ClearingMemo({ maxWeight: MAX_MEMO_IMPACTS, weightOf: (list) => list.length, entryBytes: 80, weightBytes: 8 }),
);

/** The impact of posting `p` (see impactMemo). */
function impactAt(postTf: Uint32Array, norms: Float32Array, p: number, d: number): number {
  const packed = postTf[p] as number;
  let tf = 0;
  const base = d * FIELD_COUNT;
  for (let f = 0, bits = packed & 0x3fffffff; bits !== 0; f++, bits >>>= TF_BITS) {
    const c = bits & TF_MAX;
    if (c !== 0) tf += c * (norms[base + f] as number);
  }
  const s = (tf * (K1 + 1)) / (K1 + tf);
  return packed >= ALT_ONLY ? s * (packed >= PART_ONLY ? PART_ONLY_FACTOR : ALT_ONLY_FACTOR) : s;
}

/**
 * The memoized impacts of term `t`'s postings `[from, to)`, computed now when `compute` (a scan
 * that scores most of them); undefined for short lists and when there is no memo (statistics
 * shared by several parts), whose postings are scored directly.
 */
function impactsOf(seg: Segment, norms: Float32Array, memo: ClearingMemo<number, Float64Array> | null, compute: boolean, t: number, from: number, to: number): Float64Array | undefined {
  if (memo === null || to - from < MIN_MEMO_IMPACTS) return undefined;
  let list = memo.get(t);
  if (list === undefined && compute) {
    list = new Float64Array(to - from);
    const postDocs = seg.postDocs;
    const postTf = seg.postTf;
    for (let p = from; p < to; p++) list[p - from] = impactAt(postTf, norms, p, postDocs[p] as number);
    memo.set(t, list);
  }
  return list;
}

/**
 * Where a pass requiring every word stands once it has gone through the head of the query (every
 * word but the last): the documents with every head word, ascending, and their partial scores.
 * Typing repeats the head at every keystroke of the last word ("gears of w", "gears of wa"...),
 * and its words are often common ("2 in x 4"), so the state is memoized per snapshot, segment
 * and head (its scores carry the snapshot's idfs: not over shared statistics), bounded by the
 * documents held.
 */
interface HeadState {
  docs: Int32Array;
  total: Float32Array;
  typos: Float32Array;
  weak: Uint8Array;
  /** title position + 1 of each head word, `head` entries per document */
  pos: Uint16Array;
  /**
   * A large head's documents as a bitmap over the segment: the last word's postings are checked
   * against it, and only the documents they find take their head scores (see `headIndex`),
   * instead of every head document being copied into the scratch arrays and scanned again. Null
   * for small heads.
   */
  bitmap: DocBitmap | null;
}

/** Documents of a segment as bits, with the number of documents before each 32-bit word. */
interface DocBitmap {
  bits: Uint32Array;
  ranks: Uint32Array;
}
const MAX_MEMO_HEAD_DOCS = 2_000_000;
/** Heads are typed text: bounded in number too (a head whose words never meet holds no document). */
const MAX_MEMO_HEADS = 65_536;
const HEAD_DOC_BYTES = 24;
const headMemo = new MemoPerOwner<IndexSnapshot, string, HeadState>(
  () =>
    new ClearingMemo({
      maxEntries: MAX_MEMO_HEADS,
      maxWeight: MAX_MEMO_HEAD_DOCS,
      // the bitmap counted as the documents it weighs as much as
      weightOf: (st) => st.docs.length + (st.bitmap === null ? 0 : Math.ceil((st.bitmap.bits.byteLength + st.bitmap.ranks.byteLength) / HEAD_DOC_BYTES)),
      entryBytes: 200,
      weightBytes: HEAD_DOC_BYTES,
    }),
);
/**
 * The pass of a query that leaves out its last word (see lexicalSearch), per snapshot: its hits
 * are shared by every call that finds them here, and no caller changes a hit.
 */
const lastOutMemo = new MemoPerOwner<IndexSnapshot, string, LexicalResult>(() => new ClearingMemo({ maxEntries: 16_384, maxWeight: 400_000, weightOf: (r) => r.hits.length, entryBytes: 160, weightBytes: 64 }));
/**
 * Heads with at least this many documents, and at least a 64th of the segment's (so that the
 * bitmap costs at most 16 bytes a head document), get a bitmap: copying a few hundred documents
 * costs less than a bitmap lookup per posting. "x b" resumed 16,000 documents of "x" at every
 * keystroke.
 */
export const LAZY_HEAD_MIN_DOCS = 64;
/** Resumes of a memoized head through its bitmap (tests check that the path is taken). */
export const headStats = { lazyResumes: 0 };

export function lexicalSearch(snapshot: IndexSnapshot, query: AnalyzedQuery, options: LexicalOptions): LexicalResult {
  const prefixLast = options.prefixLast ?? !query.lastWordComplete;
  const typed = distinctWords(query.words, prefixLast).slice(0, MAX_WORDS);
  const words = splitUnknownCompounds(snapshot, typed, prefixLast);
  const result = searchWords(snapshot, words, prefixLast, options);
  // A compound split into parts that no document holds together ("vn260": "vn" and "260...") is
  // more likely a model number a character off ("vn250"), which the compound's own typo walk
  // finds. Taken only when it finds documents with every word, where the parts found none, and
  // only for a compound with a model number's digits (two or more: "forza4" is no typo of
  // "forzaq...").
  if (words.length > typed.length && (options.fuzzy ?? true) && typed.some(isModelNumber) && everyWordHits(result) === 0) {
    const whole = searchWords(snapshot, typed, prefixLast, options);
    if (everyWordHits(whole) > 0) return whole;
  }
  return result;
}

/** A compound of letters and at least two digits ("vn260", "hlcrio121", "bp3200"). */
function isModelNumber(w: QueryWord): boolean {
  if (w.parts.length === 0) return false;
  let digits = 0;
  for (let i = 0; i < w.term.length; i++) {
    const c = w.term.charCodeAt(i);
    if (c >= 48 && c <= 57 && ++digits >= 2) return true;
  }
  return false;
}

/** Hits with every word of their query. */
export function everyWordHits(result: LexicalResult): number {
  let n = 0;
  for (const h of result.hits) if (h.matched >= result.words) n++;
  return n;
}

function searchWords(snapshot: IndexSnapshot, words: QueryWord[], prefixLast: boolean, options: LexicalOptions): LexicalResult {
  if (words.length === 0 || snapshot.docCount === 0) return { hits: [], total: 0, words: 0 };
  const fuzzy = options.fuzzy ?? true;
  const expansions = words.map((w, i) => expandMemoized(snapshot, w, prefixLast && i === words.length - 1, fuzzy));
  const clock = options.clock ?? null;
  clock?.lap('lexical_expand');
  const stats = options.stats;
  const N = stats?.docCount ?? snapshot.docCount;
  const avg = stats?.avgFieldLength ?? snapshot.avgFieldLength;
  const shared = stats?.df;
  const dfOf = (e: Expansion): number => shared?.[e.term] ?? e.df;
  const idfOf = (df: number): number => Math.log(1 + (N - df + 0.5) / (df + 0.5));
  // Completions and typo neighbours never outweigh the word itself: a rare completion of "7"
  // must not beat documents that contain "7". Their idf is capped at the word's own, or at the
  // most frequent expansion's when the word itself is not a term. The word itself is always the
  // first expansion. An equivalent spelling of a complete word keeps its own idf: it is the word,
  // and may say more than it ("in" of "1/2 in" has "1/2in", found only where the number stands
  // beside the unit, so that 1/2 in. products outrank 1-1/2 in. ones).
  const idfs = expansions.map((list, w) => {
    const own = dfOf(list[0] as Expansion);
    let maxDf = own;
    for (const e of list) maxDf = Math.max(maxDf, dfOf(e));
    const cap = idfOf(own > 0 ? own : maxDf);
    const alternatives = (words[w] as QueryWord).alternatives;
    return list.map((e) => {
      const v = idfOf(dfOf(e));
      const equivalent = e.factor === 1 || (e.factor === ALT_FACTOR && alternatives.includes(e.term));
      return equivalent && e.typos === 0 ? v : Math.min(v, cap);
    });
  });
  const n = words.length;
  // A last word still being typed with fewer than MIN_LONE_PREFIX characters matches no document
  // on its own in the looser passes: its completions are too many to mean anything alone ("lego h"
  // must not be filled with "PVC DWV H x H" fittings), and scoring them cost most of such a query.
  const lone = prefixLast && n > 1 && (words[n - 1] as QueryWord).term.length < MIN_LONE_PREFIX ? n - 1 : -1;
  // the head's identity (see HeadState): its words as expanded; none with filters or shared statistics
  const head = n >= 2 && !options.filters && !stats ? `${fuzzy ? 1 : 0}${words.slice(0, n - 1).map((w) => `${w.term}\u0001${w.alternatives.join('\u0001')}`).join('\u0000')}` : null;
  const run = (active: number[], all: boolean): LexicalResult => {
    const top = new TopHits(options.limit);
    let total = 0;
    try {
      snapshot.segments.forEach((seg, segIndex) => {
        if (seg.liveCount === 0) return;
        total += searchSegment(snapshot, seg, segIndex, expansions, idfs, avg, n, active, options, all, lone, head, top);
      });
    } catch (err) {
      // the scratch memory is the thread's: what a failed pass left in it must not reach the next query
      clearScratch();
      throw err;
    }
    return { hits: top.sorted(), total, words: n };
  };
  const everyWord = words.map((_, i) => i);
  // Documents with every word first: that pass only scores documents still in the running, so
  // common words cost little. When it falls short, documents missing one word (each word left
  // out in turn, the same cheap way), and only then any matching word.
  const strict = options.dropOnly ? { hits: [], total: 0, words: n } : run(everyWord, true);
  clock?.lap('lexical_strict');
  const enough = Math.min(options.enough ?? options.limit, options.limit);
  if (options.requireAll || n === 1 || strict.hits.length >= enough) return strict;
  const merged = new Map<string, LexicalHit>();
  const keep = (h: LexicalHit): void => {
    const k = `${h.segment}:${h.ord}`;
    const prev = merged.get(k);
    if (prev === undefined || prev.score < h.score) merged.set(k, h);
  };
  strict.hits.forEach(keep);
  let total = strict.total;
  if (n <= MAX_DROP_WORDS) {
    // the pass leaving out the last word reads only the words before it: the same at every
    // keystroke of the last word ("samsung g", "samsung ga", ...), memoized by the head
    const lastOut = head !== null && options.docFactor === undefined && pruning.memos ? lastOutMemo.of(snapshot) : null;
    for (let skip = 0; skip < n; skip++) {
      const rest = everyWord.filter((i) => i !== skip);
      if (rest.length === 1 && rest[0] === lone) continue;
      let r: LexicalResult | undefined;
      if (skip === n - 1 && lastOut !== null) {
        const key = `${n}\u0000${options.limit}\u0000${head}`;
        r = lastOut.get(key);
        // a document deleted since (a query thread's snapshot sees the owner's deletes at once)
        // would leave a hole another document fills
        if (r === undefined || !allLive(snapshot, r.hits)) lastOut.set(key, (r = run(rest, true)));
      } else {
        r = run(rest, true);
      }
      r.hits.forEach(keep);
      total = Math.max(total, r.total);
    }
    clock?.lap('lexical_drop');
  }
  if (merged.size < enough && !options.dropOnly) {
    const loose = run(everyWord, false);
    loose.hits.forEach(keep);
    total = Math.max(total, loose.total);
    clock?.lap('lexical_loose');
  }
  const hits = [...merged.values()].sort(compareHits).slice(0, options.limit);
  return { hits, total, words: n };
}

function allLive(snapshot: IndexSnapshot, hits: readonly LexicalHit[]): boolean {
  for (const h of hits) if (!(snapshot.segments[h.segment] as Segment).isLive(h.ord)) return false;
  return true;
}

/**
 * The query's words without repeats: a document matches a repeated word as it matches it once,
 * and each repeat of a common word ("x x x x", "2 in 2 in 2 in") made every pass read its
 * postings again (tens of milliseconds for a pasted run of them). The last word still being typed
 * is a prefix, not a repeat of an earlier whole word.
 */
function distinctWords(words: readonly QueryWord[], prefixLast: boolean): QueryWord[] {
  const seen = new Set<string>();
  const out: QueryWord[] = [];
  words.forEach((w, i) => {
    const key = queryWordKey(w);
    if (prefixLast && i === words.length - 1) out.push(w);
    else if (!seen.has(key)) {
      seen.add(key);
      out.push(w);
    }
  });
  return out;
}

/**
 * A compound the index never saw ("rtx4090" when documents say "RTX 4090") becomes its parts. A
 * last word still typed is known when some term starts with it; finished, only as a whole term
 * ("24x30 " is the parts of "24 in. x 30 in.", though "24x30x12" starts with it).
 */
function splitUnknownCompounds(snapshot: IndexSnapshot, words: QueryWord[], prefixLast: boolean): QueryWord[] {
  const out: QueryWord[] = [];
  words.forEach((w, i) => {
    const typing = prefixLast && i === words.length - 1;
    const known = snapshot.df(w.term) > 0 || w.alternatives.some((a) => snapshot.df(a) > 0) || (typing && snapshot.hasPrefix(w.term, 'any'));
    if (known || w.parts.length === 0) out.push(w);
    else for (const p of w.parts) out.push({ term: p, alternatives: [], parts: [] });
  });
  return out;
}

function expand(snapshot: IndexSnapshot, w: QueryWord, isPrefix: boolean, fuzzy: boolean): Expansion[] {
  const out = new Map<string, Expansion>();
  /** `df`: the term's documents over the snapshot when the caller has them (else looked up) */
  const put = (term: string, factor: number, typos: number, seg: Segment | null = null, id = -1, df = -1): void => {
    const prev = out.get(term);
    if (prev === undefined) out.set(term, { term, factor, typos, seg, id, df: df >= 0 ? df : snapshot.df(term) });
    else if (prev.factor < factor) out.set(term, seg === null ? { term, factor, typos, seg: prev.seg, id: prev.id, df: prev.df } : { term, factor, typos, seg, id, df: prev.df });
  };
  put(w.term, 1, 0);
  // while a word is typed, "sams" is more likely the start of "samsung" than a plural of "sam"
  for (const a of w.alternatives) put(a, isPrefix ? PREFIX_ALT_FACTOR : ALT_FACTOR, 0);
  const segments = snapshot.segments;
  if (isPrefix) {
    // completions, most frequent first; the closer to fully typed, the closer to a full match
    const cap = maxExpansions(w.term.length);
    const ranges = segments.map((seg) => seg.terms.prefixRange(w.term));
    const seen = new Map<string, { df: number; seg: Segment; id: number }>();
    segments.forEach((seg, i) => {
      const [lo, hi] = ranges[i] as [number, number];
      for (const t of frequentCompletions(seg, lo, hi, cap)) {
        const term = seg.terms.termAt(t);
        const c = seen.get(term);
        if (c === undefined) seen.set(term, { df: seg.termDf[t] as number, seg, id: t });
        else c.df += seg.termDf[t] as number;
      }
    });
    const completions = [...seen].sort((a, b) => b[1].df - a[1].df).slice(0, cap);
    for (const [term, c] of completions) put(term, completionFactor(w.term.length, term.length), 0, c.seg, c.id, snapshot.dfWithin(term, ranges, c.seg, c.id));
  }
  // Typo neighbours only for words the index does not know well: a frequent word is meant as
  // typed, and skipping the walk keeps common queries cheap.
  const known = isPrefix ? snapshot.hasPrefix(w.term, 'any') : snapshot.df(w.term) >= KNOWN_DF;
  // nor for a number: "70-1/2" one edit from "71-1/2" is another size, not a typo
  const edits = fuzzy && !known && !NUMBER_WORD.test(w.term) ? maxEditsFor(w.term.length) : 0;
  if (edits > 0) {
    for (const m of snapshot.fuzzyTerms(w.term, edits, isPrefix, 'any', isPrefix ? 8 : 12)) {
      if (m.distance === 0) continue;
      const cost = typoCost(m.distance, w.term, m.term);
      const f = Math.pow(TYPO_FACTOR, cost);
      if (isPrefix) {
        // the frequent completions of the corrected prefix: a match in prefix mode stands for
        // every term it starts ("drils" -> "dril": "drill", "drilling"), and the walk reports a
        // whole subtree of them as its prefix, which is no term itself
        const ranges = segments.map((seg) => seg.terms.prefixRange(m.matched));
        segments.forEach((seg, i) => {
          const [lo, hi] = ranges[i] as [number, number];
          for (const t of frequentCompletions(seg, lo, hi, 8)) {
            const term = seg.terms.termAt(t);
            put(term, f * completionFactor(m.matched.length, term.length), m.distance, seg, t, out.has(term) ? -1 : snapshot.dfWithin(term, ranges, seg, t));
          }
        });
      } else {
        put(m.term, f, m.distance);
      }
    }
    // Typo neighbours weigh by how often the index uses them, as a spelling corrector would:
    // "drils" is one edit from "drill" (419 documents), "dries" and "driscoll" (one each), and
    // scored alike the rare ones, in short titles, came first.
    let commonest = 0;
    for (const e of out.values()) if (e.typos > 0 && e.df > commonest) commonest = e.df;
    for (const e of out.values()) if (e.typos > 0) e.factor *= Math.sqrt((e.df + 1) / (commonest + 1));
  }
  return [...out.values()];
}

/**
 * The `cap` most frequent words among term ids `[lo, hi)`: from the segment's precomputed lists
 * for large ranges, by scanning small ones.
 */
function frequentCompletions(seg: Segment, lo: number, hi: number, cap: number): number[] {
  const out: number[] = [];
  if (hi - lo > TERM_TOP_THRESHOLD) {
    const node = seg.termTop.find(lo, hi);
    if (node !== null) {
      for (let i = node[0]; i < node[1] && out.length < cap; i++) {
        const t = seg.termTop.list[i] as number;
        if ((seg.termMask[t] as number) & TERM_PRIMARY) out.push(t);
      }
      return out;
    }
  }
  for (let t = lo; t < hi; t++) if ((seg.termMask[t] as number) & TERM_PRIMARY) out.push(t);
  if (out.length > cap) {
    out.sort((a, b) => (seg.termDf[b] as number) - (seg.termDf[a] as number) || a - b);
    out.length = cap;
  }
  return out;
}

/** A prefix covering most of the word scores almost as a full match. */
function completionFactor(typed: number, full: number): number {
  return typed >= full ? 1 : 0.55 + 0.4 * (typed / full);
}

/**
 * A pass's state of one document, in one Float32Array of PASS_STRIDE slots a document: its
 * running total, typo cost and description-only words, and the current word's best match (score,
 * typo cost, title position, description-only). Kept together, they take one or two cache lines
 * where the seven arrays indexed by document they replace took seven (a pass touches thousands of
 * documents once each); the small counts are exact in 32-bit floats. Slot 7 is unused (alignment).
 */
const PASS_STRIDE = 8;
const P_TOTAL = 0;
const P_TYPOS = 1;
const P_WEAK = 2;
const P_BEST = 3;
const P_BEST_TYPOS = 4;
const P_BEST_POS = 5;
const P_BEST_WEAK = 6;

function searchSegment(
  snapshot: IndexSnapshot,
  seg: Segment,
  segIndex: number,
  expansions: Expansion[][],
  idfs: number[][],
  avg: number[],
  n: number,
  active: number[],
  options: LexicalOptions,
  all: boolean,
  lone: number,
  head: string | null,
  top: TopHits,
): number {
  // The terms of the active words in this segment, with every word required their postings too:
  // a segment where a required word has none holds no answer, and is left before anything else
  // (a refreshed index's small segments lack most words of most queries).
  const termIds: number[][] = new Array<number[]>(n);
  const cost: number[] = all ? new Array<number>(n).fill(0) : [];
  for (const w of active) {
    const ids = (expansions[w] as Expansion[]).map((e) => (e.seg === seg ? e.id : seg.terms.get(e.term)));
    termIds[w] = ids;
    if (all) {
      const c = postingsOf(seg, ids);
      if (c === 0) return 0;
      cost[w] = c;
    }
  }
  const D = seg.docCount;
  // a document's pass state, together (see PASS_STRIDE); its matched words apart, in a dense
  // array a scan of a long posting list checks for every posting
  const ps = snapshot.f32(0, D * PASS_STRIDE);
  const matchedCount = snapshot.u8(0, D);
  // title position + 1 of each word's best match, 0 when the word is not in the title
  const pos = snapshot.u16(D * n);
  const filterState = snapshot.i8(D); // 0 unknown, 1 pass, -1 fail
  const predicate: DocPredicate | null = options.filters ? compileFilters(options.filters, seg) : null;
  const docFactor = options.docFactor?.(seg) ?? null;
  // documents touched (each once), in reusable scratch memory: thousands in a loose pass
  const touched = snapshot.i32(0, D);
  let touchedCount = 0;
  // documents the current word touched, and those with every word so far (with every word
  // required): two scratch lists that trade places after each word
  let wordTouched = snapshot.i32(1, D);
  let wordTouchedCount = 0;
  const tomb = seg.tombstones;
  const hasDeletes = seg.deletedCount > 0;
  // the same norms while the (gridded) average lengths stay, over writes and shared statistics
  // alike, and with them the memos of impacts and ranked postings
  const norms = options.stats === undefined ? snapshot.fieldNorms(seg, FIELD_WEIGHTS, FIELD_B) : normsFor(seg, FIELD_WEIGHTS, FIELD_B, avg);
  const impactCache = pruning.memos ? impactMemo.of(norms) : null;
  // heads hold scores with the query's idfs: per snapshot, and not over shared statistics
  const heads = impactCache !== null && options.stats === undefined ? headMemo.of(snapshot) : null;
  const headKey = heads !== null && head !== null ? `${segIndex}\0${head}` : '';
  const postDocs = seg.postDocs;
  const postTf = seg.postTf;
  const postPos = seg.postPos;
  // one word required (a one-word query, or a pass leaving out the other of two): its best postings
  if (active.length === 1 && all && impactCache !== null && docFactor === null) {
    const w = active[0] as number;
    // the head of a two-word query, memoized by its pass with both words, costs less still
    const memoizedHead = heads !== null && head !== null && n === 2 && w === 0 && predicate === null && heads.get(headKey) !== undefined;
    if (!memoizedHead && (cost[w] as number) >= pruning.oneWordMinPostings) {
      const found = topOneWord(snapshot, seg, segIndex, expansions[w] as Expansion[], termIds[w] as number[], idfs[w] as number[], w, n, norms, impactCache, predicate, top);
      if (found >= 0) return found;
    }
  }

  // With every word required, the rarest word goes first and later words only score the
  // documents that matched all earlier ones.
  const order = active.slice();
  const na = order.length;
  // the loose pass scores a lone short prefix last, and only for documents another word found
  if (!all && lone >= 0 && order.includes(lone)) order.push(...order.splice(order.indexOf(lone), 1));
  // The head's state is taken from the memo (or kept for it) when the head goes first anyway: every
  // head word is active and the last word, when active, costs at least as much as any of them.
  // The order is then the same as without the memo, and so are the scores, to the last bit.
  const h = n - 1;
  let headCache: ClearingMemo<string, HeadState> | null = null;
  let headState: HeadState | undefined;
  if (all) {
    // the rarest word first (every cost is above 0: see termIds)
    order.sort((a, b) => (cost[a] as number) - (cost[b] as number));
    if (heads !== null && head !== null && predicate === null && order.slice(0, h).every((w) => w < h) && (na === h || order[h] === h)) {
      headCache = heads;
      headState = headCache.get(headKey);
    }
  }
  /** Scores posting `p` (of document `d`, impact `impact`) for the current word: keeps the word's best expansion. */
  const scorePosting = (p: number, d: number, termIdf: number, impact: number, e: Expansion): void => {
    if (hasDeletes && tomb[d] !== 0) return;
    if (predicate !== null) {
      let st = filterState[d] as number;
      if (st === 0) {
        st = predicate(d) ? 1 : -1;
        filterState[d] = st;
        touched[touchedCount++] = d;
      }
      if (st < 0) return;
    }
    const s = termIdf * impact;
    const at = d * PASS_STRIDE;
    const prev = ps[at + P_BEST] as number;
    if (prev === 0) wordTouched[wordTouchedCount++] = d;
    if (s > prev) {
      ps[at + P_BEST] = s;
      ps[at + P_BEST_TYPOS] = e.typos;
      ps[at + P_BEST_POS] = postPos[p] as number;
      ps[at + P_BEST_WEAK] = ((postTf[p] as number) & STRONG_FIELDS) === 0 ? 1 : 0;
    }
  };
  // With every word required, documents still in the running after the first word: a later
  // word's long posting list is probed for them (sorted, once a list is long enough) instead of
  // scanned.
  let runningDocs = snapshot.i32(2, D);
  let running: Int32Array | null = null;
  let runningCount = 0;
  let firstStep = 0;
  /** Document `d`, the head's `i`-th, where the pass stood after the head. */
  const resumeDoc = (st: HeadState, i: number, d: number): void => {
    const at = d * PASS_STRIDE;
    ps[at + P_TOTAL] = st.total[i] as number;
    ps[at + P_TYPOS] = st.typos[i] as number;
    matchedCount[d] = h;
    ps[at + P_WEAK] = st.weak[i] as number;
    for (let w = 0; w < h; w++) pos[d * n + w] = st.pos[i * h + w] as number;
    touched[touchedCount++] = d;
  };
  // a large head resumed for the last word: its documents stay in the memo (see HeadState.bitmap)
  const lazyHead = headState !== undefined && headState.bitmap !== null && na === n ? headState : null;
  const headBits = lazyHead?.bitmap?.bits ?? null;
  if (lazyHead !== null) {
    headStats.lazyResumes++;
    running = lazyHead.docs;
    runningCount = lazyHead.docs.length;
    firstStep = h;
  } else if (headState !== undefined) {
    // resume after the head: its documents (those deleted since left out) and partial scores
    const st = headState;
    let kept = 0;
    for (let i = 0; i < st.docs.length; i++) {
      const d = st.docs[i] as number;
      if (hasDeletes && tomb[d] !== 0) continue;
      resumeDoc(st, i, d);
      runningDocs[kept++] = d;
    }
    if (kept === 0) return 0;
    running = kept === st.docs.length ? st.docs : runningDocs.subarray(0, kept);
    runningCount = kept;
    firstStep = h;
  }
  for (let step = firstStep; step < na; step++) {
    const w = order[step] as number;
    const list = expansions[w] as Expansion[];
    for (let x = 0; x < list.length; x++) {
      const e = list[x] as Expansion;
      const t = (termIds[w] as number[])[x] as number;
      if (t < 0) continue;
      const from = seg.postOffsets[t] as number;
      const to = seg.postOffsets[t + 1] as number;
      // Scanning a word in most documents for a loose match costs the most and decides little
      if (!all && to - from > LOOSE_MAX_SHARE * D) continue;
      const termIdf = ((idfs[w] as number[])[x] as number) * e.factor;
      if (step > 0 && all && runningCount * PROBE_COST < to - from) {
        running ??= sortedInPlace(runningDocs, runningCount);
        // a few probes into a long list: impacts computed for the postings found, unless memoized
        const cached = impactsOf(seg, norms, impactCache, false, t, from, to);
        // galloping intersection: each running document is looked up from where the last one was found
        let lo = from;
        for (let i = 0; i < running.length && lo < to; i++) {
          const d = running[i] as number;
          let step2 = 1;
          let hi = lo;
          while (hi < to && (postDocs[hi] as number) < d) {
            lo = hi + 1;
            hi += step2;
            step2 <<= 1;
          }
          lo = firstAtLeast(postDocs, lo, Math.min(hi, to), d);
          if (lo < to && postDocs[lo] === d) scorePosting(lo, d, termIdf, cached === undefined ? impactAt(postTf, norms, lo, d) : (cached[lo - from] as number), e);
        }
        continue;
      }
      const onlyFound = !all && w === lone;
      // a scan that scores few of its postings (a narrow running set) does not pay for the list's impacts
      const scoresMost = !all || step === 0 || runningCount * 4 >= to - from;
      const impacts = impactsOf(seg, norms, impactCache, scoresMost, t, from, to);
      if (headBits !== null) {
        // the head's documents are those of its bitmap (those deleted since: see scorePosting)
        for (let p = from; p < to; p++) {
          const d = postDocs[p] as number;
          if (((headBits[d >>> 5] as number) & (1 << (d & 31))) === 0) continue;
          scorePosting(p, d, termIdf, impacts === undefined ? impactAt(postTf, norms, p, d) : (impacts[p - from] as number), e);
        }
        continue;
      }
      for (let p = from; p < to; p++) {
        const d = postDocs[p] as number;
        if (all ? matchedCount[d] !== step : onlyFound && matchedCount[d] === 0) continue;
        scorePosting(p, d, termIdf, impacts === undefined ? impactAt(postTf, norms, p, d) : (impacts[p - from] as number), e);
      }
    }
    if (all && wordTouchedCount === 0) {
      if (headCache !== null && step < h) headCache.set(headKey, keepHead(new Int32Array(0), D, ps, pos, n, h));
      break;
    }
    for (let i = 0; i < wordTouchedCount; i++) {
      const d = wordTouched[i] as number;
      // what the copy of the head would have put here, for this document only
      if (lazyHead !== null) resumeDoc(lazyHead, headIndex(lazyHead.bitmap as DocBitmap, d), d);
      if (predicate === null && matchedCount[d] === 0) touched[touchedCount++] = d;
      const at = d * PASS_STRIDE;
      ps[at + P_TOTAL] = (ps[at + P_TOTAL] as number) + (ps[at + P_BEST] as number);
      ps[at + P_TYPOS] = (ps[at + P_TYPOS] as number) + (ps[at + P_BEST_TYPOS] as number);
      matchedCount[d] = (matchedCount[d] as number) + 1;
      ps[at + P_WEAK] = (ps[at + P_WEAK] as number) + (ps[at + P_BEST_WEAK] as number);
      const bp = ps[at + P_BEST_POS] as number;
      pos[d * n + w] = bp === NO_POSITION ? 0 : Math.min(bp + 1, 65535);
      ps[at + P_BEST] = 0;
    }
    if (all) {
      // the documents with every word so far are the ones this word touched
      const next = runningDocs;
      runningDocs = wordTouched;
      wordTouched = next;
      running = null;
      runningCount = wordTouchedCount;
      if (headCache !== null && step === h - 1 && headState === undefined) {
        const st = keepHead(runningDocs.subarray(0, runningCount), D, ps, pos, n, h);
        headCache.set(headKey, st);
        running = st.docs;
      }
    }
    wordTouchedCount = 0;
  }

  let matchedDocs = 0;
  let floor = top.floor;
  for (let i = 0; i < touchedCount; i++) {
    const d = touched[i] as number;
    const m = matchedCount[d] as number;
    const at = d * PASS_STRIDE;
    if (m > 0 && (!all || m === na)) {
      matchedDocs++;
      const missing = m < n ? (MISSING_WORD_POW[n - m] ?? Math.pow(MISSING_WORD_FACTOR, n - m)) : 1;
      const weak = ps[at + P_WEAK] as number;
      const weakFactor = weak > 0 ? (DESC_ONLY_POW[weak] ?? Math.pow(DESC_ONLY_FACTOR, weak)) : 1;
      const prior = 1 + PRIOR_WEIGHT * (seg.quality[d] as number);
      // most documents of a loose pass cannot make the answer even with the best proximity
      const total = ps[at + P_TOTAL] as number;
      if (docFactor !== null || !pruning.skipUnreachable || total * missing * weakFactor * MAX_PROXIMITY * prior * BOUND_SLACK >= floor) {
        // the factors are exactly 1 when no word is missing or weak
        let score = total * missing * weakFactor;
        score *= proximity(pos, d, n);
        score *= prior;
        const f = docFactor === null ? 1 : docFactor(d);
        if (f > 0) {
          top.offer(segIndex, d, score * f, m, ps[at + P_TYPOS] as number);
          floor = top.floor;
        }
      }
    }
    ps[at + P_TOTAL] = 0;
    ps[at + P_TYPOS] = 0;
    matchedCount[d] = 0;
    ps[at + P_WEAK] = 0;
    filterState[d] = 0;
    for (let at = d * n, end = at + n; at < end; at++) pos[at] = 0;
  }
  return matchedDocs;
}

/**
 * A term's postings ordered by what each scores in a one-word query, best first, so that such a
 * query reads a few postings of each of its expansions instead of all of them (see topOneWord).
 * The key of a posting is its one-word score without the idf: the impact, the description-only
 * factor, the title-start bonus and the document's prior. Only the best RANKED_KEEP are kept,
 * with a bound on the rest; memoized per norms like the impacts.
 */
interface RankedPostings {
  /** posting indexes, best key first */
  postings: Int32Array;
  keys: Float64Array;
  /** a bound on the key of every posting not kept (0 when all are kept) */
  rest: number;
  /** the highest impact of the whole list */
  maxImpact: number;
}
const RANKED_KEEP = 96;
const MAX_MEMO_RANKED = 1_000_000;
const rankedMemo = new MemoPerOwner<Float32Array, number, RankedPostings>(
  () => new ClearingMemo({ maxWeight: MAX_MEMO_RANKED, weightOf: (r) => r.postings.length, entryBytes: 160, weightBytes: 12 }),
);
/** Float rounding between a key times the idf and the score it bounds (a float32 sum on the way). */
const BOUND_SLACK = 1 + 1e-6;
/**
 * Fewer postings than `oneWordMinPostings` over a one-word pass's expansions are scanned: the walk
 * costs more to set up (tests set it to 0 to take the walk on small data). `skipUnreachable`: the
 * final pass leaves out documents that cannot reach the answer (tests turn it off for the
 * reference they compare with). `memos` false: no memo of impacts, ranked postings or heads,
 * and so no walk either (the tests' full-scan reference).
 */
export const pruning = { oneWordMinPostings: 1024, skipUnreachable: true, memos: true };

/** The postings of terms `ids` in `seg` (-1: not in the segment). */
function postingsOf(seg: Segment, ids: number[]): number {
  let sum = 0;
  for (const t of ids) if (t >= 0) sum += (seg.postOffsets[t + 1] as number) - (seg.postOffsets[t] as number);
  return sum;
}

/** A one-word walk that takes more postings than this (times the answer's size) scans instead. */
const ONE_WORD_BUDGET = 8;

function rankedPostings(seg: Segment, norms: Float32Array, memo: ClearingMemo<number, RankedPostings>, impactCache: ClearingMemo<number, Float64Array>, t: number): RankedPostings {
  const memoized = memo.get(t);
  if (memoized !== undefined) return memoized;
  const from = seg.postOffsets[t] as number;
  const to = seg.postOffsets[t + 1] as number;
  // impacts memoized by scans are used; a first look computes its own without keeping them
  const impacts = impactsOf(seg, norms, impactCache, false, t, from, to);
  const postDocs = seg.postDocs;
  const postTf = seg.postTf;
  const postPos = seg.postPos;
  const quality = seg.quality;
  // the best keys in a bounded min-heap
  const cap = Math.min(RANKED_KEEP, to - from);
  const hp = new Int32Array(cap);
  const hk = new Float64Array(cap);
  let size = 0;
  let maxImpact = 0;
  for (let p = from; p < to; p++) {
    const d = postDocs[p] as number;
    const impact = impacts === undefined ? impactAt(postTf, norms, p, d) : (impacts[p - from] as number);
    if (impact > maxImpact) maxImpact = impact;
    let key = ((postTf[p] as number) & STRONG_FIELDS) === 0 ? impact * DESC_ONLY_FACTOR : impact;
    if (postPos[p] === 0) key *= 1 + TITLE_START_BONUS;
    key *= 1 + PRIOR_WEIGHT * (quality[d] as number);
    if (size < cap) {
      let i = size++;
      while (i > 0) {
        const up = (i - 1) >> 1;
        if ((hk[up] as number) <= key) break;
        hk[i] = hk[up] as number;
        hp[i] = hp[up] as number;
        i = up;
      }
      hk[i] = key;
      hp[i] = p;
    } else if (key > (hk[0] as number)) {
      siftDown(hk, hp, size, key, p);
    }
  }
  const rest = to - from > cap ? (hk[0] as number) : 0;
  // pop the heap from the worst: the arrays fill from the back
  const postings = new Int32Array(cap);
  const keys = new Float64Array(cap);
  for (let i = cap - 1; i >= 0; i--) {
    keys[i] = hk[0] as number;
    postings[i] = hp[0] as number;
    size--;
    if (size > 0) siftDown(hk, hp, size, hk[size] as number, hp[size] as number);
  }
  const r: RankedPostings = { postings, keys, rest, maxImpact };
  memo.set(t, r);
  return r;
}

/** Puts (`key`, `p`) at the root of the min-heap of `size` and sifts it down. */
function siftDown(hk: Float64Array, hp: Int32Array, size: number, key: number, p: number): void {
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= size) break;
    const r = l + 1;
    const c = r < size && (hk[r] as number) < (hk[l] as number) ? r : l;
    if ((hk[c] as number) >= key) break;
    hk[i] = hk[c] as number;
    hp[i] = hp[c] as number;
    i = c;
  }
  hk[i] = key;
  hp[i] = p;
}

/**
 * The best documents of a one-word query in a segment, as the scan would score them, from each
 * expansion's best postings (threshold algorithm): postings are taken in the order of their
 * bound (the idf times the key) over all expansions, each new document is scored exactly (its
 * best expansion, found by lookups), and the walk stops once no posting left can reach the
 * answer's last score. Returns the documents scored, or -1 when the kept postings run out (or a
 * filter rejects too many) before that: the caller scans instead.
 */
function topOneWord(
  snapshot: IndexSnapshot,
  seg: Segment,
  segIndex: number,
  list: Expansion[],
  ids: number[],
  idfs: number[],
  word: number,
  n: number,
  norms: Float32Array,
  impactCache: ClearingMemo<number, Float64Array>,
  predicate: DocPredicate | null,
  top: TopHits,
): number {
  // the other words are missing; only the first word earns the title-start bonus (the keys
  // include it: a bound either way)
  const missing = n > 1 ? (MISSING_WORD_POW[n - 1] ?? Math.pow(MISSING_WORD_FACTOR, n - 1)) : 1;
  const startBonus = word === 0 ? TITLE_START_BONUS : 0;
  const memo = rankedMemo.of(norms);
  const ranked: RankedPostings[] = [];
  const factor: number[] = [];
  const terms: number[] = [];
  const exps: Expansion[] = [];
  // each expansion's postings and their memoized impacts, if any
  const froms: number[] = [];
  const impacts: (Float64Array | undefined)[] = [];
  for (let x = 0; x < list.length; x++) {
    const e = list[x] as Expansion;
    const t = ids[x] as number;
    if (t < 0) continue;
    ranked.push(rankedPostings(seg, norms, memo, impactCache, t));
    factor.push((idfs[x] as number) * e.factor);
    terms.push(t);
    exps.push(e);
    froms.push(seg.postOffsets[t] as number);
    impacts.push(impactsOf(seg, norms, impactCache, false, t, seg.postOffsets[t] as number, seg.postOffsets[t + 1] as number));
  }
  const L = ranked.length;
  if (L === 0) return 0;
  // a max-heap of the expansions by the bound of their next posting
  const cursor = new Int32Array(L);
  const bound = new Float64Array(L);
  const heap: number[] = [];
  const boundOf = (j: number): number => {
    const r = ranked[j] as RankedPostings;
    const c = cursor[j] as number;
    return (factor[j] as number) * (c < r.postings.length ? (r.keys[c] as number) : r.rest);
  };
  const place = (at: number): void => {
    // sift heap[at] down
    const j = heap[at] as number;
    const b = bound[j] as number;
    let i = at;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= heap.length) break;
      const r = l + 1;
      const c = r < heap.length && (bound[heap[r] as number] as number) > (bound[heap[l] as number] as number) ? r : l;
      if ((bound[heap[c] as number] as number) <= b) break;
      heap[i] = heap[c] as number;
      i = c;
    }
    heap[i] = j;
  };
  for (let j = 0; j < L; j++) {
    bound[j] = boundOf(j);
    if ((ranked[j] as RankedPostings).postings.length > 0) heap.push(j);
  }
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) place(i);

  const D = seg.docCount;
  const seen = snapshot.u8(0, D);
  const marked = snapshot.i32(0, D);
  let markedCount = 0;
  const tomb = seg.deletedCount > 0 ? seg.tombstones : null;
  const postDocs = seg.postDocs;
  const postTf = seg.postTf;
  const postPos = seg.postPos;
  const impactOf = (y: number, p: number, d: number): number => {
    const memoized = impacts[y];
    return memoized === undefined ? impactAt(postTf, norms, p, d) : (memoized[p - (froms[y] as number)] as number);
  };
  const local = new TopHits(top.capacity);
  const budget = ONE_WORD_BUDGET * top.capacity + 64;
  let taken = 0;
  let scored = 0;
  let gaveUp = false;
  while (heap.length > 0) {
    const j = heap[0] as number;
    if ((bound[j] as number) * missing * BOUND_SLACK < Math.max(top.floor, local.floor)) break;
    const r = ranked[j] as RankedPostings;
    const c = cursor[j] as number;
    if (c >= r.postings.length || taken++ >= budget) {
      gaveUp = true;
      break;
    }
    const p0 = r.postings[c] as number;
    cursor[j] = c + 1;
    if (c + 1 < r.postings.length || r.rest > 0) {
      bound[j] = boundOf(j);
      place(0);
    } else {
      const last = heap.pop() as number;
      if (heap.length > 0) {
        heap[0] = last;
        place(0);
      }
    }
    const d = postDocs[p0] as number;
    if (seen[d] !== 0) continue;
    seen[d] = 1;
    marked[markedCount++] = d;
    if ((tomb !== null && tomb[d] !== 0) || (predicate !== null && !predicate(d))) continue;
    scored++;
    // The document's best expansion, in expansion order as the scan keeps it. The posting taken
    // scores `own`: an expansion that cannot come near it changes nothing and is not looked up.
    const own = (factor[j] as number) * impactOf(j, p0, d);
    const negligible = own * (1 - 1e-6);
    let best = 0;
    let bestTypos = 0;
    let bestPos = 0;
    let bestWeak = 0;
    for (let y = 0; y < L; y++) {
      const f = factor[y] as number;
      const bound = f * (ranked[y] as RankedPostings).maxImpact;
      if ((best > 0 && bound <= best) || (y !== j && bound < negligible)) continue;
      const t = terms[y] as number;
      const from = seg.postOffsets[t] as number;
      const to = seg.postOffsets[t + 1] as number;
      const lo = y === j ? p0 : firstAtLeast(postDocs, from, to, d);
      if (lo === to || postDocs[lo] !== d) continue;
      const s = f * impactOf(y, lo, d);
      if (s > best) {
        best = Math.fround(s);
        bestTypos = (exps[y] as Expansion).typos;
        bestPos = postPos[lo] as number;
        bestWeak = ((postTf[lo] as number) & STRONG_FIELDS) === 0 ? 1 : 0;
      }
    }
    let score = best;
    if (n > 1) score *= missing;
    if (bestWeak > 0) score *= DESC_ONLY_POW[1] as number;
    score *= 1 + (bestPos === 0 ? startBonus : 0);
    score *= 1 + PRIOR_WEIGHT * (seg.quality[d] as number);
    local.offer(segIndex, d, score, 1, Math.fround(bestTypos));
  }
  for (let i = 0; i < markedCount; i++) seen[marked[i] as number] = 0;
  if (gaveUp) return -1;
  for (const h of local.sorted()) top.offer(h.segment, h.ord, h.score, h.matched, h.typos);
  return scored;
}

/** The highest proximity factor (adjacent words all along, title start). */
const MAX_PROXIMITY = 1 + TITLE_START_BONUS + 0.3;

/** The state of a pass after the head (see HeadState): `docs` are the documents with every head word. */
function keepHead(docs: Int32Array, docCount: number, ps: Float32Array, pos: Uint16Array, n: number, h: number): HeadState {
  const sorted = sortedInPlace(Int32Array.from(docs), docs.length);
  const R = sorted.length;
  const large = R >= LAZY_HEAD_MIN_DOCS && R * 64 >= docCount;
  const st: HeadState = { docs: sorted, total: new Float32Array(R), typos: new Float32Array(R), weak: new Uint8Array(R), pos: new Uint16Array(R * h), bitmap: large ? bitmapOf(sorted, docCount) : null };
  for (let i = 0; i < R; i++) {
    const d = sorted[i] as number;
    const at = d * PASS_STRIDE;
    st.total[i] = ps[at + P_TOTAL] as number;
    st.typos[i] = ps[at + P_TYPOS] as number;
    st.weak[i] = ps[at + P_WEAK] as number;
    for (let w = 0; w < h; w++) st.pos[i * h + w] = pos[d * n + w] as number;
  }
  return st;
}

/** The bitmap of `docs` (distinct ordinals below `docCount`). */
function bitmapOf(docs: Int32Array, docCount: number): DocBitmap {
  const bits = new Uint32Array((docCount + 31) >>> 5);
  for (let i = 0; i < docs.length; i++) {
    const d = docs[i] as number;
    bits[d >>> 5] = (bits[d >>> 5] as number) | (1 << (d & 31));
  }
  const ranks = new Uint32Array(bits.length);
  for (let k = 1; k < bits.length; k++) ranks[k] = (ranks[k - 1] as number) + popcount(bits[k - 1] as number);
  return { bits, ranks };
}

/** The index among the bitmap's documents (ascending) of its document `d`. */
function headIndex(b: DocBitmap, d: number): number {
  const k = d >>> 5;
  return (b.ranks[k] as number) + popcount((b.bits[k] as number) & ((1 << (d & 31)) - 1));
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** The first index in `[lo, hi)` of the ascending `docs` holding `d` or more (`hi` when none does). */
function firstAtLeast(docs: Uint32Array, lo: number, hi: number, d: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((docs[mid] as number) < d) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first `n` of `docs`, sorted ascending in place (one expansion's documents already are). */
function sortedInPlace(docs: Int32Array, n: number): Int32Array {
  const out = docs.subarray(0, n);
  for (let i = 1; i < n; i++) if ((out[i] as number) < (out[i - 1] as number)) return out.sort();
  return out;
}

/**
 * Bonus for query words found adjacent and in order in the title, and for a title that starts
 * with the first query word (what a shopper typing a product name means).
 */
function proximity(pos: Uint16Array, d: number, n: number): number {
  const at = d * n;
  let bonus = pos[at] === 1 ? TITLE_START_BONUS : 0;
  if (n < 2) return 1 + bonus;
  let adjacent = 0;
  for (let w = 1; w < n; w++) {
    const a = pos[at + w - 1] as number;
    const b = pos[at + w] as number;
    if (a !== 0 && b === a + 1) adjacent++;
  }
  bonus += (0.3 * adjacent) / (n - 1);
  return 1 + bonus;
}

/**
 * Bounded min-heap of the best hits. Equal scores are ordered by segment and ordinal, as in the
 * answer, so the hits kept do not depend on the order documents are offered in.
 */
class TopHits {
  private readonly heap: LexicalHit[] = [];

  constructor(private readonly k: number) {}

  get capacity(): number {
    return this.k;
  }

  /** The score a hit must reach to be kept (-Infinity while there is room). */
  get floor(): number {
    if (this.k === 0) return Number.POSITIVE_INFINITY;
    return this.heap.length < this.k ? Number.NEGATIVE_INFINITY : (this.heap[0] as LexicalHit).score;
  }

  offer(segment: number, ord: number, score: number, matched: number, typos: number): void {
    const h = this.heap;
    if (h.length < this.k) {
      h.push({ segment, ord, score, matched, typos });
      this.up(h.length - 1);
    } else if (h.length > 0 && worse(h[0] as LexicalHit, score, segment, ord)) {
      h[0] = { segment, ord, score, matched, typos };
      this.down(0);
    }
  }

  sorted(): LexicalHit[] {
    return [...this.heap].sort(compareHits);
  }

  private up(i: number): void {
    const h = this.heap;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!worseHit(h[i] as LexicalHit, h[p] as LexicalHit)) break;
      [h[p], h[i]] = [h[i] as LexicalHit, h[p] as LexicalHit];
      i = p;
    }
  }

  private down(i: number): void {
    const h = this.heap;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && worseHit(h[l] as LexicalHit, h[m] as LexicalHit)) m = l;
      if (r < h.length && worseHit(h[r] as LexicalHit, h[m] as LexicalHit)) m = r;
      if (m === i) break;
      [h[m], h[i]] = [h[i] as LexicalHit, h[m] as LexicalHit];
      i = m;
    }
  }
}

/** Whether `a` ranks below a hit of `score` on `segment`, `ord` (lower score, then later document). */
function worse(a: LexicalHit, score: number, segment: number, ord: number): boolean {
  return a.score < score || (a.score === score && (a.segment > segment || (a.segment === segment && a.ord > ord)));
}

function worseHit(a: LexicalHit, b: LexicalHit): boolean {
  return worse(a, b.score, b.segment, b.ord);
}

/**
 * Hits best first: higher score, then earlier segment, then earlier document. Answers an integer
 * (a comparator that answers a fractional difference makes the sort box a number per call). Each
 * module keeps its own copy, so that each sees few object shapes and stays optimized.
 */
function compareHits(a: LexicalHit, b: LexicalHit): number {
  const x = a.score;
  const y = b.score;
  if (x !== y) return x > y ? -1 : 1;
  return a.segment - b.segment || a.ord - b.ord;
}
