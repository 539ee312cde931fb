// The behaviour model's aggregates (weights by type, de-duplication per visitor, time decay,
// query -> document, concepts, users, mined queries) and how they change ranking.
import { describe, expect, it } from 'vitest';
import type { EngagementEvent } from '../../../node/runtime/engagement-event.js';
import { BehaviorModel, HALF_LIFE_MS, conceptKeys, queryKey } from '../behavior.js';
import { DEFAULT_BEHAVIOR_SETTINGS, behaviorSettings, candidatePool, rankAutocomplete, rankTypeahead } from '../behavior-ranking.js';
import { SuggestEngine } from '../engine.js';

const NOW = Date.UTC(2026, 10, 23);
const ev = (doc_id: string, extra: Partial<EngagementEvent> = {}): EngagementEvent => ({ doc_id, type: 'click', query: '', position: 0, user_id: '', session_id: '', ts: NOW, ...extra });
const concepts: Record<string, string[]> = { d1: ['brand:acme', 'category:drills'], d2: ['brand:bolt', 'category:drills'], d3: ['brand:acme', 'category:saws'] };
const model = () => new BehaviorModel((id) => concepts[id] ?? null);

describe('BehaviorModel', () => {
  it('weighs click 1, add_to_cart 3, purchase 5 and counts a visitor once per document and type', () => {
    const m = model();
    m.apply([ev('d1'), ev('d1', { type: 'add_to_cart' }), ev('d1', { type: 'purchase' })]);
    expect(m.popularity('d1', NOW)).toBeCloseTo(9, 6);
    m.apply([ev('d2', { session_id: 's' }), ev('d2', { session_id: 's' }), ev('d2', { user_id: 'u' }), ev('d2', { user_id: 'u' }), ev('d2', { session_id: 's', type: 'purchase' })]);
    expect(m.popularity('d2', NOW)).toBeCloseTo(1 + 1 + 5, 6);
    expect(m.events).toBe(8);
  });

  it('halves a weight every half-life', () => {
    const m = model();
    m.apply([ev('d1', { ts: NOW - HALF_LIFE_MS }), ev('d2', { ts: NOW - 3 * HALF_LIFE_MS })]);
    expect(m.popularity('d1', NOW)).toBeCloseTo(0.5, 6);
    expect(m.popularity('d2', NOW)).toBeCloseTo(0.125, 6);
    expect(m.popularity('d1', NOW + HALF_LIFE_MS)).toBeCloseTo(0.25, 6);
  });

  it('links queries to documents and concepts, and prefixes to the queries that continue them', () => {
    const m = model();
    m.apply([
      ev('d1', { query: 'Cordless  DRILL', session_id: 'a' }),
      ev('d1', { query: 'cordless drill', session_id: 'b' }),
      ev('d2', { query: 'cordless drill', session_id: 'c' }),
      ev('d3', { query: 'cordless saw', session_id: 'a' }),
    ]);
    expect(queryKey('Cordless  DRILL')).toBe('cordless drill');
    expect(m.relatedQueries('cordless', true)).toEqual(['cordless drill', 'cordless saw']);
    expect(m.relatedQueries('cordless', false)).toEqual([]);
    expect(m.relatedQueries('cordless drill', false)).toEqual(['cordless drill']);
    const { docs, total } = m.queryDocuments(['cordless drill'], NOW);
    expect(total).toBeCloseTo(3, 6);
    expect(docs.get('d1')).toBeCloseTo(2, 6);
    const c = m.queryConcepts(['cordless drill']);
    expect(c.get('category:drills')).toBeCloseTo(1, 6);
    expect(c.get('brand:acme')).toBeCloseTo(2 / 3, 6);
    const n = m.neighbors('cordless drill', 10, NOW);
    expect(n.documents[0]!.id).toBe('d1');
    expect(n.concepts[0]).toEqual({ concept: 'category:drills', share: expect.closeTo(1, 6) as number });
  });

  it('mines queries by distinct visitors, with a minimum count', () => {
    const m = model();
    for (const s of ['a', 'b', 'c']) m.apply([ev('d1', { query: 'drill bits', session_id: s })]);
    m.apply([ev('d1', { query: 'drill bits', session_id: 'a' })]); // same visitor again
    m.apply([ev('d2', { query: 'drill press', session_id: 'a' }), ev('d2', { query: 'drill press', session_id: 'b' })]);
    m.apply([ev('d2', { query: 'drill press' }), ev('d2', { query: 'drill press' })]); // anonymous: each event counts
    expect(m.minedCompletions('drill', 3, 10).map((q) => [q.key, q.count])).toEqual([
      ['drill press', 4],
      ['drill bits', 3],
    ]);
    expect(m.minedCompletions('drill b', 4, 10)).toEqual([]);
    expect(m.minedCompletions('saw', 1, 10)).toEqual([]);
  });

  it('stops learning new queries past its cap, and keeps counting the known ones', () => {
    const m = new BehaviorModel(() => [], 2);
    m.apply([ev('d1', { query: 'one' }), ev('d1', { query: 'two' }), ev('d1', { query: 'three' }), ev('d1', { query: 'one' })]);
    expect(m.stats().queries).toBe(2);
    expect(m.minedCompletions('one', 1, 10)[0]!.count).toBe(2);
    expect(m.relatedQueries('three', false)).toEqual([]);
    expect(m.popularity('d1', NOW)).toBeCloseTo(4, 6);
  });

  it('keeps user affinity for documents and concepts', () => {
    const m = model();
    m.apply([ev('d1', { user_id: 'u1' }), ev('d3', { user_id: 'u1', type: 'purchase' })]);
    const u = m.user('u1', NOW)!;
    expect(u.docs.get('d3')).toBeCloseTo(5, 6);
    expect(u.concepts.get('brand:acme')).toBeCloseTo(1, 6);
    expect(u.concepts.get('category:saws')).toBeCloseTo(5 / 6, 6);
    expect(m.user('nobody', NOW)).toBeNull();
    expect(conceptKeys(' Acme ', ['Drills', '', 'drills'])).toEqual(['brand:acme', 'category:drills']);
  });
});

