// The tokenizer shared by the router and the search engine. Owns what a "word" is: how
// punctuation, hyphens, apostrophes, numbers with units, fractions and CJK text become terms, and
// which extra forms (split parts, canonical units, singular forms) are emitted beside each word
// so that "65in", "65 in" and "65 inch" meet. Dependency-free; input goes through `normalize`.
import { normalize } from './normalize.js';

/**
 * `word`: the term as written (one per position; these form the display stream).
 * `part`: a piece of a compound word at the same position ("rtx4090" -> "rtx", "4090").
 * `alt`: an equivalent spelling at the same position (canonical unit, singular form).
 */
export type TokenKind = 'word' | 'part' | 'alt';

export interface Token {
  term: string;
  /** index of the word in the text; parts and alternatives share their word's position */
  pos: number;
  kind: TokenKind;
}

/** Receives tokens as they are found (no token objects are allocated). */
export type TokenSink = (term: string, pos: number, kind: TokenKind) => void;

export interface TokenizeOptions {
  /** the input is already the output of `normalize` */
  normalized?: boolean;
  /** emit parts and alternatives (default true); suggestion keys use words only */
  variants?: boolean;
  /**
   * The text is a query someone typed: a foot mark after a number also reads as inches
   * ("36' door" -> "36ft" + alt "36in"). Shoppers type `'` for `"`, which needs the shift key;
   * titles are written with care and keep the foot.
   */
  query?: boolean;
}

/** Longer runs are cut: they are URLs, hashes or glued text, never something a user types. */
export const MAX_TERM_LENGTH = 64;

