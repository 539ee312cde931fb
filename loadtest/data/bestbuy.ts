// Best Buy data: the 3,291-product catalogue (Algolia's 2018 demo set) converted to the
// service's document shape, and the real mobile-site query log (Xbox category, 2011) counted
// into a query popularity table.
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { dataPath, readDataText } from './data-files.js';

interface BestBuyRecord {
  name: string;
  description: string;
  brand: string;
  categories: string[];
  price: number;
  image: string;
  popularity: number;
}

/** Ids are `bb-<position in the file>`: the records carry no id of their own. */
export function loadBestBuyProducts(): SuggestDocument[] {
  const records = JSON.parse(readFileSync(dataPath('bestbuyProducts'), 'utf8')) as BestBuyRecord[];
  return records.map((r, i) => ({
    id: `bb-${i}`,
    title: r.name,
    desc: r.description,
    manufacturer: r.brand,
    raw: {
      source: 'bestbuy',
      category: r.categories[r.categories.length - 1] ?? '',
      category_path: r.categories.join(' > '),
      price: r.price,
      popularity: r.popularity,
      image: r.image,
    },
  }));
}

export interface QueryCount {
  query: string;
  count: number;
}

/**
 * Query events grouped by the lower-cased, trimmed query text (3,591 distinct queries), most
 * frequent first; ties in order of first appearance.
 */
export function loadBestBuyQueryLog(): QueryCount[] {
  const rows = parse(readDataText('bestbuyQueryLog'), { columns: true, skip_empty_lines: true }) as { query: string }[];
  const counts = new Map<string, number>();
  for (const row of rows) {
    const q = row.query.toLowerCase().trim();
    if (q) counts.set(q, (counts.get(q) ?? 0) + 1);
  }
  return [...counts].map(([query, count]) => ({ query, count })).sort((a, b) => b.count - a.count);
}

export interface QueryEvent {
  /** anonymized user id of the log */
  user: string;
  /** the query as typed (trimmed) */
  query: string;
  /** when it was typed, epoch milliseconds (the log's local time read as UTC) */
  time: number;
}

/** Every query event of the log with its user and time, oldest first (events without a query are left out). */
export function loadBestBuyQueryEvents(): QueryEvent[] {
  const rows = parse(readDataText('bestbuyQueryLog'), { columns: true, skip_empty_lines: true }) as { user: string; query: string; query_time: string }[];
  const out: QueryEvent[] = [];
  for (const row of rows) {
    const query = row.query.trim();
    const time = Date.parse(`${row.query_time.replace(' ', 'T')}Z`);
    if (query && Number.isFinite(time)) out.push({ user: row.user, query, time });
  }
  return out.sort((a, b) => a.time - b.time);
}
