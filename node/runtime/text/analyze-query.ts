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
