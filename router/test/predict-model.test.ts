// The pieces of predict that need no process: features, confidence, reason codes, intent-rule
// matching, merging of part candidates and default actions.
import { describe, expect, it } from 'vitest';
import type { PredictCandidate, PredictPartResult } from '../../node/runtime/predict-types.js';
import { boosted, confidenceOf, featuresOf, logOdds, personal, promoted, queryView, reasonCodes, REASON_CODES, signal } from '../predict-model.js';
import { defaultAction, mergeCandidates, ruleStrength, type IntentRule } from '../predict-service.js';

const cand = (over: Partial<PredictCandidate>): PredictCandidate => ({
  key: 's:q:x',
  type: 'intent',
  object: 'query',
  id: 'q:x',
  label: 'x',
  source: 'suggestion',
  score: 1,
  rank: 0,
  matched: 0,
  typos: 0,
  suggested: false,
  fields: {},
  signals: {},
  ...over,
});

const part = (candidates: PredictCandidate[]): PredictPartResult => ({ normalized_query: 'q', corrected_query: null, suggestions: [], candidates });

describe('predict model', () => {
  it('computes coverage, exact and prefix features from the labels', () => {
    const q = queryView('samsung gal', false);
    const f = featuresOf(cand({ label: 'Samsung Galaxy S7' }), q, 4, 2);
    expect(f.coverage).toBe(1);
    expect(f.starts).toBe(1);
    expect(f.exact).toBe(0);
    expect(f.share).toBe(0.25);
    expect(f.relative).toBe(0.5);
    const g = featuresOf(cand({ label: 'Case for Galaxy' }), queryView('samsung galaxy ', false), 1, 1);
    expect(g.coverage).toBe(0.5);
    expect(g.starts).toBe(0);
    expect(featuresOf(cand({ label: 'Samsung' }), queryView('samsung', true), 1, 1)).toMatchObject({ exact: 1, corrected: 1 });
  });

  it('keeps confidence inside [0, 1] and monotone in the log-odds', () => {
    expect(confidenceOf(-1000)).toBe(0);
    expect(confidenceOf(1000)).toBe(1);
    expect(confidenceOf(0)).toBe(0.5);
    const q = queryView('samsung', false);
    const strong = logOdds(featuresOf(cand({ label: 'Samsung' }), q, 1, 1));
    const weak = logOdds(featuresOf(cand({ label: 'Cable', rank: 9, score: 0.01 }), q, 1, 1));
    expect(strong).toBeGreaterThan(weak);
  });

  it('gives only documented reason codes, following the signals', () => {
    const q = queryView('samsung', true);
    const c = cand({ label: 'Samsung', signals: { behavior: { boost: 1.4, personal: 0.2 }, synonym: { from: 'tv', to: 'television' }, merchandised: [{ id: 'r', action: 'boost', factor: 2 }] } });
    const codes = reasonCodes(c, featuresOf(c, q, 1, 1), { rule: false, mapped: true });
    expect(codes).toEqual(['spell_corrected', 'exact_match', 'popular_suggestion', 'behavioral_boost', 'synonym', 'merchandised', 'personalized', 'action_mapping']);
    const plain = cand({ label: 'Samsung', signals: { behavior: { boost: 1, personal: 0 }, merchandised: [{ id: 'r', action: 'bury', factor: 0.5 }] } });
    expect(reasonCodes(plain, featuresOf(plain, q, 1, 1), { rule: false, mapped: false })).toEqual(['spell_corrected', 'exact_match', 'popular_suggestion']);
    expect([boosted(2), boosted({ boost: 0.9 }), personal({ personal: 1 }), personal(3), promoted([{ action: 'pin' }]), promoted([{ action: 'boost', factor: 0.5 }])]).toEqual([true, false, true, false, true, false]);
    for (const code of codes) expect(REASON_CODES).toHaveProperty(code);
    expect([signal(0), signal(''), signal({}), signal(null), signal(2), signal('x'), signal({ a: 1 }), signal(true)]).toEqual([false, false, false, false, true, true, true, true]);
  });
});

describe('intent rules', () => {
  const rule: IntentRule = { intent: 'track', match_terms: ['track order', 'where is my order'], target: '/orders', label: 'Track', type: 'workflow' };
  it('matches a term as whole words anywhere in the query', () => {
    expect(ruleStrength(rule, queryView('please track orders now', false))).toBe(1);
    expect(ruleStrength(rule, queryView('Where is my ORDER?', false))).toBe(1);
    expect(ruleStrength(rule, queryView('tracking order', false))).toBe(0);
  });
  it('matches a typing prefix of a term by the share typed', () => {
    const s = ruleStrength(rule, queryView('where is m', false));
    expect(s).toBeGreaterThan(0.5);
    expect(s).toBeLessThan(1);
    expect(ruleStrength(rule, queryView('wh', false))).toBe(0);
    expect(ruleStrength(rule, queryView('where is m ', false))).toBe(0);
  });
});

describe('merging part candidates', () => {
  it('adds suggestion support across parts, keeps the best document and marks suggested products', () => {
    const merged = mergeCandidates([
      part([cand({ key: 's:q:a', score: 2 }), cand({ key: 'd:1', source: 'suggestion', type: 'product', object: 'product', id: '1', score: 0.5 })]),
      part([cand({ key: 's:q:a', score: 3 }), cand({ key: 's:q:b', score: 4 })]),
      part([cand({ key: 'd:1', source: 'document', type: 'product', object: 'product', id: '1', score: 7, rank: 3 })]),
    ]);
    const byKey = new Map(merged.map((c) => [c.key, c]));
    expect(byKey.get('s:q:a')!.score).toBe(5);
    expect(byKey.get('s:q:a')!.rank).toBe(0);
    expect(byKey.get('s:q:b')!.rank).toBe(1);
    expect(byKey.get('d:1')).toMatchObject({ source: 'document', score: 7, suggested: true, rank: 0 });
  });
});

describe('default actions', () => {
  it('gives every type a route and the documented kind and method', () => {
    expect(defaultAction(cand({ type: 'product', id: 'a/b' }), 'x')).toEqual({ kind: 'navigate', target: '/products/a%2Fb', method: 'GET' });
    expect(defaultAction(cand({ type: 'destination', object: 'brand' }), 'Dr. Pepper & Co')).toEqual({ kind: 'navigate', target: '/brands/dr-pepper-co', method: 'GET' });
    expect(defaultAction(cand({ type: 'category' }), 'TVs').target).toBe(`/search?filters=${encodeURIComponent('{"category":["TVs"]}')}`);
    expect(defaultAction(cand({ type: 'intent' }), 'tv stand')).toEqual({ kind: 'search', target: '/search?q=tv%20stand', method: 'GET' });
    expect(defaultAction(cand({ type: 'workflow', id: 'w' }), 'x')).toEqual({ kind: 'start_workflow', target: '/workflows/w', method: 'POST' });
    expect(defaultAction(cand({ type: 'content', id: 'c' }), 'x').target).toBe('/content/c');
  });
});
