// JSON request bodies: strict UTF-8, JSON.parse, and a nesting limit checked iteratively after
// parsing (V8's parser does not recurse, but everything after it — validation, msgpack,
// JSON.stringify — does, so a 100k-deep body must stop here, not blow a stack later); numbers
// too large to represent are refused in the same walk.
import { fail, invalid } from '../node/runtime/errors.js';
import { nonFiniteAt, scanJson } from '../node/runtime/json-scan.js';

/** Deepest nesting of arrays/objects accepted in a body. */
export const MAX_JSON_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true });

export const BEYOND_DOUBLE = 'beyond the range of a double (about ±1.8e308)';

/** The 422 of a number too large to represent, at `loc`. */
export function nonFiniteNumber(loc: (string | number)[], msg = `Numbers must be finite: this one is ${BEYOND_DOUBLE}.`): never {
  return invalid(loc, msg, 'finite_number');
}

/**
 * Decodes and parses a body. `query` mode follows the QUERY method's contract: any problem with
 * the content is a 400 `invalid_query_content`, and the content must be a JSON object. In `json`
 * mode problems are 422 with loc ["body"]. An empty body is `{}` when `optional`.
 */
export function parseJsonBody(buf: Buffer, mode: 'json' | 'query', optional: boolean): unknown {
  const bad = (msg: string, type: string): never =>
    mode === 'query' ? fail('invalid_query_content', { reason: msg }) : invalid(['body'], msg, type);
  if (buf.length === 0) {
    if (optional) return {};
    return bad('The body is empty; send a JSON object.', 'missing');
  }
  let text: string;
  try {
    text = utf8.decode(buf);
  } catch {
    return bad('The body is not valid UTF-8.', 'utf8_invalid');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return bad(`Malformed JSON: ${(err as Error).message.slice(0, 200)}`, 'json_invalid');
  }
  const scan = scanJson(value, MAX_JSON_DEPTH);
  if (scan.tooDeep) return bad(`JSON nested deeper than ${MAX_JSON_DEPTH} levels.`, 'too_deep');
  // a value problem, not a content one: 422 at its location in QUERY bodies too
  if (scan.nonFinite) nonFiniteNumber(['body', ...(nonFiniteAt(value) ?? [])]);
  if (mode === 'query' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    return bad('Expected a JSON object.', 'object_type');
  }
  return value;
}
