// Typeahead and autocomplete end to end against a real single-node process, whose autocomplete
// is answered on two query threads (the local cluster's shard nodes answer it on their event
// loops on a 2-core machine, where they share the cores: cluster.test.ts runs the same suites).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { registerRankingSuite } from './ranking-suite.js';
import { ApiClient, tenantKey, untilSearchable } from './api-client.js';
import { bestBuyDocuments, registerSearchSuite } from './search-suite.js';
import { registerVectorSuite } from './vector-suite.js';

let node: SingleNode;
beforeAll(async () => {
  node = await startSingleNode({ env: { SUGGEST_QUERY_THREADS: '2' } });
});
afterAll(async () => {
  await node?.stop();
});

registerSearchSuite('search on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerSearchSuite('search on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
registerVectorSuite('vector modes on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerVectorSuite('vector modes on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
registerRankingSuite('synonyms and merchandising on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerRankingSuite('synonyms and merchandising on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });

describe('typeahead over an index in parts', () => {
  // The same 3,291 products in one part and in three: a phrase's support is counted in every part
  // holding documents with it, and the parts' counts add up to the whole's (a brand is not a third
  // of itself beside products, each of which is whole in its part).
  it('ranks phrases with the support of every part, as one part holding every document does', async () => {
    const api = new ApiClient(node.baseUrl);
    const key = await tenantKey(api, node.adminKey, { tenant_id: 'parts', name: 'Parts', plan: 'pro' });
    const docs = bestBuyDocuments();
    for (const [index_id, parts] of [['whole', 1], ['split', 3]] as const) {
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id, parts } })).status).toBe(200);
      for (let i = 0; i < docs.length; i += 1000) expect((await api.call('POST', `/v1/indexes/${index_id}/documents`, { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
      await untilSearchable(api, key, index_id);
    }
    type Answer = { suggestions: { id: string; type: string; score: number }[] };
    const ask = async (index: string, query: string) => (await api.call<Answer>('GET', `/v1/typeahead?index=${index}&query=${encodeURIComponent(query)}&limit=10`, { key })).body.suggestions;
    const ratios: number[] = [];
    for (const query of ['sam', 'sony', 'ipho', 'wireless', 'case', 'hp ']) {
      const whole = await ask('whole', query);
      const split = await ask('split', query);
      const wholeScore = new Map(whole.map((s) => [s.id, s.score]));
      for (const s of split.filter((x) => x.id.startsWith('q:') && wholeScore.has(x.id))) {
        // each part mines its own phrases (support below the minimum in a part is not kept), so
        // the sum comes close to the whole's rather than equal to it
        const ratio = s.score / wholeScore.get(s.id)!;
        expect(ratio, `${query}: ${s.id}`).toBeGreaterThan(0.7);
        expect(ratio, `${query}: ${s.id}`).toBeLessThan(1.3);
        ratios.push(ratio);
      }
      // the best phrase of the whole index leads in parts too
      const firstPhrase = (list: Answer['suggestions']) => list.find((x) => x.id.startsWith('q:'))?.id;
      expect(firstPhrase(split), query).toBe(firstPhrase(whole));
    }
    expect(ratios.length).toBeGreaterThanOrEqual(30);
    // most phrases are found in every part's list: their sums are the whole's to a few percent
    ratios.sort((a, b) => a - b);
    expect(ratios[Math.floor(ratios.length / 2)]).toBeGreaterThan(0.97);
    expect(ratios[Math.floor(ratios.length / 2)]).toBeLessThan(1.03);
  }, 120_000);
});
