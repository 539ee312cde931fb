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

export const encodeDocument = (doc: SuggestDocument): Buffer => pack(doc);
export const decodeDocument = (bytes: Uint8Array): SuggestDocument => unpack(bytes) as SuggestDocument;
