// The router's response cache on a real single-node process with SUGGEST_RESPONSE_CACHE_MB=1:
// a stream of distinct typeahead prefixes keeps the search cache within its three quarters of the
// megabyte (answers let go, counted at /metrics), a prefix served over and over stays cached
// through it (second chance), and a cached answer is the answer the engine gives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

const SEARCH_CACHE_BYTES = 0.75 * 1024 * 1024;

describe('response cache bound (single node)', () => {
  let node: SingleNode;
  let api: ApiClient;
  let key: string;

  const search = (name: string) => metricValue(api, `${name}\\{cache="search_response"\\}`);
  const hits = () => metricValue(api, 'suggest_cache_lookups_total\\{cache="search_response",result="hit"\\}').catch(() => 0);

  beforeAll(async () => {
    node = await startSingleNode({ env: { SUGGEST_RESPONSE_CACHE_MB: '1' } });
    api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    key = await tenantKey(api, node.adminKey, { tenant_id: 'rc', name: 'Cache', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'bb', name: 'bb' } })).status).toBe(200);
    const docs = bestBuyDocuments();
    for (let i = 0; i < docs.length; i += 1000) expect((await api.call('POST', '/v1/indexes/bb/documents', { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
    await untilSearchable(api, key, 'bb');
  }, 120_000);

  afterAll(async () => {
    await node?.stop();
  });

  it('stays within its bound over distinct prefixes while a popular one keeps being served from it', async () => {
    const ask = async (query: string, bypass = false) => {
      const r = await api.call<{ suggestions: unknown[] }>('GET', `/v1/typeahead?index=bb&limit=20&query=${encodeURIComponent(query)}${bypass ? '&bypass_cache=true' : ''}`, { key });
      expect(r.status).toBe(200);
      return r.body.suggestions;
    };
    const popular = await ask('samsung');
    expect(popular.length).toBeGreaterThan(0);
    // every prefix of every title word of four letters or more: thousands of distinct answers
    const words = [...new Set(bestBuyDocuments().flatMap((d) => d.title.toLowerCase().split(/[^a-z0-9]+/)).filter((w) => w.length >= 4))];
    const prefixes = [...new Set(words.flatMap((w) => [w.slice(0, 3), w.slice(0, 4), w]))].slice(0, 2500);
    let peak = 0;
    const hitsBefore = await hits();
    for (let i = 0; i < prefixes.length; i++) {
      await ask(prefixes[i]!);
      if (i % 5 === 0) await ask('samsung');
      if (i % 250 === 249) peak = Math.max(peak, await search('suggest_response_cache_bytes'));
    }
    expect(peak).toBeGreaterThan(SEARCH_CACHE_BYTES / 2);
    expect(peak).toBeLessThanOrEqual(SEARCH_CACHE_BYTES);
    expect(await search('suggest_response_cache_evictions_total')).toBeGreaterThan(0);
    expect(await search('suggest_response_cache_entries')).toBeGreaterThan(0);
    // the popular prefix was answered from the cache every time (500 asks), evictions or not
    expect((await hits()) - hitsBefore).toBeGreaterThanOrEqual(prefixes.length / 5);
    expect(await ask('samsung')).toEqual(popular);
    expect(await ask('samsung', true)).toEqual(popular);
  }, 120_000);

  it('counts the answers computed with and without suggestions, by route, and not those served from the cache', async () => {
    const answers = (route: string, result: string) => metricValue(api, `suggest_search_answers_total\\{route="${route}",result="${result}"\\}`).catch(() => 0);
    const ask = async (route: string, query: string, bypass: boolean) => {
      const r = await api.call<{ suggestions: unknown[] }>('GET', `/v1/${route}?index=bb&query=${encodeURIComponent(query)}${bypass ? '&bypass_cache=true' : ''}`, { key });
      expect(r.status).toBe(200);
      return r.body.suggestions.length;
    };
    const before = { te: await answers('typeahead', 'empty'), ts: await answers('typeahead', 'suggestions'), ae: await answers('autocomplete', 'empty') };
    expect(await ask('typeahead', 'qqzzxxqq', true)).toBe(0);
    expect(await ask('typeahead', 'qqzzxxqq', true)).toBe(0);
    expect(await ask('typeahead', 'samsung galaxy', true)).toBeGreaterThan(0);
    expect(await ask('autocomplete', 'qqzzxxqq', true)).toBe(0);
    // computed once, then served from the cache: counted once
    expect(await ask('typeahead', 'qqzzxxqqy', false)).toBe(0);
    expect(await ask('typeahead', 'qqzzxxqqy', false)).toBe(0);
    expect((await answers('typeahead', 'empty')) - before.te).toBe(3);
    expect((await answers('typeahead', 'suggestions')) - before.ts).toBe(1);
    expect((await answers('autocomplete', 'empty')) - before.ae).toBe(1);
  });
});
