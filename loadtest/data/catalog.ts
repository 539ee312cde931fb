// The product catalogue a load test puts in the service and in the peer baselines, so every
// target answers over the same documents: Best Buy products (full documents) and Home Depot
// products (titles only; the judged file has no other field).
import type { SuggestDocument } from '../../node/runtime/document.js';
import { loadBestBuyProducts } from './bestbuy.js';
import { loadHomeDepot } from './homedepot.js';

export const CATALOG_SOURCES = ['bestbuy', 'homedepot'] as const;
export type CatalogSource = (typeof CATALOG_SOURCES)[number];

/** Home Depot products as documents; ids `hd-<product_uid>` unless `bareIds`. */
export function homeDepotDocuments(opts: { bareIds?: boolean } = {}): SuggestDocument[] {
  const docs: SuggestDocument[] = [];
  for (const [uid, title] of loadHomeDepot().products) {
    docs.push({ id: opts.bareIds ? uid : `hd-${uid}`, title, desc: '', manufacturer: '', raw: { source: 'homedepot' } });
  }
  return docs;
}

export function parseCatalogSources(spec: string): CatalogSource[] {
  const names = spec.split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) {
    if (!(CATALOG_SOURCES as readonly string[]).includes(n)) throw new Error(`unknown catalog source "${n}" (known: ${CATALOG_SOURCES.join(', ')})`);
  }
  return names as CatalogSource[];
}

export function loadCatalog(sources: readonly CatalogSource[] = CATALOG_SOURCES): SuggestDocument[] {
  const docs: SuggestDocument[] = [];
  for (const source of sources) docs.push(...(source === 'bestbuy' ? loadBestBuyProducts() : homeDepotDocuments()));
  return docs;
}
