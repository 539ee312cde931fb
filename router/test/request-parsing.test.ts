// Query strings, JSON bodies and request validation: coercion, defaults, repeated and malformed
// parameters, nesting limits, and the 422 issue shape.
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { SuggestError } from '../../node/runtime/errors.js';
import { MAX_JSON_DEPTH, exceedsDepth, parseJsonBody } from '../json-body.js';
import { MAX_QUERY_STRING, parseQueryString } from '../query-string.js';
import { RequestValidator } from '../request-validator.js';
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
    expect(exceedsDepth(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)), MAX_JSON_DEPTH)).toBe(true);
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
