// Request validation compiled once per route: TypeBox schemas become TypeCompiler checkers at
// startup, query-string values are coerced to the declared types (integer, number, boolean)
// before checking, defaults are filled in, and failures become the 422 body with a `loc` per
// problem (["query", "limit"], ["body", "documents", 0, "id"], ...).
import { Kind, Type, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { invalid, validationError, type ValidationIssue } from '../node/runtime/errors.js';
import { parseQueryString, RAW_NOT_UTF8, REPLACEMENT_CHAR } from './query-string.js';
import { hasControlChar, MAX_DOC_ID_BYTES } from '../node/runtime/document.js';
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

type Shape = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

function shapeOf(v: unknown): Shape {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  return t === 'boolean' || t === 'number' || t === 'string' ? t : 'object';
}

const SCHEMA_SHAPES: Record<string, Shape> = { Null: 'null', Boolean: 'boolean', Number: 'number', Integer: 'number', String: 'string', Array: 'array', Tuple: 'array', Object: 'object', Record: 'object' };

/** Whether `schema` takes values of this shape at all (whatever its finer rules); true for a kind it cannot tell. */
function takesShape(schema: TSchema, shape: Shape): boolean {
  const kind = schema[Kind] as string;
  if (kind === 'Union') return (schema as { anyOf?: TSchema[] }).anyOf?.some((m) => takesShape(m, shape)) ?? true;
  if (kind === 'Literal') return shapeOf((schema as { const?: unknown }).const) === shape;
  const own = SCHEMA_SHAPES[kind];
  return own === undefined || own === shape;
}

function range(s: { minimum?: number; maximum?: number; exclusiveMinimum?: number; exclusiveMaximum?: number }): string {
  const low = s.minimum !== undefined ? `at least ${s.minimum}` : s.exclusiveMinimum !== undefined ? `above ${s.exclusiveMinimum}` : null;
  const high = s.maximum !== undefined ? `at most ${s.maximum}` : s.exclusiveMaximum !== undefined ? `below ${s.exclusiveMaximum}` : null;
  if (s.minimum !== undefined && s.maximum !== undefined) return ` from ${s.minimum} to ${s.maximum}`;
  if (low && high) return ` ${low} and ${high}`;
  return low ? ` of ${low}` : high ? ` of ${high}` : '';
}

function lengths(s: { minLength?: number; maxLength?: number }): string {
  if (s.maxLength !== undefined) return ` of ${s.minLength ?? 0} to ${s.maxLength} characters`;
  return s.minLength !== undefined && s.minLength > 0 ? ` of at least ${s.minLength} characters` : '';
}

const PLURALS: Record<string, string> = { String: 'strings', Number: 'numbers', Integer: 'integers', Boolean: 'booleans', Object: 'objects', Record: 'objects', Array: 'arrays' };

/** The keywords describeSchema reads. */
interface Rules {
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: TSchema;
  required?: string[];
  anyOf?: TSchema[];
}

/** What a schema accepts, in words ("an integer of at least 1", "an object with \"documents\""). */
export function describeSchema(schema: TSchema): string {
  const s = schema as TSchema & Rules;
  switch (schema[Kind] as string) {
    case 'Null':
      return 'null';
    case 'Boolean':
      return 'true or false';
    case 'Literal':
      return JSON.stringify(s.const);
    case 'Integer':
      return `an integer${range(s)}`;
    case 'Number':
      return `a number${range(s)}`;
    case 'String':
      return `a string${lengths(s)}`;
    case 'Array': {
      const items = s.items ? PLURALS[s.items[Kind] as string] : undefined;
      return items ? `an array of ${items}` : 'an array';
    }
    case 'Object': {
      const required = s.required ?? [];
      return required.length > 0 ? `an object with ${required.map((k) => JSON.stringify(k)).join(', ')}` : 'an object';
    }
    case 'Record':
      return 'an object';
    case 'Union':
      return (s.anyOf ?? []).map(describeSchema).join(' or ');
    default:
      return 'a value';
  }
}

/** A value as a message names it: scalars as themselves, text and containers by kind (they may be long). */
function shown(v: unknown): string {
  const shape = shapeOf(v);
  if (shape === 'null' || shape === 'boolean' || shape === 'number') return String(v);
  if (typeof v === 'string') return v.length <= 32 ? JSON.stringify(v) : `a string of ${v.length} characters`;
  return shape === 'array' ? 'an array' : 'an object';
}

/** Errors whose rule describeSchema puts in words (a type, a range, a length). */
const DESCRIBED = new Set([
  ValueErrorType.Integer,
  ValueErrorType.Number,
  ValueErrorType.String,
  ValueErrorType.IntegerMinimum,
  ValueErrorType.IntegerMaximum,
  ValueErrorType.IntegerExclusiveMinimum,
  ValueErrorType.IntegerExclusiveMaximum,
  ValueErrorType.NumberMinimum,
  ValueErrorType.NumberMaximum,
  ValueErrorType.NumberExclusiveMinimum,
  ValueErrorType.NumberExclusiveMaximum,
  ValueErrorType.StringMinLength,
  ValueErrorType.StringMaxLength,
]);

const TYPE_ERRORS = new Set([ValueErrorType.Array, ValueErrorType.Object, ValueErrorType.String, ValueErrorType.Number, ValueErrorType.Integer, ValueErrorType.Boolean, ValueErrorType.Null]);

/** Why a string is not text an identifier may hold, or null. */
function textProblem(v: unknown, format: string | undefined): string | null {
  if (typeof v !== 'string') return null;
  if (v.length === 0) return 'It is empty.';
  if (format === 'doc-id' && Buffer.byteLength(v, 'utf8') > MAX_DOC_ID_BYTES) return `It is ${Buffer.byteLength(v, 'utf8')} UTF-8 bytes long.`;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return `It holds a control character (U+${c.toString(16).toUpperCase().padStart(4, '0')} at character ${i + 1}).`;
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = v.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
      else return `It holds an unpaired surrogate (U+${c.toString(16).toUpperCase()} at character ${i + 1}), which is not valid Unicode.`;
    }
  }
  return null;
}

