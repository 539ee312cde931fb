// Whole-query spelling correction from the index's own vocabulary and term frequencies, as a
// noisy channel: a reading of the query scores the log frequency of its words minus a cost per
// edit (fuzzy.ts distance; a changed first letter costs more). Words the index does not know
// get their nearest vocabulary terms (more leniently than document matching: one edit from 3
// letters, two from 7, since only unknown words are touched), a split into two known words
// ("samsunggalaxy"; a known word and a prefix for a last word being typed, "doorkn") or a join
// with the next word ("bath rom" -> "bathroom"); a word the index knows only rarely may still
// yield to a far more frequent neighbour (a typo inside a title).
// The last word of a query still being typed is corrected as a prefix. `candidates` returns the
// best readings; `correct` returns the best one, or null when the query is fine as typed.
import { singular } from '../../node/runtime/text/tokenize.js';
import { maxEditsFor, typoCost } from './fuzzy.js';
import type { IndexSnapshot, VocabularyKind } from './index-snapshot.js';

export interface WordCandidate {
  /** replacement text (may hold two words after a split; a prefix for the last word) */
  text: string;
  cost: number;
  weight: number;
}

interface Beam extends QueryCorrection {
  last: string;
  /** the last word had alternatives (context is only weighed between alternatives) */
  open: boolean;
}

export interface QueryCorrection {
  words: string[];
  /** total typo cost */
  cost: number;
  /** noisy-channel score: sum of log frequencies minus EDIT_PENALTY per unit of cost */
  score: number;
  changed: boolean;
}

/** Log-frequency units one edit costs: a correction must be e^3 ~ 20 times more frequent. */
export const EDIT_PENALTY = 3;
/** A known word is only questioned when a candidate this many times more frequent exists. */
const RARE_WORD_RATIO = 30;
/** ...and only when it is this rare itself. */
const RARE_WORD_MAX = 3;
/** A split into two words counts as this many edits. */
const SPLIT_COST = 1.5;
/** A last word still being typed is tried as glued words from this length ("doorkn"). */
const MIN_SPLIT_PREFIX = 5;
/**
 * Pairs of neighbouring words tried as one ("bath rom"), from the start of the query: each costs
 * a typo walk of a long word (the most costly kind), and a pasted run of a dozen unknown words
 * made a dozen of them (20 ms of typeahead on the event loop).
 */
const MAX_JOINS = 3;
/**
 * Only the last this many words of a query are questioned; earlier ones are taken as typed. Each
 * unknown word costs a typo walk (about 2.5 ms the first time, on 100,000 documents), and a
 * pasted run of a dozen misspelled words cost 30 ms of typeahead on the event loop; people fix
 * what they just typed.
 */
export const MAX_QUESTIONED_WORDS = 6;
/** Weight of log(1 + documents containing two adjacent words) in a reading's score. */
const CONTEXT_WEIGHT = 1;
const PER_WORD = 3;
/** Weight given to a prefix that some term starts with (what is typed so far is plausible). */
const PREFIX_WEIGHT = 1e6;

/**
 * Whether a word with weight `own` may be corrected: unknown, or rare and without digits (model
 * numbers are meant as typed) in a query of other words too. Alone, nothing tells a typo inside a
 * title ("flourescent") from a rare word ("steak", "crash" in one title each, no typos of "steam"
 * or "trash" however popular those are); beside other words, their context weighs the readings.
 */
function isQuestioned(word: string, own: number, inContext: boolean): boolean {
  return own === 0 || (inContext && own <= RARE_WORD_MAX && !/\d/.test(word));
}

/** Edits allowed when correcting a word the index does not know. */
export function correctionEdits(length: number): number {
  return length >= 7 ? 2 : length >= 3 ? 1 : 0;
}

export class SpellCorrector {
  constructor(
    private readonly snapshot: IndexSnapshot,
    private readonly kind: VocabularyKind = 'suggestive',
  ) {}

