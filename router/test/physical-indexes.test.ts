// The lifecycle of physical indexes through a real router over a real shard node: a daily
// rebuild (allocate, fill, promote) followed by deleting the build it replaced, the cap on
// allocation, the live physical index that cannot be deleted, jobs still using one, tenants kept
// apart, a delete left half done, and a promotion racing a delete of the same physical index.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PHYSICAL_INDEXES_PER_INDEX } from '../../coordinator/coordinator.js';
import { IndexId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import { startRouter, type TestRouter } from './harness.js';

type Err = { code: string; detail: string };
type Issue = { loc: (string | number)[]; msg: string; type: string };
type Page = { items: { id: string; title: string }[]; total: number };
type PhysicalList = {
  index_id: string;
  live_physical_index_id: string;
  max_physical_indexes: number;
  items: { physical_index_id: string; created_at: string; live: boolean; status: string; parts: number; document_count: number | null }[];
};
type PhysicalDeleted = { physical_index_id: string; index_id: string; live_physical_index_id: string; deleted: boolean; documents_removed: number };
type Start = { job_id: string; run: string; status: string };

let r: TestRouter;
let t: { id: string; pub: string; priv: string };
let other: { id: string; pub: string; priv: string };

beforeAll(async () => {
  // background jobs in slow batches, so that one is still running when a delete arrives
  r = await startRouter({ backgroundJobThreshold: 10, jobBatchSize: 10, jobBatchDelayMs: 50 }, { search: true });
  t = await r.tenant('acme');
  other = await r.tenant('bolt');
});
afterAll(async () => {
  await r?.close();
});

const docs = (n: number, title: string, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, title: `${title} ${from + i}` }));

