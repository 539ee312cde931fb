// The response cache of cluster routers, on real processes (etcd, 3 shard nodes, 2 routers):
// repeated typeahead is answered from router B's cache; a write through router A retires B's
// cached answers within the feed's delivery delay and A's at once; a frozen shard node (SIGSTOP)
// turns caching off within the staleness bound; a SIGKILLed shard node turns
// caching off until its restarted process has opened a new feed, and writes after the restart
// are visible through the cache.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalCluster, type LocalCluster } from '../runtime/process-harness.js';
import { ApiClient, waitFor } from './api-client.js';

/** How long a write through one router may take to reach another router's cache. */
const FEED_DEADLINE_MS = 2_000;

interface SuggestBody {
  suggestions: { id: string; title: string }[];
}

let cluster: LocalCluster;
let a: ApiClient;
let b: ApiClient;
let key: string;
let pub: string;
const tenant = 'feed';
const index = 'catalog';

/** A series' value on a router's /metrics (0 when absent). */
async function metric(api: ApiClient, series: string): Promise<number> {
  const text = (await api.call<string>('GET', '/metrics')).body;
  for (const line of text.split('\n')) if (line.startsWith(series + ' ')) return Number(line.slice(series.length + 1));
  return 0;
}
const hits = (api: ApiClient) => metric(api, 'suggest_cache_lookups_total{cache="search_response",result="hit"}');
const feedLive = async (api: ApiClient) => (await metric(api, 'suggest_change_feed_live')) === 1;

const typeahead = (api: ApiClient, query: string) => api.call<SuggestBody>('GET', `/v1/typeahead?index=${index}&query=${encodeURIComponent(query)}`, { key: pub });
const autocomplete = (api: ApiClient, query: string) => api.call<SuggestBody>('GET', `/v1/autocomplete?index=${index}&query=${encodeURIComponent(query)}`, { key: pub });
/** Whether an answer shows `word` (typeahead suggestions are mined phrases, not always whole titles). */
const shows = (body: SuggestBody, word: string) => body.suggestions.some((s) => s.title.toLowerCase().includes(word.toLowerCase()));

async function write(api: ApiClient, id: string, title: string): Promise<void> {
  const r = await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: [{ id, title, desc: '', manufacturer: 'Feed', raw: {} }] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

/** Polls `api` until the answer to `query` shows `word`; returns how long that took. */
async function visibleWithin(api: ApiClient, kind: typeof typeahead, query: string, word: string, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    const r = await kind(api, query);
    if (r.status === 200 && shows(r.body, word)) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`'${word}' not visible for '${query}' after ${ms} ms: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Queries `query` until its answer is cached on `api` (the hit counter moves on a repeat). */
async function cached(api: ApiClient, kind: typeof typeahead, query: string): Promise<SuggestBody> {
  let body: SuggestBody | undefined;
  await waitFor(
    async () => {
      body = (await kind(api, query)).body;
      const before = await hits(api);
      const again = await kind(api, query);
      return again.status === 200 && (await hits(api)) > before;
    },
    10_000,
    `a cached answer for '${query}'`,
  );
  return body!;
}

beforeAll(async () => {
  cluster = await startLocalCluster({ shards: 3, routers: 2, partitions: 16 });
  [a, b] = cluster.routerUrls.map((u) => new ApiClient(u)) as [ApiClient, ApiClient];
  for (const api of [a, b]) await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
  await a.call('POST', '/v1/admin/tenants', { key: cluster.adminKey, body: { tenant_id: tenant, name: 'Feed', plan: 'pro' } });
  key = (await a.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: cluster.adminKey, body: { kind: 'private', name: 'w' } })).body.key;
  pub = (await a.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant}/keys`, { key: cluster.adminKey, body: { kind: 'public', name: 'r' } })).body.key;
  expect((await a.call('POST', '/v1/indexes', { key, body: { index_id: index, name: 'Catalog', parts: 3 } })).status).toBe(200);
  const documents = ['Samsung Galaxy S24', 'Samsung Galaxy Tab', 'Sony Bravia TV', 'Apple iPhone 15', 'Apple MacBook Air', 'Bose Speaker'].map((title, i) => ({ id: `d${i}`, title, desc: '', manufacturer: title.split(' ')[0], raw: {} }));
  expect((await a.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents } })).status).toBe(200);
  for (const api of [a, b]) {
    await waitFor(async () => (await api.call('GET', `/v1/typeahead?index=${index}&query=sam&bypass_cache=true`, { key: pub })).status === 200, 60_000, 'engines built');
    await waitFor(() => feedLive(api), 10_000, 'the change feed');
  }
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

