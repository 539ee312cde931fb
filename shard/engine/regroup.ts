// Words typed together that titles write apart, and apart that titles write together: "dish
// washer" for "Dishwasher", "lawnmower" (a word of two titles) for "Lawn Mower" (of hundreds),
// "screw driver set" for "Screwdriver Set". The spelling corrector regroups only words the index
// does not know; these are all known words, so the query as typed finds something, just not the
// products meant. Typeahead and autocomplete try the regrouped reading when the words as typed
// find little (typeahead.ts gatherAlike, engine.ts autocomplete).
import type { IndexSnapshot, VocabularyKind } from './index-snapshot.js';

/** A word the regrouping may join or split: three letters or more, and no digit (sizes and model numbers are meant as typed). */
const REGROUPABLE = /^[^\d]{3,}$/u;
/** The shortest half of a word split in two. */
const MIN_PART = 3;
/** Only pairs among the last this many words are tried as one (each costs a lookup). */
const JOIN_WINDOW = 4;

/**
 * The query's `words` with one pair of neighbours joined, the most common joined word the index
 * knows, or else one word split in two (the last word first), at the point where both halves are
 * the most common words, and only when the halves stand together in more documents than the word
 * itself (a word still typed: in any case); the last word is a prefix while typed. `kind`: the
 * vocabulary (typeahead's phrases or any term). Null when no regrouping is known.
 */
export function regroupWords(snapshot: IndexSnapshot, words: readonly string[], lastIsPrefix: boolean, kind: VocabularyKind): string[] | null {
  const n = words.length;
  // a prefix weighs what the terms it starts weigh together
  const weight = (word: string, prefix: boolean): number => (prefix ? snapshot.prefixTermsWeight(word, kind) : snapshot.termWeight(word, kind));
  const isTyped = (i: number): boolean => lastIsPrefix && i === n - 1;
  // a word being typed may be short: "dish w" is the start of "dishwasher"
  const regroupable = (i: number): boolean => REGROUPABLE.test(words[i] as string) || (isTyped(i) && /^[^\d]+$/u.test(words[i] as string));
  let best: string[] | null = null;
  let bestWeight = 0;
  for (let i = Math.max(0, n - JOIN_WINDOW); i + 1 < n; i++) {
    if (!REGROUPABLE.test(words[i] as string) || !regroupable(i + 1)) continue;
    const w = weight((words[i] as string) + (words[i + 1] as string), isTyped(i + 1));
    if (w > bestWeight) {
      best = [...words.slice(0, i), (words[i] as string) + (words[i + 1] as string), ...words.slice(i + 2)];
      bestWeight = w;
    }
  }
  if (best !== null) return best;
  for (let i = n - 1; i >= Math.max(0, n - JOIN_WINDOW); i--) {
    const word = words[i] as string;
    if (word.length < 2 * MIN_PART || !REGROUPABLE.test(word)) continue;
    const own = isTyped(i) ? 0 : snapshot.termWeight(word, kind);
    for (let at = MIN_PART; at <= word.length - MIN_PART; at++) {
      const a = word.slice(0, at);
      const wa = weight(a, false);
      if (wa <= bestWeight) continue;
      const b = word.slice(at);
      // a prefix weighs as the word before it
      const w = Math.min(wa, isTyped(i) ? (weight(b, true) > 0 ? wa : 0) : weight(b, false));
      if (w <= bestWeight || (!isTyped(i) && snapshot.cooccurrence(a, b) <= own)) continue;
      best = [...words.slice(0, i), a, b, ...words.slice(i + 1)];
      bestWeight = w;
    }
    if (best !== null) return best;
  }
  return null;
}