async function createIndex(index_id: string, key = t.priv): Promise<string> {
  const res = await r.call<{ physical_index_id: string }>('POST', '/v1/indexes', { key, body: { index_id, name: index_id } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.physical_index_id;
}

async function allocate(index: string, key = t.priv): Promise<string> {
  const res = await r.call<{ physical_index_id: string }>('POST', `/v1/indexes/${index}/allocate-physical-id`, { key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.physical_index_id;
}

async function fill(id: string, documents: { id: string; title: string }[]): Promise<void> {
  const res = await r.call('POST', `/v1/indexes/${id}/documents`, { key: t.priv, body: { documents } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function physicalIndexes(index: string): Promise<PhysicalList> {
  const res = await r.call<PhysicalList>('GET', `/v1/indexes/${index}/physical-indexes`, { key: t.priv });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Documents stored on the shard under a physical id, read by giving the id a record again. */
async function storedUnder(index: string, physical: string): Promise<number> {
  await r.coordinator.putPhysicalIndex({ tenant_id: TenantId(t.id), physical_index_id: PhysicalIndexId(physical), index_id: IndexId(index), parts: 1, created_at: new Date().toISOString() });
  const page = await r.call<Page>('GET', `/v1/indexes/${physical}/documents?page_size=1`, { key: t.priv });
  expect(page.status).toBe(200);
  return page.body.total;
}

describe('deleting a physical index', () => {
  it('deletes the build a promotion replaced: its documents are gone, the logical index still searches', async () => {
    const first = await createIndex('shop');
    await fill('shop', docs(3, 'Walnut'));
    const staging = await allocate('shop');
    await fill(staging, docs(5, 'Maple', 10));
    const promoted = await r.call('POST', '/v1/indexes/shop/promote', { key: t.priv, body: { physical_index_id: staging } });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);

    const before = await physicalIndexes('shop');
    expect(before).toMatchObject({ index_id: 'shop', live_physical_index_id: staging, max_physical_indexes: MAX_PHYSICAL_INDEXES_PER_INDEX });
    expect(before.items.map((p) => [p.physical_index_id, p.live, p.status, p.document_count])).toEqual([
      [first, false, 'ready', 3],
      [staging, true, 'ready', 5],
    ]);

    const del = await r.call<PhysicalDeleted>('DELETE', `/v1/indexes/${first}`, { key: t.priv });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body).toEqual({ physical_index_id: first, index_id: 'shop', live_physical_index_id: staging, deleted: true, documents_removed: 3 });

    // gone by its id, from the listing and from the coordinator
    const byId = await r.call<Err>('GET', `/v1/indexes/${first}/documents`, { key: t.priv });
    expect(byId.status).toBe(404);
    expect(byId.body.code).toBe('index_not_found');
    expect((await physicalIndexes('shop')).items.map((p) => p.physical_index_id)).toEqual([staging]);
    expect(await r.coordinator.getPhysicalIndex(TenantId(t.id), PhysicalIndexId(first))).toBeUndefined();
    expect((await r.call('DELETE', `/v1/indexes/${first}`, { key: t.priv })).status).toBe(404);

    // the logical index is untouched and still answers from the live build
    const view = (await r.call<{ index_id: string; physical_index_id: string; document_count: number }[]>('GET', '/v1/indexes', { key: t.priv })).body.find((i) => i.index_id === 'shop');
    expect(view).toMatchObject({ physical_index_id: staging, document_count: 5 });
    const search = await r.call<{ suggestions: { id: string; title: string }[] }>('GET', '/v1/autocomplete?index=shop&query=maple&mode=fts_only&bypass_cache=1', { key: t.pub });
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    expect(search.body.suggestions.map((s) => s.id).sort()).toEqual(['d10', 'd11', 'd12', 'd13', 'd14']);
    expect((await r.call<Page>('GET', '/v1/indexes/shop/documents', { key: t.priv })).body.total).toBe(5);

    // the parts were dropped on the shard, not just forgotten: the id given a record again is empty
    expect(await storedUnder('shop', first)).toBe(0);
  });

  it('refuses the live physical index with 409, saying to promote another first', async () => {
    const live = await createIndex('live');
    await fill('live', docs(2, 'Oak'));
    const res = await r.call<Err>('DELETE', `/v1/indexes/${live}`, { key: t.priv });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('conflict');
    expect(res.body.detail).toContain('promote another physical index first');
    expect(res.body.detail).toContain('POST /v1/indexes/live/promote');
    expect((await r.call<Page>('GET', '/v1/indexes/live/documents', { key: t.priv })).body.total).toBe(2);
    expect((await physicalIndexes('live')).items).toMatchObject([{ physical_index_id: live, live: true, status: 'ready' }]);
  });

  it('keeps tenants apart: another tenant cannot delete, list, allocate or promote by a physical id', async () => {
    await createIndex('private');
    const staging = await allocate('private');
    await fill(staging, docs(1, 'Secret'));
    for (const [method, path, body] of [
      ['DELETE', `/v1/indexes/${staging}`, undefined],
      ['GET', `/v1/indexes/${staging}/physical-indexes`, undefined],
      ['GET', '/v1/indexes/private/physical-indexes', undefined],
      ['POST', `/v1/indexes/${staging}/allocate-physical-id`, undefined],
    ] as const) {
      const res = await r.call<Err>(method, path, { key: other.priv, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.code).toBe('index_not_found');
    }
    // the same logical id in the other tenant names none of this tenant's physical indexes
    await createIndex('private', other.priv);
    const promote = await r.call<Err>('POST', '/v1/indexes/private/promote', { key: other.priv, body: { physical_index_id: staging } });
    expect(promote.status).toBe(404);
    expect(promote.body.code).toBe('index_not_found');
    // the hint is about physical indexes, and says nothing of the other tenant's
    expect(promote.body.detail).toBe(`Physical index '${staging}' does not exist for tenant '${other.id}' (never allocated, or deleted); allocate one with POST /v1/indexes/private/allocate-physical-id, fill it, then promote it.`);
    expect((await r.call<Page>('GET', `/v1/indexes/${staging}/documents`, { key: t.priv })).body.total).toBe(1);
    expect((await physicalIndexes('private')).items).toHaveLength(2);
  });

  it('refuses while a job is writing into it, naming the job, and deletes once the job is canceled', async () => {
    await createIndex('busy');
    const staging = await allocate('busy');
    const documents = Array.from({ length: 400 }, (_, i) => ({ id: `b${i}`, title: 'bulk' }));
    const start = await r.call<Start>('POST', `/v1/indexes/${staging}/ingest/start`, { key: t.priv, body: { documents } });
    expect(start.status, JSON.stringify(start.body)).toBe(200);
    expect(start.body.run).toBe('background');
    const refused = await r.call<Err>('DELETE', `/v1/indexes/${staging}`, { key: t.priv });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain(start.body.job_id);
    expect(refused.body.detail).toContain(`DELETE /v1/ingestion-jobs/${start.body.job_id}`);
    expect((await physicalIndexes('busy')).items.find((p) => p.physical_index_id === staging)?.status).toBe('ready');

    expect((await r.call('DELETE', `/v1/ingestion-jobs/${start.body.job_id}`, { key: t.priv })).status).toBe(200);
    const del = await r.call<PhysicalDeleted>('DELETE', `/v1/indexes/${staging}`, { key: t.priv });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body.documents_removed).toBeLessThan(400);
    // the canceled job's runner wrote nothing back after the drop
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await storedUnder('busy', staging)).toBe(0);
  });

  it('a delete left half done refuses writes and promotion, and a repeated DELETE finishes it', async () => {
    await createIndex('half');
    const staging = await allocate('half');
    await fill(staging, docs(4, 'Birch'));
    // what a DELETE leaves when a shard cannot be reached after the mark: the record, marked
    await r.coordinator.markPhysicalIndexDeleting(TenantId(t.id), PhysicalIndexId(staging));
    // the router learns of the mark from the coordinator's watch, not from a write of its own
    let write = await r.call<Err>('POST', `/v1/indexes/${staging}/documents`, { key: t.priv, body: { documents: docs(1, 'Late', 99) } });
    for (let i = 0; i < 50 && write.status === 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      write = await r.call<Err>('POST', `/v1/indexes/${staging}/documents`, { key: t.priv, body: { documents: docs(1, 'Late', 99) } });
    }
    expect(write.status).toBe(409);
    expect(write.body.detail).toContain('being deleted');
    const promote = await r.call<Err>('POST', '/v1/indexes/half/promote', { key: t.priv, body: { physical_index_id: staging } });
    expect(promote.status).toBe(409);
    expect(promote.body.detail).toContain('being deleted');
    expect((await physicalIndexes('half')).items.find((p) => p.physical_index_id === staging)?.status).toBe('deleting');

    const del = await r.call<PhysicalDeleted>('DELETE', `/v1/indexes/${staging}`, { key: t.priv });
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    expect(del.body.documents_removed).toBeGreaterThanOrEqual(4);
    expect((await physicalIndexes('half')).items).toHaveLength(1);
  });

  it('a promotion racing a delete of the same physical index never leaves the alias naming a deleted one', async () => {
    await createIndex('race');
    await fill('race', docs(2, 'Elm'));
    const later = <T>(ms: number, f: () => Promise<T>) => new Promise<T>((resolve, reject) => setTimeout(() => f().then(resolve, reject), ms));
    for (let round = 0; round < 12; round++) {
      const staging = await allocate('race');
      await fill(staging, docs(1, `Round${round}`, 100 + round));
      // the promotion sets off up to a few milliseconds after the delete, so that each side wins some rounds
      const [promote, del] = await Promise.all([
        later(round % 4, () => r.call<Err>('POST', '/v1/indexes/race/promote', { key: t.priv, body: { physical_index_id: staging, ready_timeout_ms: 0 } })),
        r.call<Err>('DELETE', `/v1/indexes/${staging}`, { key: t.priv }),
      ]);
      // one of them, and only one, took effect; the other was refused: 409 while the two overlap,
      // or 404 for a promotion that arrives once the delete has finished (on a fast run the delete
      // can be done within the promotion's few milliseconds of delay)
      const seen = `round ${round}: ${JSON.stringify([promote.body, del.body])}`;
      if (del.status === 200) expect([404, 409], seen).toContain(promote.status);
      else expect([promote.status, del.status], seen).toEqual([200, 409]);
      const stored = (await r.coordinator.getIndex(TenantId(t.id), IndexId('race')))!;
      const target = await r.coordinator.getPhysicalIndex(TenantId(t.id), stored.physical_index_id);
      expect(target, `round ${round}: the alias names ${stored.physical_index_id}, which has no record`).toBeDefined();
      expect(target?.status).toBeUndefined();
      expect(stored.physical_index_id === staging).toBe(promote.status === 200);
      const page = await r.call<Page>('GET', '/v1/indexes/race/documents', { key: t.priv });
      expect(page.status).toBe(200);
      expect(page.body.total).toBeGreaterThan(0);
    }
  });
});

describe('the cap on physical indexes', () => {
  it(`allows ${MAX_PHYSICAL_INDEXES_PER_INDEX} per index, the live one included, then answers 409 with the count and the way out`, async () => {
    await createIndex('daily');
    const staged: string[] = [];
    for (let i = 1; i < MAX_PHYSICAL_INDEXES_PER_INDEX; i++) staged.push(await allocate('daily'));
    const refused = await r.call<Err>('POST', '/v1/indexes/daily/allocate-physical-id', { key: t.priv });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('conflict');
    expect(refused.body.detail).toContain(`has ${MAX_PHYSICAL_INDEXES_PER_INDEX} physical indexes`);
    expect(refused.body.detail).toContain('DELETE /v1/indexes/{physical_index_id}');
    // a physical id in the path counts against its logical index too
    expect((await r.call('POST', `/v1/indexes/${staged[0]}/allocate-physical-id`, { key: t.priv })).status).toBe(409);
    expect((await r.coordinator.listPhysicalIndexes(TenantId(t.id), IndexId('daily'))).length).toBe(MAX_PHYSICAL_INDEXES_PER_INDEX);
    // other indexes are not held back by this one
    await createIndex('weekly');
    await allocate('weekly');
    // deleting an unused one makes room for exactly one more
    expect((await r.call('DELETE', `/v1/indexes/${staged[3]}`, { key: t.priv })).status).toBe(200);
    await allocate('daily');
    expect((await r.call('POST', '/v1/indexes/daily/allocate-physical-id', { key: t.priv })).status).toBe(409);
    expect((await physicalIndexes('daily')).items).toHaveLength(MAX_PHYSICAL_INDEXES_PER_INDEX);
  });

  it('publishes the cap in the allocate route description', async () => {
    const doc = await r.call<{ paths: Record<string, Record<string, { description?: string }>> }>('GET', '/.well-known/openapi.json');
    const allocate = doc.body.paths['/v1/indexes/{index_id}/allocate-physical-id']!.post!;
    expect(allocate.description).toContain(`at most ${MAX_PHYSICAL_INDEXES_PER_INDEX} physical indexes`);
    const del = doc.body.paths['/v1/indexes/{index_id}']!.delete!;
    expect(JSON.stringify(del)).toContain('PhysicalIndexDeleted');
  });
});

describe('index creation body', () => {
  it('refuses an unknown field with 422 naming it, and creates nothing', async () => {
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'typo', name: 'Typo', partz: 3 } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ['body', 'partz'], msg: 'Unknown field.', type: 'extra_forbidden' }]);
    expect((await r.call('GET', '/v1/indexes/typo/stats', { key: t.priv })).status).toBe(404);
    // the known optional field still works
    const ok = await r.call<{ index_id: string }>('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'typo', name: 'Typo', parts: 2 } });
    expect(ok.status).toBe(200);
  });
});
