// Autocomplete filters: validation of the `filters` parameter (a JSON object mapping a field to
// an array of exact values or to a range `{gte, gt, lte, lt}`) into a list of problems the caller
// turns into a 422, and compilation of a valid filter into a per-segment document predicate over
// the segment's filter columns. Exact values compare in canonical form (numbers by value, text
// case- and accent-insensitively); an array attribute matches when any of its values does.
import type { ValidationIssue } from '../../node/runtime/errors.js';
import type { RawValue } from '../../node/runtime/document.js';
import { normalize } from '../../node/runtime/text/normalize.js';
import { numberOf } from './doc-fields.js';
import type { Segment } from './segment.js';

export type RangeOperator = 'gte' | 'gt' | 'lte' | 'lt';
export const RANGE_OPERATORS: readonly RangeOperator[] = ['gte', 'gt', 'lte', 'lt'];

export type FilterClause =
  | { kind: 'in'; field: string; values: string[] }
  | { kind: 'range'; field: string; gte?: number; gt?: number; lte?: number; lt?: number };

export interface FilterSpec {
  clauses: FilterClause[];
}

export interface FilterValidation {
  /** null when there are problems or no filter */
  filters: FilterSpec | null;
  problems: ValidationIssue[];
}

export const MAX_FILTER_FIELDS = 32;
export const MAX_FILTER_VALUES = 256;

/** Document fields that are not raw attributes; any other name means `raw.<name>`. */
const DOC_FIELDS = new Set(['id', 'title', 'desc', 'manufacturer', 'brand']);

/** Canonical form of an exact value: numbers by value, text normalized; null is not a value. */
export function canonicalValue(v: RawValue): string | null {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v === 0 ? 0 : v) : null;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string') {
    const t = v.trim();
    if (/^[-+]?(?:\d+\.?\d*|\.\d+)$/.test(t)) return String(Number(t) === 0 ? 0 : Number(t));
    return normalize(t);
  }
  return null;
}

/** Numeric value for range filters (numbers and numeric strings such as "1,299.00"). */
export function numberValue(v: RawValue): number | null {
  if (typeof v === 'boolean') return null;
  return numberOf(v);
}

/** Validates the `filters` parameter (JSON text or an already parsed object). */
export function validateFilters(input: unknown): FilterValidation {
  const problems: ValidationIssue[] = [];
  const problem = (loc: (string | number)[], msg: string, type = 'value_error'): void => {
    problems.push({ loc: ['filters', ...loc], msg, type });
  };
  let value = input;
  if (value === undefined || value === null || value === '') return { filters: null, problems };
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      problem([], 'filters must be a JSON object, e.g. {"brand": ["Samsung"], "price": {"gte": 10}}', 'json_invalid');
      return { filters: null, problems };
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    problem([], 'filters must be a JSON object mapping a field name to an array of values or to a range object', 'type_error');
    return { filters: null, problems };
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > MAX_FILTER_FIELDS) problem([], `at most ${MAX_FILTER_FIELDS} fields can be filtered on`);
  const clauses: FilterClause[] = [];
  for (const [field, spec] of entries) {
    if (field.trim() === '' || field.length > 256) {
      problem([field], 'field names must be 1 to 256 characters');
      continue;
    }
    if (Array.isArray(spec) || isScalar(spec)) {
      const list = Array.isArray(spec) ? (spec as unknown[]) : [spec];
      if (list.length === 0) problem([field], 'give at least one value');
      if (list.length > MAX_FILTER_VALUES) problem([field], `at most ${MAX_FILTER_VALUES} values per field`);
      const values: string[] = [];
      list.forEach((v, i) => {
        const c = isScalar(v) ? canonicalValue(v) : null;
        if (c === null) problem([field, i], 'exact values must be strings, finite numbers or booleans', 'type_error');
        else if (!values.includes(c)) values.push(c);
      });
      clauses.push({ kind: 'in', field, values });
      continue;
    }
    if (typeof spec === 'object' && spec !== null) {
      const ops = Object.entries(spec as Record<string, unknown>);
      if (ops.length === 0) problem([field], 'a range needs at least one of gte, gt, lte, lt');
      const clause: Extract<FilterClause, { kind: 'range' }> = { kind: 'range', field };
      for (const [op, bound] of ops) {
        if (!(RANGE_OPERATORS as readonly string[]).includes(op)) {
          problem([field, op], `unknown operator '${op}'; use gte, gt, lte or lt`);
          continue;
        }
        const n = typeof bound === 'number' ? bound : typeof bound === 'string' ? numberOf(bound) : null;
        if (n === null || !Number.isFinite(n)) {
          problem([field, op], `${op} needs a finite number`, 'type_error');
          continue;
        }
        clause[op as RangeOperator] = n;
      }
      clauses.push(clause);
      continue;
    }
    problem([field], 'use an array of exact values or a range object such as {"gte": 10, "lt": 100}', 'type_error');
  }
  return { filters: problems.length === 0 && clauses.length > 0 ? { clauses } : null, problems };
}

function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

export type DocPredicate = (ord: number) => boolean;

/** The predicate of a filter over one segment's documents (tombstones are not checked). */
export function compileFilters(spec: FilterSpec, segment: Segment): DocPredicate {
  const tests = spec.clauses.map((c) => compileClause(c, segment));
  if (tests.length === 1) return tests[0] as DocPredicate;
  return (ord) => {
    for (const t of tests) if (!t(ord)) return false;
    return true;
  };
}

const never: DocPredicate = () => false;

function columnName(field: string): string {
  if (field.startsWith('raw.')) return field;
  return DOC_FIELDS.has(field) ? field : `raw.${field}`;
}

function compileClause(clause: FilterClause, segment: Segment): DocPredicate {
  const field = clause.field;
  if (clause.kind === 'in' && field === 'id') {
    const ids = new Set(clause.values);
    return (ord) => ids.has(canonicalValue(segment.idAt(ord)) ?? '');
  }
  if (clause.kind === 'in' && (field === 'title' || field === 'desc')) {
    const wanted = new Set(clause.values);
    // texts are not columns: read the stored document (rare, and only for matching candidates)
    return (ord) => wanted.has(canonicalValue(segment.document(ord)[field]) ?? '');
  }
  const col = segment.column(columnName(field));
  if (col === null) return never;
  if (clause.kind === 'range') {
    const nums = col.numbers;
    if (nums === null) return never;
    const { gte, gt, lte, lt } = clause;
    return (ord) => {
      const v = nums[ord] as number;
      if (Number.isNaN(v)) return false;
      if (gte !== undefined && !(v >= gte)) return false;
      if (gt !== undefined && !(v > gt)) return false;
      if (lte !== undefined && !(v <= lte)) return false;
      if (lt !== undefined && !(v < lt)) return false;
      return true;
    };
  }
  const { dict, valueOffsets, values } = col;
  if (dict === null || valueOffsets === null || values === null) return never;
  const ids = new Set<number>();
  for (const v of clause.values) {
    const id = dict.get(v);
    if (id >= 0) ids.add(id);
  }
  if (ids.size === 0) return never;
  return (ord) => {
    const end = valueOffsets[ord + 1] as number;
    for (let i = valueOffsets[ord] as number; i < end; i++) if (ids.has(values[i] as number)) return true;
    return false;
  };
}
