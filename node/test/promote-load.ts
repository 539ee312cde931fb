// Promote under load, shared by the single-node and cluster suites: readers (typeahead, document
// reads and lists) hammer a logical index on every router while a staging physical index (same ids, new titles) is promoted. Every
// response must succeed and come wholly from one physical index; on one router, once a reader
// has seen the new data it must never see the old again.
import { expect } from 'vitest';
import { ApiClient, enginesLoaded, untilSearchable, waitFor } from './api-client.js';
import { waitForJob, type StartView } from './job-client.js';

type Doc = { id: string; title: string; raw: { gen?: string } };
type Page = { items: Doc[]; total: number };

export interface PromoteLoadResult {
  requests: number;
  errors: string[];
  mixed: number;
  flips: number;
  sawOld: number;
  sawNew: number;
  /** typeahead requests among `requests` */
  typeahead: number;
  /** the promotion's report on the new index's engines */
  warm?: WarmReport;
}

interface WarmReport {
  ready: boolean;
  waited_ms: number;
  replicas: number;
  replicas_ready: number;
  pending: unknown[];
}

export async function promoteUnderLoad(urls: string[], key: string, index: string, opts: { workers?: number; docs?: number } = {}): Promise<PromoteLoadResult> {
  const apis = urls.map((u) => new ApiClient(u));
  const api = apis[0]!;
  const n = opts.docs ?? 300;
  const make = (gen: string) => Array.from({ length: n }, (_, i) => ({ id: `p${String(i).padStart(4, '0')}`, title: `${gen} ${i}`, raw: { gen } }));
  expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: index, name: index } })).status).toBe(200);
  expect((await api.call('POST', `/v1/indexes/${index}/documents`, { key, body: { documents: [...make('old'), { id: 'only-old', title: 'old', raw: { gen: 'old' } }] } })).status).toBe(200);
  // the live index's engines in memory before the load starts (a first query waits at most
  // SUGGEST_LOAD_WAIT_MS for one, then answers without it): what is measured is the swap
  await untilSearchable(api, key, index);
  const alloc = await api.call<{ physical_index_id: string }>('POST', `/v1/indexes/${index}/allocate-physical-id`, { key });
  expect(alloc.status).toBe(200);
  const staging = alloc.body.physical_index_id;
  const fill = await api.call<StartView>('POST', `/v1/indexes/${staging}/ingest/start`, { key, body: [...make('new'), { id: 'only-new', title: 'new', raw: { gen: 'new' } }] });
  expect(fill.status, JSON.stringify(fill.body)).toBe(200);
  expect((await waitForJob(api, key, fill.body.job_id)).status).toBe('succeeded');
  // too small for the job's own warm-up: its engines are not loaded before the promotion
  const engines = () => enginesLoaded(api, key, staging);
  expect(await engines()).not.toContain(true);
  // the staging index is complete and not live yet
  expect((await api.call<Doc>('GET', `/v1/indexes/${index}/documents/p0001`, { key })).body.raw.gen).toBe('old');

  const result: PromoteLoadResult = { requests: 0, errors: [], mixed: 0, flips: 0, sawOld: 0, sawNew: 0, typeahead: 0 };
  let stop = false;
  const worker = async (w: number) => {
    const seenNew = new Set<number>();
    for (let i = 0; !stop; i++) {
      const r = (w + i) % apis.length;
      const client = apis[r]!;
      let gens: string[];
      try {
        if (i % 4 === 0) {
          // typeahead across the swap (each worker's first request is one, so a slow machine that
          // lets a worker send only a few still sends it before the swap): every suggestion of one
          // answer comes from one generation
          const prefix = String(1 + ((i * 31 + w) % 9));
          const res = await client.call<{ suggestions: { title: string }[] }>('GET', `/v1/typeahead?index=${index}&query=${prefix}&limit=10`, { key });
          if (res.status !== 200) throw new Error(`typeahead ${res.status} ${JSON.stringify(res.body)}`);
          gens = res.body.suggestions.map((s) => /^(old|new)\b/i.exec(s.title)?.[1]?.toLowerCase()).filter((g): g is string => g !== undefined);
          if (gens.length === 0) throw new Error(`typeahead '${prefix}' returned no generation-bearing suggestion: ${JSON.stringify(res.body.suggestions)}`);
          result.typeahead++;
        } else if (i % 3 === 0) {
          const page = 1 + (i % 3);
          const res = await client.call<Page>('GET', `/v1/indexes/${index}/documents?page=${page}&page_size=100`, { key });
          if (res.status !== 200) throw new Error(`list ${res.status} ${JSON.stringify(res.body)}`);
          gens = res.body.items.map((d) => d.raw.gen ?? '?');
          if (res.body.total !== n + 1) throw new Error(`list total ${res.body.total}`);
        } else if (i % 3 === 1) {
          const id = `p${String((i * 7919 + w) % n).padStart(4, '0')}`;
          const res = await client.call<Doc>('GET', `/v1/indexes/${index}/documents/${id}`, { key });
          if (res.status !== 200) throw new Error(`get ${res.status} ${JSON.stringify(res.body)}`);
          gens = [res.body.raw.gen ?? '?'];
        } else {
          // exists only in the new physical index: 404 before the switch, 200 after
          const res = await client.call<Doc>('GET', `/v1/indexes/${index}/documents/only-new`, { key });
          if (res.status !== 200 && res.status !== 404) throw new Error(`only-new ${res.status}`);
          gens = [res.status === 200 ? 'new' : 'old'];
        }
      } catch (err) {
        result.errors.push(String((err as Error).message ?? err));
        continue;
      } finally {
        result.requests++;
      }
      const set = new Set(gens);
      if (set.size > 1) result.mixed++;
      const gen = gens[0];
      if (gen === 'new') {
        result.sawNew++;
        seenNew.add(r);
      } else if (gen === 'old') {
        result.sawOld++;
        if (seenNew.has(r)) result.flips++;
      }
    }
  };
  const workers = Array.from({ length: opts.workers ?? 8 }, (_, w) => worker(w));
  await new Promise((res) => setTimeout(res, 600));
  const promoted = await api.call<{ physical_index_id: string; previous_physical_index_id: string; warm: WarmReport }>('POST', `/v1/indexes/${index}/promote`, { key, body: { physical_index_id: staging } });
  expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
  expect(promoted.body.physical_index_id).toBe(staging);
  // the swap came after every replica of the new index had its engine in memory
  result.warm = promoted.body.warm;
  expect(promoted.body.warm).toMatchObject({ ready: true, pending: [] });
  expect(promoted.body.warm.replicas_ready).toBe(promoted.body.warm.replicas);
  expect(await engines()).not.toContain(false);
  // the readers go on until they have seen the new index for a while (a fixed 800 ms was not
  // always enough for one answer on a loaded machine), 10 s at most
  const until = Date.now() + 10_000;
  while (result.sawNew < 8 && Date.now() < until) await new Promise((res) => setTimeout(res, 50));
  await new Promise((res) => setTimeout(res, 300));
  stop = true;
  await Promise.all(workers);
  // every router serves the new index now
  for (const client of apis) {
    await waitFor(async () => (await client.call<Doc>('GET', `/v1/indexes/${index}/documents/only-new`, { key })).status === 200, 5_000, 'promotion visible on every router');
  }
  // the index swapped away from, queried until the swap, lets its engines go a few seconds after it
  const previous = promoted.body.previous_physical_index_id;
  const previousLoaded = () => enginesLoaded(api, key, previous);
  await waitFor(async () => !(await previousLoaded()).includes(true), 30_000, 'the previous physical index unloaded after the swap');
  return result;
}
