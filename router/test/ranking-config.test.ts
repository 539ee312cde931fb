// The router's ranking configuration: packing once per index record, choosing per query what
// applies (synonym readings, rules by `when`, enabled flag and time window), the cache-key part,
// placing pins after the merge, and the write-time checks behind the 422s.
import { describe, expect, it } from 'vitest';
import type { IndexRecord } from '../../coordinator/coordinator.js';
import { IndexId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import { checkMerchandising, checkSynonyms, pack, placePins, RankingConfig, select, type PlacedPin } from '../ranking-config.js';

const record = (schema: Record<string, unknown>, merchandising: Record<string, unknown>): IndexRecord => ({
  tenant_id: TenantId('t'),
  index_id: IndexId('i'),
  name: 'i',
  physical_index_id: PhysicalIndexId('i--1'),
  status: 'ready',
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  schema,
  merchandising,
});

const NOW = Date.parse('2026-06-01T12:00:00Z');

describe('synonym readings', () => {
  const p = pack([['tv', 'television'], { from: 'ac', to: ['air conditioner'] }, ['Fridge', 'Réfrigérateur']], undefined);

  it('replaces one phrase per reading, two-way groups both ways, one-way only forward', () => {
    expect(select(p, 'autocomplete', 'samsung tv', NOW).payload?.synonyms).toEqual([{ query: 'samsung television', from: 'tv', to: 'television' }]);
    expect(select(p, 'autocomplete', 'Television', NOW).payload?.synonyms).toEqual([{ query: 'tv', from: 'television', to: 'tv' }]);
    expect(select(p, 'autocomplete', 'ac unit', NOW).payload?.synonyms).toEqual([{ query: 'air conditioner unit', from: 'ac', to: 'air conditioner' }]);
    expect(select(p, 'autocomplete', 'air conditioner', NOW).payload).toBeNull();
    // normalized on both sides (case, accents)
    expect(select(p, 'autocomplete', 'REFRIGERATEUR', NOW).payload?.synonyms?.[0]?.to).toBe('fridge');
  });

  it('matches the longest phrase first and caps the readings', () => {
    const q = pack([['air conditioner', 'ac'], ['air', 'atmosphere']], undefined);
    expect(select(q, 'autocomplete', 'air conditioner', NOW).payload?.synonyms?.map((s) => s.query)).toEqual(['ac']);
    const many = pack([Array.from({ length: 20 }, (_, i) => `w${i}`)], undefined);
    expect(select(many, 'autocomplete', 'w0 w1', NOW).payload?.synonyms).toHaveLength(8);
  });

  it('does not expand typeahead queries', () => {
    expect(select(p, 'typeahead', 'tv', NOW).payload).toBeNull();
  });
});

describe('rule selection', () => {
  const rules = [
    { id: 'always', action: 'boost', target: { field: 'brand', values: ['Acme'] } },
    { id: 'tv-only', action: 'pin', target: { ids: ['d1'] }, position: 2, when: { query: 'TV' } },
    { id: 'has-cable', action: 'hide', target: { ids: ['d2'] }, when: { contains: 'hdmi cable' } },
    { id: 'off', action: 'bury', target: { ids: ['d3'] }, enabled: false },
    { id: 'later', action: 'bury', target: { ids: ['d4'] }, factor: 0.2, starts_at: '2026-07-01T00:00:00Z' },
    { id: 'over', action: 'hide', target: { ids: ['d5'] }, ends_at: '2026-05-01T00:00:00Z' },
  ];
  const p = pack(undefined, rules);
  const status = (q: string, kind: 'typeahead' | 'autocomplete' = 'autocomplete', now = NOW) => Object.fromEntries(select(p, kind, q, now).debug.rules.map((r) => [r.id, r.status]));

  it('applies enabled rules in their window whose `when` matches the normalized query', () => {
    expect(status('tv')).toEqual({ always: 'applied', 'tv-only': 'applied', 'has-cable': 'query_mismatch', off: 'disabled', later: 'not_started', over: 'ended' });
    expect(status(' Tv ')['tv-only']).toBe('applied');
    expect(status('tv stand')['tv-only']).toBe('query_mismatch');
    expect(status('long hdmi cable 6ft')['has-cable']).toBe('applied');
    expect(status('hdmi long cable')['has-cable']).toBe('query_mismatch');
    expect(status('x', 'autocomplete', Date.parse('2026-07-02T00:00:00Z')).later).toBe('applied');
  });

  it('sends scoring rules with their defaults and pins apart; typeahead gets hides only', () => {
    const s = select(p, 'autocomplete', 'tv', NOW);
    expect(s.payload?.rules).toEqual([{ id: 'always', action: 'boost', target: { field: 'brand', values: ['Acme'] }, factor: 2 }]);
    expect(s.payload?.pins).toEqual([{ id: 'tv-only', target: { ids: ['d1'] }, position: 2 }]);
    const t = select(p, 'typeahead', 'hdmi cable', NOW);
    expect(t.payload).toEqual({ rules: [{ id: 'has-cable', action: 'hide', target: { ids: ['d2'] } }] });
    expect(status('tv', 'typeahead').always).toBe('not_on_typeahead');
  });

  it('puts the content version and the live timed rules in the cache key', () => {
    const a = select(p, 'autocomplete', 'tv', NOW).cacheKey;
    expect(select(pack(undefined, rules), 'autocomplete', 'tv', NOW).cacheKey).toBe(a);
    expect(select(p, 'autocomplete', 'tv', Date.parse('2026-07-02T00:00:00Z')).cacheKey).not.toBe(a);
    const changed = pack(undefined, [{ ...rules[0], factor: 3 }, ...rules.slice(1)]);
    expect(select(changed, 'autocomplete', 'tv', NOW).cacheKey).not.toBe(a);
    expect(select(pack(undefined, undefined), 'autocomplete', 'tv', NOW)).toMatchObject({ payload: null, cacheKey: '' });
  });

  it('packs once per record object and again for a replaced record', () => {
    const cfg = new RankingConfig();
    const rec = record({ synonyms: [['tv', 'television']] }, { rules });
    expect(cfg.of(rec)).toBe(cfg.of(rec));
    const next = { ...rec, merchandising: { rules: [] } };
    expect(cfg.of(next)).not.toBe(cfg.of(rec));
    expect(cfg.of(next).rules).toHaveLength(0);
    // the same content read again (a new record object) is not packed again
    expect(cfg.of(structuredClone(rec))).toBe(cfg.of(rec));
    expect(cfg.of(record({}, {})).version).toBe('0');
  });

  it('remembers selections per query, and per live rule set when rules are timed', () => {
    const cfg = new RankingConfig();
    const rec = record({}, { rules });
    const a = cfg.select(rec, 'autocomplete', 'tv', NOW);
    expect(cfg.select(rec, 'autocomplete', 'tv', NOW + 1000)).toBe(a);
    expect(cfg.select(rec, 'typeahead', 'tv', NOW)).not.toBe(a);
    const later = cfg.select(rec, 'autocomplete', 'tv', Date.parse('2026-07-02T00:00:00Z'));
    expect(later).not.toBe(a);
    expect(later.debug.rules.find((r) => r.id === 'later')?.status).toBe('applied');
    expect(later.cacheKey).not.toBe(a.cacheKey);
  });

  it('skips malformed stored rules instead of failing queries', () => {
    const q = pack('nonsense', [null, 5, { id: 'x', action: 'explode' }, { id: 'y', action: 'hide', target: {} }, { id: 'ok', action: 'hide', target: { ids: ['a'] } }]);
    expect(q.rules.map((r) => r.id)).toEqual(['ok']);
  });
});

describe('placing pins after the merge', () => {
  const s = (id: string, score: number) => ({ id, score, metadata: { concepts: [] as string[] } });
  const merged = [s('a', 9), s('b', 8), s('c', 7), s('d', 6)];
  const p = pack(undefined, [
    { id: 'p1', action: 'pin', target: { ids: ['x', 'c'] }, position: 1 },
    { id: 'p2', action: 'pin', target: { field: 'brand', values: ['z'] }, position: 2 },
  ]);
  const sel = select(p, 'autocomplete', 'q', NOW);

  it('places id pins in order from their position, attribute pins by best score, and keeps the limit', () => {
    const placed: PlacedPin[] = [];
    const out = placePins(
      merged,
      [
        { rule: 'p1', position: 1, order: 1, suggestion: s('c', 0) },
        { rule: 'p1', position: 1, order: 0, suggestion: s('x', 0) },
        { rule: 'p2', position: 2, order: 0, suggestion: s('z1', 3) },
        { rule: 'p2', position: 2, order: 0, suggestion: s('z2', 5) },
      ],
      sel,
      4,
      placed,
    );
    // p1 takes 1 and 2; p2 wanted 2, so it comes right after
    expect(out.map((x) => x.id)).toEqual(['x', 'c', 'z2', 'a']);
    // a pinned document the query found keeps its own score
    expect(out[1]!.score).toBe(7);
    expect((out[0]!.metadata as unknown as { merchandised: unknown }).merchandised).toEqual([{ id: 'p1', action: 'pin', position: 1 }]);
    expect(placed).toEqual([
      { id: 'x', rule: 'p1', position: 1 },
      { id: 'c', rule: 'p1', position: 2 },
      { id: 'z2', rule: 'p2', position: 3 },
    ]);
  });

  it('puts a pin past the end of a short list at its end', () => {
    const out = placePins([s('a', 1)], [{ rule: 'p2', position: 5, order: 0, suggestion: s('z', 1) }], select(pack(undefined, [{ id: 'p2', action: 'pin', target: { ids: ['z'] }, position: 5 }]), 'autocomplete', 'q', NOW), 10, []);
    expect(out.map((x) => x.id)).toEqual(['a', 'z']);
  });
});

describe('write-time checks', () => {
  const locs = (issues: { loc: (string | number)[] }[]) => issues.map((i) => i.loc.join('.'));

  it('names the rule and field at fault', () => {
    const issues = checkMerchandising({
      rules: [
        { id: 'a', action: 'pin', target: { ids: ['x'] } },
        { id: 'a', action: 'boost', target: { ids: ['x'] }, factor: 0.5, position: 3 },
        { id: 'c', action: 'bury', target: { field: 'brand' }, factor: 2 },
        { id: 'd', action: 'hide', target: {}, factor: 2 },
        { id: 'e', action: 'hide', target: { ids: ['x'], field: 'f', values: [1] }, when: {} },
        { id: 'f', action: 'hide', target: { ids: ['x'] }, when: { contains: '!!!' }, starts_at: '2026-02-01T00:00:00Z', ends_at: '2026-01-01T00:00:00Z' },
        { id: 'g', action: 'pin', target: { ids: ['1', '2', '3'] }, position: 49 },
      ],
    });
    expect(locs(issues)).toEqual([
      'body.rules.0.position',
      'body.rules.1.id',
      'body.rules.1.position',
      'body.rules.1.factor',
      'body.rules.2.target.values',
      'body.rules.2.factor',
      'body.rules.3.target',
      'body.rules.3.factor',
      'body.rules.4.target',
      'body.rules.4.when',
      'body.rules.5.when.contains',
      'body.rules.5.ends_at',
      'body.rules.6.target.ids',
    ]);
    for (const i of issues) expect(i.msg.length).toBeGreaterThan(10);
    expect(checkMerchandising({ rules: [{ id: 'ok', action: 'boost', target: { field: 'brand', values: ['x'] }, when: { query: 'tv' } }] })).toEqual([]);
  });

  it('refuses synonym terms without searchable words or with too many words', () => {
    expect(locs(checkSynonyms({ synonyms: [['tv', '...'], { from: 'a b c d e f g', to: ['x'] }, { from: 'ok', to: '!' }] }))).toEqual([
      'body.synonyms.0.1',
      'body.synonyms.1.from',
      'body.synonyms.2.to',
    ]);
    expect(checkSynonyms({ synonyms: [['tv', 'television']] })).toEqual([]);
  });
});
