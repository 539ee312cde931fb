// Query strings, JSON bodies and request validation: coercion, defaults, repeated and malformed
// parameters, raw bytes that are not UTF-8, nesting limits, numbers too large to represent, and
// the 422 issue shape and wording (unions, formats).
import { FormatRegistry, Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { hasControlChar } from '../../node/runtime/document.js';
import { SuggestError } from '../../node/runtime/errors.js';
import { nonFiniteAt, scanJson } from '../../node/runtime/json-scan.js';
import { MAX_JSON_DEPTH, parseJsonBody } from '../json-body.js';
import { MAX_QUERY_STRING, parseQueryString } from '../query-string.js';
import { RequestValidator, describeSchema } from '../request-validator.js';
import { defineRoute } from '../route.js';

function caught(fn: () => unknown): SuggestError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SuggestError) return err;
    throw err;
  }
  throw new Error('expected a SuggestError');
}

describe('parseQueryString', () => {
  it('decodes names and values, + as space, keeps repeats in order', () => {
    const q = parseQueryString('a=1&b=x+y&a=2&c&d=%C3%BC&&e=');
    expect(q).toEqual({ a: ['1', '2'], b: ['x y'], c: [''], d: ['ü'], e: [''] });
  });
  it('answers undefined and empty input with no parameters', () => {
    expect(parseQueryString(undefined)).toEqual({});
    expect(parseQueryString('')).toEqual({});
  });
  it('refuses bad escapes, absurd lengths and too many pairs with 422', () => {
    expect(caught(() => parseQueryString('page=%E0%A4%A')).issues?.[0]?.loc).toEqual(['query', 'page']);
    expect(caught(() => parseQueryString('x'.repeat(MAX_QUERY_STRING + 1))).status).toBe(422);
    expect(caught(() => parseQueryString(Array.from({ length: 300 }, (_, i) => `k${i}=1`).join('&'))).status).toBe(422);
  });
  it('refuses the U+FFFD that uWS makes of a raw byte that is not UTF-8, as it refuses %FF', () => {
    expect(caught(() => parseQueryString('query=%FF')).issues?.[0]).toMatchObject({ loc: ['query', 'query'], type: 'url_encoding' });
    expect(caught(() => parseQueryString('index=p&query=sa\uFFFD')).issues?.[0]).toMatchObject({ loc: ['query', 'query'], type: 'url_encoding' });
    expect(caught(() => parseQueryString('\uFFFD=1')).issues?.[0]?.type).toBe('url_encoding');
    // the character itself, percent-encoded, and raw text beyond ASCII still pass
    expect(parseQueryString('q=%EF%BF%BD&r=caf\u00e9')).toEqual({ q: ['\uFFFD'], r: ['caf\u00e9'] });
  });
  it('has no prototype to pollute', () => {
    const q = parseQueryString('__proto__=x&constructor=y');
    expect(q.__proto__).toEqual(['x']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('parseJsonBody', () => {
  it('parses JSON and maps problems to 422 in json mode, 400 in query mode', () => {
    expect(parseJsonBody(Buffer.from('{"a":1}'), 'json', false)).toEqual({ a: 1 });
    expect(parseJsonBody(Buffer.alloc(0), 'json', true)).toEqual({});
    expect(caught(() => parseJsonBody(Buffer.alloc(0), 'json', false)).issues?.[0]).toMatchObject({ loc: ['body'], type: 'missing' });
    expect(caught(() => parseJsonBody(Buffer.from('{'), 'json', false)).issues?.[0]?.type).toBe('json_invalid');
    expect(caught(() => parseJsonBody(Buffer.from([0x22, 0xff, 0x22]), 'json', false)).issues?.[0]?.type).toBe('utf8_invalid');
    expect(caught(() => parseJsonBody(Buffer.from('{'), 'query', false)).code).toBe('invalid_query_content');
    expect(caught(() => parseJsonBody(Buffer.from('[1]'), 'query', false)).status).toBe(400);
  });
  it('refuses nesting beyond the limit without recursion', () => {
    const ok = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    expect(parseJsonBody(Buffer.from(ok), 'json', false)).toBeDefined();
    const deep = '['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1);
    expect(caught(() => parseJsonBody(Buffer.from(deep), 'json', false)).issues?.[0]?.type).toBe('too_deep');
    expect(scanJson(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)), MAX_JSON_DEPTH).tooDeep).toBe(true);
  });
  it('refuses numbers JSON.parse makes infinite with 422 at their location, in QUERY bodies too', () => {
    expect(scanJson(JSON.parse('{"a":[1,{"b":2}]}'), MAX_JSON_DEPTH)).toEqual({ tooDeep: false, nonFinite: false });
    expect(scanJson(JSON.parse('1e309'), MAX_JSON_DEPTH).nonFinite).toBe(true);
    expect(nonFiniteAt(JSON.parse('{"a":[1,{"b":-1e400}]}'))).toEqual(['a', 1, 'b']);
    expect(caught(() => parseJsonBody(Buffer.from('{"documents":[{"id":"x","raw":{"p":1e309}}]}'), 'json', false)).issues?.[0]).toMatchObject({
      loc: ['body', 'documents', 0, 'raw', 'p'],
      type: 'finite_number',
    });
    expect(caught(() => parseJsonBody(Buffer.from('1e309'), 'json', false)).issues?.[0]?.loc).toEqual(['body']);
    expect(caught(() => parseJsonBody(Buffer.from(`{"limit":${'9'.repeat(400)}}`), 'query', false)).issues?.[0]).toMatchObject({ loc: ['body', 'limit'], type: 'finite_number' });
    expect(parseJsonBody(Buffer.from('{"p":1.7976931348623157e308}'), 'json', false)).toEqual({ p: 1.7976931348623157e308 });
  });
});

describe('RequestValidator', () => {
  const route = defineRoute({
    method: 'GET',
    path: '/x/{id}',
    operationId: 'x',
    summary: 'x',
    tags: [],
    access: 'none',
    params: Type.Object({ id: Type.String({ pattern: '^[a-z]+$' }) }),
    query: Type.Object({
      page: Type.Integer({ minimum: 1, default: 1 }),
      ratio: Type.Optional(Type.Number()),
      debug: Type.Boolean({ default: false }),
      q: Type.Optional(Type.String({ minLength: 1 })),
    }),
    response: { description: 'x' },
  });
  const v = new RequestValidator(route, route.query, undefined);

  it('coerces query values, fills defaults and ignores unknown parameters', () => {
    expect(v.query('page=3&ratio=0.5&debug=true&other=1')).toEqual({ page: 3, ratio: 0.5, debug: true });
    expect(v.query(undefined)).toEqual({ page: 1, debug: false });
    expect(v.query('debug=0')).toEqual({ page: 1, debug: false });
  });
  it('reports type, range and repetition problems with their location', () => {
    expect(caught(() => v.query('page=abc')).issues?.[0]).toMatchObject({ loc: ['query', 'page'], type: 'int_type' });
    expect(caught(() => v.query('page=0')).issues?.[0]).toMatchObject({ loc: ['query', 'page'], type: 'greater_than_equal' });
    expect(caught(() => v.query('page=1.5')).issues?.[0]?.loc).toEqual(['query', 'page']);
    expect(caught(() => v.query(`page=${'9'.repeat(400)}`)).issues?.[0]?.loc).toEqual(['query', 'page']);
    expect(caught(() => v.query('debug=maybe')).issues?.[0]?.loc).toEqual(['query', 'debug']);
    expect(caught(() => v.query('q=')).issues?.[0]).toMatchObject({ loc: ['query', 'q'], type: 'string_too_short' });
    expect(caught(() => v.query('page=1&page=2')).issues?.[0]?.type).toBe('repeated');
  });
  it('decodes path parameters and refuses bad escapes and control characters', () => {
    expect(v.params(['abc'])).toEqual({ id: 'abc' });
    expect(caught(() => v.params(['a%2Fb'])).issues?.[0]?.loc).toEqual(['path', 'id']);
    expect(caught(() => v.params(['%E0%A4%A'])).issues?.[0]?.type).toBe('url_encoding');
    expect(caught(() => v.params(['a%00b'])).issues?.[0]?.loc).toEqual(['path', 'id']);
  });
});

describe('422 wording', () => {
  FormatRegistry.Set('test-id', (s) => s.length > 0 && !hasControlChar(s) && !/\p{Cs}/u.test(s));
  const route = defineRoute({
    method: 'POST',
    path: '/y',
    operationId: 'y',
    summary: 'y',
    tags: [],
    access: 'none',
    body: Type.Union([
      Type.Object({ documents: Type.Array(Type.Object({ id: Type.String({ format: 'test-id', 'x-hint': 'Ids are text without control characters.' }), title: Type.Optional(Type.Union([Type.String(), Type.Null()])) })) }),
      Type.Array(Type.Object({ id: Type.String() })),
    ]),
    response: { description: 'y' },
  });
  const v = new RequestValidator(route, undefined, undefined);
  const issue = (body: unknown) => caught(() => v.body(body)).issues![0]!;

  it('lists the accepted shapes of a union when no member takes the value, naming what came', () => {
    expect(issue(5)).toMatchObject({ loc: ['body'], msg: 'Expected an object with "documents" or an array of objects; got 5.', type: 'union_error' });
    expect(issue(null).msg).toMatch(/; got null\.$/);
    expect(issue('x').msg).toMatch(/; got "x"\.$/);
  });
  it("answers with the one member's own errors when one member takes values of that shape", () => {
    expect(issue({ documents: { a: 1 } })).toMatchObject({ loc: ['body', 'documents'], msg: 'Expected an array of objects; got an object.' });
    expect(issue({ documents: [{ id: 'a', title: 5 }] })).toMatchObject({ loc: ['body', 'documents', 0, 'title'], msg: 'Expected a string or null; got 5.' });
    expect(issue([{ id: 5 }])).toMatchObject({ loc: ['body', 0, 'id'], msg: 'Expected a string; got 5.' });
  });
  it('tells a scalar rule with the other members', () => {
    const limit = new RequestValidator({ ...route, body: Type.Object({ n: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]) }) }, undefined, undefined);
    expect(caught(() => limit.body({ n: -1 })).issues![0]).toMatchObject({ loc: ['body', 'n'], msg: 'Expected an integer of at least 1 or null; got -1.', type: 'greater_than_equal' });
    expect(caught(() => limit.body({ n: 1.5 })).issues![0]!.msg).toBe('Expected an integer of at least 1 or null; got 1.5.');
  });
  it('says why a formatted string is refused before what the format takes', () => {
    expect(issue({ documents: [{ id: 'a\u0000b' }] }).msg).toBe('It holds a control character (U+0000 at character 2). Ids are text without control characters.');
    expect(issue({ documents: [{ id: 'a\ud800' }] }).msg).toMatch(/^It holds an unpaired surrogate \(U\+D800 at character 2\)/);
  });
  it('describes schemas in words', () => {
    expect(describeSchema(Type.Integer({ minimum: 1, maximum: 50 }))).toBe('an integer from 1 to 50');
    expect(describeSchema(Type.String({ maxLength: 8 }))).toBe('a string of 0 to 8 characters');
    expect(describeSchema(Type.Union([Type.Literal('a'), Type.Boolean()]))).toBe('"a" or true or false');
  });
});
