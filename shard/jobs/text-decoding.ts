// Bytes of an uploaded file -> text, chunk by chunk. The encoding is the one asked for, else the
// one a byte-order mark names (UTF-8, UTF-16 LE/BE; the mark itself is dropped), else sniffed
// from the first 64 KiB: valid UTF-8 stays UTF-8, NUL-heavy input is UTF-16, anything else is
// read as Windows-1252 (what spreadsheet exports without a BOM usually are). Bytes that are not
// valid in the chosen encoding become U+FFFD, which the record mapper reports per row.
import { fail } from '../../node/runtime/errors.js';

export const SNIFF_BYTES = 64 * 1024;

/** Encodings a client may name (labels as WHATWG TextDecoder knows them). */
export const KNOWN_ENCODINGS = ['utf-8', 'utf-16le', 'utf-16be', 'windows-1252', 'iso-8859-1', 'latin1'] as const;

export interface DecodedText {
  /** the encoding the text is read with */
  encoding: string;
  /** how it was chosen */
  source: 'requested' | 'bom' | 'sniffed';
  chunks: AsyncIterable<string>;
}

/** Picks the encoding from the first bytes; returns the label and how many BOM bytes to skip. */
export function detectEncoding(head: Uint8Array, requested: string | null, complete = false): { encoding: string; bom: number; source: DecodedText['source'] } {
  const bom = bomOf(head);
  if (requested) {
    let label: string;
    try {
      label = new TextDecoder(requested).encoding;
    } catch {
      return fail('validation_failed', { reason: `Unknown encoding '${requested}'; use one of ${KNOWN_ENCODINGS.join(', ')}.` });
    }
    return { encoding: label, bom: bom && bom.encoding === label ? bom.length : 0, source: 'requested' };
  }
  if (bom) return { encoding: bom.encoding, bom: bom.length, source: 'bom' };
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < head.length; i++) {
    if (head[i] !== 0) continue;
    if (i % 2 === 0) evenNul++;
    else oddNul++;
  }
  // ASCII text in UTF-16 has a NUL in every other byte
  if (head.length >= 4 && oddNul > head.length / 8 && oddNul > evenNul * 4) return { encoding: 'utf-16le', bom: 0, source: 'sniffed' };
  if (head.length >= 4 && evenNul > head.length / 8 && evenNul > oddNul * 4) return { encoding: 'utf-16be', bom: 0, source: 'sniffed' };
  try {
    // a sequence cut at the end of the sample is not an error unless the file ends there
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !complete });
    return { encoding: 'utf-8', bom: 0, source: 'sniffed' };
  } catch {
    return { encoding: 'windows-1252', bom: 0, source: 'sniffed' };
  }
}

function bomOf(b: Uint8Array): { encoding: string; length: number } | null {
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { encoding: 'utf-8', length: 3 };
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) return { encoding: 'utf-16le', length: 2 };
  if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) return { encoding: 'utf-16be', length: 2 };
  return null;
}

/**
 * Decodes `source`. Reads up to SNIFF_BYTES before the first chunk of text to choose the
 * encoding; `onBytes` is told how many bytes each step consumed (progress).
 */
export async function decodeText(source: AsyncIterable<Uint8Array>, requested: string | null, onBytes?: (n: number) => void): Promise<DecodedText> {
  const it = source[Symbol.asyncIterator]();
  const head: Uint8Array[] = [];
  let headBytes = 0;
  let ended = false;
  while (headBytes < SNIFF_BYTES) {
    const next = await it.next();
    if (next.done) {
      ended = true;
      break;
    }
    head.push(next.value);
    headBytes += next.value.byteLength;
  }
  const first = Buffer.concat(head, headBytes);
  const { encoding, bom, source: how } = detectEncoding(first.subarray(0, SNIFF_BYTES), requested, ended && first.length <= SNIFF_BYTES);
  // ignoreBOM: the mark was already skipped above; a second one would be content
  const decoder = new TextDecoder(encoding, { fatal: false, ignoreBOM: true });
  async function* chunks(): AsyncIterable<string> {
    try {
      if (first.length > 0) {
        onBytes?.(first.length);
        const text = decoder.decode(first.subarray(bom), { stream: true });
        if (text.length > 0) yield text;
      }
      while (!ended) {
        const next = await it.next();
        if (next.done) break;
        onBytes?.(next.value.byteLength);
        const text = decoder.decode(next.value, { stream: true });
        if (text.length > 0) yield text;
      }
      const tail = decoder.decode();
      if (tail.length > 0) yield tail;
    } finally {
      await it.return?.();
    }
  }
  return { encoding, source: how, chunks: chunks() };
}
