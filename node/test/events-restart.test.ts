// What a single node learned from engagement events survives a restart: the event log is
// replayed from RocksDB when the index's engine loads again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, untilSearchable, waitFor } from './api-client.js';
import { bestBuyDocuments } from './search-suite.js';

type Body = { suggestions: { id: string; score: number; metadata?: { behavior?: { boost: number } } }[] };

describe('engagement events across a restart', () => {
  let node: SingleNode;
  beforeAll(async () => {
    node = await startSingleNode();
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('ranks the same after the process restarts', async () => {
    let api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    const key = await tenantKey(api, node.adminKey, { tenant_id: 'restart', name: 'r', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'default', name: 'd' } })).status).toBe(200);
    expect((await api.call('POST', '/v1/indexes/default/documents', { key, body: { documents: bestBuyDocuments().slice(0, 800) } })).status).toBe(200);
    await untilSearchable(api, key, 'default');
    const path = '/v1/autocomplete?query=case&limit=10';
    const before = (await api.call<Body>('GET', path, { key })).body.suggestions;
    const target = before[before.length - 1]!.id;
    const events = Array.from({ length: 4 }, (_, i) => ({ doc_id: target, query: 'case', session_id: `s${i}`, type: 'add_to_cart' }));
    expect((await api.call('POST', '/v1/events/click', { key, body: { events } })).status).toBe(200);
    const learned = (await api.call<Body>('GET', path, { key })).body.suggestions;
    expect(learned[0]!.id).toBe(target);

    await node.restart();
    api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz after restart');
    await untilSearchable(api, key, 'default');
    const after = (await api.call<Body>('GET', path, { key })).body.suggestions;
    expect(after.map((s) => [s.id, s.score])).toEqual(learned.map((s) => [s.id, s.score]));
    expect(after[0]!.metadata!.behavior!.boost).toBeGreaterThan(1);
  });
});
