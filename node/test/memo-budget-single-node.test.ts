// The engines' memo budget on a real single-node process: with SUGGEST_MEMO_BUDGET_MB=1, many
// distinct queries keep the memos' estimated bytes within the budget (memos are cleared, least
// recently written first), /metrics shows it, and answers do not change when memos are cleared.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, metricValue, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

const BUDGET = 1024 * 1024;

// threads 0: the event loop holds the whole budget; threads 2: it is shared out in thirds, and a
// thread that gets most of the queries fills its third (piscina hands sequential tasks to the
// first idle thread), so the sum stays within the budget but fills less of it
describe.each([
  { threads: 0, fills: BUDGET / 2 },
  { threads: 2, fills: BUDGET / 6 },
])('memo budget with $threads query threads', ({ threads, fills }) => {
  let node: SingleNode;
  let api: ApiClient;
  let key: string;

  const metric = (name: string): Promise<number> => metricValue(api, name);

  beforeAll(async () => {
    node = await startSingleNode({ env: { SUGGEST_MEMO_BUDGET_MB: '1', SUGGEST_QUERY_THREADS: String(threads) } });
    api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    key = await tenantKey(api, node.adminKey, { tenant_id: 'memo', name: 'Memo', plan: 'pro' });
    for (const index_id of ['a', 'b']) {
      expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
      const docs = bestBuyDocuments();
      for (let i = 0; i < docs.length; i += 1000) expect((await api.call('POST', `/v1/indexes/${index_id}/documents`, { key, body: { documents: docs.slice(i, i + 1000) } })).status).toBe(200);
      await untilSearchable(api, key, index_id);
    }
  }, 120_000);

  afterAll(async () => {
    await node?.stop();
  });

  it('keeps the memos of two busy indexes within SUGGEST_MEMO_BUDGET_MB, with unchanged answers', async () => {
    expect(await metric('suggest_engine_memo_limit_bytes')).toBe(BUDGET);
    const ask = async (index: string, query: string) => {
      const r = await api.call<{ suggestions: unknown[] }>('GET', `/v1/autocomplete?index=${index}&query=${encodeURIComponent(query)}&bypass_cache=true`, { key });
      expect(r.status).toBe(200);
      return r.body.suggestions;
    };
    const first = await ask('a', 'samsung gal');
    expect(first.length).toBeGreaterThan(0);
    // distinct words and prefixes from the catalogue: expansions, walks and rendered documents
    const words = [...new Set(bestBuyDocuments().flatMap((d) => d.title.toLowerCase().split(/[^a-z0-9]+/)).filter((w) => w.length >= 4))].slice(0, 900);
    let peak = 0;
    for (let i = 0; i < words.length; i++) {
      await ask(i % 2 === 0 ? 'a' : 'b', `${words[i]} ${words[(i * 7) % words.length]!.slice(0, 3)}`);
      if (i % 100 === 99) peak = Math.max(peak, await metric('suggest_engine_memo_bytes'));
    }
    expect(peak).toBeGreaterThan(fills);
    expect(peak).toBeLessThanOrEqual(BUDGET);
    expect(await metric('suggest_engine_memo_evictions_total')).toBeGreaterThan(0);
    expect(await metric('suggest_engine_memos')).toBeGreaterThan(0);
    expect(await ask('a', 'samsung gal')).toEqual(first);
    // every autocomplete above ran on the query threads, or none did
    expect(await metric('suggest_query_pool_threads')).toBe(threads);
    const tasks = await metric('suggest_query_pool_tasks_total');
    if (threads > 0) expect(tasks).toBeGreaterThanOrEqual(words.length + 2);
    else expect(tasks).toBe(0);
    expect(await metric('suggest_query_pool_queue_size')).toBe(0);
  }, 120_000);
});
