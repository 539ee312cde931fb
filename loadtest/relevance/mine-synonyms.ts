// Mines one-way query synonyms from the Home Depot judged queries, on one half of the queries
// only (chosen by a hash of the query text), so that the other half can measure what the
// synonyms do without having taught them. A query word is "unexplained" for a query when none of
// the query's relevant products (mean relevance >= 2.67) has it in its title; a title word that
// keeps appearing in those products when that word is unexplained, far more often than title
// words appear in relevant products in general, is taken as what shoppers mean by it
// ("bbq" -> "grill"). Spelling variants (edit distance <= 2, or one word a prefix of the other)
// are left to the engine's typo tolerance and spell correction.
//
//   node dist/loadtest/relevance/mine-synonyms.js [--out loadtest/relevance/hd-synonyms.json]
//        [--min-support 3] [--min-share 0.4] [--min-lift 4] [--min-unexplained 0.5] [--max-base-share 0.02]
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { REPO_ROOT } from '../data/data-files.js';
import { loadHomeDepot } from '../data/homedepot.js';
import { cliArgs } from '../load/cli.js';

/** Relevance from which a judged product counts as what the query meant (2 of 3 raters: exact). */
export const RELEVANT = 2.67;

/** Queries whose hash is even teach synonyms; the odd half evaluates them. */
export function inMiningHalf(query: string): boolean {
  return ((createHash('sha1').update(query).digest()[0] as number) & 1) === 0;
}

export const words = (text: string): string[] => analyzeQuery(text, 32).words.map((w) => w.term);
const useful = (w: string) => w.length >= 2 && !/^\d/.test(w);

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0] as number;
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j] as number;
      dp[j] = Math.min((dp[j] as number) + 1, (dp[j - 1] as number) + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length] as number;
}

export interface MinedSynonym {
  from: string;
  to: string[];
  /** mining-half queries where `from` was unexplained, and where each `to` word was the explanation */
  support: number;
  explained_by: number[];
}

export function mineSynonyms(opts: { minSupport: number; minShare: number; minLift: number; perWord: number; minUnexplained: number; maxBaseShare: number }): { synonyms: MinedSynonym[]; queries: number } {
  const hd = loadHomeDepot();
  const titleWords = new Map<string, Set<string>>();
  const titleOf = (uid: string): Set<string> => {
    let s = titleWords.get(uid);
    if (s === undefined) titleWords.set(uid, (s = new Set(words(hd.products.get(uid) ?? ''))));
    return s;
  };
  const miss = new Map<string, number>();
  const seen = new Map<string, number>();
  const co = new Map<string, Map<string, number>>();
  const base = new Map<string, number>();
  let queries = 0;
  for (const q of hd.queries) {
    if (!inMiningHalf(q.query)) continue;
    const relevant = q.judgments.filter((j) => j.relevance >= RELEVANT).map((j) => titleOf(j.productUid));
    if (relevant.length === 0) continue;
    queries++;
    const qw = new Set(words(q.query).filter(useful));
    const union = new Set<string>();
    for (const t of relevant) for (const w of t) if (useful(w) && !qw.has(w)) union.add(w);
    for (const t of union) base.set(t, (base.get(t) ?? 0) + 1);
    for (const w of qw) {
      seen.set(w, (seen.get(w) ?? 0) + 1);
      if (relevant.some((t) => t.has(w))) continue;
      miss.set(w, (miss.get(w) ?? 0) + 1);
      let m = co.get(w);
      if (m === undefined) co.set(w, (m = new Map()));
      for (const t of union) m.set(t, (m.get(t) ?? 0) + 1);
    }
  }
  const synonyms: MinedSynonym[] = [];
  for (const [w, n] of miss) {
    // a word its relevant products usually carry is not one shoppers use instead of theirs
    if (n < opts.minSupport || n / (seen.get(w) ?? n) < opts.minUnexplained) continue;
    const picks = [...(co.get(w) ?? [])]
      .filter(([t, c]) => {
        if (c < opts.minSupport || c / n < opts.minShare) return false;
        const share = (base.get(t) ?? 0) / queries;
        // words in many relevant titles (units, colours, "and") explain everything a little
        if (share > opts.maxBaseShare || c / n / share < opts.minLift) return false;
        return editDistance(w, t) > 2 && !t.startsWith(w) && !w.startsWith(t);
      })
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, opts.perWord);
    if (picks.length > 0) synonyms.push({ from: w, to: picks.map(([t]) => t), support: n, explained_by: picks.map(([, c]) => c) });
  }
  synonyms.sort((a, b) => (a.from < b.from ? -1 : 1));
  return { synonyms, queries };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = cliArgs({
    options: {
      out: { type: 'string', default: path.join(REPO_ROOT, 'loadtest/relevance/hd-synonyms.json') },
      'min-support': { type: 'string', default: '3' },
      'min-share': { type: 'string', default: '0.4' },
      'min-lift': { type: 'string', default: '4' },
      'per-word': { type: 'string', default: '2' },
      'min-unexplained': { type: 'string', default: '0.5' },
      'max-base-share': { type: 'string', default: '0.02' },
    },
  });
  const opts = { minSupport: Number(values['min-support']), minShare: Number(values['min-share']), minLift: Number(values['min-lift']), perWord: Number(values['per-word']), minUnexplained: Number(values['min-unexplained']), maxBaseShare: Number(values['max-base-share']) };
  const { synonyms, queries } = mineSynonyms(opts);
  const file = {
    source: 'homedepot_train.csv.gz, the half of the queries with an even sha1(query)[0]; see loadtest/relevance/mine-synonyms.ts',
    options: opts,
    mining_queries: queries,
    // the index-schema form: PUT /v1/indexes/{id}/schema {"synonyms": [...]}
    synonyms: synonyms.map((s) => ({ from: s.from, to: s.to })),
    evidence: Object.fromEntries(synonyms.map((s) => [s.from, { support: s.support, explained_by: s.explained_by }])),
  };
  writeFileSync(values.out, JSON.stringify(file, null, 1) + '\n');
  process.stderr.write(`[mine-synonyms] ${synonyms.length} synonyms from ${queries} queries -> ${values.out}\n`);
}
