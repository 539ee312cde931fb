// The product catalogue a load test puts in the service and in the peer baselines, so every
// target answers over the same documents: Best Buy products (full documents), Home Depot
// products (titles only; the judged file has no other field) and, on request, BigBasket
// products (name, brand, categories, prices). A spec may end with `pad:N`: the catalogue is then
// filled up to N documents with pack-size variants of its own products (same text plus
// "- 2 pack", "- 3 pack"...), for workloads that need a size the real files do not reach.
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { loadBestBuyProducts } from './bestbuy.js';
import { dataPath } from './data-files.js';
import { loadHomeDepot } from './homedepot.js';

/** The default catalogue; `bigbasket` is there on request (`--catalog bestbuy,homedepot,bigbasket`). */
export const CATALOG_SOURCES = ['bestbuy', 'homedepot'] as const;
const ALL_SOURCES = ['bestbuy', 'homedepot', 'bigbasket'] as const;
export type CatalogSource = (typeof ALL_SOURCES)[number];

/** Home Depot products as documents; ids `hd-<product_uid>` unless `bareIds`. */
export function homeDepotDocuments(opts: { bareIds?: boolean } = {}): SuggestDocument[] {
  const docs: SuggestDocument[] = [];
  for (const [uid, title] of loadHomeDepot().products) {
    docs.push({ id: opts.bareIds ? uid : `hd-${uid}`, title, desc: '', manufacturer: '', raw: { source: 'homedepot' } });
  }
  return docs;
}

/** BigBasket rows as documents; ids `bk-<index>`. */
export function bigBasketDocuments(): SuggestDocument[] {
  const rows = parse(readFileSync(dataPath('bigbasketProducts')), { columns: (h: string[]) => h.map((c, i) => c.trim() || `column_${i + 1}`), bom: true, relax_column_count: true }) as Record<string, string>[];
  return rows.map((r) => {
    const raw: Record<string, string | number> = { source: 'bigbasket' };
    for (const [k, v] of Object.entries(r)) {
      if (['index', 'product', 'brand'].includes(k) || v.trim() === '') continue;
      raw[k] = /^-?(?:0|[1-9]\d{0,14})(?:\.\d+)?$/.test(v.trim()) ? Number(v.trim()) : v.trim();
    }
    return { id: `bk-${r.index}`, title: (r.product ?? '').trim(), desc: '', manufacturer: (r.brand ?? '').trim(), raw };
  });
}

/** Source names of a spec such as `bestbuy,homedepot,pad:100000` (the pad entry left out). */
export function parseCatalogSources(spec: string): CatalogSource[] {
  const names = spec.split(',').map((s) => s.trim()).filter((s) => s.length > 0 && !s.startsWith('pad:'));
  for (const n of names) {
    if (!(ALL_SOURCES as readonly string[]).includes(n)) throw new Error(`unknown catalog source "${n}" (known: ${ALL_SOURCES.join(', ')}, pad:N)`);
  }
  return names as CatalogSource[];
}

/** The `pad:N` entry of a spec, or 0. */
export function parseCatalogPad(spec: string): number {
  const entry = spec.split(',').map((s) => s.trim()).find((s) => s.startsWith('pad:'));
  if (entry === undefined) return 0;
  const n = Number(entry.slice(4));
  if (!Number.isInteger(n) || n < 0) throw new Error(`bad catalog entry "${entry}": pad:N takes a document count`);
  return n;
}

export function loadCatalog(sources: readonly CatalogSource[] = CATALOG_SOURCES, padTo = 0): SuggestDocument[] {
  const docs: SuggestDocument[] = [];
  for (const source of sources) docs.push(...(source === 'bestbuy' ? loadBestBuyProducts() : source === 'bigbasket' ? bigBasketDocuments() : homeDepotDocuments()));
  const real = docs.length;
  for (let i = 0; docs.length < padTo && real > 0; i++) {
    const base = docs[i % real] as SuggestDocument;
    const pack = 2 + Math.floor(i / real);
    docs.push({ ...base, id: `${base.id}~${pack}`, title: `${base.title} - ${pack} pack` });
  }
  return docs;
}

/** The catalogue of a spec (`--catalog`): its sources, padded when it says `pad:N`. */
export function loadCatalogSpec(spec: string): SuggestDocument[] {
  return loadCatalog(parseCatalogSources(spec), parseCatalogPad(spec));
}
