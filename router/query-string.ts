// Query-string parsing for the HTTP edge. uWS hands over the raw string (or undefined when the
// URL has no `?`); this turns it into name -> values, decoding `+` and percent escapes, and
// refuses what a well-behaved client never sends (bad escapes, absurd sizes) with a 422 naming
// the parameter, instead of guessing.
//
// uWS decodes the raw target as UTF-8 before JS sees it, each invalid byte becoming U+FFFD: a raw
// \xFF reaches us as the text a percent-encoded %EF%BF%BD decodes to, and would be searched as
// such. A U+FFFD in the raw string is therefore refused like the bad escape %FF is (422
// `url_encoding`); a client that means the character itself percent-encodes it, as it must any
// byte beyond ASCII (RFC 3986). On an ASCII string V8 answers indexOf('\uFFFD') without scanning.
import { invalid } from '../node/runtime/errors.js';

/** Longest raw query string accepted, in characters. */
export const MAX_QUERY_STRING = 16 * 1024;
/** Most `name=value` pairs accepted in one query string. */
export const MAX_QUERY_PAIRS = 256;

export type QueryValues = Record<string, string[]>;

/** What uWS makes of a byte of the request target that is not UTF-8. */
export const REPLACEMENT_CHAR = '\uFFFD';
export const RAW_NOT_UTF8 = 'The request target holds bytes that are not UTF-8; percent-encode text as UTF-8 (%C3%A9 for "é").';

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
  const notUtf8 = raw.indexOf(REPLACEMENT_CHAR) !== -1;
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
      if (notUtf8 && rawName.indexOf(REPLACEMENT_CHAR) !== -1) invalid(['query', rawName], RAW_NOT_UTF8, 'url_encoding');
      const name = decode(rawName, rawName);
      const rawValue = hasValue ? raw.slice(eq + 1, end) : '';
      if (notUtf8 && rawValue.indexOf(REPLACEMENT_CHAR) !== -1) invalid(['query', name], RAW_NOT_UTF8, 'url_encoding');
      const value = hasValue ? decode(rawValue, name) : '';
      const list = out[name];
      if (list) list.push(value);
      else out[name] = [value];
    }
    start = end + 1;
  }
  return out;
}
