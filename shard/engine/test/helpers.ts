// Shared helpers for the engine tests: a seeded generator and loaders for the shared data sets.
import { parse } from 'csv-parse/sync';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { SuggestDocument } from '../../../node/runtime/document.js';

export const DATA_DIR = process.env.SUGGEST_DATA_SETS ?? '/work/shared/data';

/** mulberry32: small, fast, good enough for test inputs. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomWord(rnd: () => number, alphabet: string, minLen: number, maxLen: number): string {
  const len = minLen + Math.floor(rnd() * (maxLen - minLen + 1));
  let s = '';
  for (let i = 0; i < len; i++) s += alphabet[Math.floor(rnd() * alphabet.length)];
  return s;
}

interface BestBuyRecord {
  name: string;
  description: string;
  brand: string;
  categories: string[];
  price: number;
  image: string;
  popularity: number;
}

export function loadBestBuy(dir = DATA_DIR): SuggestDocument[] {
  const records = JSON.parse(readFileSync(`${dir}/bestbuy_products_3291.json`, 'utf8')) as BestBuyRecord[];
  return records.map((r, i) => ({
    id: `bb${i}`,
    title: r.name,
    desc: r.description,
    manufacturer: r.brand,
    raw: { categories: r.categories, price: r.price, image: r.image, popularity: r.popularity },
  }));
}

/** The quoted, comma-separated data files, row by row (csv-parse; ragged rows allowed). */
export function parseCsv(text: string): string[][] {
  return parse(text, { relax_column_count: true, skip_empty_lines: true }) as string[][];
}

export interface HomeDepotRow {
  productUid: string;
  title: string;
  query: string;
  relevance: number;
}

export function loadHomeDepot(dir = DATA_DIR): HomeDepotRow[] {
  const text = gunzipSync(readFileSync(`${dir}/homedepot_train.csv.gz`)).toString('latin1');
  const rows = parseCsv(text);
  return rows.slice(1).filter((r) => r.length >= 5).map((r) => ({
    productUid: r[1] as string,
    title: r[2] as string,
    query: r[3] as string,
    relevance: Number(r[4]),
  }));
}

/** One document per Home Depot product (titles only). */
export function homeDepotDocuments(rows: HomeDepotRow[]): SuggestDocument[] {
  const seen = new Map<string, SuggestDocument>();
  for (const r of rows) {
    if (!seen.has(r.productUid)) seen.set(r.productUid, { id: `hd${r.productUid}`, title: r.title, desc: '', manufacturer: '', raw: {} });
  }
  return [...seen.values()];
}

export function loadBigBasket(dir = DATA_DIR): SuggestDocument[] {
  const rows = parseCsv(readFileSync(`${dir}/bigbasket_products.csv`, 'utf8'));
  return rows.slice(1).filter((r) => r.length >= 9).map((r) => ({
    id: `bk${r[0]}`,
    title: r[1] as string,
    desc: '',
    manufacturer: (r[4] as string).trim(),
    raw: {
      category: r[2] as string,
      sub_category: r[3] as string,
      sale_price: Number(r[5]),
      price: Number(r[6]),
      type: r[7] as string,
      ...(r[8] ? { rating: Number(r[8]) } : {}),
      currency: 'INR',
    },
  }));
}
