// Real misspelled Home Depot queries and their corrections (the spell-check dictionary posted on
// the Kaggle forum; one Python dict entry per line: `'lawn sprkinler': 'lawn sprinkler',`),
// joined to the judged queries so a misspelled form carries the same right answers.
//
// Join rule: when the misspelled form is itself a judged query (1,101 of the 2,266 pairs; the
// rest are Kaggle test-set queries), it takes that query's judgments; otherwise, when only the
// correction is a judged query, it takes the correction's. Pairs that reach no judged query
// are dropped.
import { readDataText } from './data-files.js';
import type { JudgedQuery } from './homedepot.js';

export interface SpellPair {
  misspelled: string;
  corrected: string;
}

export interface MisspelledQuery extends SpellPair {
  /** which side of the pair is the judged query the answers come from */
  judgedFrom: 'misspelled' | 'corrected';
  perfect: string[];
}

const PY_STRING = String.raw`(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")`;
const ENTRY = new RegExp(String.raw`^\s*${PY_STRING}\s*:\s*${PY_STRING}\s*,?\s*$`);
const unescape = (s: string) => s.replace(/\\(.)/g, '$1');

/** Parses dictionary lines; throws on a line that is neither blank nor an entry. */
export function parseSpellPairs(text: string): SpellPair[] {
  const pairs: SpellPair[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === '' || line.trim() === '{' || line.trim() === '}') return;
    const m = ENTRY.exec(line);
    if (!m) throw new Error(`spell-check line ${i + 1} is not a dict entry: ${line}`);
    pairs.push({ misspelled: unescape(m[1] ?? m[2] ?? ''), corrected: unescape(m[3] ?? m[4] ?? '') });
  });
  return pairs;
}

export function loadSpellPairs(): SpellPair[] {
  return parseSpellPairs(readDataText('homedepotSpellcheck', 'latin1'));
}

export function joinMisspellings(pairs: SpellPair[], queries: readonly JudgedQuery[]): MisspelledQuery[] {
  const byText = new Map(queries.map((q) => [q.query, q]));
  const out: MisspelledQuery[] = [];
  for (const pair of pairs) {
    const own = byText.get(pair.misspelled);
    const fixed = own ? undefined : byText.get(pair.corrected);
    const judged = own ?? fixed;
    if (!judged) continue;
    out.push({ ...pair, judgedFrom: own ? 'misspelled' : 'corrected', perfect: judged.perfect });
  }
  return out;
}