// A pictograph (emoji) is a word of its own, wherever it stands ("pizza🍕" -> "pizza", "🍕")
const PICTOGRAPH = /\p{Extended_Pictographic}/u;
// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;
const CJK_CHAR = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}\u30fc\u3005]/u;
const CJK_RUN = /[\p{sc=Han}\p{sc=Hiragana}\p{sc=Katakana}\p{sc=Hangul}\u30fc\u3005]+/gu;
// A run of word characters and the punctuation that can sit inside a word.
const RUN = /[\p{L}\p{M}\p{N}'&+_./,"#\u200c-]+|\p{Extended_Pictographic}/gu;
const ALNUM = /[\p{L}\p{M}\p{N}]+/gu;
const DIGITS = /^\p{Nd}+$/u;
// a number: "12", "54.6", "1/2", "1,000", or a mixed number "1-1/2" (one and a half)
const NUMBER = /^\p{Nd}+(?:-\p{Nd}+\/\p{Nd}+|(?:[.,/]\p{Nd}+)*)$/u;
// the whole number and the fraction of a mixed number at the start of a piece ("1-1/2in")
const MIXED = /^(\p{Nd}+)-(\p{Nd}+\/\p{Nd}+)/u;
// a whole number, a space and a proper fraction: "1 1/2" is written for "1-1/2"
const SPACED_MIXED = /(?<![\p{L}\p{N}.,/-])(\p{Nd}{1,4}) (\p{Nd}{1,3})\/(\p{Nd}{1,3})(?![\p{N}/])/gu;
const LETTER_DIGIT_BOUNDARY = /(?<=\p{Nd})(?=[\p{L}\p{M}])|(?<=[\p{L}\p{M}])(?=\p{Nd})/u;
const LATIN_WORD = /^[a-z]+$/;
// punctuation that joins the pieces on either side into one word with parts ("i-phone"); the
// zero-width non-joiner of a Persian or Indic word among them ("می\u200cخواهم")
const JOINERS = '-&+_.\u200c';

// Units a shopper writes in many ways; the canonical form is emitted as an alternative when the
// word follows a number (so "in" the preposition is left alone).
const UNITS = new Map<string, string>(Object.entries({
  inch: 'in', inches: 'in', in: 'in', '"': 'in',
  foot: 'ft', feet: 'ft', ft: 'ft', "'": 'ft',
  yard: 'yd', yards: 'yd', yd: 'yd',
  millimeter: 'mm', millimeters: 'mm', millimetre: 'mm', millimetres: 'mm', mm: 'mm',
  centimeter: 'cm', centimeters: 'cm', centimetre: 'cm', centimetres: 'cm', cm: 'cm',
  meter: 'm', meters: 'm', metre: 'm', metres: 'm',
  gallon: 'gal', gallons: 'gal', gal: 'gal',
  quart: 'qt', quarts: 'qt', qt: 'qt', pint: 'pt', pints: 'pt',
  ounce: 'oz', ounces: 'oz', oz: 'oz',
  pound: 'lb', pounds: 'lb', lbs: 'lb', lb: 'lb',
  kilogram: 'kg', kilograms: 'kg', kgs: 'kg', kg: 'kg',
  gram: 'g', grams: 'g', gm: 'g', gms: 'g', gr: 'g',
  liter: 'l', liters: 'l', litre: 'l', litres: 'l', ltr: 'l', ltrs: 'l',
  milliliter: 'ml', milliliters: 'ml', millilitre: 'ml', ml: 'ml',
  watt: 'w', watts: 'w', volt: 'v', volts: 'v', amp: 'a', amps: 'a', ampere: 'a', amperes: 'a',
  terabyte: 'tb', terabytes: 'tb', gigabyte: 'gb', gigabytes: 'gb', megabyte: 'mb', megabytes: 'mb',
  hertz: 'hz', pack: 'pk', pk: 'pk', piece: 'pc', pieces: 'pc', pcs: 'pc', pc: 'pc',
}));

// Plural forms that the suffix rules below would damage.
const NOT_PLURAL = new Set(['series', 'species', 'news', 'lens', 'always', 'perhaps', 'this', 'his', 'has', 'was', 'does', 'gas', 'glass', 'class', 'canvas', 'atlas', 'chaos', 'bus', 'plus', 'status', 'cactus', 'corpus', 'virus', 'bonus', 'campus', 'analysis', 'basis', 'axis', 'tennis', 'chassis', 'bias', 'alias', 'iris', 'dress', 'mattress', 'access', 'wireless', 'cordless', 'stainless', 'seamless', 'less', 'windows', 'mens', 'womens', 'kids', 'jeans', 'pants', 'shorts', 'scissors', 'pliers', 'tweezers', 'goggles', 'glasses', 'headphones', 'earbuds', 'speakers']);

/**
 * Singular form of an English plural (a light "s-stemmer"), or null when the word is not one.
 * Words people use in the plural as product names (jeans, headphones) are left alone.
 */
export function singular(word: string): string | null {
  const n = word.length;
  if (n < 4 || !LATIN_WORD.test(word) || NOT_PLURAL.has(word) || word.charCodeAt(n - 1) !== 115 /* s */) return null;
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) return word.slice(0, -3) + 'y';
  if (word.endsWith('sses') || word.endsWith('xes') || word.endsWith('ches') || word.endsWith('shes') || word.endsWith('zzes')) return word.slice(0, -2);
  if (word.endsWith('ss') || word.endsWith('us') || word.endsWith('is') || word.endsWith('ous')) return null;
  return word.slice(0, -1);
}

/**
 * Splits text into terms. Every output term is normalized; positions count words.
 *
 * - apostrophes are dropped: "men's" -> "mens"
 * - hyphen, ampersand, plus, underscore, inner dots and the zero-width non-joiner join:
 *   "i-phone" -> "iphone" + parts "i", "phone"; "at&t" -> "att" + "at", "t"
 * - letters and digits split as parts: "65in" -> "65in" + "65", "in"; "rtx4090" -> "rtx", "4090"
 * - numbers keep decimals and fractions: "54.6", "1/2", "1,000" -> "1000"; `55"` -> "55in"
 * - a mixed number is one word with its whole number and fraction as parts: "1-1/2" and
 *   "1 1/2" -> "1-1/2" + parts "1", "1/2" (so "1/2 in" ranks 1/2 in. above 1-1/2 in.)
 * - units after a number get their canonical form, and the two joined: "36 inches" -> "inches"
 *   + alts "in", "36in" (so "36in" finds "36 inches" even when the index knows "36in")
 * - plural words get their singular as an alternative: "drills" + alt "drill"
 * - CJK (Han, Kana, Hangul) runs become overlapping character bigrams
 * - a pictograph (emoji) is a word of its own
 * - other scripts are kept whole, including their combining marks
 */