  /**
   * Candidates for one word, best first; the word itself is among them when it is known.
   * `inContext`: the query has other words, whose context weighs the readings (see isQuestioned).
   */
  wordCandidates(word: string, isPrefix: boolean, inContext = true): WordCandidate[] {
    const snap = this.snapshot;
    const one = singular(word);
    // a plural of a word the index knows is a word too ("wrenches" of "wrench": it was split into
    // "wrench es"); its singular looked up only when the word itself is unknown
    const own = (isPrefix ? this.prefixWeight(word, inContext) : snap.termWeight(word, this.kind)) || (one === null ? 0 : snap.termWeight(one, this.kind));
    const out: WordCandidate[] = [];
    if (own > 0) out.push({ text: word, cost: 0, weight: own });
    if (own >= PREFIX_WEIGHT) return out;
    // A known word is questioned only when it is rare and has no digits (model numbers are
    // meant as typed), and never in favour of its own singular or plural.
    const questioned = isQuestioned(word, own, inContext);
    // the nearest candidates first; unknown words may look further when nothing is near
    const strict = maxEditsFor(word.length);
    // a word still being typed is only corrected as strictly as documents are matched: a short
    // unknown prefix is more likely the start of something new than a typo
    const lenient = own > 0 || isPrefix ? strict : correctionEdits(word.length);
    if (lenient > 0 && questioned && !/\d/.test(word)) {
      const base = one ?? word;
      let matches = strict > 0 ? snap.fuzzyTerms(word, strict, isPrefix, this.kind, 12) : [];
      if (lenient > strict && matches.every((m) => m.matched === word)) matches = snap.fuzzyTerms(word, lenient, isPrefix, this.kind, 12);
      for (const m of matches) {
        const text = isPrefix ? m.matched : m.term;
        if (text === word) continue;
        if (own > 0 && (m.weight < RARE_WORD_RATIO * own || (singular(text) ?? text) === base)) continue;
        // same last letter as typed (plural stays plural) breaks near-ties
        const cost = typoCost(m.distance, word, m.term) - (text.at(-1) === word.at(-1) ? 0.1 : 0);
        out.push({ text, cost, weight: m.weight });
      }
    }
    if (own === 0 && word.length >= (isPrefix ? MIN_SPLIT_PREFIX : 6) && !/\d/.test(word)) {
      // glued words: "samsunggalaxy" -> "samsung galaxy"; still being typed, a known word and
      // the start of one: "doorkn" -> "door kn"
      let best: WordCandidate | null = null;
      // a word of two letters before a prefix is too easily found ("arkers" is no "ar kers")
      for (let i = isPrefix ? 3 : 2; i <= word.length - 2; i++) {
        const wa = snap.termWeight(word.slice(0, i), this.kind);
        if (wa === 0) continue;
        const rest = word.slice(i);
        // a prefix weighs what the words it starts weigh together
        const wb = isPrefix ? snap.prefixTermsWeight(rest, this.kind) : snap.termWeight(rest, this.kind);
        if (wb > 0 && (best === null || Math.min(wa, wb) > best.weight)) best = { text: `${word.slice(0, i)} ${rest}`, cost: SPLIT_COST, weight: Math.min(wa, wb) };
      }
      if (best) out.push(best);
    }
    out.sort((a, b) => this.wordScore(b) - this.wordScore(a));
    return out.slice(0, PER_WORD);
  }

  /**
   * Whether `candidates` can offer a reading other than the query as typed: only a word the index
   * does not know (as a prefix, for the last word still being typed), or a known one rare enough
   * to be questioned, has alternatives, and only an unknown word is joined with its neighbour.
   * Most queries of known words ran the whole search to find nothing to change.
   */
  mayChange(words: readonly string[], lastIsPrefix: boolean): boolean {
    const snap = this.snapshot;
    return words.some((w, i) => {
      if (i < words.length - MAX_QUESTIONED_WORDS) return false;
      if (lastIsPrefix && i === words.length - 1) return this.prefixWeight(w, words.length > 1) < PREFIX_WEIGHT;
      const own = snap.termWeight(w, this.kind);
      // a known word has alternatives only when questioned and long enough for an edit (wordCandidates)
      return own === 0 || (isQuestioned(w, own, words.length > 1) && maxEditsFor(w.length) > 0);
    });
  }

