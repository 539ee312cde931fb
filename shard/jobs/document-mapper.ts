// Records of an uploaded file -> documents. Two mappings:
//
// `documents` (uploads, ingest/start): the fields of the specification (id, title, desc,
// manufacturer, raw) taken from the first present of a few usual names, e.g. a catalog export
// with `name`, `description` and `brand` maps as expected; every other field goes into `raw`
// (an explicit `raw` object wins over loose fields of the same name). CSV cells are trimmed,
// empty ones dropped, and numeric ones (`220`, `4.1`, not `00123`) become numbers. A record
// without any id field gets `h-` + a hash of its content: stable across re-reads (resume), and
// two files never collide on row numbers. An id field that is present but null or empty (a JSON
// `"id": null`, an empty cell of the id column) fails the record instead.
//
// `shopping-feed` (import/merchant-shopping): the columns of a merchant shopping feed: id,
// title, description, link, image_link, price ("19.99 USD"), sale_price, brand, gtin, mpn,
// availability, google_product_category, product_type, custom_label_0..4 (with or without the
// `g:` prefix) -> title, desc, manufacturer = brand, raw {url, image, price, currency,
// sale_price, ...}.
import { createHash } from 'node:crypto';
import { hasControlChar, hasLoneSurrogate, MAX_DOC_ID_BYTES, MAX_DOCUMENT_ATTRIBUTES, type RawValue, type SuggestDocument } from '../../node/runtime/document.js';

export type DocumentMapping = 'documents' | 'shopping-feed';

export type Mapped = { doc: SuggestDocument; error?: undefined } | { doc?: undefined; error: string; id: string | null };

const ID_FIELDS = ['id', '_id', 'objectID', 'objectId', 'sku', 'product_id', 'productId', 'uid', 'index'];
const TITLE_FIELDS = ['title', 'name', 'product', 'product_name', 'productName', 'product_title'];
const DESC_FIELDS = ['desc', 'description'];
const MANUFACTURER_FIELDS = ['manufacturer', 'brand', 'vendor', 'maker'];

/** Integers without leading zeros (ids like 00123 stay text) and plain decimals, up to 15 digits. */
const NUMERIC = /^-?(?:0|[1-9]\d{0,14})(?:\.\d{1,15})?$/;

export function mapRecord(record: Record<string, unknown>, mapping: DocumentMapping, fromCsv: boolean): Mapped {
  return mapping === 'shopping-feed' ? mapShoppingRow(record) : mapDocumentRecord(record, fromCsv);
}

export function mapDocumentRecord(record: Record<string, unknown>, fromCsv: boolean): Mapped {
  // the document's own field names never spill into raw, even when empty
  const used = new Set<string>(['id', 'title', 'desc', 'manufacturer'].filter((k) => Object.hasOwn(record, k)));
  const pick = (names: string[]): unknown => {
    for (const name of names) {
      if (!Object.hasOwn(record, name)) continue;
      const v = record[name];
      if (v === undefined || v === null || v === '') continue;
      used.add(name);
      return v;
    }
    return undefined;
  };
  let rawId: unknown;
  /** the first id field present, with a value or not */
  let given: string | undefined;
  for (const name of ID_FIELDS) {
    if (!Object.hasOwn(record, name)) continue;
    given ??= name;
    const v = record[name];
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) continue;
    used.add(name);
    rawId = v;
    break;
  }
  let id: string;
  if (rawId === undefined) {
    // an id field that is there but null or blank was meant to name the document: a hashed id
    // would store it under a name nobody chose, and a second one on every edit of its content
    if (given !== undefined) {
      const v = record[given];
      return { error: `The ${given} is ${v === null ? 'null' : 'empty'}; give the record an id, or leave the field out to have one made from its content.`, id: null };
    }
    id = `h-${contentHash(record)}`;
  }
  else if (typeof rawId === 'string' || (typeof rawId === 'number' && Number.isFinite(rawId))) id = String(rawId).trim();
  else return { error: `The id must be a string or a number, not ${describe(rawId)}.`, id: null };
  const idError = checkId(id);
  if (idError) return { error: idError, id: id.slice(0, 100) };

  const text = (names: string[], field: string): string | { error: string } => {
    const v = pick(names);
    if (v === undefined) return '';
    if (typeof v === 'string') return fromCsv ? v.trim() : v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    return { error: `${field} must be text, not ${describe(v)}.` };
  };
  const title = text(TITLE_FIELDS, 'title');
  const desc = text(DESC_FIELDS, 'desc');
  const manufacturer = text(MANUFACTURER_FIELDS, 'manufacturer');
  for (const t of [title, desc, manufacturer]) if (typeof t !== 'string') return { error: t.error, id };

  const entries: [string, RawValue][] = [];
  for (const [k, v] of Object.entries(record)) {
    if (used.has(k) || k === 'raw') continue;
    const value = rawValue(v, fromCsv);
    if (value !== undefined) entries.push([k, value]);
  }
  const explicit = record.raw;
  if (explicit !== undefined && explicit !== null) {
    if (typeof explicit !== 'object' || Array.isArray(explicit)) return { error: `raw must be an object, not ${describe(explicit)}.`, id };
    for (const [k, v] of Object.entries(explicit)) {
      const value = rawValue(v, false);
      if (value !== undefined) entries.push([k, value]);
    }
  }
  return finish('record', { id, title: title as string, desc: desc as string, manufacturer: manufacturer as string, raw: Object.fromEntries(entries) });
}

