// What an upload is, decided by the router while the bytes stream past: its format and roughly
// how many records it has. The format comes from the first of: the `format` field, the file
// name, the part's content type, the content's first character (the order the upload route
// documents). A label is believed even when the content disagrees: a .jsonl whose first line is
// an array is JSON Lines with one bad line, and a .csv holding JSON fails with a reason (the CSV
// reader refuses a header row that is JSON); reading by the content instead would drop or invent
// records the sender did not mean. The count only has to tell "at most N" (run now) from "more"
// (background job), so the scan stops as soon as every estimate is past N and costs nothing on
// large files.
import type { UploadFormat } from '../node/runtime/job-state.js';

/** Bytes of the content's start kept to recognise `{"documents": [` when nothing else labels the file. */
const HEAD_BYTES = 64;

export class RecordScan {
  /** line ends outside double quotes (CSV rows + header) */
  private csvLines = 0;
  private csvQuoted = false;
  /** line ends (JSON Lines) */
  private lines = 0;
  /** elements of a top-level JSON array: commas at depth 1 outside strings */
  private commas = 0;
  /** top-level JSON values (objects one after another) */
  private topValues = 0;
  /** inside a top-level object: arrays on its first level and the commas between their elements (a `documents` array) */
  private innerArrays = 0;
  private innerCommas = 0;
  /** the top-level value is an object, and the container at depth 2 is an array */
  private topObject = false;
  private innerIsArray = false;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private anyValue = false;
  /** first byte that is not blank or a byte-order mark (-1: none yet) */
  firstByte = -1;
  /** the content from its first byte, NUL bytes left out (UTF-16), at most HEAD_BYTES */
  private headBytes: number[] = [];
  private lastByte = -1;
  private bytes = 0;
  private saturated = false;

  constructor(private readonly cap: number) {}

  feed(buf: Uint8Array): void {
    this.bytes += buf.length;
    if (buf.length > 0) this.lastByte = buf[buf.length - 1]!;
    if (this.saturated) return;
    for (let i = 0; i < buf.length; i++) {
      const c = buf[i]!;
      if (this.firstByte < 0) {
        if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0xef || c === 0xbb || c === 0xbf || c === 0xff || c === 0xfe || c === 0) continue;
        this.firstByte = c;
      }
      if (this.headBytes.length < HEAD_BYTES && c !== 0) this.headBytes.push(c);
      if (c === 0x0a) {
        this.lines++;
        if (!this.csvQuoted) this.csvLines++;
      }
      if (c === 0x22) this.csvQuoted = !this.csvQuoted;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true;
        else if (c === 0x22) this.inString = false;
      } else if (c === 0x22) this.inString = true;
      else if (c === 0x5b || c === 0x7b) {
        this.depth++;
        if (this.depth === 1) {
          this.topValues++;
          this.topObject = c === 0x7b;
        } else if (this.depth === 2) {
          this.anyValue = true;
          this.innerIsArray = this.topObject && c === 0x5b;
          if (this.innerIsArray) this.innerArrays++;
        }
      } else if (c === 0x5d || c === 0x7d) this.depth--;
      else if (c === 0x2c) {
        if (this.depth === 1) this.commas++;
        else if (this.depth === 2 && this.innerIsArray) this.innerCommas++;
      }
    }
    // past cap + 1: a last line without a line end may still change an estimate by one
    const past = this.cap + 1;
    if (this.estimate('csv') > past && this.estimate('jsonl') > past && this.estimate('json') > past) this.saturated = true;
  }

  get size(): number {
    return this.bytes;
  }

  /** The start of the content (from its first byte that is not blank), as Latin-1 text. */
  get head(): string {
    return String.fromCharCode(...this.headBytes);
  }

  /** Estimated records of the file read as `format` (an upper bound is fine). */
  estimate(format: UploadFormat): number {
    const trailing = this.lastByte !== 0x0a && this.bytes > 0 ? 1 : 0;
    if (format === 'csv') return Math.max(0, this.csvLines + trailing - 1);
    if (format === 'jsonl') return this.lines + trailing;
    // an array: its elements; objects: one record each, or the elements of a `documents` array in the first
    const array = this.anyValue ? this.commas + 1 : this.commas;
    return this.topObject ? this.topValues + this.innerArrays + this.innerCommas : array;
  }
}

export interface FormatHints {
  /** the client said so (form field or body) */
  explicit?: string | null;
  filename?: string | null;
  contentType?: string | null;
  /** first byte of the content (RecordScan.firstByte) */
  firstByte: number;
  /** the content's start (RecordScan.head); absent for uploads described before it was kept */
  head?: string;
}

/** `tsv` is tab-separated CSV; a name like `.txt` or `.bin` says nothing and leaves the decision to what follows. */
const BY_EXTENSION: Record<string, UploadFormat> = { csv: 'csv', tsv: 'csv', json: 'json', jsonl: 'jsonl', ndjson: 'jsonl' };
const BY_TYPE: Record<string, UploadFormat> = {
  'text/csv': 'csv',
  'application/csv': 'csv',
  'text/tab-separated-values': 'csv',
  'application/json': 'json',
  'application/x-ndjson': 'jsonl',
  'application/ndjson': 'jsonl',
  'application/jsonl': 'jsonl',
  'application/x-jsonlines': 'jsonl',
  'application/jsonlines': 'jsonl',
};
/** An object whose first key is `documents` holding an array: the inline-ingestion body, as a file. */
const WRAPPER_START = /^\{\s*"documents"\s*:\s*\[/;

export function resolveFormat(h: FormatHints): { format: UploadFormat; source: string } {
  if (h.explicit === 'csv' || h.explicit === 'json' || h.explicit === 'jsonl') return { format: h.explicit, source: 'format field' };
  const ext = h.filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  const byName = ext !== undefined ? BY_EXTENSION[ext] : undefined;
  if (byName) return { format: byName, source: 'file name' };
  const type = h.contentType?.split(';', 1)[0]!.trim().toLowerCase();
  const byType = type ? BY_TYPE[type] : undefined;
  if (byType) return { format: byType, source: 'content type' };
  // `[` opens a JSON array; `{` opens JSON Lines (one object per line, each line read on its
  // own), unless the object is a `{"documents": [...]}` body, which only JSON reads whole
  if (h.firstByte === 0x5b) return { format: 'json', source: 'first character' };
  if (h.firstByte === 0x7b) return { format: WRAPPER_START.test(h.head ?? '') ? 'json' : 'jsonl', source: 'first character' };
  return { format: 'csv', source: 'first character' };
}
