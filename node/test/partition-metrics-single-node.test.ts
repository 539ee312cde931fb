// What /metrics says of a real single node's partitions, engines and jobs: the documents and
// index parts each open partition holds (labelled by partition), the segments and memory of the
// engines loaded for it, and the jobs running and finished. Every figure is checked against what
// the test wrote through the HTTP interface.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, tenantKey, waitFor } from './api-client.js';
import { uploadFile, waitForJob } from './job-client.js';
import { bestBuyDocuments } from './search-suite.js';

/** Every series of a metric at /metrics: label set -> value. */
async function series(api: ApiClient, name: string): Promise<Map<string, number>> {
  const text = (await api.call<string>('GET', '/metrics')).body;
  const out = new Map<string, number>();
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`, 'gm'))) out.set(m[1] ?? '', Number(m[2]));
  return out;
}
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

describe('partition, engine and job metrics on a single node', () => {
  let node: SingleNode;
  let api: ApiClient;
  let key: string;
  const docs = bestBuyDocuments().slice(0, 400);

  beforeAll(async () => {
    node = await startSingleNode();
    api = new ApiClient(node.baseUrl);
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
    key = await tenantKey(api, node.adminKey, { tenant_id: 'metered', name: 'Metered', plan: 'pro' });
    for (const index_id of ['a', 'b']) expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
  }, 60_000);

  afterAll(async () => {
    await node?.stop();
  });

  it('counts the documents and index parts of each partition, and follows writes and deletes', async () => {
    expect((await api.call('POST', '/v1/indexes/a/documents', { key, body: { documents: docs.slice(0, 300) } })).status).toBe(200);
    expect((await api.call('POST', '/v1/indexes/b/documents', { key, body: { documents: docs.slice(300) } })).status).toBe(200);
    const documents = await series(api, 'suggest_partition_documents');
    expect(sum(documents)).toBe(400);
    for (const labels of documents.keys()) expect(labels).toMatch(/^\{partition="\d+"\}$/);
    expect(sum(await series(api, 'suggest_partition_index_parts'))).toBe(2);
    expect((await api.call('DELETE', `/v1/indexes/a/documents/${docs[0]!.id}`, { key })).status).toBe(200);
    expect(sum(await series(api, 'suggest_partition_documents'))).toBe(399);
  });

  it('reports the segments and memory of the engines loaded for each partition', async () => {
    for (const index of ['a', 'b']) expect((await api.call('GET', `/v1/typeahead?index=${index}&query=sam`, { key })).status).toBe(200);
    const segments = await series(api, 'suggest_engine_segments');
    expect(segments.size).toBeGreaterThanOrEqual(1);
    expect(sum(segments)).toBeGreaterThanOrEqual(2);
    const memory = await series(api, 'suggest_engine_memory_bytes');
    const segmentBytes = [...memory].filter(([l]) => l.includes('kind="segments"'));
    expect(segmentBytes.length).toBe(segments.size);
    // 399 documents of titles, descriptions, tables and 256-dimension vectors: well over 400 KB
    expect(segmentBytes.reduce((n, [, v]) => n + v, 0)).toBeGreaterThan(400_000);
    // the engines' partitions are partitions holding documents
    const documents = await series(api, 'suggest_partition_documents');
    for (const labels of segments.keys()) expect(documents.get(labels) ?? 0).toBeGreaterThan(0);
  });

  it('counts the jobs running and finished', async () => {
    expect((await series(api, 'suggest_jobs_running')).get('')).toBe(0);
    const before = (await series(api, 'suggest_jobs_finished_total')).get('{status="succeeded"}') ?? 0;
    const lines = docs.slice(0, 50).map((d) => JSON.stringify({ ...d, id: `job-${d.id}` })).join('\n');
    const up = await uploadFile(node.baseUrl, key, 'b', Buffer.from(lines), { filename: 'more.jsonl' });
    expect(up.status).toBe(200);
    expect(await waitForJob(api, key, up.body.job_id)).toMatchObject({ status: 'succeeded', processed: 50 });
    await waitFor(async () => ((await series(api, 'suggest_jobs_finished_total')).get('{status="succeeded"}') ?? 0) === before + 1, 10_000, 'job counted');
    expect((await series(api, 'suggest_jobs_running')).get('')).toBe(0);
    expect(sum(await series(api, 'suggest_partition_documents'))).toBe(449);
  });
});