export function tokenize(text: string, options: TokenizeOptions = {}): Token[] {
  const out: Token[] = [];
  forEachToken(text, (term, pos, kind) => out.push({ term, pos, kind }), options);
  return out;
}

/**
 * `tokenize` without the array: calls `sink` for every token, in order. Returns the number of
 * words (positions) found. Indexing uses this form.
 */
export function forEachToken(text: string, sink: TokenSink, options: TokenizeOptions = {}): number {
  const s = joinSpacedMixed(options.normalized ? text : normalize(text));
  const variants = options.variants ?? true;
  const hasCjk = CJK_CHAR.test(s);
  const src = hasCjk ? s.replace(CJK_RUN, ' $& ') : s;
  const hasPictographs = NON_ASCII.test(s) && PICTOGRAPH.test(s);
  let pos = 0;
  // the number the previous word ended with ("5" of "5 kg"), for the unit after it
  let prevNumber: string | null = null;
  for (const m of src.matchAll(RUN)) {
    const run = m[0];
    if (hasCjk && CJK_CHAR.test(run)) {
      pos = emitCjk(run, pos, sink);
      prevNumber = null;
      continue;
    }
    if (hasPictographs && PICTOGRAPH.test(run)) {
      sink(run, pos++, 'word');
      prevNumber = null;
      continue;
    }
    const shape = asciiShape(run);
    if (shape === LOWER) {
      // the common case, a plain lower-case word: no parts, maybe a unit or a singular
      emitPlain(run, pos, prevNumber, variants, sink);
      prevNumber = null;
      pos++;
      continue;
    }
    if (shape === DIGITS_ONLY) {
      sink(clip(run), pos, 'word');
      prevNumber = run;
      pos++;
      continue;
    }
    for (const word of splitRun(run)) {
      emitWord(word, pos, prevNumber, variants, sink, options.query === true);
      const lastSeg = word.segs[word.segs.length - 1] ?? '';
      prevNumber = NUMBER.test(lastSeg) ? lastSeg : null;
      pos++;
    }
  }
  return pos;
}

/** The word terms of a text, in order: what suggestion keys and `normalized_query` are made of. */
export function words(text: string, options: { normalized?: boolean } = {}): string[] {
  return tokenize(text, { normalized: options.normalized ?? false, variants: false }).map((t) => t.term);
}

interface RunWord {
  /** pieces joined by hyphen-like punctuation, already merged over apostrophes and decimals */
  segs: string[];
  /** a unit written as a quote mark after the number (`55"`, `6'`) */
  quoteUnit: string | null;
}

