// Behaviour on the Home Depot titles and its spell-check list (see /work/shared/data/SOURCES.md).
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { words } from '../../../node/runtime/text/tokenize.js';
import { SuggestEngine } from '../engine.js';
import { DATA_DIR, homeDepotDocuments, loadHomeDepot } from './helpers.js';

const titles = (r: { suggestions: { title: string }[] }): string[] => r.suggestions.map((s) => s.title);

describe('Home Depot catalogue (titles only)', () => {
  const rows = loadHomeDepot();
  const engine = new SuggestEngine();
  beforeAll(() => {
    engine.upsert(homeDepotDocuments(rows).slice(0, 15000));
    engine.refresh();
  });

  it('suggests measured items and units', () => {
    const t = titles(engine.typeahead({ query: '1/2 in' }));
    expect(t.length).toBe(10);
    for (const s of t) expect(s.toLowerCase()).toMatch(/1\/2 in/);
  });

  it('corrects most misspelled queries of the spell-check list from its own vocabulary', () => {
    const pairs = readFileSync(`${DATA_DIR}/homedepot_query_spellcheck.txt`, 'utf8')
      .split('\n')
      .map((l) => /^'(.*)': '(.*)',?$/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => m !== null)
      .slice(0, 400);
    let fixed = 0;
    let judged = 0;
    for (const [, wrong, right] of pairs) {
      const target = words(right as string).join(' ');
      if (words(wrong as string).join(' ') === target) continue;
      // only pairs whose correct words this part of the catalogue knows
      if (!words(right as string).every((w) => engine.collectionStats([w]).df?.[w])) continue;
      judged++;
      const r = engine.autocomplete({ query: `${wrong} ` });
      if ((r.corrected_query ?? r.normalized_query) === target) fixed++;
    }
    expect(judged).toBeGreaterThan(100);
    expect(fixed / judged).toBeGreaterThan(0.5);
  });
});
