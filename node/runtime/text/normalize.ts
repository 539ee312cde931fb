// Text normalization shared by the router (normalized_query) and the search engine (indexing and
// query analysis). Owns: Unicode NFKC, case folding, diacritic folding, and the canonical
// spelling of punctuation that the tokenizer relies on. Dependency-free and allocation-light
// because it runs on every keystroke.

// Marks that make no difference to a shopper: trademark signs would otherwise become letters
// under NFKC ("Insignia™" -> "insigniatm").
const DROPPED = /[\u2122\u00ae\u00a9\u2120]/g;

// A few HTML entities that product feeds carry escaped ("Briggs &amp; Stratton"); a soft hyphen
// ("Sam&shy;sung") is only where a line may break, and leaves nothing.
const ENTITIES: Record<string, string> = { amp: '&', quot: '"', apos: "'", lt: '<', gt: '>', nbsp: ' ', shy: '', '#39': "'", '#34': '"', '#38': '&', '#173': '' };
const ENTITY = /&(amp|quot|apos|lt|gt|nbsp|shy|#39|#34|#38|#173);/g;

// Invisible format characters, removed as Unicode's NFKC_Casefold removes them, so that a word
// carrying one ("Sam\u00adsung" with a soft hyphen, "sam\u200bsung" pasted from a web page, the
// word joiner, a byte-order mark, the zero-width joiner of Indic words, bidirectional marks,
// variation selectors) is the word typed without it. Applied to documents and queries alike.
// The zero-width non-joiner is not among them: it sits between the parts of a Persian word
// ("می\u200cخواهم"), which people type with a space, or with nothing, as often. It is kept (one
// inside a word; beside a space, another one or an end it goes), and the tokenizer joins the parts
// as it joins a hyphen's: the word without it, and each part ("میخواهم", "می", "خواهم").
// each listed code point is removed alone (none combines with what precedes it here)
// eslint-disable-next-line no-misleading-character-class
const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u200d-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]/g;

/** Decodes the HTML entities product feeds carry escaped, for text that is displayed. */
export function decodeEntities(text: string): string {
  return text.includes('&') ? text.replace(ENTITY, (_, e: string) => ENTITIES[e] ?? '') : text;
}

// Generic combining diacritics only. Script-specific marks (Devanagari vowel signs, Japanese
// dakuten, Hebrew points...) change the letter and are kept, so non-Latin scripts stay intact.
const NONSPACING_MARK = /\p{Mn}/gu;
function isGenericDiacritic(c: number): boolean {
  return (c >= 0x300 && c <= 0x36f) || (c >= 0x1ab0 && c <= 0x1aff) || (c >= 0x1dc0 && c <= 0x1dff) || (c >= 0x20d0 && c <= 0x20ff) || (c >= 0xfe20 && c <= 0xfe2f);
}

// Vowel marks that a script writes only now and then and people almost never type: Arabic
// tashkeel (fathatan to sukun, the superscript alef) and Hebrew points and cantillation marks
// (niqqud; not the dots that tell shin from sin, which change the letter).
function isOptionalVowelMark(c: number): boolean {
  return (c >= 0x64b && c <= 0x652) || c === 0x670 || (c >= 0x591 && c <= 0x5bd) || c === 0x5bf || c === 0x5c5 || c === 0x5c7;
}

// Letters that NFD does not decompose but that users type without their stroke or ligature; and
// the letters of Arabic script typed in more than one form: an alef with a hamza or madda as the
// bare alef, the Arabic yeh, alef maksura and kaf as their Persian (and Urdu) forms, which look the
// same and sit on different keyboards, and teh marbuta as the heh people type for it (as Lucene's
// Arabic and Persian normalization do).
const LETTERS: Record<string, string> = {
  ß: 'ss', ẞ: 'ss', ς: 'σ', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', þ: 'th', ł: 'l', ı: 'i', ħ: 'h', ŀ: 'l', ſ: 's',
  '\u0622': '\u0627', '\u0623': '\u0627', '\u0625': '\u0627', '\u0671': '\u0627',
  '\u064a': '\u06cc', '\u0649': '\u06cc', '\u0643': '\u06a9', '\u0629': '\u0647', '\u0640': '',
};
const SPECIAL_LETTERS = /[ßẞςæœøđðþłıħŀſ\u0622\u0623\u0625\u0671\u064a\u0649\u0643\u0629\u0640]/g;