describe('behaviour ranking', () => {
  const engine = new SuggestEngine();
  engine.upsert([
    { id: 'd1', title: 'Acme cordless drill 18V', desc: '', manufacturer: 'Acme', raw: { category: 'Drills' } },
    { id: 'd2', title: 'Bolt cordless drill 20V', desc: '', manufacturer: 'Bolt', raw: { category: 'Drills' } },
    { id: 'd3', title: 'Acme circular saw', desc: '', manufacturer: 'Acme', raw: { category: 'Saws' } },
    { id: 'd4', title: 'Bolt hammer drill', desc: '', manufacturer: 'Bolt', raw: { category: 'Drills' } },
    { id: 'd5', title: 'Garden hose 50 ft', desc: '', manufacturer: 'Flow', raw: { category: 'Garden' } },
  ]);
  const withEngine = () =>
    new BehaviorModel((id) => {
      const d = engine.get(id);
      return d ? conceptKeys(d.manufacturer, [String(d.raw.category)]) : null;
    });

  it('changes nothing without events or when disabled', () => {
    const pool = engine.autocomplete({ query: 'cordless drill', limit: 50 }).suggestions;
    expect(rankAutocomplete(pool, engine, { model: withEngine(), query: 'cordless drill' }, 10, true)).toEqual(pool.slice(0, 10));
    const m = withEngine();
    m.apply([ev('d2', { query: 'cordless drill' })]);
    expect(rankAutocomplete(pool, engine, { model: m, query: 'cordless drill', settings: behaviorSettings({ enabled: false }) }, 10, true)).toEqual(pool.slice(0, 10));
  });

  it('lifts the documents chosen after a query, and after the queries a prefix continues into', () => {
    const m = withEngine();
    const pool = engine.autocomplete({ query: 'cordless drill', limit: 50 }).suggestions;
    const second = pool[1]!.id;
    m.apply(Array.from({ length: 4 }, (_, i) => ev(second, { query: 'cordless drill', session_id: `s${i}`, ts: Date.now() })));
    const ranked = rankAutocomplete(pool, engine, { model: m, query: 'cordless drill' }, 10, true);
    expect(ranked[0]!.id).toBe(second);
    expect(ranked[0]!.metadata.behavior).toMatchObject({ injected: false });
    expect(ranked[0]!.metadata.behavior!.query).toBeGreaterThan(1);
    const prefixPool = engine.autocomplete({ query: 'cordl', limit: 50 }).suggestions;
    expect(rankAutocomplete(prefixPool, engine, { model: m, query: 'cordl' }, 10, true)[0]!.id).toBe(second);
    // a whole word typed and finished (trailing space) is not a prefix: no expansion
    expect(rankAutocomplete(prefixPool, engine, { model: m, query: 'cordless ' }, 10, true)[0]!.metadata.behavior!.query).toBe(0);
  });

  it('adds a document chosen after the query that retrieval missed, unless filters apply', () => {
    const m = withEngine();
    m.apply(Array.from({ length: 3 }, (_, i) => ev('d5', { query: 'drill', session_id: `s${i}`, ts: Date.now() })));
    const pool = engine.autocomplete({ query: 'drill', limit: 50 }).suggestions;
    expect(pool.map((s) => s.id)).not.toContain('d5');
    const ranked = rankAutocomplete(pool, engine, { model: m, query: 'drill' }, 10, true);
    const added = ranked.find((s) => s.id === 'd5')!;
    expect(added).toMatchObject({ title: 'Garden hose 50 ft', type: 'product', metadata: { concepts: ['Flow', 'Garden'], behavior: { injected: true } } });
    expect(rankAutocomplete(pool, engine, { model: m, query: 'drill' }, 10, false).map((s) => s.id)).not.toContain('d5');
  });

  it('never adds a document that a hide rule keeps out', () => {
    const m = withEngine();
    m.apply(Array.from({ length: 3 }, (_, i) => ev('d5', { query: 'drill', session_id: `s${i}`, ts: Date.now() })));
    const ranking = { rules: [{ id: 'no-hose', action: 'hide' as const, target: { ids: ['d5'] } }] };
    expect(engine.hiddenBy(ranking, 'd5')).toBe(true);
    expect(engine.hiddenBy(ranking, 'd1')).toBe(false);
    expect(engine.hiddenBy(null, 'd5')).toBe(false);
    const visible = { get: (id: string) => (engine.hiddenBy(ranking, id) ? null : engine.get(id)) };
    const pool = engine.autocomplete({ query: 'drill', limit: 50, ranking }).suggestions;
    expect(rankAutocomplete(pool, visible, { model: m, query: 'drill' }, 10, true).map((s) => s.id)).not.toContain('d5');
  });

  it('follows the graph: a query that led to a brand lifts that brand\'s other documents', () => {
    const m = withEngine();
    m.apply(Array.from({ length: 5 }, (_, i) => ev('d4', { query: 'drill', session_id: `s${i}`, ts: Date.now() })));
    const pool = engine.autocomplete({ query: 'drill', limit: 50 }).suggestions;
    const ranked = rankAutocomplete(pool, engine, { model: m, query: 'drill' }, 10, true);
    const bolt = ranked.find((s) => s.id === 'd2')!.metadata.behavior!;
    const acme = ranked.find((s) => s.id === 'd1')!.metadata.behavior!;
    expect(bolt.graph).toBeGreaterThan(acme.graph);
    expect(acme.graph).toBeGreaterThan(0); // same category
  });

  it('personalizes by the user\'s own choices and brands, for that user only', () => {
    const m = withEngine();
    m.apply([ev('d3', { user_id: 'fan', type: 'purchase', ts: Date.now() })]);
    const pool = engine.autocomplete({ query: 'cordless drill', limit: 50 }).suggestions;
    const mine = rankAutocomplete(pool, engine, { model: m, query: 'cordless drill', userId: 'fan' }, 10, true);
    const anyone = rankAutocomplete(pool, engine, { model: m, query: 'cordless drill' }, 10, true);
    expect(mine.find((s) => s.id === 'd1')!.metadata.behavior!.personal).toBeGreaterThan(0);
    expect(anyone.find((s) => s.id === 'd1')!.metadata.behavior!.personal).toBe(0);
    expect(mine.find((s) => s.id === 'd2')!.metadata.behavior!.personal).toBe(0);
  });

  it('offers mined queries in typeahead above the minimum count, never excluded ones', () => {
    const m = withEngine();
    for (let i = 0; i < 5; i++) m.apply([ev('d1', { query: 'drill driver combo', session_id: `a${i}` })]);
    for (let i = 0; i < 2; i++) m.apply([ev('d1', { query: 'drill dust', session_id: `b${i}` })]);
    const base = engine.typeahead({ query: 'drill d', limit: 10 });
    const ranked = rankTypeahead(base, { model: m, query: 'drill d' }, 10);
    expect(ranked.suggestions[0]).toMatchObject({ id: 'q:drill driver combo', type: 'query', title: 'drill driver combo' });
    expect(ranked.suggestions.map((s) => s.id)).not.toContain('q:drill dust');
    const low = rankTypeahead(base, { model: m, query: 'drill d', settings: behaviorSettings({ min_query_count: 2 }) }, 10);
    expect(low.suggestions.map((s) => s.id)).toContain('q:drill dust');
    const excluded = rankTypeahead(base, { model: m, query: 'drill d', settings: behaviorSettings({ excluded_queries: ['Drill Driver Combo'] }) }, 10);
    expect(excluded.suggestions.map((s) => s.id)).not.toContain('q:drill driver combo');
    expect(rankTypeahead(base, { model: m, query: 'drill d', settings: DEFAULT_BEHAVIOR_SETTINGS }, 1).suggestions).toHaveLength(1);
  });

  it('widens the candidate pool only when the query or the user has evidence', () => {
    const m = withEngine();
    m.apply([ev('d1', { query: 'cordless drill' }), ev('d3', { user_id: 'u' })]);
    expect(candidatePool(m, 'garden', undefined, 10, 50)).toBe(10);
    expect(candidatePool(m, 'cordless drill', undefined, 10, 50)).toBe(30);
    expect(candidatePool(m, 'cordl', undefined, 10, 50)).toBe(30);
    expect(candidatePool(m, 'garden', 'u', 10, 50)).toBe(30);
    expect(candidatePool(m, 'garden', 'nobody', 10, 50)).toBe(10);
    expect(candidatePool(m, 'cordless drill', undefined, 25, 50)).toBe(50);
  });

  it('reads settings defensively', () => {
    expect(behaviorSettings(undefined)).toBe(DEFAULT_BEHAVIOR_SETTINGS);
    expect(behaviorSettings({ min_query_count: -1, excluded_queries: 'x' })).toMatchObject({ enabled: true, minQueryCount: 3 });
    expect([...behaviorSettings({ excluded_queries: ['A  b', 7, ''] }).excludedQueries]).toEqual(['a b']);
  });
});
