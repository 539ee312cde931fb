// How a free-form document maps onto the engine's fields: which raw attributes are brand,
// categories, other searchable attributes, popularity signals and display fields (url, image,
// price, currency). Documents come from CSV, JSON and shopping feeds with no schema, so the
// mapping goes by attribute names that feeds commonly use.
import type { RawValue, SuggestDocument } from '../../node/runtime/document.js';

/** Searchable fields, in decreasing weight. */
export const FIELD = { title: 0, brand: 1, category: 2, attr: 3, desc: 4 } as const;
export const FIELD_COUNT = 5;
export const FIELD_NAMES = ['title', 'brand', 'category', 'attr', 'desc'] as const;

export interface DocFields {
  title: string;
  brand: string;
  categories: string[];
  /** other short string attributes worth matching (colour, material, size...) */
  attrs: string[];
  desc: string;
  /** static prior in [0, 1] from popularity, sales and rating attributes */
  quality: number;
}

export interface DisplayFields {
  subtitle: string;
  description: string;
  url: string | null;
  image: string | null;
  price: number | null;
  currency: string | null;
  concepts: string[];
}

const BRAND_KEYS = ['brand', 'manufacturer', 'vendor', 'make', 'brand_name', 'brandname'];
const CATEGORY_KEY = /^(?:sub_?|parent_?|main_?|top_?)*(?:categor(?:y|ies)|department|dept|product_?type|type|class|group|family|collection|genre|section|aisle|segment|cat)(?:_?(?:name|lvl\d|level\d|\d))?$/;
const SKIP_ATTR_KEY = /url|link|href|image|img|thumb|photo|picture|icon|sku|upc|gtin|ean|isbn|mpn|asin|^id$|_id$|uuid|hash|date|time|created|updated|currency|price|cost|score|rank|rating|popularity|sales|count|qty|quantity|stock|desc|title|name|text|body|content|summary|html|json|meta/;
const POPULARITY_KEY = /^(?:popularity|popular|sales|sold|units_sold|orders|purchases|views|clicks|downloads|reviews|review_count|reviews_count|num_reviews|rating_count|ratings_count|bestseller_rank_inverse)$/;
const RATING_KEY = /^(?:rating|ratings|stars|review_score|avg_rating|average_rating|customer_rating)$/;
const URL_KEYS = ['url', 'link', 'product_url', 'producturl', 'href', 'permalink', 'page_url', 'web_url'];
const IMAGE_KEYS = ['image', 'image_url', 'imageurl', 'image_link', 'imagelink', 'thumbnail', 'thumbnail_url', 'thumbnailimage', 'img', 'picture', 'photo', 'images'];
const PRICE_KEYS = ['price', 'sale_price', 'saleprice', 'current_price', 'final_price', 'amount', 'market_price', 'list_price', 'msrp'];
const CURRENCY_KEYS = ['currency', 'currency_code', 'currencycode', 'price_currency'];

const MAX_ATTR_CHARS = 60;
const MAX_ATTR_WORDS = 6;
/** Only the start of a description is indexed (see MAX_DESC_WORDS in segment-builder.ts). */
const MAX_DESC_CHARS = 1200;

/** Raw keys compared without case, spaces or dashes ("Image URL" == "image_url"). */
function keyForm(key: string): string {
  return key.toLowerCase().replace(/[\s-]+/g, '_');
}

function rawLookup(raw: Record<string, RawValue>, keys: readonly string[]): RawValue | undefined {
  for (const k of keys) if (raw[k] !== undefined && raw[k] !== null && raw[k] !== '') return raw[k];
  for (const [k, v] of Object.entries(raw)) {
    if (v !== undefined && v !== null && v !== '' && keys.includes(keyForm(k))) return v;
  }
  return undefined;
}

function strings(v: RawValue | undefined): string[] {
  if (typeof v === 'string') return v.trim() ? [v.trim()] : [];
  if (typeof v === 'number' || typeof v === 'boolean') return [String(v)];
  if (Array.isArray(v)) return v.flatMap((x) => (typeof x === 'string' || typeof x === 'number' ? strings(x) : []));
  return [];
}

