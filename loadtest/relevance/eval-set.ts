// The relevance evaluation set, built from the Home Depot judged queries and fixed by a seed:
//
// - documents: every product of the training file (54,667 titles), so each query competes with
//   the whole catalogue's distractors, not just with its own judged products;
// - main cases: a seeded sample of the queries that have at least one perfect product (mean
//   relevance 3; see data/homedepot.ts), each asked whole and as a typing prefix (the first 60%
//   of its characters, rounded up, as typed: a prefix may end in a space);
// - misspelling cases: every spell-check pair that joins to a judged query with a perfect
//   product (see data/spellcheck.ts), asked in its real misspelled form and, for a paired
//   comparison on the same queries, in its corrected form.
import { loadHomeDepot } from '../data/homedepot.js';
import { SeededRandom } from '../data/seeded-random.js';
import { joinMisspellings, loadSpellPairs } from '../data/spellcheck.js';
import type { TitledDocument } from '../peers/peer-engine.js';

export const VARIANTS = ['full', 'prefix60', 'misspelled', 'corrected'] as const;
export type Variant = (typeof VARIANTS)[number];

export interface EvalCase {
  variant: Variant;
  /** the judged query this case comes from */
  query: string;
  /** the text sent to the engine */
  text: string;
  perfect: ReadonlySet<string>;
}

export interface EvalSet {
  documents: TitledDocument[];
  cases: EvalCase[];
  description: Record<string, unknown>;
}

export const PREFIX_FRACTION = 0.6;

/** The first `fraction` of the query's characters (code points), rounded up, at least one. */
export function typingPrefix(query: string, fraction = PREFIX_FRACTION): string {
  const chars = Array.from(query);
  return chars.slice(0, Math.max(1, Math.ceil(chars.length * fraction))).join('');
}

export function buildEvalSet(opts: { seed: number; queries: number; misspelled?: number }): EvalSet {
  const hd = loadHomeDepot();
  const documents = [...hd.products].map(([id, title]) => ({ id, title }));
  const eligible = hd.queries.filter((q) => q.perfect.length > 0);
  const random = new SeededRandom(opts.seed);
  const main = random.sample(eligible, opts.queries);
  const cases: EvalCase[] = [];
  for (const q of main) {
    const perfect = new Set(q.perfect);
    cases.push({ variant: 'full', query: q.query, text: q.query, perfect });
    cases.push({ variant: 'prefix60', query: q.query, text: typingPrefix(q.query), perfect });
  }
  const misspellings = joinMisspellings(loadSpellPairs(), hd.queries).filter((m) => m.perfect.length > 0 && m.misspelled !== m.corrected);
  const chosen = opts.misspelled === undefined ? misspellings : random.sample(misspellings, opts.misspelled);
  for (const m of chosen) {
    const perfect = new Set(m.perfect);
    cases.push({ variant: 'misspelled', query: m.misspelled, text: m.misspelled, perfect });
    cases.push({ variant: 'corrected', query: m.misspelled, text: m.corrected, perfect });
  }
  return {
    documents,
    cases,
    description: {
      seed: opts.seed,
      documents: documents.length,
      eligible_queries: eligible.length,
      main_queries: main.length,
      misspelled_queries: chosen.length,
      prefix_fraction: PREFIX_FRACTION,
      perfect_rule: 'products with mean relevance 3',
    },
  };
}