export function mapShoppingRow(row: Record<string, unknown>): Mapped {
  // feeds exported from Merchant Center prefix attributes with `g:`; headers are case-insensitive there
  const cols = new Map<string, string>();
  for (const [k, v] of Object.entries(row)) {
    const key = k.trim().toLowerCase().replace(/^g:/, '');
    if (typeof v === 'string' && v.trim() !== '' && !cols.has(key)) cols.set(key, v.trim());
    else if (typeof v === 'number') cols.set(key, String(v));
  }
  const take = (key: string): string | undefined => {
    const v = cols.get(key);
    cols.delete(key);
    return v;
  };
  const id = take('id');
  if (id === undefined) return { error: 'The row has no id (the shopping feed column `id` is required).', id: null };
  const idError = checkId(id);
  if (idError) return { error: idError, id: id.slice(0, 100) };
  const title = take('title') ?? '';
  const desc = take('description') ?? '';
  const manufacturer = take('brand') ?? '';
  const raw: [string, RawValue][] = [];
  const link = take('link');
  if (link !== undefined) raw.push(['url', link]);
  const image = take('image_link');
  if (image !== undefined) raw.push(['image', image]);
  let currency: string | undefined;
  for (const key of ['price', 'sale_price']) {
    const v = take(key);
    if (v === undefined) continue;
    const money = parseMoney(v);
    if (money) {
      raw.push([key, money.amount]);
      currency ??= money.currency ?? undefined;
    } else raw.push([key, v]);
  }
  if (currency) raw.push(['currency', currency]);
  const category = cols.get('google_product_category') ?? cols.get('product_type');
  if (category !== undefined) raw.push(['category', category]);
  for (const [k, v] of cols) raw.push([k, NUMERIC.test(v) && !['gtin', 'mpn'].includes(k) ? Number(v) : v]);
  return finish('row', { id, title, desc, manufacturer, raw: Object.fromEntries(raw) });
}

/** "19.99 USD", "USD 19.99", "19,99 EUR", "1,299.00 USD", "19.99" -> amount and ISO currency. */
export function parseMoney(s: string): { amount: number; currency: string | null } | null {
  const m = /^(?:([A-Za-z]{3})\s*)?([0-9][0-9.,\s]*)(?:\s*([A-Za-z]{3}))?$/.exec(s.trim());
  if (!m) return null;
  let digits = m[2]!.replace(/\s/g, '');
  const lastComma = digits.lastIndexOf(',');
  const lastDot = digits.lastIndexOf('.');
  if (lastComma > lastDot) {
    // a comma after the last dot is the decimal mark when 1 or 2 digits follow it (19,99; 1.299,00)
    digits = digits.length - lastComma - 1 <= 2 ? digits.replace(/\./g, '').replace(',', '.') : digits.replace(/,/g, '');
  } else digits = digits.replace(/,/g, '');
  const amount = Number(digits);
  if (!Number.isFinite(amount)) return null;
  const currency = (m[1] ?? m[3])?.toUpperCase() ?? null;
  return { amount, currency };
}

function rawValue(v: unknown, fromCsv: boolean): RawValue | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string') {
    if (!fromCsv) return v;
    const t = v.trim();
    if (t === '') return undefined;
    return NUMERIC.test(t) ? Number(t) : t;
  }
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  return v as RawValue;
}

function checkId(id: string): string | null {
  if (id.length === 0) return 'The id is empty.';
  if (Buffer.byteLength(id, 'utf8') > MAX_DOC_ID_BYTES) return `The id is longer than ${MAX_DOC_ID_BYTES} bytes.`;
  if (hasControlChar(id)) return 'The id contains a control character.';
  if (hasLoneSurrogate(id)) return 'The id is not valid Unicode (it has a lone UTF-16 surrogate).';
  if (id.includes('\ufffd')) return 'The id contains bytes that are not valid in the file encoding.';
  return null;
}

/** The checks every mapped document passes last: the attribute limit, and text that decoded. */
function finish(what: 'record' | 'row', doc: SuggestDocument): Mapped {
  const attributes = Object.keys(doc.raw).length;
  if (attributes > MAX_DOCUMENT_ATTRIBUTES) {
    return { error: `The ${what} has ${attributes} attributes; a document may have at most ${MAX_DOCUMENT_ATTRIBUTES}.`, id: doc.id };
  }
  // U+FFFD is what undecodable bytes became: the row was not text in the file's encoding
  if (doc.title.includes('\ufffd') || doc.desc.includes('\ufffd') || doc.manufacturer.includes('\ufffd')) {
    return {
      error: 'The row contains bytes that are not valid in the file encoding (decoded as U+FFFD); re-encode the file as UTF-8 or name its encoding.',
      id: doc.id,
    };
  }
  return { doc };
}

function contentHash(record: Record<string, unknown>): string {
  return createHash('sha256').update(JSON.stringify(record)).digest('hex').slice(0, 20);
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}