describe('response cache of cluster routers', () => {
  it('answers repeated typeahead through router B from its cache', async () => {
    const first = await typeahead(b, 'sams');
    expect(first.status).toBe(200);
    expect(shows(first.body, 'samsung')).toBe(true);
    const before = await hits(b);
    for (let i = 0; i < 5; i++) expect(await typeahead(b, 'sams')).toEqual(expect.objectContaining({ status: 200 }));
    expect((await hits(b)) - before).toBeGreaterThanOrEqual(5);
    expect(await metric(b, 'suggest_change_feed_live')).toBe(1);
  });

  it('shows a write through router A on A right after the acknowledgement and on B within the feed deadline', async () => {
    // both routers hold a cached answer without the document
    expect(shows(await cached(a, typeahead, 'quixot'), 'quixotrel')).toBe(false);
    expect(shows(await cached(b, typeahead, 'quixot'), 'quixotrel')).toBe(false);
    expect(shows(await cached(b, autocomplete, 'quixotrel'), 'quixotrel')).toBe(false);
    const eventsBefore = await metric(b, 'suggest_change_feed_events_total{kind="upsert"}');
    await write(a, 'q1', 'Quixotrel Lamp');
    // read-your-writes through the router that forwarded the write: no waiting at all
    expect(shows((await typeahead(a, 'quixot')).body, 'quixotrel')).toBe(true);
    const delay = await visibleWithin(b, typeahead, 'quixot', 'quixotrel', FEED_DEADLINE_MS);
    await visibleWithin(b, autocomplete, 'quixotrel', 'Quixotrel Lamp', FEED_DEADLINE_MS);
    expect(delay).toBeLessThanOrEqual(FEED_DEADLINE_MS);
    expect(await metric(b, 'suggest_change_feed_events_total{kind="upsert"}')).toBeGreaterThan(eventsBefore);
    // and the new answer is cached again
    await cached(b, typeahead, 'quixot');

    // a delete through B retires A's cached answer the same way
    await cached(a, typeahead, 'quixot');
    expect((await b.call('DELETE', `/v1/indexes/${index}/documents/q1`, { key })).status).toBe(200);
    expect(shows((await typeahead(b, 'quixot')).body, 'quixotrel')).toBe(false);
    const started = Date.now();
    await waitFor(async () => !shows((await typeahead(a, 'quixot')).body, 'quixotrel'), FEED_DEADLINE_MS, 'the delete on router A');
    expect(Date.now() - started).toBeLessThanOrEqual(FEED_DEADLINE_MS + 200);
  });

  it('stops caching while a shard node is frozen (its stream falls silent) and resumes once it answers again', async () => {
    await cached(b, typeahead, 'sams');
    const shard = cluster.shards[1]!;
    const dropsBefore = await metric(b, 'suggest_change_feed_drops_total{reason="stale"}');
    shard.child.kill('SIGSTOP');
    try {
      // heartbeats stop: within the staleness bound (1.5 s) the router stops trusting its cache
      const started = Date.now();
      await waitFor(async () => !(await feedLive(b)), 5_000, 'the silent feed to be dropped');
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(await metric(b, 'suggest_change_feed_drops_total{reason="stale"}')).toBeGreaterThan(dropsBefore);
    } finally {
      shard.child.kill('SIGCONT');
    }
    await waitFor(() => feedLive(b), 15_000, 'the feed after the node resumed');
    await waitFor(async () => (await typeahead(b, 'sams')).status === 200, 30_000, 'typeahead after the freeze');
    await cached(b, typeahead, 'sams');
  });

  it('stops caching while a shard node is down and serves writes made after its restart', async () => {
    await cached(b, typeahead, 'sams');
    const reconnectsBefore = await metric(b, 'suggest_change_feed_reconnects_total');
    await cluster.shards[0]!.kill();
    await waitFor(async () => !(await feedLive(b)) && !(await feedLive(a)), 5_000, 'the feeds to drop');
    // nothing is answered from the cache meanwhile, even where every part is on a live node
    const before = await hits(b);
    for (let i = 0; i < 3; i++) await typeahead(b, 'sams');
    expect(await hits(b)).toBe(before);

    await cluster.restartShard(0);
    for (const api of [a, b]) {
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz after restart');
      await waitFor(() => feedLive(api), 15_000, 'the change feed after restart');
    }
    expect(await metric(b, 'suggest_change_feed_reconnects_total')).toBeGreaterThan(reconnectsBefore);
    await waitFor(async () => (await typeahead(b, 'sams')).status === 200, 30_000, 'typeahead after restart');
    expect(shows(await cached(b, typeahead, 'zorbluxe'), 'zorbluxe')).toBe(false);
    await write(a, 'z1', 'Zorbluxe Kettle');
    expect(shows((await typeahead(a, 'zorbluxe')).body, 'zorbluxe')).toBe(true);
    await visibleWithin(b, typeahead, 'zorbluxe', 'zorbluxe', FEED_DEADLINE_MS);
    // every part, wherever it lives, announces its writes again: documents land on every part
    const words = ['plumvacta', 'plumvecta', 'plumvicta', 'plumvocta', 'plumvucta', 'plumvycta'];
    for (const word of words) expect(shows(await cached(b, typeahead, word), word)).toBe(false);
    for (const [i, word] of words.entries()) await write(a, `after-${i}`, `${word} item`);
    for (const word of words) {
      await visibleWithin(b, typeahead, word, word, FEED_DEADLINE_MS);
      expect(shows(await cached(b, typeahead, word), word)).toBe(true);
    }
  });
});
