// Request validation compiled once per route: TypeBox schemas become TypeCompiler checkers at
// startup, query-string values are coerced to the declared types (integer, number, boolean)
// before checking, defaults are filled in, and failures become the 422 body with a `loc` per
// problem (["query", "limit"], ["body", "documents", 0, "id"], ...).
import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { invalid, validationError, type ValidationIssue } from '../node/runtime/errors.js';
import { parseQueryString } from './query-string.js';
import { hasControlChar } from '../node/runtime/document.js';
import type { Route } from './route.js';
import { templateParams } from './route-table.js';

/** At most this many issues are reported per request part; the rest are noise. */
const MAX_ISSUES = 20;

type Coerce = 'integer' | 'number' | 'boolean' | 'string';

interface QueryField {
  name: string;
  coerce: Coerce;
  default: unknown;
}

const ISSUE_TYPES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.ObjectRequiredProperty]: 'missing',
  [ValueErrorType.ObjectAdditionalProperties]: 'extra_forbidden',
  [ValueErrorType.Integer]: 'int_type',
  [ValueErrorType.Number]: 'number_type',
  [ValueErrorType.String]: 'string_type',
  [ValueErrorType.Boolean]: 'bool_type',
  [ValueErrorType.Object]: 'object_type',
  [ValueErrorType.Array]: 'list_type',
  [ValueErrorType.Null]: 'null_type',
  [ValueErrorType.IntegerMinimum]: 'greater_than_equal',
  [ValueErrorType.NumberMinimum]: 'greater_than_equal',
  [ValueErrorType.IntegerMaximum]: 'less_than_equal',
  [ValueErrorType.NumberMaximum]: 'less_than_equal',
  [ValueErrorType.StringMinLength]: 'string_too_short',
  [ValueErrorType.StringMaxLength]: 'string_too_long',
  [ValueErrorType.StringPattern]: 'string_pattern_mismatch',
  [ValueErrorType.StringFormat]: 'string_format',
  [ValueErrorType.ArrayMaxItems]: 'too_long',
  [ValueErrorType.ArrayMinItems]: 'too_short',
  [ValueErrorType.ObjectMinProperties]: 'too_short',
  [ValueErrorType.ObjectMaxProperties]: 'too_long',
  [ValueErrorType.Literal]: 'literal_error',
  [ValueErrorType.Union]: 'union_error',
};

function pointerToLoc(path: string): (string | number)[] {
  if (path === '') return [];
  return path
    .slice(1)
    .split('/')
    .map((s) => (/^(0|[1-9]\d*)$/.test(s) ? Number(s) : s.replaceAll('~1', '/').replaceAll('~0', '~')));
}

function messageOf(e: ValueError): string {
  if (e.type === ValueErrorType.ObjectRequiredProperty) return 'Field required.';
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return 'Unknown field.';
  // a union or a pattern can carry a sentence saying what it takes (`x-hint`): a regular
  // expression is no answer for a person
  const hint = (e.schema as { 'x-hint'?: unknown })['x-hint'];
  if ((e.type === ValueErrorType.Union || e.type === ValueErrorType.StringPattern) && typeof hint === 'string') return hint;
  const anyOf = (e.schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (e.type === ValueErrorType.Union && anyOf && anyOf.every((s) => s.const !== undefined)) {
    return `Expected one of: ${anyOf.map((s) => JSON.stringify(s.const)).join(', ')}.`;
  }
  return e.message.endsWith('.') ? e.message : `${e.message}.`;
}

/** The issues of a failed check, one per location, in the 422 body shape. */
export function issuesOf(check: TypeCheck<TSchema>, value: unknown, root: (string | number)[]): ValidationIssue[] {
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const e of check.Errors(value)) {
    // Additional-property errors share the object's path; keep them apart by naming the field.
    const key = e.type === ValueErrorType.ObjectAdditionalProperties ? `${e.path}\0${String(e.value)}` : e.path;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ loc: [...root, ...pointerToLoc(e.path)], msg: messageOf(e), type: ISSUE_TYPES[e.type] ?? 'value_error' });
    if (issues.length >= MAX_ISSUES) break;
  }
  if (issues.length === 0) issues.push({ loc: root, msg: 'Invalid value.', type: 'value_error' });
  return issues;
}

function coercionOf(schema: TSchema): Coerce {
  const t = (schema as { type?: unknown }).type;
  return t === 'integer' || t === 'number' || t === 'boolean' ? t : 'string';
}

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);
const INTEGER = /^[+-]?\d+$/;

function coerce(value: string, kind: Coerce): unknown {
  switch (kind) {
    case 'string':
      return value;
    case 'integer':
      return INTEGER.test(value) ? Number(value) : value;
    case 'number': {
      const n = value.trim() === '' ? NaN : Number(value);
      return Number.isFinite(n) ? n : value;
    }
    case 'boolean': {
      const v = value.toLowerCase();
      return TRUE.has(v) ? true : FALSE.has(v) ? false : value;
    }
  }
}

