// JSON request bodies: strict UTF-8, JSON.parse, and a nesting limit checked iteratively after
// parsing (V8's parser does not recurse, but everything after it — validation, msgpack,
// JSON.stringify — does, so a 100k-deep body must stop here, not blow a stack later).
import { fail, invalid } from '../node/runtime/errors.js';

/** Deepest nesting of arrays/objects accepted in a body. */
export const MAX_JSON_DEPTH = 32;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** true when `root` nests arrays/objects deeper than `max` levels. */
export function exceedsDepth(root: unknown, max: number): boolean {
  const values: unknown[] = [root];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop();
    const d = depths.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) return true;
    if (Array.isArray(v)) {
      for (const c of v) {
        if (typeof c === 'object' && c !== null) {
          values.push(c);
          depths.push(d + 1);
        }
      }
    } else {
      for (const c of Object.values(v)) {
        if (typeof c === 'object' && c !== null) {
          values.push(c);
          depths.push(d + 1);
        }
      }
    }
  }
  return false;
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
  // A body shorter than 2 * depth characters cannot nest that deep.
  if (buf.length > 2 * MAX_JSON_DEPTH && exceedsDepth(value, MAX_JSON_DEPTH)) {
    return bad(`JSON nested deeper than ${MAX_JSON_DEPTH} levels.`, 'too_deep');
  }
  if (mode === 'query' && (typeof value !== 'object' || value === null || Array.isArray(value))) {
    return bad('Expected a JSON object.', 'object_type');
  }
  return value;
}