  /**
   * The best readings of the query (at most `max`), best first. Unknown words without any
   * candidate are kept as typed.
   */
  candidates(words: string[], lastIsPrefix: boolean, max = 4): QueryCorrection[] {
    // readings: the words as typed, and each join of a word with the next ("bath rom" ->
    // "bathrom" -> "bathroom") when one of the two is unknown
    const readings: { words: string[]; cost: number; fixed: Map<number, WordCandidate[]> }[] = [{ words, cost: 0, fixed: new Map() }];
    let joins = 0;
    const firstQuestioned = Math.max(0, words.length - MAX_QUESTIONED_WORDS);
    for (let i = firstQuestioned; i + 1 < words.length && joins < MAX_JOINS; i++) {
      if (lastIsPrefix && i + 1 === words.length - 1) continue;
      const a = words[i] as string;
      const b = words[i + 1] as string;
      if (this.snapshot.termWeight(a, this.kind) > 0 && this.snapshot.termWeight(b, this.kind) > 0) continue;
      joins++;
      const joined = this.wordCandidates(a + b, false, words.length > 2);
      if (joined.length === 0) continue;
      readings.push({ words: [...words.slice(0, i), a + b, ...words.slice(i + 2)], cost: 1, fixed: new Map([[i, joined]]) });
    }
    // every reading asks for the same words' candidates again
    const known = new Map<string, WordCandidate[]>();
    const candidatesOf = (w: string, isPrefix: boolean, inContext: boolean): WordCandidate[] => {
      const k = `${w}\u0000${isPrefix ? 1 : 0}${inContext ? 1 : 0}`;
      let list = known.get(k);
      if (list === undefined) known.set(k, (list = this.wordCandidates(w, isPrefix, inContext)));
      return list;
    };
    const all: QueryCorrection[] = [];
    for (const r of readings) {
      let beams: Beam[] = [{ words: [], cost: r.cost, score: -EDIT_PENALTY * r.cost, changed: r.cost > 0, last: '', open: false }];
      r.words.forEach((w, i) => {
        const isPrefix = lastIsPrefix && i === r.words.length - 1;
        // a join shortens the reading by one word: the questioned ones are still the last
        const questioned = i >= r.words.length - MAX_QUESTIONED_WORDS;
        let cands = r.fixed.get(i) ?? (questioned ? candidatesOf(w, isPrefix, r.words.length > 1) : []);
        if (cands.length === 0) cands = [{ text: w, cost: 0, weight: 0 }];
        const next: Beam[] = [];
        for (const b of beams) {
          for (const c of cands) {
            const first = c.text.split(' ');
            // words that occur together in documents support each other ("little giant"; a
            // word still typed by the terms it starts: "ceiling lightening" is lighting, not lightning)
            const context = b.last && (b.open || cands.length > 1) ? CONTEXT_WEIGHT * Math.log1p(this.contextOf(b.last, first[0] as string, isPrefix && first.length === 1)) : 0;
            next.push({
              words: [...b.words, ...first],
              cost: b.cost + c.cost,
              score: b.score + this.wordScore(c) + context,
              changed: b.changed || c.text !== w,
              last: first[first.length - 1] as string,
              open: cands.length > 1,
            });
          }
        }
        next.sort((x, y) => y.score - x.score);
        beams = next.slice(0, Math.max(max, 8));
      });
      for (const b of beams) all.push({ words: b.words, cost: b.cost, score: b.score, changed: b.changed });
    }
    all.sort((x, y) => y.score - x.score);
    const seen = new Set<string>();
    return all.filter((c) => {
      const k = c.words.join(' ');
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    }).slice(0, max);
  }

  private contextOf(before: string, word: string, isPrefix: boolean): number {
    return isPrefix ? this.snapshot.prefixCooccurrence(before, word) : this.snapshot.cooccurrence(before, word);
  }

  /**
   * A last word still being typed: 0 when no term starts with it; PREFIX_WEIGHT (taken as typed)
   * when some do, unless it is a whole word already, every term it starts is rare, an edit is
   * allowed at its length and other words stand beside it: then it is questioned like a rare known
   * word (isQuestioned), weighed by those terms, and the word before it weighs its readings
   * ("4 flourescent", a typo in one title, is read as fluorescent; "ceiling lightening" as
   * lighting). The start of a rare word ("amert" of AmerTac) is taken as typed: more of it is
   * probably coming.
   */
  private prefixWeight(word: string, inContext: boolean): number {
    const snap = this.snapshot;
    if (!snap.hasPrefix(word, this.kind)) return 0;
    if (!inContext || maxEditsFor(word.length) === 0 || /\d/.test(word) || snap.termWeight(word, this.kind) === 0) return PREFIX_WEIGHT;
    const weight = snap.prefixTermsWeight(word, this.kind);
    return weight === 0 || weight > RARE_WORD_MAX ? PREFIX_WEIGHT : weight;
  }

  /**
   * Log probability of a word (its weight over the collection's, so that readings with fewer
   * words are not at a disadvantage) minus the cost of its edits.
   */
  private wordScore(c: WordCandidate): number {
    const w = c.weight >= PREFIX_WEIGHT ? this.snapshot.docCount : c.weight;
    return Math.log((w + 0.5) / (this.snapshot.docCount + 1)) - EDIT_PENALTY * c.cost;
  }

  /** The corrected words, or null when the best reading is the query as typed. */
  correct(words: string[], lastIsPrefix: boolean): string[] | null {
    const best = this.candidates(words, lastIsPrefix, 1)[0];
    return best && best.changed ? best.words : null;
  }

  /**
   * `corrected_query` as shown for the corrected words of `typed`. A last word still typed is
   * corrected to the start of a term ("cofee" -> "coffe", which is how it is searched); shown,
   * it is the whole term when that is as near to what was typed ("coffee"), the nearest and most
   * frequent of them. Runs once per answer that has a correction.
   */
  shown(corrected: readonly string[], typed: readonly string[], lastIsPrefix: boolean): string {
    const last = corrected.at(-1);
    const word = typed.at(-1);
    if (!lastIsPrefix || last === undefined || word === undefined || last === word) return corrected.join(' ');
    const near = this.snapshot.fuzzyTerms(word, maxEditsFor(word.length), false, this.kind, 12);
    let best: (typeof near)[number] | null = null;
    for (const m of near) {
      if (!m.term.startsWith(last)) continue;
      if (best === null || m.distance < best.distance || (m.distance === best.distance && m.weight > best.weight)) best = m;
    }
    return best === null ? corrected.join(' ') : [...corrected.slice(0, -1), best.term].join(' ');
  }
}