function messageOf(e: ValueError): string {
  if (e.type === ValueErrorType.ObjectRequiredProperty) return 'Field required.';
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return 'Unknown field.';
  // a union, a pattern or a format can carry a sentence saying what it takes (`x-hint`): a
  // regular expression or a format name is no answer for a person
  const hint = (e.schema as { 'x-hint'?: unknown })['x-hint'];
  if (e.type === ValueErrorType.StringFormat) {
    const format = (e.schema as { format?: string }).format;
    const why = textProblem(e.value, format);
    const what = typeof hint === 'string' ? hint : `Expected the ${format ?? 'declared'} format.`;
    return why ? `${why} ${what}` : what;
  }
  if (e.type === ValueErrorType.StringPattern && typeof hint === 'string') return hint;
  if (TYPE_ERRORS.has(e.type)) return `Expected ${describeSchema(e.schema)}; got ${shown(e.value)}.`;
  return e.message.endsWith('.') ? e.message : `${e.message}.`;
}

/** At most `n` errors of an iterator (a member's errors over a large body are many and alike). */
function firstErrors(errors: Iterable<ValueError> | undefined, n: number): ValueError[] {
  const out: ValueError[] = [];
  if (errors === undefined) return out;
  for (const e of errors) {
    out.push(e);
    if (out.length >= n) break;
  }
  return out;
}

const depthOf = (e: ValueError) => (e.path === '' ? 0 : e.path.split('/').length - 1);

/**
 * The issues of a union no member of which took the value. TypeBox says only "Expected union
 * value"; a person needs what was wrong and what is accepted. When exactly one member takes
 * values of this shape (the object of `{documents: [...]}` against a raw array) its own errors
 * are the answer, deeper fields named; a scalar member's rule is told with the other members
 * ("an integer of at least 1 or null; got -1"); otherwise the accepted shapes are listed.
 */
