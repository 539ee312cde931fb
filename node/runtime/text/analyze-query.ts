// Query analysis shared by the router and the engine: the normalized query string a response
// reports, and the words a search matches, each with its equivalent spellings and its parts.
import { normalize } from './normalize.js';
import { tokenize } from './tokenize.js';

export interface QueryWord {
  /** the word as typed, normalized */
  term: string;
  /** equivalent spellings a document may use instead (canonical unit, singular form) */
  alternatives: string[];
  /** pieces of a compound word; a document containing all of them matches too */
  parts: string[];
}

export interface AnalyzedQuery {
  /** the words joined by single spaces: what `normalized_query` reports */
  normalized: string;
  words: QueryWord[];
  /** the text ends with a space or punctuation, so the last word is complete (not a prefix) */
  lastWordComplete: boolean;
}

// A trailing separator means the user finished the word; punctuation inside a run does not.
const TRAILING_BREAK = /[\s,;:!?)\]}]$/u;

/** Analyzes a search-box query; queries longer than `maxWords` words keep the first ones. */
export function analyzeQuery(text: string, maxWords = 16): AnalyzedQuery {
  const norm = normalize(text);
  const tokens = tokenize(norm, { normalized: true, query: true });
  const words: QueryWord[] = [];
  for (const t of tokens) {
    if (t.kind === 'word') {
      if (words.length >= maxWords) break;
      words.push({ term: t.term, alternatives: [], parts: [] });
    } else {
      const w = words[words.length - 1];
      if (w === undefined || t.pos !== words.length - 1) continue;
      (t.kind === 'alt' ? w.alternatives : w.parts).push(t.term);
    }
  }
  return {
    normalized: words.map((w) => w.term).join(' '),
    words,
    lastWordComplete: words.length > 0 && TRAILING_BREAK.test(text),
  };
}

/** Analyzes `text` with its last word still being typed (a prefix) or finished, whatever it ends with. */
export function analyzeTyped(text: string, lastIsPrefix: boolean): AnalyzedQuery {
  return analyzeQuery(lastIsPrefix ? text : `${text} `);
}

/** A query word's identity: its term, alternatives and parts (equal keys, the same word). */
export function queryWordKey(w: QueryWord): string {
  return `${w.term}\u0001${w.alternatives.join('\u0001')}\u0002${w.parts.join('\u0001')}`;
}

// A whole number and the start of a fraction at the end of a query: "1 1", "1-1", "1 1/".
const SHORT_NUMBER = /^\p{Nd}{1,4}$/u;
const MIXED_NUMBER_START = /(?:^|[^\p{L}\p{N}.,/-])(\p{Nd}{1,4})[- ](\p{Nd}{1,3})(\/?)$/u;

/**
 * While a mixed number is typed ("1 1/2" and "1-1/2" are one word, "1-1/2"), its first keystrokes
 * read as two numbers: "1 1" is the start of "1-1/2" more often than "1" and a number from 1.
 * When the query ends that way and `known` says the index has words starting with the mixed
 * number so far ("1-1", "1-1/"), its last two words become that one prefix. Otherwise (a range
 * such as "10-2" for "10-20", "2 4", a numerator that no reduced fraction of an inch has) the
 * query is returned as it is.
 */
export function withMixedNumberPrefix(query: AnalyzedQuery, text: string, known: (prefix: string) => boolean): AnalyzedQuery {
  const n = query.words.length;
  if (query.lastWordComplete || n < 2 || !SHORT_NUMBER.test(query.words[n - 1]?.term ?? '') || !SHORT_NUMBER.test(query.words[n - 2]?.term ?? '')) return query;
  const m = MIXED_NUMBER_START.exec(normalize(text));
  if (m === null) return query;
  const [, whole, numerator, slash] = m as unknown as [string, string, string, string];
  if (query.words[n - 2]?.term !== whole || query.words[n - 1]?.term !== numerator) return query;
  // the fractions of sizes are reduced halves, quarters, eighths, sixteenths: odd numerators
  if (Number(numerator) % 2 === 0) return query;
  const term = `${whole}-${numerator}${slash}`;
  if (!known(term)) return query;
  const words = [...query.words.slice(0, n - 2), { term, alternatives: [], parts: [] }];
  return { normalized: words.map((w) => w.term).join(' '), words, lastWordComplete: false };
}
