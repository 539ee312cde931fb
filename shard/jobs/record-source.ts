// Text of an uploaded file -> numbered records (plain objects), whatever the format: CSV rows
// keyed by the header row, elements of a JSON array (or of the `documents` array of a wrapper
// object), lines of JSON Lines. Record numbers count data records only (not the header, not blank
// lines) and are the same on every read of the same file, which is what lets an interrupted job
// resume after the records it had finished.
//
// Nothing is dropped quietly: a CSV row with more non-empty cells than the header has columns, a
// JSON number too large for a double (1e309 parses as Infinity) and a CSV file whose header row is
// JSON fail with a reason, instead of being stored as `column_N` attributes, a missing value or
// documents cut from JSON text.
import { CsvReader, sniffDelimiter } from './csv-records.js';
import { JsonLinesSplitter, JsonSplitter, type JsonElement } from './json-records.js';
import { nonFiniteAt, scanJson } from '../../node/runtime/json-scan.js';

export type UploadFormat = 'csv' | 'json' | 'jsonl';

export interface SourceRecord {
  /** record number, 1-based; 0 for an error about the file itself */
  n: number;
  line: number;
  value?: Record<string, unknown>;
  error?: string;
  /** the error concerns the file, not one record */
  fileError?: boolean;
}

export interface RecordSourceOptions {
  format: UploadFormat;
  maxRecordChars: number;
  maxDepth: number;
  /** CSV delimiter; sniffed from the header row when absent */
  delimiter?: string;
}

/** Deepest nesting accepted inside one record (same as JSON request bodies). */
export const MAX_RECORD_DEPTH = 32;

export async function* readRecords(text: AsyncIterable<string>, options: RecordSourceOptions): AsyncIterable<SourceRecord> {
  if (options.format === 'csv') yield* csvRecords(text, options);
  else yield* jsonRecords(text, options);
}

async function* csvRecords(text: AsyncIterable<string>, options: RecordSourceOptions): AsyncIterable<SourceRecord> {
  // created by `feed` (a closure), which narrowing cannot see
  let reader = null as CsvReader | null;
  let header: string[] | null = null;
  let n = 0;
  const rows = function* (list: ReturnType<CsvReader['push']>): Iterable<SourceRecord> {
    for (const row of list) {
      if (header === null) {
        if (row.error || !row.fields) {
          yield { n: 0, line: row.line, error: `The header row cannot be read: ${row.error ?? 'it is empty'}`, fileError: true };
          return;
        }
        header = headerNames(row.fields);
        continue;
      }
      n++;
      if (row.error) yield { n, line: row.line, error: row.error };
      else if (hasExtraCells(header, row.fields!)) {
        yield { n, line: row.line, error: `The row has ${row.fields!.length} cells but the header row has ${header.length} columns; cells past the last column would be lost.` };
      } else yield { n, line: row.line, value: rowObject(header, row.fields!) };
    }
  };
  const feed = (chunk: string): Iterable<SourceRecord> => {
    if (!reader) {
      const firstLine = chunk.slice(0, Math.max(0, chunk.search(/\r|\n/)) || chunk.length);
      reader = new CsvReader({ delimiter: options.delimiter ?? sniffDelimiter(firstLine), maxRecordChars: options.maxRecordChars });
    }
    return rows(reader.push(chunk));
  };
  // the start of the file is held until it tells a CSV header from JSON (a line end, or enough text)
  let held: string[] | null = [];
  const looksJson = (start: string): SourceRecord | null =>
    JSON_START.test(start)
      ? { n: 0, line: 1, error: `The header row starts with ${JSON.stringify(start[0])}: the file looks like JSON, not CSV. Send format=json (or jsonl), or name the file .json (or .jsonl).`, fileError: true }
      : null;
  for await (const chunk of text) {
    if (!held) {
      yield* feed(chunk);
      continue;
    }
    held.push(chunk);
    const start = held.join('').trimStart();
    if (start.length < HEAD_CHARS && !/[\r\n]/.test(start)) continue;
    const json = looksJson(start);
    if (json) {
      yield json;
      return;
    }
    const all = held.join('');
    held = null;
    yield* feed(all);
  }
  if (held) {
    const all = held.join('');
    const json = looksJson(all.trimStart());
    if (json) {
      yield json;
      return;
    }
    if (all.length > 0) yield* feed(all);
  }
  if (reader) yield* rows(reader.end());
}