function splitRun(run: string): RunWord[] {
  const segs: string[] = [];
  const seps: string[] = [];
  let last = 0;
  for (const m of run.matchAll(ALNUM)) {
    const idx = m.index ?? 0;
    seps.push(run.slice(last, idx));
    segs.push(m[0]);
    last = idx + m[0].length;
  }
  const tail = run.slice(last);
  const result: RunWord[] = [];
  if (segs.length === 0) return result;
  let cur: RunWord = { segs: [segs[0] as string], quoteUnit: null };
  for (let i = 1; i < segs.length; i++) {
    const sep = seps[i] as string;
    const seg = segs[i] as string;
    const prevSegs = cur.segs;
    const prev = prevSegs[prevSegs.length - 1] as string;
    const prevDigit = endsWithDigit(prev);
    const curDigit = startsWithDigit(seg);
    if (sep === "'") {
      prevSegs[prevSegs.length - 1] = prev + seg;
    } else if (sep === '-' && seps[i + 1] === '/' && DIGITS.test(prev) && DIGITS.test(seg) && isFractionDenominator(segs[i + 1] as string)) {
      // a mixed number, "1-1/2": one piece (its denominator may carry a unit, "1-1/2in")
      prevSegs[prevSegs.length - 1] = `${prev}-${seg}/${segs[i + 1] as string}`;
      i++;
    } else if ((sep === '.' || sep === '/') && prevDigit && curDigit && isFractionDenominator(seg)) {
      prevSegs[prevSegs.length - 1] = prev + sep + seg;
    } else if (sep === ',' && prevDigit && /^\p{Nd}{3}(?!\p{Nd})/u.test(seg)) {
      prevSegs[prevSegs.length - 1] = prev + seg;
    } else if (sep.length === 1 && JOINERS.includes(sep) && !(sep === '-' && prevDigit && curDigit && NUMBER.test(prev) && NUMBER.test(seg))) {
      prevSegs.push(seg);
    } else {
      // a quote between two pieces ends the first one as a unit: 2"x4" -> 2in, x4in
      if ((sep === '"' || sep.startsWith('"')) && prevDigit) cur.quoteUnit = 'in';
      result.push(cur);
      cur = { segs: [seg], quoteUnit: null };
    }
  }
  if (tail.length > 0 && endsWithDigit(cur.segs[cur.segs.length - 1] as string)) {
    if (tail[0] === '"') cur.quoteUnit = 'in';
    else if (tail[0] === "'") cur.quoteUnit = 'ft';
  }
  result.push(cur);
  return result;
}

function emitWord(word: RunWord, pos: number, afterNumber: string | null, variants: boolean, sink: TokenSink, query = false): void {
  const segs = word.quoteUnit ? [...word.segs.slice(0, -1), (word.segs[word.segs.length - 1] as string) + word.quoteUnit] : word.segs;
  const term = clip(segs.join(''));
  sink(term, pos, 'word');
  if (!variants) return;
  const seen = new Set<string>([term]);
  const add = (t: string, kind: TokenKind): void => {
    const c = clip(t);
    if (c.length === 0 || seen.has(c)) return;
    seen.add(c);
    sink(c, pos, kind);
  };
  if (query && word.quoteUnit === 'ft') add(`${word.segs[word.segs.length - 1] as string}in`, 'alt');
  if (segs.length > 1) {
    for (let i = 0; i < segs.length; i++) {
      const seg = segs[i] as string;
      add(seg, 'part');
      // "4.5-inch" -> part "in", alt "4.5in"
      const unit = i > 0 && NUMBER.test(segs[i - 1] as string) ? UNITS.get(seg) : undefined;
      if (unit !== undefined) {
        add(unit, 'part');
        add((segs[i - 1] as string) + unit, 'alt');
      }
    }
  }
  for (const seg of segs) {
    // a mixed number's whole number and fraction; not those of one glued to more ("1-1/2in"),
    // whose pieces are the mixed number and the rest
    const start = MIXED.exec(seg);
    const mixed = start !== null && start[0].length === seg.length ? start : null;
    if (mixed !== null) {
      add(mixed[1] as string, 'part');
      add(mixed[2] as string, 'part');
    }
    // halves, quarters and eighths written either way: "2-1/2" and "2.5" (gallons, feet)
    const other = segs.length === 1 ? sameSize(seg, mixed) : null;
    if (other !== null) add(other, 'alt');
    if (NUMBER.test(seg)) continue;
    const pieces = seg.split(LETTER_DIGIT_BOUNDARY);
    if (pieces.length < 2) continue;
    for (const p of pieces) add(p, 'part');
    // "36inches" -> alt "36in"; "65in" parts "65", "in"
    const unit = pieces.length === 2 && NUMBER.test(pieces[0] as string) ? UNITS.get(pieces[1] as string) : undefined;
    if (unit !== undefined) {
      add(unit, 'part');
      add((pieces[0] as string) + unit, 'alt');
    }
  }
  if (segs.length === 1) {
    const unit = afterNumber !== null ? UNITS.get(term) : undefined;
    if (unit !== undefined) {
      add(unit, 'alt');
      add(afterNumber + unit, 'alt');
    }
    const one = singular(term);
    if (one !== null) add(one, 'alt');
  } else {
    // the last piece carries the plural: "t-shirts" -> "tshirt"
    const lastSeg = segs[segs.length - 1] as string;
    const one = singular(lastSeg);
    if (one !== null) add(segs.slice(0, -1).join('') + one, 'alt');
  }
}

