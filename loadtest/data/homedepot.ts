// Home Depot judged queries (Kaggle "Home Depot Product Search Relevance", train split): the
// product catalogue (unique product_uid -> title) and, per real customer query, the judged
// products with their mean human relevance (1 = irrelevant .. 3 = exact match).
//
// Which products count as a right answer ("perfect"): those whose mean relevance is exactly 3,
// that is every rater called the product an exact match. 6,982 of the 11,795 queries have at
// least one; the others keep `perfect` empty and are left out of relevance scoring rather than
// promoted from a weaker judgment. `best` (the products at the query's highest mean relevance)
// is kept beside it for callers that must always have an answer.
import { parse } from 'csv-parse/sync';
import { readDataText } from './data-files.js';

export const PERFECT_RELEVANCE = 3;

export interface Judgment {
  productUid: string;
  relevance: number;
}

export interface JudgedQuery {
  /** the search term exactly as logged (may itself be misspelled) */
  query: string;
  judgments: Judgment[];
  /** product uids judged an exact match (mean relevance 3) */
  perfect: string[];
  /** the highest mean relevance any judged product reached */
  maxRelevance: number;
  /** product uids at `maxRelevance` */
  best: string[];
}

export interface HomeDepotData {
  /** product_uid -> product_title, in file order */
  products: Map<string, string>;
  /** one entry per unique search term, in order of first appearance */
  queries: JudgedQuery[];
  rows: number;
}

interface TrainRow {
  id: string;
  product_uid: string;
  product_title: string;
  search_term: string;
  relevance: string;
}

let cached: HomeDepotData | undefined;

/** Parses `homedepot_train.csv.gz` (latin-1). Parsed once per process. */
export function loadHomeDepot(): HomeDepotData {
  if (cached) return cached;
  const rows = parse(readDataText('homedepotTrain', 'latin1'), { columns: true, skip_empty_lines: true }) as TrainRow[];
  const products = new Map<string, string>();
  const byQuery = new Map<string, Judgment[]>();
  for (const row of rows) {
    if (!products.has(row.product_uid)) products.set(row.product_uid, row.product_title);
    let judgments = byQuery.get(row.search_term);
    if (!judgments) byQuery.set(row.search_term, (judgments = []));
    judgments.push({ productUid: row.product_uid, relevance: Number(row.relevance) });
  }
  const queries: JudgedQuery[] = [];
  for (const [query, judgments] of byQuery) {
    const maxRelevance = Math.max(...judgments.map((j) => j.relevance));
    queries.push({
      query,
      judgments,
      perfect: uniq(judgments.filter((j) => j.relevance === PERFECT_RELEVANCE).map((j) => j.productUid)),
      maxRelevance,
      best: uniq(judgments.filter((j) => j.relevance === maxRelevance).map((j) => j.productUid)),
    });
  }
  cached = { products, queries, rows: rows.length };
  return cached;
}

const uniq = (xs: string[]) => [...new Set(xs)];
