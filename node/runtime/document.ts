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