function unionIssues(e: ValueError, root: (string | number)[]): ValidationIssue[] {
  const loc = [...root, ...pointerToLoc(e.path)];
  const schema = e.schema as TSchema & { anyOf: TSchema[]; 'x-hint'?: unknown };
  if (typeof schema['x-hint'] === 'string') return [{ loc, msg: schema['x-hint'], type: 'union_error' }];
  const members = schema.anyOf;
  if (members.every((m) => (m as { const?: unknown }).const !== undefined)) {
    return [{ loc, msg: `Expected one of: ${members.map((m) => JSON.stringify((m as { const?: unknown }).const)).join(', ')}; got ${shown(e.value)}.`, type: 'literal_error' }];
  }
  const shape = shapeOf(e.value);
  const fitting = members.map((m, i) => i).filter((i) => takesShape(members[i]!, shape));
  const accepted = `Expected ${members.map(describeSchema).join(' or ')}; got ${shown(e.value)}.`;
  if (fitting.length > 0) {
    // the member whose errors reach deepest got furthest with the value
    let best = -1;
    let bestDepth = -1;
    let bestErrors: ValueError[] = [];
    let tie = false;
    for (const i of fitting) {
      const errors = firstErrors(e.errors[i], MAX_ISSUES);
      const depth = errors.reduce((d, x) => Math.max(d, depthOf(x)), -1);
      if (depth > bestDepth) [best, bestDepth, bestErrors, tie] = [i, depth, errors, false];
      else if (depth === bestDepth) tie = true;
    }
    const scalar = shape !== 'object' && shape !== 'array';
    if (!tie && best >= 0 && bestErrors.length > 0) {
      if (scalar && bestDepth === depthOf(e) && bestErrors[0]!.type !== ValueErrorType.Union) {
        const first = bestErrors[0]!;
        const others = members.filter((_, i) => i !== best).map(describeSchema);
        const type = ISSUE_TYPES[first.type] ?? 'value_error';
        if (DESCRIBED.has(first.type)) return [{ loc, msg: `Expected ${[describeSchema(members[best]!), ...others].join(' or ')}; got ${shown(e.value)}.`, type }];
        // a rule the words of describeSchema cannot tell (a pattern, a format): its own sentence
        const own = messageOf(first);
        return [{ loc, msg: others.length > 0 ? `${own.replace(/\.$/, '')}; or send ${others.join(' or ')}.` : own, type }];
      }
      if (!scalar) return bestErrors.flatMap((x) => issuesOfError(x, root));
    }
  }
  return [{ loc, msg: accepted, type: 'union_error' }];
}

function issuesOfError(e: ValueError, root: (string | number)[]): ValidationIssue[] {
  if (e.type === ValueErrorType.Union) return unionIssues(e, root);
  return [{ loc: [...root, ...pointerToLoc(e.path)], msg: messageOf(e), type: ISSUE_TYPES[e.type] ?? 'value_error' }];
}

/** The issues of a failed check, one per location, in the 422 body shape. */
export function issuesOf(check: TypeCheck<TSchema>, value: unknown, root: (string | number)[]): ValidationIssue[] {
  const seen = new Set<string>();
  const issues: ValidationIssue[] = [];
  for (const e of check.Errors(value)) {
    for (const issue of issuesOfError(e, root)) {
      // one per location (an unknown field's location names the field)
      const key = JSON.stringify(issue.loc);
      if (seen.has(key)) continue;
      seen.add(key);
      issues.push(issue);
      if (issues.length >= MAX_ISSUES) return issues;
    }
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
      // a raw byte that is not UTF-8, which uWS turned into U+FFFD (see query-string.ts)
      if (seg.indexOf(REPLACEMENT_CHAR) !== -1) invalid(['path', name], RAW_NOT_UTF8, 'url_encoding');
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
