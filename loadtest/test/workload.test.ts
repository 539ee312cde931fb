import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../data/data-files.js';
import { suggestContractProblems } from '../load/contract-check.js';
import { loadWorkload, parseEnvSettings, parseWorkload, requestPath } from '../load/workload.js';

const dir = path.join(REPO_ROOT, 'loadtest', 'workloads');

describe('workload files', () => {
  it('every file in workloads/ parses', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files).toEqual(expect.arrayContaining(['typeahead-keystrokes.json', 'typeahead-bypass-cache.json', 'autocomplete-hybrid.json']));
    for (const f of files) {
      const w = loadWorkload(path.join(dir, f));
      expect(`${w.name}.json`).toBe(f);
    }
  });

  it('rejects a workload that would not stop or has no query slot', () => {
    const base = loadWorkload(path.join(dir, 'typeahead-keystrokes.json'));
    expect(() => parseWorkload({ ...base, duration_s: 100_000 })).toThrow(/duration_s/);
    expect(() => parseWorkload({ ...base, params: { q: 'x' } })).toThrow(/\{query\}/);
    expect(() => parseWorkload({ ...base, route: '/v1/predict' })).toThrow(/route/);
    expect(() => parseWorkload({ ...base, source: { ...base.source, from: ['nowhere'] } })).toThrow(/nowhere/);
  });

  it('fills the template and encodes each value once', () => {
    const w = { route: '/v1/typeahead' as const, params: { query: '{query}', index: '{index}', limit: '10' } };
    expect(requestPath(w, '1/2" pipe & fit', 'products')).toBe('/v1/typeahead?query=1%2F2%22%20pipe%20%26%20fit&index=products&limit=10');
    // a query that looks like a slot stays literal
    expect(requestPath(w, '{index}', 'p')).toBe('/v1/typeahead?query=%7Bindex%7D&index=p&limit=10');
  });
});

describe('suggest contract check', () => {
  const good = {
    query: 'sam',
    original_query: 'sam',
    normalized_query: 'sam',
    corrected_query: null,
    mode: 'typeahead',
    index: 'products',
    took_ms: 0.4,
    suggestions: [{ id: '1', type: 'product', title: 'Samsung', score: 0.9 }],
    debug: null,
  };

  it('accepts the contract shape', () => {
    expect(suggestContractProblems(good, '/v1/typeahead')).toEqual([]);
  });

  it('names what is wrong', () => {
    const { took_ms: _t, ...noTook } = good;
    expect(suggestContractProblems(noTook, '/v1/typeahead')).toEqual(['missing took_ms']);
    expect(suggestContractProblems({ ...good, mode: 'fts_only' }, '/v1/typeahead')).toEqual(['mode is "fts_only", expected "typeahead"']);
    expect(suggestContractProblems({ ...good, suggestions: [{ id: 1, type: 'p', title: 't' }] }, '/v1/typeahead')).toEqual([
      'suggestions[0].id is not a string',
      'suggestions[0].score is not a number',
    ]);
    expect(suggestContractProblems({ detail: 'nope', code: 'not_implemented' }, '/v1/typeahead').length).toBeGreaterThan(5);
  });
});

describe('compared settings (--compare-env)', () => {
  it('reads NAME=VALUE pairs, values holding =', () => {
    expect(parseEnvSettings('NODE_OPTIONS=--max-semi-space-size=4,SUGGEST_TYPEAHEAD_THREADS=1')).toEqual({ NODE_OPTIONS: '--max-semi-space-size=4', SUGGEST_TYPEAHEAD_THREADS: '1' });
    expect(parseEnvSettings('SUGGEST_X=')).toEqual({ SUGGEST_X: '' });
  });

  it('rejects what is not a setting', () => {
    for (const bad of ['', 'SUGGEST_X', '=1', 'lower=1', 'A=1,,B=2', 'A B=1']) expect(() => parseEnvSettings(bad), bad).toThrow(/NAME=VALUE/);
  });
});