/** Header cells -> field names: trimmed; blank ones `column_<i>`; repeated ones suffixed `_2`, `_3`. */
export function headerNames(cells: string[]): string[] {
  const seen = new Map<string, number>();
  return cells.map((cell, i) => {
    let name = cell.trim() || `column_${i + 1}`;
    const count = seen.get(name) ?? 0;
    seen.set(name, count + 1);
    if (count > 0) name = `${name}_${count + 1}`;
    return name;
  });
}

/**
 * The opening of a JSON file: `{`, or `[` followed by what starts a JSON value. Bracketed column
 * names (`[id],[title]`, as SQL Server exports them) are not JSON.
 */
const JSON_START = /^(?:\{|\[\s*(?:$|[{["\d\]-]))/;
/** Characters of the file's start enough to tell (when no line ends before) */
const HEAD_CHARS = 64;

/** Cells past the header's last column that hold something (empty ones, e.g. a trailing delimiter, lose nothing). */
function hasExtraCells(header: string[], fields: string[]): boolean {
  for (let i = header.length; i < fields.length; i++) if (fields[i]!.trim() !== '') return true;
  return false;
}

function rowObject(header: string[], fields: string[]): Record<string, unknown> {
  const entries: [string, string][] = [];
  for (let i = 0; i < Math.min(fields.length, header.length); i++) entries.push([header[i]!, fields[i]!]);
  // fromEntries defines own properties: a "__proto__" column stays a plain key
  return Object.fromEntries(entries);
}

async function* jsonRecords(text: AsyncIterable<string>, options: RecordSourceOptions): AsyncIterable<SourceRecord> {
  const splitter = options.format === 'jsonl' ? new JsonLinesSplitter(options.maxRecordChars) : new JsonSplitter({ maxRecordChars: options.maxRecordChars, maxDepth: options.maxDepth });
  let n = 0;
  const records = function* (elements: JsonElement[]): Iterable<SourceRecord> {
    for (const e of elements) {
      if (e.fileError) {
        yield { n: 0, line: e.line, error: e.error, fileError: true };
        continue;
      }
      n++;
      if (e.error !== undefined) {
        yield { n, line: e.line, error: e.error };
        continue;
      }
      yield { n, line: e.line, ...parseElement(e.text!, options) };
    }
  };
  for await (const chunk of text) yield* records(splitter.push(chunk));
  yield* records(splitter.end());
}

function parseElement(text: string, options: RecordSourceOptions): { value?: Record<string, unknown>; error?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not valid JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: `The record is ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}, not an object.` };
  const record = value as Record<string, unknown>;
  if (options.format === 'jsonl' && Array.isArray(record.documents) && Object.keys(record).length === 1) {
    return { error: 'The line holds a `documents` array: JSON Lines has one document per line. Send a {"documents": [...]} body as a .json file (or with format=json).' };
  }
  const problem = recordProblem(record, options.maxDepth);
  return problem ? { error: problem } : { value: record };
}

/**
 * What makes a parsed record unstorable: nesting deeper than `max`, or a number JSON.parse read
 * as ±Infinity (a literal beyond ±1.8e308), named by the record's key that holds it.
 */
export function recordProblem(record: Record<string, unknown>, max: number): string | null {
  const scan = scanJson(record, max);
  if (scan.tooDeep) return `The record is nested deeper than ${max} levels.`;
  if (!scan.nonFinite) return null;
  const at = nonFiniteAt(record)!;
  return `The value of ${JSON.stringify(String(at[0]).slice(0, 64))} ${at.length === 1 ? 'is' : 'holds'} a number too large to store (beyond ±1.8e308).`;
}
