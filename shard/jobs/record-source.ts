// Text of an uploaded file -> numbered records (plain objects), whatever the format: CSV rows
// keyed by the header row, elements of a JSON array, lines of JSON Lines. Record numbers count
// data records only (not the header, not blank lines) and are the same on every read of the same
// file, which is what lets an interrupted job resume after the records it had finished.
import { CsvReader, sniffDelimiter } from './csv-records.js';
import { JsonLinesSplitter, JsonSplitter, type JsonElement } from './json-records.js';

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
  let reader: CsvReader | null = null;
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
      else yield { n, line: row.line, value: rowObject(header, row.fields!) };
    }
  };
  for await (const chunk of text) {
    if (!reader) {
      const firstLine = chunk.slice(0, Math.max(0, chunk.search(/\r|\n/)) || chunk.length);
      reader = new CsvReader({ delimiter: options.delimiter ?? sniffDelimiter(firstLine), maxRecordChars: options.maxRecordChars });
    }
    yield* rows(reader.push(chunk));
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

function rowObject(header: string[], fields: string[]): Record<string, unknown> {
  const entries: [string, string][] = [];
  for (let i = 0; i < fields.length; i++) entries.push([header[i] ?? `column_${i + 1}`, fields[i]!]);
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
      yield { n, line: e.line, ...parseElement(e.text!, options.maxDepth) };
    }
  };
  for await (const chunk of text) yield* records(splitter.push(chunk));
  yield* records(splitter.end());
}

function parseElement(text: string, maxDepth: number): { value?: Record<string, unknown>; error?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not valid JSON: ${(err as Error).message}` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { error: `The record is ${Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`}, not an object.` };
  if (nestedDeeperThan(value, maxDepth)) return { error: `The record is nested deeper than ${maxDepth} levels.` };
  return { value: value as Record<string, unknown> };
}

/** Iterative, so a hostile record cannot exhaust the stack. */
export function nestedDeeperThan(root: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) return true;
    for (const c of Array.isArray(v) ? v : Object.values(v)) if (typeof c === 'object' && c !== null) stack.push([c, d + 1]);
  }
  return false;
}