// Decimal digits of other scripts (Arabic-Indic, Persian, Devanagari, Thai...), which NFKC leaves
// as they are: read as the ASCII digit of the same value, so "٧٩٩" is 799.
const OTHER_DIGIT = /(?![0-9])\p{Nd}/gu;
const DECIMAL = /\p{Nd}/u;
const digitValues = new Map<string, string>();

/**
 * The ASCII digit of a decimal digit of any script. Unicode encodes each script's digits as a
 * run of code points from zero to nine (some runs hold two or five such sets), so a digit's
 * value is its distance from the start of its run, modulo ten.
 */
function asciiDigit(d: string): string {
  let v = digitValues.get(d);
  if (v === undefined) {
    const cp = d.codePointAt(0) as number;
    let start = cp;
    while (start > 0 && DECIMAL.test(String.fromCodePoint(start - 1))) start--;
    v = String((cp - start) % 10);
    digitValues.set(d, v);
  }
  return v;
}

// Typographic variants folded to the ASCII character the tokenizer understands.
const PUNCT: Record<string, string> = {
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u00b4': "'", '\u0060': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '-', '\u2015': '-', '\u2212': '-',
  '\u2044': '/', '\u2215': '/',
};
const TYPOGRAPHIC = /[\u2018\u2019\u201a\u201b\u2032\u00b4\u0060\u201c\u201d\u201e\u2033\u00ab\u00bb\u2010-\u2015\u2212\u2044\u2215]/g;

const SPACES = /\s+/g;
// non-joiners beside whitespace, each other or an end: only one inside a word means anything
const LOOSE_NON_JOINERS = /\s*\u200c[\s\u200c]*/g;

// Pure ASCII input is by far the most common case; it needs only lower-casing and spacing.
// eslint-disable-next-line no-control-regex
const NON_ASCII_OR_ENTITY = /[^\x00-\x7f]|&/;

/**
 * Folds text to the form every comparison in the engine uses: NFKC, lower case, no generic
 * diacritics, one form of the Arabic-script letters typed several ways, digits of every script
 * as ASCII, typographic punctuation as ASCII, whitespace collapsed and trimmed. Punctuation is
 * kept (the tokenizer decides what it means).
 */
export function normalize(text: string): string {
  if (!NON_ASCII_OR_ENTITY.test(text)) return collapse(text.toLowerCase());
  let s = text.replace(ENTITY, (_, e: string) => ENTITIES[e] ?? '');
  s = s.replace(INVISIBLE, '').replace(DROPPED, ' ');
  // NFKC first (full-width forms, ligatures, superscripts), then lower case, then strip the
  // diacritics exposed by NFD and recompose what is left (Hangul, Indic).
  s = s.normalize('NFKC').toLowerCase();
  s = s.normalize('NFD').replace(NONSPACING_MARK, (m) => (isGenericDiacritic(m.charCodeAt(0)) || isOptionalVowelMark(m.charCodeAt(0)) ? '' : m)).normalize('NFC');
  s = s.replace(SPECIAL_LETTERS, (c) => LETTERS[c] ?? c);
  s = s.replace(OTHER_DIGIT, asciiDigit);
  s = s.replace(TYPOGRAPHIC, (c) => PUNCT[c] ?? c);
  return collapse(s);
}

function collapse(s: string): string {
  if (s.includes('\u200c')) s = s.replace(LOOSE_NON_JOINERS, (m, at: number) => (/\s/.test(m) ? ' ' : at === 0 || at + m.length === s.length ? '' : '\u200c'));
  return s.replace(SPACES, ' ').trim();
}
