// Reads spread over a partition's replicas, for real: etcd, 3 shard nodes and a router as
// separate processes, replication factor 2. Each part query goes to the live replicas of its
// partition in turn, so both answer; a follower's engine follows the primary's writes, so every
// write is in the next answer whichever replica gives it; a killed follower costs no query.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../runtime/process-harness.js';
import { partitionOf } from '../runtime/hash.js';
import { metricValue, type ApiClient } from './api-client.js';
import { startReplicatedCluster } from './replicated-cluster.js';

interface Answer {
  suggestions: { id: string; title: string }[];
  debug: { profile: { parts: { part: number; node: string }[] } } | null;
}

let cluster: LocalCluster;
let api: ApiClient;
let key: string;

beforeAll(async () => {
  ({ cluster, api, key } = await startReplicatedCluster('spread', 8));
  expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'shop', name: 'shop', parts: 2 } })).status).toBe(200);
  const documents = Array.from({ length: 40 }, (_, i) => ({ id: `d${i}`, title: `Wombat Kettle ${i}`, raw: { brand: 'Wombat' } }));
  expect((await api.call('POST', '/v1/indexes/shop/documents', { key, body: { documents } })).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

const ask = (query: string, extra = '') => api.call<Answer>('GET', `/v1/typeahead?index=shop&bypass_cache=true&query=${encodeURIComponent(query)}${extra}`, { key });

/** The router's count of part queries answered by `replica` (primary, follower, follower_fallback, follower_for_primary). */
const partQueries = (replica: string) => metricValue(api, `suggest_router_part_queries\\{replica="${replica}"\\}`);

describe('reads over replicas', () => {
  it('sends each part query to both replicas of its partition in turn', async () => {
    const seen = new Map<number, Set<string>>();
    for (let i = 0; i < 12; i++) {
      const r = await ask('wombat', '&profile=true');
      expect(r.status).toBe(200);
      expect(r.body.suggestions.length).toBeGreaterThan(0);
      for (const p of r.body.debug!.profile.parts) {
        if (!seen.has(p.part)) seen.set(p.part, new Set());
        seen.get(p.part)!.add(p.node);
      }
    }
    expect([...seen.keys()].sort()).toEqual([0, 1]);
    for (const nodes of seen.values()) expect(nodes.size).toBe(2);
    expect(await partQueries('follower')).toBeGreaterThan(0);
    expect(await partQueries('primary')).toBeGreaterThan(0);
    // the admin view says the same
    const view = (await api.call<{ router: { part_reads: Record<string, number> } }>('GET', '/v1/admin/cluster', { key: cluster.adminKey })).body;
    expect(view.router.part_reads.follower).toBe(await partQueries('follower'));
  });

  it('has every acknowledged write and delete in the next answer, whichever replica gives it', async () => {
    for (let i = 0; i < 16; i++) {
      const id = `fresh-${i}`;
      const title = `Quokka Lamp Model${i}x`;
      expect((await api.call('POST', '/v1/indexes/shop/documents', { key, body: { documents: [{ id, title }] } })).status).toBe(200);
      const after = await ask(`quokka lamp model${i}x`);
      expect(after.body.suggestions.map((s) => s.title), `write ${i}`).toContain(title);
      expect((await api.call<{ title: string }>('GET', `/v1/indexes/shop/documents/${id}`, { key })).body.title, `read ${i}`).toBe(title);
      expect((await api.call('DELETE', `/v1/indexes/shop/documents/${id}`, { key })).status).toBe(200);
      const gone = await ask(`quokka lamp model${i}x`);
      expect(gone.body.suggestions.map((s) => s.id), `delete ${i}`).not.toContain(id);
      expect((await api.call('GET', `/v1/indexes/shop/documents/${id}`, { key })).status, `read ${i} after its delete`).toBe(404);
    }
  });

  it('answers every query while a follower is killed: the primary takes the queries it fails', async () => {
    // an index of one part: its partition's follower is a node that is no primary of it
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'solo', name: 'solo' } })).status).toBe(200);
    const documents = Array.from({ length: 10 }, (_, i) => ({ id: `s${i}`, title: `Numbat Rug ${i}` }));
    expect((await api.call('POST', '/v1/indexes/solo/documents', { key, body: { documents } })).status).toBe(200);
    const physical = (await api.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key })).body.find((v) => v.index_id === 'solo')!.physical_index_id;
    const view = (await api.call<{ partitions: { partition: number; primary: string | null; followers: string[] }[] }>('GET', '/v1/admin/cluster', { key: cluster.adminKey })).body;
    const partition = view.partitions.find((p) => p.partition === partitionOf('spread', physical, 0, 8))!;
    expect(partition.followers).toHaveLength(1);
    const follower = cluster.shards.find((s) => s.name === partition.followers[0])!;
    const soloAsk = () => api.call<Answer>('GET', '/v1/typeahead?index=solo&bypass_cache=true&query=numbat', { key });
    expect((await soloAsk()).body.suggestions.length).toBeGreaterThan(0);

    const before = await partQueries('follower_fallback');
    // killed: its membership lease outlives it for a while, so the router still gives it turns
    await follower.kill();
    const statuses: number[] = [];
    const bodies: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await soloAsk();
      statuses.push(r.status);
      if (r.status !== 200) bodies.push(r.body);
      if (r.status === 200) expect(r.body.suggestions.length).toBeGreaterThan(0);
    }
    expect(statuses.filter((s) => s !== 200), JSON.stringify({ partition, killed: follower.name, body: bodies[0] })).toEqual([]);
    expect(await partQueries('follower_fallback')).toBeGreaterThan(before);
  });
});
