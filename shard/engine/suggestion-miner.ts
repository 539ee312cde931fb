// Mines typeahead suggestions from documents: brands, categories, short attributes, whole
// product titles, and the phrases people actually type, found as word n-grams of titles that
// several products share. Phrases are cut at title separators ("Samsung - Galaxy S7 (Black)" has
// no phrase across "(", ")" or " - "), may not start or end with a stop word, must be "closed"
// (a phrase always followed by the same word is replaced by the longer one), and are weighted by
// cohesion so that incidental neighbours ("memory prepaid") rank below real phrases ("cell
// phone"). Every weight is a sum over supporting documents, so counts from different segments
// and index parts add up.
import { FNV_OFFSET, FNV_PRIME, fnv1aUnits } from '../../node/runtime/hash.js';
import { decodeEntities } from '../../node/runtime/text/normalize.js';
import { singular, words } from '../../node/runtime/text/tokenize.js';
import type { DocFields } from './doc-fields.js';

export const SUGGESTION_TYPES = ['query', 'brand', 'category', 'attribute', 'product'] as const;
export type SuggestionType = (typeof SUGGESTION_TYPES)[number];
export const SUG = { query: 0, brand: 1, category: 2, attribute: 3, product: 4 } as const;

/** Ranking weight of each type relative to a mined phrase with the same support. */
export const TYPE_FACTOR: Record<SuggestionType, number> = { query: 1, brand: 1.25, category: 1.1, attribute: 0.5, product: 0.7 };

export interface MinedSuggestion {
  /** normalized words joined by single spaces */
  key: string;
  display: string;
  type: number;
  /** sum of the weights of the supporting documents */
  weight: number;
  count: number;
  /** the heaviest supporting document (the product a product suggestion stands for) */
  bestDoc: number;
  /** phrase quality in (0, 1]: cohesion of mined phrases, 1 for everything else */
  quality: number;
}

export interface MinedSuggestions {
  suggestions: MinedSuggestion[];
  /** document ordinal -> indexes into `suggestions` it supports (CSR) */
  docOffsets: Uint32Array;
  docSuggestions: Uint32Array;
}

export interface MinerOptions {
  /** documents a phrase or attribute needs before it is suggested (default 2) */
  minSupport?: number;
  /** longest phrase in words (default 4) */
  maxWords?: number;
}

const STOPWORDS = new Set([
  'a', 'an', 'and', 'or', 'the', 'of', 'for', 'with', 'w', 'in', 'on', 'at', 'to', 'by', 'from', 'as', 'is', 'are',
  'x', 'vs', 'per', 'into', 'onto', 'over', 'under', 'up', 'out', 'only', 'not', 'no', 'incl', 'includes', 'including',
  'without', 'w/o', 'plus', 'your', 'you', 'our', 'this', 'that', 'its', 'it', 'all', 'new',
  'most', 'select', 'some', 'many', 'various', 'other', 'more', 'certain', 'any', 'each', 'every', 'compatible', 'fits',
]);

