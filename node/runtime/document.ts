// The document as the specification defines it, and its wire encoding (msgpack).
import { pack, unpack } from 'msgpackr';

export type RawValue = string | number | boolean | null | RawValue[] | { [k: string]: RawValue };

export interface SuggestDocument {
  id: string;
  title: string;
  desc: string;
  manufacturer: string;
  raw: Record<string, RawValue>;
}

/** Longest document id, in UTF-8 bytes (the document routes and uploads alike). */
export const MAX_DOC_ID_BYTES = 512;

/**
 * Most attributes of one document, in `raw` (top-level fields an upload or a route folds into
 * it included). Every attribute becomes a filter column of the search engine: 70,000 of them
 * took a segment build 20 minutes, and 65,536 or more do not fit the document encoding at all.
 */
export const MAX_DOCUMENT_ATTRIBUTES = 1_000;

/** C0 controls and DEL have no business in an identifier: they break logs, keys and URLs. */
export function hasControlChar(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;

/**
 * A UTF-16 surrogate without its pair. JSON can spell one ("\ud800") but UTF-8 cannot store it:
 * the stored text would read U+FFFD, so two different ids could share one key.
 */
export const hasLoneSurrogate = (s: string): boolean => LONE_SURROGATE.test(s);

/** `s` as it reads back once stored: each lone surrogate becomes U+FFFD. */
export const wellFormed = (s: string): string => s.replace(LONE_SURROGATES, '\ufffd');

export const encodeDocument = (doc: SuggestDocument): Buffer => pack(doc);
export const decodeDocument = (bytes: Uint8Array): SuggestDocument => unpack(bytes) as SuggestDocument;

/** msgpack of `null`: one byte. */
const TINY = pack(null);

/**
 * msgpackr keeps a view of the whole buffer it last read until it reads another one. Documents
 * are read out of a segment's shared memory, so on a thread that goes quiet that view alone keeps
 * a whole segment alive after its engine is gone (193 MB for a 100k-document engine, measured).
 * Reading one byte lets it go: call this where engines are let go.
 */
export function releaseDecoderSource(): void {
  unpack(TINY);
}
