// Query-string parsing for the HTTP edge. uWS hands over the raw string (or undefined when the
// URL has no `?`); this turns it into name -> values, decoding `+` and percent escapes, and
// refuses what a well-behaved client never sends (bad escapes, absurd sizes) with a 422 naming
// the parameter, instead of guessing.
import { invalid } from '../node/runtime/errors.js';

/** Longest raw query string accepted, in characters. */
export const MAX_QUERY_STRING = 16 * 1024;
/** Most `name=value` pairs accepted in one query string. */
export const MAX_QUERY_PAIRS = 256;

export type QueryValues = Record<string, string[]>;

function decode(s: string, loc: string): string {
  // Fast path: nothing to decode (the common case for typeahead).
  if (s.indexOf('%') === -1 && s.indexOf('+') === -1) return s;
  const spaced = s.indexOf('+') === -1 ? s : s.replaceAll('+', ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return invalid(['query', loc], 'Invalid percent-encoding in the query string.', 'url_encoding');
  }
}

/** Parses a raw query string; every name maps to the list of its values, in order. */
export function parseQueryString(raw: string | undefined): QueryValues {
  const out: QueryValues = Object.create(null) as QueryValues;
  if (raw === undefined || raw.length === 0) return out;
  if (raw.length > MAX_QUERY_STRING) invalid(['query'], `The query string is longer than ${MAX_QUERY_STRING} characters.`, 'too_long');
  let pairs = 0;
  let start = 0;
  while (start <= raw.length) {
    let end = raw.indexOf('&', start);
    if (end === -1) end = raw.length;
    if (end > start) {
      if (++pairs > MAX_QUERY_PAIRS) invalid(['query'], `More than ${MAX_QUERY_PAIRS} query parameters.`, 'too_many');
      const eq = raw.indexOf('=', start);
      const hasValue = eq !== -1 && eq < end;
      const rawName = raw.slice(start, hasValue ? eq : end);
      const name = decode(rawName, rawName);
      const value = hasValue ? decode(raw.slice(eq + 1, end), name) : '';
      const list = out[name];
      if (list) list.push(value);
      else out[name] = [value];
    }
    start = end + 1;
  }
  return out;
}