/** A finite number from a number or a numeric string ("1,299.00", "$5"), else null. */
export function numberOf(v: RawValue | undefined): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'string') {
    const s = v.replace(/[\s,$€£¥₹]/g, '');
    if (!/^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i.test(s)) return null;
    const n = Number(s);
    return Number.isFinite(n) ? n : null;
  }
  if (Array.isArray(v) && v.length > 0) return numberOf(v[0]);
  return null;
}

function looksLikeText(s: string): boolean {
  return s.length <= MAX_ATTR_CHARS && !/^(?:https?:|www\.|\/)/i.test(s) && numberOf(s) === null && s.split(/\s+/).length <= MAX_ATTR_WORDS;
}

export function brandOf(doc: SuggestDocument): string {
  const m = (doc.manufacturer ?? '').trim();
  if (m) return m;
  return strings(rawLookup(doc.raw ?? {}, BRAND_KEYS))[0] ?? '';
}

export function docFields(doc: SuggestDocument): DocFields {
  const raw = doc.raw ?? {};
  const categories: string[] = [];
  const attrs: string[] = [];
  let popularity: number | null = null;
  let rating: number | null = null;
  for (const [key, value] of Object.entries(raw)) {
    const k = keyForm(key);
    if (BRAND_KEYS.includes(k)) continue;
    if (CATEGORY_KEY.test(k)) {
      for (const s of strings(value)) if (s.length <= 120) categories.push(s);
      continue;
    }
    if (POPULARITY_KEY.test(k)) {
      const n = numberOf(value);
      if (n !== null && n > 0) popularity = Math.max(popularity ?? 0, n);
      continue;
    }
    if (RATING_KEY.test(k)) {
      const n = numberOf(value);
      if (n !== null && n > 0) rating = n <= 5 ? n / 5 : n <= 10 ? n / 10 : Math.min(1, n / 100);
      continue;
    }
    if (SKIP_ATTR_KEY.test(k)) continue;
    for (const s of strings(value)) if (looksLikeText(s)) attrs.push(s);
  }
  return {
    title: (doc.title ?? '').trim(),
    brand: brandOf(doc),
    categories: dedupe(categories),
    attrs: dedupe(attrs),
    desc: (doc.desc ?? '').slice(0, MAX_DESC_CHARS),
    quality: qualityOf(popularity, rating),
  };
}

/**
 * A prior that does not depend on the rest of the corpus, so scores stay comparable between
 * index parts and segments: log-scaled popularity (10 -> 0.2, 10^4 -> 0.8, capped at 1) blended
 * with the rating when both exist.
 */
export function qualityOf(popularity: number | null, rating: number | null): number {
  const pop = popularity === null ? null : Math.min(1, Math.log10(1 + popularity) / 5);
  if (pop !== null && rating !== null) return 0.7 * pop + 0.3 * rating;
  return pop ?? rating ?? 0;
}

export function displayFields(doc: SuggestDocument, fields: DocFields = docFields(doc)): DisplayFields {
  const raw = doc.raw ?? {};
  const url = strings(rawLookup(raw, URL_KEYS))[0] ?? null;
  const image = strings(rawLookup(raw, IMAGE_KEYS))[0] ?? null;
  const price = numberOf(rawLookup(raw, PRICE_KEYS));
  const currency = strings(rawLookup(raw, CURRENCY_KEYS))[0] ?? null;
  const concepts = dedupe([fields.brand, ...fields.categories].filter((s) => s.length > 0));
  return {
    subtitle: fields.categories[0] ?? fields.brand,
    description: truncate(fields.desc, 300),
    url,
    image,
    price,
    currency: currency ? currency.toUpperCase() : null,
    concepts,
  };
}

function truncate(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = s.lastIndexOf(' ', n);
  return `${s.slice(0, cut > n / 2 ? cut : n)}…`;
}

function dedupe(xs: string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const x of xs) {
    const k = x.toLowerCase();
    if (!seen.has(k)) {
      seen.add(k);
      out.push(x);
    }
  }
  return out;
}