const SEPARATOR_WORD = /^[\p{P}\p{S}]+$/u;
const GLUE_WORD = /^[&+]$/;
const OPENERS = /^[([{"']+/;
const CLOSERS = /[)\]},;:!?"]+$|\.+$/;
const NUMERIC_KEY = /^[\d./, -]+$/;
const WHOLE_NUMBER = /^\d{1,4}$/;
const FRACTION_START = /^\d{1,3}\/\d/;
const MARKS = /[\u2122\u00ae\u00a9]/g;
/** share of a word's occurrences followed by the same next word above which it is no phrase end */
const CONTINUATION_SHARE = 0.8;
/** pair keys: word id * WORD_SPACE + next word group id (exact in a double up to 2^26 words) */
const WORD_SPACE = 2 ** 26;
/** a phrase is dropped when one longer phrase covers this share of its documents */
const CLOSED_SHARE = 0.9;
/**
 * Product suggestions are keyed by the start of their title: nobody types further, and variants
 * that differ only after it (colours, sizes) collapse into one suggestion.
 */
export const MAX_PRODUCT_KEY_CHARS = 48;
// Units start no phrase ("ft PVC" from "10 ft. PVC"); a number starts one only before a unit.
const UNIT_WORDS = new Set(['in', 'inch', 'inches', 'ft', 'feet', 'foot', 'yd', 'mm', 'cm', 'm', 'gal', 'gallon', 'qt', 'pt', 'oz', 'lb', 'lbs', 'kg', 'g', 'l', 'ml', 'w', 'v', 'a', 'amp', 'watt', 'volt', 'pk', 'pack', 'pc', 'pcs', 'piece', 'ct', 'count', 'sq', 'cu', 'gauge', 'mah', 'gb', 'tb', 'mb', 'hz', 'ghz']);
const MAX_KEY_CHARS = 200;
const ITEM_CACHE_SIZE = 500_000;

interface Item {
  display: string;
  key: string;
  hash: number;
  numeric: boolean;
  /** can start or end a phrase */
  content: boolean;
  breakBefore: boolean;
  breakAfter: boolean;
}

interface DocRecord {
  doc: number;
  weight: number;
  fields: DocFields;
  items: Item[];
  spans: [number, number][];
  brandKey: string;
  brand: string;
  /** span mined a second time with the brand in front (-1: none) */
  anchoredSpan: number;
}

/** Counters for phrase hashes: pass one counts, pass two materializes only repeated phrases. */
const HASH_BITS = 22;

/**
 * The counters (4 MB) are the thread's, not each miner's: a build of one fresh document used to
 * allocate and clear all of them. A miner takes them in its constructor and gives them back
 * cleared (only the slots it touched) when it finishes. While a miner that has not finished is
 * alive, another gets counters of its own; once it is gone unfinished (its build failed), the
 * next clears them whole.
 */
let sharedCounts: Uint8Array | null = null;
let countsHolder: WeakRef<object> | null = null;
function takeCounts(holder: object): Uint8Array {
  if (countsHolder !== null) {
    if (countsHolder.deref() !== undefined) return new Uint8Array(1 << HASH_BITS);
    (sharedCounts as Uint8Array).fill(0);
  }
  sharedCounts ??= new Uint8Array(1 << HASH_BITS);
  countsHolder = new WeakRef(holder);
  return sharedCounts;
}
function returnCounts(holder: object, counts: Uint8Array, touched: readonly number[]): void {
  if (counts !== sharedCounts || countsHolder?.deref() !== holder) return;
  if (touched.length > counts.length >>> 4) counts.fill(0);
  else for (const at of touched) counts[at] = 0;
  countsHolder = null;
}

export class SuggestionMiner {
  private readonly minSupport: number;
  private readonly maxWords: number;
  private readonly ids = new Map<string, number>();
  private readonly displays: string[] = [];
  // one entry per candidate key (parallel arrays keep the candidates unboxed)
  private readonly typeBits: number[] = [];
  private readonly weight: number[] = [];
  private readonly count: number[] = [];
  private readonly productCount: number[] = [];
  private readonly lastDoc: number[] = [];
  private readonly bestDoc: number[] = [];
  private readonly bestWeight: number[] = [];
  private readonly nWords: number[] = [];
  /** documents where the phrase starts a title segment (or follows a stop word or the brand) */
  private readonly startCount: number[] = [];
  private readonly lastStartDoc: number[] = [];
  private readonly firstLen: number[] = [];
  private readonly lastLen: number[] = [];
  /** (document, candidate) support links, in any order */
  private readonly linkDoc: number[] = [];
  private readonly linkSug: number[] = [];
  private docs = 0;
  private readonly records: DocRecord[] = [];
  private readonly itemCache = new Map<string, Item>();
  private readonly phraseCounts = takeCounts(this);
  /** counter slots this miner set, cleared when it finishes */
  private readonly touchedSlots: number[] = [];
  /** title words by id, their occurrences, and (word, next word's singular) pair counts */
  private readonly wordIds = new Map<string, number>();
  private readonly wordList: string[] = [];
  private readonly wordGroup: number[] = [];
  private readonly occurrences: number[] = [];
  private readonly pairs = new Map<number, number>();
  /** brand + category phrase -> its category key */
  private readonly combos = new Map<number, string>();
  /** brand key -> how often each spelling of it was seen ("OtterBox" 40, "Otterbox" 3) */
  private readonly brandSpellings = new Map<string, Map<string, number>>();

  constructor(options: MinerOptions = {}) {
    this.minSupport = options.minSupport ?? 2;
    this.maxWords = options.maxWords ?? 4;
  }

  /** Documents must be added in ordinal order 0, 1, 2... */
  addDocument(doc: number, fields: DocFields, docWeight: number): void {
    if (doc !== this.docs) throw new Error(`suggestion miner expects document ${this.docs}, got ${doc}`);
    const brandKey = fields.brand ? words(fields.brand).join(' ') : '';
    if (brandKey) {
      let spellings = this.brandSpellings.get(brandKey);
      if (spellings === undefined) this.brandSpellings.set(brandKey, (spellings = new Map()));
      spellings.set(fields.brand, (spellings.get(fields.brand) ?? 0) + 1);
    }
    this.addTitle(fields, brandKey, doc, docWeight);
    this.docs++;
  }

  /** Candidates of one document, touched in document order so support is counted once per doc. */
  private touchDocument(r: DocRecord, brands: ReadonlyMap<string, string>): void {
    const { fields, brandKey, doc, weight } = r;
    // every suggestion that shows the brand shows its most frequent spelling
    const brand = brands.get(brandKey) ?? fields.brand;
    r.brand = brand;
    if (brandKey) this.touch(brandKey, SUG.brand, brand, doc, weight, 1, brandKey.length, brandKey.length);
    for (const c of fields.categories) {
      const key = words(c).join(' ');
      if (!key) continue;
      this.touch(key, SUG.category, c, doc, weight, 1, key.length, key.length);
      // "Samsung Cell Phones": what people type to narrow a brand down
      if (brandKey && !key.includes(brandKey)) {
        const combo = `${brandKey} ${key}`;
        this.touch(combo, SUG.query, `${brand} ${c}`, doc, weight, 2, brandKey.length, key.length);
        this.combos.set(this.ids.get(combo) as number, key);
      }
    }
    for (const a of fields.attrs) {
      const key = words(a).join(' ');
      if (key && key.length >= 2) this.touch(key, SUG.attribute, a, doc, weight, 1, key.length, key.length);
    }
    if (r.items.length === 0) return;
    const titleKey = productKey(r.items);
    // the display of a product is its title, read from the stored document
    if (titleKey) this.touch(titleKey, SUG.product, '', doc, weight, 1, 0, 0);
    this.phrases(
      r,
      (hash) => (this.phraseCounts[hash >>> (32 - HASH_BITS)] as number) >= this.minSupport,
      (key, display, n, firstLen, lastLen, atStart) => this.touch(key, SUG.query, display, doc, weight, n, firstLen, lastLen, atStart),
    );
  }

  private addTitle(fields: DocFields, brandKey: string, doc: number, w: number): void {
    const items = fields.title ? splitTitle(fields.title, this.itemCache) : [];
    const titleKey = items.map((it) => it.key).filter((k) => k).join(' ');

    // spans between separators
    const spans: [number, number][] = [];
    let start = -1;
    for (let i = 0; i < items.length; i++) {
      const it = items[i] as Item;
      if (it.key === '' && !GLUE_WORD.test(it.display)) {
        if (start >= 0) spans.push([start, i]);
        start = -1;
        continue;
      }
      if (start < 0 || it.breakBefore) {
        if (start >= 0) spans.push([start, i]);
        start = i;
      }
      if (it.breakAfter) {
        spans.push([start, i + 1]);
        start = -1;
      }
    }
    if (start >= 0) spans.push([start, items.length]);

    for (const [lo, hi] of spans) {
      let prev = -1;
      for (let i = lo; i < hi; i++) {
        const it = items[i] as Item;
        if (!it.content) {
          prev = -1;
          continue;
        }
        const id = this.wordId(it.key);
        this.occurrences[id] = (this.occurrences[id] as number) + 1;
        if (prev >= 0) {
          const pair = prev * WORD_SPACE + (this.wordGroup[id] as number);
          this.pairs.set(pair, (this.pairs.get(pair) ?? 0) + 1);
        }
        prev = id;
      }
    }

    // Titles shaped "Brand - Model ..." or missing the brand: also suggest "brand model ...",
    // which is how people type it.
    let anchoredSpan = -1;
    if (brandKey && spans.length > 0) {
      const first = spans[0] as [number, number];
      if (spanKey(items, first[0], first[1]) === brandKey) anchoredSpan = spans.length > 1 ? 1 : -1;
      else if (!titleKey.includes(brandKey)) anchoredSpan = 0;
    }
    const record: DocRecord = { doc, weight: w, fields, items, spans, brandKey, brand: fields.brand, anchoredSpan };
    this.records.push(record);
    this.phrases(record, (hash) => {
      const at = hash >>> (32 - HASH_BITS);
      const c = this.phraseCounts[at] as number;
      if (c === 0) this.touchedSlots.push(at);
      if (c < 255) this.phraseCounts[at] = c + 1;
    });
  }

  /** Interned id of a title word; its group is the id of its singular (plural and singular count together). */
  private wordId(word: string): number {
    let id = this.wordIds.get(word);
    if (id !== undefined) return id;
    id = this.wordList.length;
    this.wordIds.set(word, id);
    this.wordList.push(word);
    this.occurrences.push(0);
    this.wordGroup.push(id);
    const one = singular(word);
    if (one !== null) this.wordGroup[id] = this.wordId(one);
    return id;
  }

  /**
   * Enumerates the phrases of a title: word n-grams inside each span that start and end with a
   * content word, plus the brand-anchored ones. Calls `visit` with a hash of the key; when it
   * answers true and `emit` is given, builds the key and display and emits them.
   */
  private phrases(t: DocRecord, visit: (hash: number) => boolean | void, emit?: (key: string, display: string, n: number, firstLen: number, lastLen: number, atStart: boolean) => void): void {
    const { items, spans } = t;
    const brandHash = t.brandKey ? fnv1aUnits(t.brandKey) : 0;
    const runSpan = (lo: number, hi: number, anchored: boolean): void => {
      const maxStart = anchored ? lo + 1 : hi;
      for (let i = lo; i < maxStart; i++) {
        const first = items[i] as Item;
        if (!first.content) continue;
        if (!anchored && (UNIT_WORDS.has(first.key) || (first.numeric && !UNIT_WORDS.has(items[i + 1]?.key ?? '')))) continue;
        const atStart = anchored || i === lo || !(items[i - 1] as Item).content;
        let hash = anchored ? brandHash : FNV_OFFSET;
        let n = anchored ? 1 : 0;
        let numeric = true;
        let chars = anchored ? t.brandKey.length : -1;
        for (let j = i; j < hi && n < this.maxWords + (anchored ? 1 : 0); j++) {
          const it = items[j] as Item;
          if (it.key) {
            hash = Math.imul(hash ^ it.hash, FNV_PRIME) >>> 0;
            n++;
            chars += it.key.length + 1;
            if (!it.numeric) numeric = false;
          }
          if (!it.content || numeric || chars > MAX_KEY_CHARS) continue;
          if (n === 1 && it.key.length < 2) continue;
          const frequent = visit(mix(hash));
          if (frequent === true && emit) {
            const keys: string[] = anchored ? [t.brandKey] : [];
            const displays: string[] = anchored ? [t.brand] : [];
            for (let x = i; x <= j; x++) {
              const ix = items[x] as Item;
              if (ix.key) keys.push(ix.key);
              displays.push(ix.display);
            }
            emit(keys.join(' '), displays.join(' '), n, anchored ? t.brandKey.length : first.key.length, it.key.length, atStart);
          }
        }
      }
    };
    for (const [lo, hi] of spans) runSpan(lo, hi, false);
    const anchored = t.anchoredSpan >= 0 ? spans[t.anchoredSpan] : undefined;
    if (anchored) runSpan(anchored[0], anchored[1], true);
  }

  private touch(key: string, type: number, display: string, doc: number, w: number, n: number, firstLen: number, lastLen: number, atStart = true): void {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = this.displays.length;
      this.ids.set(key, id);
      this.displays.push(display);
      this.typeBits.push(0);
      this.weight.push(0);
      this.count.push(0);
      this.productCount.push(0);
      this.lastDoc.push(-1);
      this.bestDoc.push(doc);
      this.bestWeight.push(-1);
      this.nWords.push(n);
      this.startCount.push(0);
      this.lastStartDoc.push(-1);
      this.firstLen.push(firstLen);
      this.lastLen.push(lastLen);
    } else if (this.displays[id] === '' && display !== '') {
      // a key first seen as a whole product title has no display of its own (a product shows
      // its stored title); the phrase that shares it, which it may become, shows this one
      this.displays[id] = display;
    }
    this.typeBits[id] = (this.typeBits[id] as number) | (1 << type);
    if (type === SUG.product) this.productCount[id] = (this.productCount[id] as number) + 1;
    if (atStart && this.lastStartDoc[id] !== doc) {
      this.lastStartDoc[id] = doc;
      this.startCount[id] = (this.startCount[id] as number) + 1;
    }
    if (this.lastDoc[id] === doc) return;
    this.lastDoc[id] = doc;
    this.count[id] = (this.count[id] as number) + 1;
    this.weight[id] = (this.weight[id] as number) + w;
    if (w > (this.bestWeight[id] as number)) {
      this.bestWeight[id] = w;
      this.bestDoc[id] = doc;
    }
    this.linkDoc.push(doc);
    this.linkSug.push(id);
  }

  finish(): MinedSuggestions {
    // pass two: materialize candidates, phrases only when their hash was seen often enough
    const brands = new Map<string, string>();
    for (const [key, spellings] of this.brandSpellings) {
      let best = '';
      let most = 0;
      for (const [spelling, n] of spellings) {
        if (n > most) {
          best = spelling;
          most = n;
        }
      }
      brands.set(key, best);
    }
    this.brandSpellings.clear();
    for (const r of this.records) this.touchDocument(r, brands);
    returnCounts(this, this.phraseCounts, this.touchedSlots);
    this.touchedSlots.length = 0;
    this.records.length = 0;
    this.itemCache.clear();
    const total = this.displays.length;
    const keys = new Array<string>(total);
    for (const [k, id] of this.ids) keys[id] = k;
    const count = this.count;
    const countOf = (key: string): number => {
      const id = this.ids.get(key);
      return id === undefined ? 0 : (count[id] as number);
    };
    const types = new Uint8Array(total);
    const keep = new Uint8Array(total);
    for (let id = 0; id < total; id++) {
      const bits = this.typeBits[id] as number;
      const c = count[id] as number;
      let type: number;
      if (bits & (1 << SUG.brand)) type = SUG.brand;
      else if (bits & (1 << SUG.category)) type = SUG.category;
      else if (bits & (1 << SUG.product) && (this.productCount[id] as number) >= c) type = SUG.product;
      else if (bits & (1 << SUG.query)) type = SUG.query;
      else if (bits & (1 << SUG.attribute)) type = SUG.attribute;
      else type = SUG.product;
      types[id] = type;
      keep[id] = type === SUG.brand || type === SUG.category || type === SUG.product || c >= this.minSupport ? 1 : 0;
    }
    const isPhrase = (id: number): boolean => types[id] === SUG.query && keep[id] === 1;

    // "Brand + category" is only useful for categories that narrow the catalogue down.
    for (const [id, categoryKey] of this.combos) {
      if (isPhrase(id) && countOf(categoryKey) * 2 > this.docs) keep[id] = 0;
    }

    // A word that nearly always continues the same way ("cell" -> "phone(s)") cannot end a
    // phrase (plural and singular next words count together).
    const topNext = new Array<number>(this.wordList.length).fill(0);
    for (const [pair, c] of this.pairs) {
      const w = Math.floor(pair / WORD_SPACE);
      if (c > (topNext[w] as number)) topNext[w] = c;
    }
    const continues = new Set<string>();
    this.wordList.forEach((word, w) => {
      const c = this.occurrences[w] as number;
      if (c > 0 && (topNext[w] as number) >= CONTINUATION_SHARE * c) continues.add(word);
    });
    for (let id = 0; id < total; id++) {
      if (!isPhrase(id)) continue;
      const key = keys[id] as string;
      const last = key.slice(key.length - (this.lastLen[id] as number));
      if (continues.has(last) || (last.length === 1 && !/\d/.test(last))) keep[id] = 0;
    }

    // Closed phrases: drop a phrase when one longer phrase covers all of its documents.
    const longest = new Uint32Array(total);
    for (let id = 0; id < total; id++) {
      if (!isPhrase(id) || (this.nWords[id] as number) < 2) continue;
      const key = keys[id] as string;
      const c = count[id] as number;
      const left = this.ids.get(key.slice((this.firstLen[id] as number) + 1));
      const right = this.ids.get(key.slice(0, key.length - (this.lastLen[id] as number) - 1));
      if (left !== undefined && c > (longest[left] as number)) longest[left] = c;
      if (right !== undefined && c > (longest[right] as number)) longest[right] = c;
    }
    for (let id = 0; id < total; id++) {
      if (isPhrase(id) && (longest[id] as number) >= CLOSED_SHARE * (count[id] as number)) keep[id] = 0;
    }

    const remap = new Int32Array(total).fill(-1);
    const suggestions: MinedSuggestion[] = [];
    for (let id = 0; id < total; id++) {
      if (!keep[id]) continue;
      remap[id] = suggestions.length;
      const key = keys[id] as string;
      const c = count[id] as number;
      let quality = 1;
      if (types[id] === SUG.query && (this.nWords[id] as number) >= 2) {
        // cohesion: how often the phrase's first and last words occur inside it
        const firstCount = countOf(key.slice(0, this.firstLen[id] as number));
        const lastCount = countOf(key.slice(key.length - (this.lastLen[id] as number)));
        const cohesion = c / Math.max(c, firstCount, lastCount);
        quality = 0.35 + 0.65 * Math.sqrt(cohesion);
      }
      if (types[id] === SUG.query) {
        // fragments of longer names ("Series Case for ...") rarely start a title segment
        quality *= 0.4 + (0.6 * (this.startCount[id] as number)) / c;
      }
      const display = this.displays[id] as string;
      suggestions.push({
        key,
        display: types[id] === SUG.query ? cleanDisplay(display.replace(MARKS, '')) : cleanDisplay(display),
        type: types[id] as number,
        weight: this.weight[id] as number,
        count: c,
        bestDoc: this.bestDoc[id] as number,
        quality,
      });
    }
    // support links grouped by document (counting sort)
    const docOffsets = new Uint32Array(this.docs + 1);
    const linkDoc = this.linkDoc;
    const linkSug = this.linkSug;
    for (let i = 0; i < linkDoc.length; i++) {
      const d = linkDoc[i] as number;
      if ((remap[linkSug[i] as number] as number) >= 0) docOffsets[d + 1] = (docOffsets[d + 1] as number) + 1;
    }
    for (let d = 0; d < this.docs; d++) docOffsets[d + 1] = (docOffsets[d + 1] as number) + (docOffsets[d] as number);
    const links = new Uint32Array(docOffsets[this.docs] as number);
    const fill = docOffsets.slice(0, this.docs);
    for (let i = 0; i < linkDoc.length; i++) {
      const r = remap[linkSug[i] as number] as number;
      if (r < 0) continue;
      const d = linkDoc[i] as number;
      links[fill[d] as number] = r;
      fill[d] = (fill[d] as number) + 1;
    }
    return { suggestions, docOffsets, docSuggestions: links };
  }
}

/**
 * The words of a title with their keys. Items are immutable and shared between titles through
 * `cache` (raw word -> item): catalogues repeat their words, and tokenizing each distinct word
 * once is most of the mining cost saved.
 */
function splitTitle(title: string, cache: Map<string, Item>): Item[] {
  const items: Item[] = [];
  const raw = title.split(/\s+/);
  for (let i = 0; i < raw.length; i++) {
    let rawWord = raw[i] as string;
    if (!rawWord) continue;
    // "1 1/2" is one word, the mixed number "1-1/2", shown as written
    const next = raw[i + 1];
    if (next !== undefined && WHOLE_NUMBER.test(rawWord) && FRACTION_START.test(next) && words(`${rawWord} ${next}`).length === words(next).length) {
      rawWord = `${rawWord} ${next}`;
      i++;
    }
    let item = cache.get(rawWord);
    if (item === undefined) {
      item = makeItem(rawWord);
      if (cache.size < ITEM_CACHE_SIZE) cache.set(rawWord, item);
    }
    items.push(item);
  }
  return items;
}

function makeItem(rawWord: string): Item {
  if (SEPARATOR_WORD.test(rawWord) && !GLUE_WORD.test(rawWord)) {
    return { display: rawWord, key: '', hash: 0, numeric: false, content: false, breakBefore: true, breakAfter: true };
  }
  const breakBefore = OPENERS.test(rawWord);
  const breakAfter = /[)\]},;:]$/.test(rawWord);
  let display = rawWord.replace(OPENERS, '');
  // keep the inch mark of 55" and the dot of decimals, drop closing punctuation
  if (!/\d["']$/.test(display)) display = display.replace(CLOSERS, '');
  const key = words(rawWord).join(' ');
  const glue = GLUE_WORD.test(rawWord);
  return { display: display || rawWord, key, hash: fnv1aUnits(key), numeric: NUMERIC_KEY.test(key), content: key !== '' && !glue && !STOPWORDS.has(key), breakBefore, breakAfter };
}

/** Final avalanche so the top bits (the counter slot) depend on every word. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function productKey(items: Item[]): string {
  let key = '';
  for (const it of items) {
    if (!it.key) continue;
    const next = key ? `${key} ${it.key}` : it.key;
    if (next.length > MAX_PRODUCT_KEY_CHARS) return key || next.slice(0, MAX_PRODUCT_KEY_CHARS);
    key = next;
  }
  return key;
}

function spanKey(items: Item[], lo: number, hi: number): string {
  const parts: string[] = [];
  for (let i = lo; i < hi; i++) if ((items[i] as Item).key) parts.push((items[i] as Item).key);
  return parts.join(' ');
}

function cleanDisplay(s: string): string {
  return decodeEntities(s).replace(/\s+/g, ' ').trim();
}