const LOWER = 1;
const DIGITS_ONLY = 2;
const OTHER = 0;

/** LOWER for [a-z]+, DIGITS_ONLY for [0-9]+, else OTHER (needs the full rules). */
function asciiShape(run: string): number {
  let letters = false;
  let digits = false;
  for (let i = 0; i < run.length; i++) {
    const c = run.charCodeAt(i);
    if (c >= 97 && c <= 122) letters = true;
    else if (c >= 48 && c <= 57) digits = true;
    else return OTHER;
  }
  return letters && !digits ? LOWER : digits && !letters ? DIGITS_ONLY : OTHER;
}

function emitPlain(term: string, pos: number, afterNumber: string | null, variants: boolean, sink: TokenSink): void {
  const t = clip(term);
  sink(t, pos, 'word');
  if (!variants) return;
  const unit = afterNumber !== null ? UNITS.get(t) : undefined;
  if (unit !== undefined) {
    if (unit !== t) sink(unit, pos, 'alt');
    // "5 kg" also as "5kg", the way it is often typed (and written in other titles)
    sink(clip(afterNumber + unit), pos, 'alt');
  }
  const one = singular(t);
  if (one !== null && one !== unit) sink(one, pos, 'alt');
}

function emitCjk(run: string, pos: number, sink: TokenSink): number {
  const chars = Array.from(run);
  if (chars.length === 1) {
    sink(chars[0] as string, pos, 'word');
    return pos + 1;
  }
  for (let i = 0; i + 1 < chars.length; i++) {
    sink((chars[i] as string) + (chars[i + 1] as string), pos++, 'word');
  }
  return pos;
}

const EIGHTHS = ['', '1/8', '1/4', '3/8', '1/2', '5/8', '3/4', '7/8'];
const DECIMAL_EIGHTHS = /^(\p{Nd}{1,4})\.(5|25|75|125|375|625|875)$/u;

/**
 * The other spelling of a size in halves, quarters or eighths: "2-1/2" -> "2.5", "1.375" ->
 * "1-3/8"; null for any other word (and for fractions below one, "1/2" is not written "0.5").
 * `mixed`: the match of MIXED when it is the whole of `seg`.
 */
function sameSize(seg: string, mixed: RegExpExecArray | null): string | null {
  if (mixed !== null) {
    const eighths = EIGHTHS.indexOf(mixed[2] as string);
    return eighths > 0 ? String(Number(mixed[1]) + eighths / 8) : null;
  }
  const d = DECIMAL_EIGHTHS.exec(seg);
  if (d === null || Number(d[1]) === 0) return null;
  return `${Number(d[1])}-${EIGHTHS[Math.round(Number(`0.${d[2] as string}`) * 8)] as string}`;
}

/** Digits, maybe followed by letters (a unit): what may follow the dot or slash of a number. */
function isFractionDenominator(seg: string): boolean {
  return DIGITS.test(seg.replace(/\D+$/u, '') || 'x');
}

/** "1 1/2" -> "1-1/2" (same length), for a proper fraction after a whole number. */
function joinSpacedMixed(s: string): string {
  if (!s.includes('/')) return s;
  return s.replace(SPACED_MIXED, (all, whole: string, num: string, den: string) => (Number(num) < Number(den) ? `${whole}-${num}/${den}` : all));
}

function clip(t: string): string {
  return t.length > MAX_TERM_LENGTH ? t.slice(0, MAX_TERM_LENGTH) : t;
}

function endsWithDigit(s: string): boolean {
  const c = s.charCodeAt(s.length - 1);
  return c >= 48 && c <= 57;
}

function startsWithDigit(s: string): boolean {
  const c = s.charCodeAt(0);
  return c >= 48 && c <= 57;
}