const NO_VALUES: Record<string, unknown> = Object.freeze({}) as Record<string, unknown>;

export class RequestValidator {
  /** lower-case header names to read from the request, in the order `headers()` expects them */
  readonly headerNames: string[];
  private readonly headerKeys: string[];
  private readonly paramNames: string[];
  private readonly paramsCheck: TypeCheck<TObject> | null;
  private readonly queryCheck: TypeCheck<TObject> | null;
  private readonly queryFields: QueryField[];
  private readonly headersCheck: TypeCheck<TObject> | null;
  private readonly bodyCheck: TypeCheck<TSchema> | null;

  constructor(route: Route, querySchema: TObject | undefined, headerSchema: TObject | undefined) {
    this.paramNames = templateParams(route.path);
    if (this.paramNames.length > 0) {
      const declared = Object.keys(route.params?.properties ?? {});
      if (declared.join() !== this.paramNames.join()) throw new Error(`route ${route.method} ${route.path}: params schema must declare ${this.paramNames.join(', ')}`);
    }
    this.paramsCheck = route.params ? TypeCompiler.Compile(route.params) : null;
    this.queryCheck = querySchema && Object.keys(querySchema.properties).length > 0 ? TypeCompiler.Compile(querySchema) : null;
    this.queryFields = Object.entries(querySchema?.properties ?? {}).map(([name, s]) => ({
      name,
      coerce: coercionOf(s),
      default: (s as { default?: unknown }).default,
    }));
    this.headerKeys = Object.keys(headerSchema?.properties ?? {});
    this.headerNames = this.headerKeys.map((h) => h.toLowerCase());
    this.headersCheck = headerSchema && this.headerKeys.length > 0 ? TypeCompiler.Compile(headerSchema) : null;
    this.bodyCheck = route.body ? TypeCompiler.Compile(route.body) : null;
  }

  /** Percent-decodes raw path segments and checks them. */
  params(raw: string[]): Record<string, unknown> {
    if (this.paramNames.length === 0) return NO_VALUES;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.paramNames.length; i++) {
      const name = this.paramNames[i]!;
      const seg = raw[i] ?? '';
      let value = seg;
      if (seg.indexOf('%') !== -1) {
        try {
          value = decodeURIComponent(seg);
        } catch {
          invalid(['path', name], 'Invalid percent-encoding in the path.', 'url_encoding');
        }
      }
      if (hasControlChar(value)) invalid(['path', name], 'Control characters are not allowed in identifiers.', 'value_error');
      out[name] = value;
    }
    if (this.paramsCheck && !this.paramsCheck.Check(out)) throw validationError(issuesOf(this.paramsCheck, out, ['path']));
    return out;
  }

  /** Parses, coerces, fills defaults and checks the query string. */
  query(raw: string | undefined): Record<string, unknown> {
    if (this.queryCheck === null) return NO_VALUES;
    const values = parseQueryString(raw);
    const out: Record<string, unknown> = {};
    for (const f of this.queryFields) {
      const list = values[f.name];
      if (list === undefined) {
        if (f.default !== undefined) out[f.name] = f.default;
        continue;
      }
      if (list.length > 1) invalid(['query', f.name], 'Expected a single value; the parameter was given more than once.', 'repeated');
      out[f.name] = coerce(list[0]!, f.coerce);
    }
    if (!this.queryCheck.Check(out)) throw validationError(issuesOf(this.queryCheck, out, ['query']));
    return out;
  }

  /** Checks header values read in `headerNames` order ('' = absent). */
  headers(values: string[]): Record<string, unknown> {
    if (this.headersCheck === null) return NO_VALUES;
    const out: Record<string, unknown> = {};
    for (let i = 0; i < this.headerKeys.length; i++) {
      const v = values[i];
      if (v !== undefined && v !== '') out[this.headerKeys[i]!] = v;
    }
    if (!this.headersCheck.Check(out)) throw validationError(issuesOf(this.headersCheck, out, ['header']));
    return out;
  }

  body(value: unknown): unknown {
    if (this.bodyCheck === null) return value;
    if (!this.bodyCheck.Check(value)) throw validationError(issuesOf(this.bodyCheck, value, ['body']));
    return value;
  }
}

/** `base` with extra optional properties, as a new object schema (for the tenant parameters). */
export function withProperties(base: TObject | undefined, extra: Record<string, TSchema>): TObject {
  const options: { additionalProperties?: boolean; description?: string } = {};
  if (base?.additionalProperties === false) options.additionalProperties = false;
  if (base?.description !== undefined) options.description = base.description;
  return Type.Object({ ...(base?.properties ?? {}), ...extra }, options);
}
