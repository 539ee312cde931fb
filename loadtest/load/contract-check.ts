// Checks a suggest response against the fields ARCHITECTURE.md fixes, so a load test never
// reports the speed of a wrong answer (an error body, a missing field) as throughput.
export function suggestContractProblems(body: unknown, route: string): string[] {
  const problems: string[] = [];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return ['body is not a JSON object'];
  const b = body as Record<string, unknown>;
  const want = (k: string, ok: (v: unknown) => boolean, what: string) => {
    if (!(k in b)) problems.push(`missing ${k}`);
    else if (!ok(b[k])) problems.push(`${k} is not ${what}`);
  };
  const str = (v: unknown) => typeof v === 'string';
  const strOrNull = (v: unknown) => v === null || typeof v === 'string';
  want('query', str, 'a string');
  want('original_query', str, 'a string');
  want('normalized_query', str, 'a string');
  want('corrected_query', strOrNull, 'a string or null');
  want('mode', str, 'a string');
  want('index', str, 'a string');
  want('took_ms', (v) => typeof v === 'number', 'a number');
  want('debug', (v) => v === null || typeof v === 'object', 'an object or null');
  want('suggestions', Array.isArray, 'an array');
  if (route === '/v1/typeahead' && typeof b['mode'] === 'string' && b['mode'] !== 'typeahead') problems.push(`mode is "${b['mode']}", expected "typeahead"`);
  if (Array.isArray(b['suggestions'])) {
    b['suggestions'].forEach((s: unknown, i) => {
      if (typeof s !== 'object' || s === null) return problems.push(`suggestions[${i}] is not an object`);
      const x = s as Record<string, unknown>;
      for (const k of ['id', 'type', 'title']) if (typeof x[k] !== 'string') problems.push(`suggestions[${i}].${k} is not a string`);
      if (typeof x['score'] !== 'number') problems.push(`suggestions[${i}].score is not a number`);
      return undefined;
    });
  }
  return problems;
}
