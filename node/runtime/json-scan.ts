// Walks over parsed JSON shared by request bodies (router/json-body.ts) and uploaded records
// (shard/jobs/record-source.ts): how deep a value nests, checked without recursion so a hostile
// value cannot exhaust the stack, and where a number JSON.parse made infinite sits.

/** What a walk over a parsed value found: nesting past the limit, or a number JSON.parse made infinite. */
export interface JsonScan {
  tooDeep: boolean;
  nonFinite: boolean;
}

/**
 * One iterative walk over a parsed value: whether it nests arrays/objects deeper than `max`
 * levels, and whether it holds a non-finite number. JSON has no Infinity, but JSON.parse turns a
 * literal beyond the range of a double (1e309, a 400-digit integer) into one, which
 * JSON.stringify and msgpack would then store as null or Infinity without a word.
 */
export function scanJson(root: unknown, max: number): JsonScan {
  const found: JsonScan = { tooDeep: false, nonFinite: typeof root === 'number' && !Number.isFinite(root) };
  const values: unknown[] = [root];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop();
    const d = depths.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) {
      found.tooDeep = true;
      return found;
    }
    for (const c of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof c === 'object') {
        if (c !== null) {
          values.push(c);
          depths.push(d + 1);
        }
      } else if (typeof c === 'number' && !Number.isFinite(c)) found.nonFinite = true;
    }
  }
  return found;
}

/** Where the first non-finite number of `v` is (a path of keys and indexes), or null. Recursive: for a value `scanJson` found no deeper than a bound. */
export function nonFiniteAt(v: unknown): (string | number)[] | null {
  if (typeof v === 'number') return Number.isFinite(v) ? null : [];
  if (typeof v !== 'object' || v === null) return null;
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((c, i) => [i, c]) : Object.entries(v);
  for (const [k, c] of entries) {
    const below = nonFiniteAt(c);
    if (below !== null) return [k, ...below];
  }
  return null;
}
