// What an upload is, decided by the router while the bytes stream past: its format (the
// `format` field, else the file name, else the part's content type, corrected by the first
// character when a label contradicts the content) and roughly how many records it has. The
// count only has to tell "at most N" (run now) from "more" (background job), so the scan stops
// as soon as every estimate is past N and costs nothing on large files.
import type { UploadFormat } from '../node/runtime/job-state.js';

export class RecordScan {
  /** line ends outside double quotes (CSV rows + header) */
  private csvLines = 0;
  private csvQuoted = false;
  /** line ends (JSON Lines) */
  private lines = 0;
  /** elements of a top-level JSON array: commas at depth 1 outside strings */
  private commas = 0;
  private depth = 0;
  private inString = false;
  private escaped = false;
  private anyValue = false;
  /** first byte that is not blank or a byte-order mark (-1: none yet) */
  firstByte = -1;
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
        if (this.depth === 2) this.anyValue = true;
      } else if (c === 0x5d || c === 0x7d) this.depth--;
      else if (c === 0x2c && this.depth === 1) this.commas++;
    }
    if (this.csvLines > this.cap + 1 && this.lines > this.cap + 1 && this.commas > this.cap) this.saturated = true;
  }

  get size(): number {
    return this.bytes;
  }

  /** Estimated records of the file read as `format` (an upper bound is fine). */
  estimate(format: UploadFormat): number {
    const trailing = this.lastByte !== 0x0a && this.bytes > 0 ? 1 : 0;
    if (format === 'csv') return Math.max(0, this.csvLines + trailing - 1);
    if (format === 'jsonl') return this.lines + trailing;
    return this.anyValue ? this.commas + 1 : this.commas;
  }
}

export interface FormatHints {
  /** the client said so (form field or body) */
  explicit?: string | null;
  filename?: string | null;
  contentType?: string | null;
  /** first byte of the content (RecordScan.firstByte) */
  firstByte: number;
}

const BY_EXTENSION: Record<string, UploadFormat> = { csv: 'csv', tsv: 'csv', txt: 'csv', json: 'json', jsonl: 'jsonl', ndjson: 'jsonl' };
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

export function resolveFormat(h: FormatHints): { format: UploadFormat; source: string } {
  if (h.explicit === 'csv' || h.explicit === 'json' || h.explicit === 'jsonl') return { format: h.explicit, source: 'format field' };
  const fromContent: UploadFormat = h.firstByte === 0x5b ? 'json' : h.firstByte === 0x7b ? 'jsonl' : 'csv';
  const ext = h.filename?.toLowerCase().match(/\.([a-z0-9]+)$/)?.[1];
  const type = h.contentType?.split(';', 1)[0]!.trim().toLowerCase();
  const byName = ext ? BY_EXTENSION[ext] : undefined;
  const byType = type ? BY_TYPE[type] : undefined;
  const labelled = byName ?? byType ?? null;
  const how = byName ? 'file name' : 'content type';
  if (!labelled) return { format: fromContent, source: 'content' };
  if (h.firstByte < 0) return { format: labelled, source: how };
  // Labels lie (a .csv holding JSON, JSON sent as text/csv). A file starting with [ or { is JSON
  // whatever it is called, and an array is not JSON Lines. The reverse (a .json that does not
  // start like JSON) is believed only when the content type said it: a file named .json that is
  // not JSON fails with its lines, instead of being read as a CSV nobody sent.
  if (fromContent !== 'csv' && labelled !== fromContent && !(labelled === 'json' && fromContent === 'jsonl')) {
    return { format: fromContent, source: `content (labelled ${labelled} by ${how})` };
  }
  if (labelled !== 'csv' && fromContent === 'csv' && !byName) return { format: 'csv', source: `content (labelled ${labelled} by content type)` };
  return { format: labelled, source: how };
}
