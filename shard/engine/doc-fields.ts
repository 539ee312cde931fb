// How a free-form document maps onto the engine's fields: which raw attributes are brand,
// categories, other searchable attributes, popularity signals and display fields (url, image,
// price, currency). Documents come from CSV, JSON and shopping feeds with no schema, so the
// mapping goes by attribute names that feeds commonly use.
import type { RawValue, SuggestDocument } from '../../node/runtime/document.js';
import { decodeEntities } from '../../node/runtime/text/normalize.js';

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

/** What a suggestion shows of a document, as text: HTML entities that feeds carry escaped decoded. */
export interface DisplayFields {
  title: string;
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

/** A key that is already in its compared form: most feeds' keys are. */
const PLAIN_KEY = /^[a-z0-9_]*$/;

/** Raw keys compared without case, spaces or dashes ("Image URL" == "image_url"). */
function keyForm(key: string): string {
  return PLAIN_KEY.test(key) ? key : key.toLowerCase().replace(/[\s-]+/g, '_');
}

function rawLookup(raw: Record<string, RawValue>, keys: readonly string[]): RawValue | undefined {
  for (const k of keys) if (raw[k] !== undefined && raw[k] !== null && raw[k] !== '') return raw[k];
  for (const k in raw) {
    // a plain key was looked up as it is above; only other spellings can still match
    if (PLAIN_KEY.test(k)) continue;
    const v = raw[k];
    if (v !== undefined && v !== null && v !== '' && keys.includes(keyForm(k))) return v;
  }
  return undefined;
}

function strings(v: RawValue | undefined): string[] {
  const out: string[] = [];
  pushStrings(v, out);
  return out;
}

/** The text values of `v` onto `out`: trimmed non-empty strings, numbers and booleans, those of an array's strings and numbers. */
function pushStrings(v: RawValue | undefined, out: string[]): void {
  if (typeof v === 'string') {
    const t = v.trim();
    if (t) out.push(t);
  } else if (typeof v === 'number' || typeof v === 'boolean') out.push(String(v));
  else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string' || typeof x === 'number') pushStrings(x, out);
}

/** The first text value of `v` (see `strings`), or null. */
function firstString(v: RawValue | undefined): string | null {
  if (typeof v === 'string') return v.trim() || null;
  return strings(v)[0] ?? null;
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

/** The raw keys display looks up, by field (0 brand, 1 url, 2 image, 3 price, 4 currency), each with its rank in its list. */
const DISPLAY_KEYS = new Map<string, { field: number; rank: number }>();
[BRAND_KEYS, URL_KEYS, IMAGE_KEYS, PRICE_KEYS, CURRENCY_KEYS].forEach((keys, field) => keys.forEach((k, rank) => DISPLAY_KEYS.set(k, { field, rank })));

/**
 * What display reads of the raw attributes in one pass over them: the value `rawLookup` would
 * find for each display field (a key of its list as written, by rank, else the first key in
 * another spelling of one) and the categories. Rendering a document not rendered before is on
 * every uncached answer; a lookup per candidate key (some 40) was most of its cost.
 */
function displayScan(raw: Record<string, RawValue>): { values: (RawValue | undefined)[]; categories: string[] } {
  const exact: (RawValue | undefined)[] = [undefined, undefined, undefined, undefined, undefined];
  const ranks = [Infinity, Infinity, Infinity, Infinity, Infinity];
  const other: (RawValue | undefined)[] = [undefined, undefined, undefined, undefined, undefined];
  const categories: string[] = [];
  for (const key in raw) {
    const plain = PLAIN_KEY.test(key);
    const form = plain ? key : keyForm(key);
    const hit = DISPLAY_KEYS.get(form);
    const v = raw[key];
    if (hit?.field !== 0 && CATEGORY_KEY.test(form)) {
      const from = categories.length;
      pushStrings(v, categories);
      // over-long values are descriptions filed as categories
      for (let i = categories.length - 1; i >= from; i--) if ((categories[i] as string).length > 120) categories.splice(i, 1);
    }
    if (hit === undefined || v === undefined || v === null || v === '') continue;
    if (plain) {
      if (hit.rank < (ranks[hit.field] as number)) {
        exact[hit.field] = v;
        ranks[hit.field] = hit.rank;
      }
    } else if (other[hit.field] === undefined) other[hit.field] = v;
  }
  return { values: exact.map((v, f) => v ?? other[f]), categories: dedupe(categories) };
}

export function displayFields(doc: SuggestDocument, fields?: Pick<DocFields, 'brand' | 'categories' | 'desc'>): DisplayFields {
  const { values, categories } = displayScan(doc.raw ?? {});
  const [brandValue, urlValue, imageValue, priceValue, currencyValue] = values;
  const brand = fields?.brand ?? ((doc.manufacturer ?? '').trim() || (firstString(brandValue) ?? ''));
  const cats = fields?.categories ?? categories;
  const desc = fields?.desc ?? (doc.desc ?? '').slice(0, MAX_DESC_CHARS);
  const currency = firstString(currencyValue);
  return {
    title: decodeEntities(doc.title ?? ''),
    subtitle: decodeEntities(cats[0] ?? brand),
    description: decodeEntities(truncate(desc, 300)),
    url: firstString(urlValue),
    image: firstString(imageValue),
    price: numberOf(priceValue),
    currency: currency ? currency.toUpperCase() : null,
    concepts: dedupe([brand, ...cats].filter((s) => s.length > 0)),
  };
}

function truncate(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = s.lastIndexOf(' ', n);
  return `${s.slice(0, cut > n / 2 ? cut : n)}…`;
}

function dedupe(xs: string[]): string[] {
  if (xs.length <= 1) return xs;
  if (xs.length <= 8) {
    // a handful of values (a document's categories): pairwise beats building a set
    const lower = xs.map((x) => x.toLowerCase());
    const out: string[] = [];
    for (let i = 0; i < xs.length; i++) if (lower.indexOf(lower[i] as string) === i) out.push(xs[i] as string);
    return out;
  }
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
