// The end-to-end suite of the foundation, run over real HTTP against the single node and
// against the local cluster: auth matrix, tenant isolation, index and document life cycle,
// paging bounds, 422 bodies, 409 limits, plan gating and hostile input.
import { beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, waitFor } from './api-client.js';

export interface SuiteTarget {
  /** base URLs of every router of the deployment */
  urls: string[];
  adminKey: string;
}

interface Tenant {
  id: string;
  priv: string;
  pub: string;
}

type Issue = { loc: (string | number)[]; msg: string; type: string };

export function registerApiSuite(name: string, target: () => SuiteTarget): void {
  describe(name, () => {
    let api: ApiClient;
    let admin: string;
    let a: Tenant;
    let b: Tenant;
    let free: Tenant;
    const suffix = Math.random().toString(36).slice(2, 8);

    async function createTenant(id: string, plan: string): Promise<Tenant> {
      const t = await api.call('POST', '/v1/admin/tenants', { key: admin, body: { tenant_id: id, name: `Tenant ${id}`, plan } });
      expect(t.status, JSON.stringify(t.body)).toBe(200);
      const priv = await api.call<{ key: string; kind: string }>('POST', `/v1/admin/tenants/${id}/keys`, { key: admin, body: { kind: 'private', name: 'backend' } });
      const pub = await api.call<{ key: string }>('POST', `/v1/admin/tenants/${id}/keys`, { key: admin, body: { kind: 'public', name: 'browser' } });
      expect(priv.status).toBe(200);
      expect(priv.body.kind).toBe('private');
      return { id, priv: priv.body.key, pub: pub.body.key };
    }

    beforeAll(async () => {
      const t = target();
      api = new ApiClient(t.urls[0]!);
      admin = t.adminKey;
      await waitFor(async () => (await api.call('GET', '/readyz')).status === 200, 30_000, 'readyz');
      a = await createTenant(`acme-${suffix}`, 'pro');
      b = await createTenant(`bolt-${suffix}`, 'pro');
      free = await createTenant(`free-${suffix}`, 'free');
    });

    describe('auth matrix', () => {
      it('refuses a request without a key with 401 missing_api_key', async () => {
        const r = await api.call<{ code: string; detail: string }>('GET', '/v1/indexes');
        expect(r.status).toBe(401);
        expect(r.body.code).toBe('missing_api_key');
        expect(r.body.detail).toMatch(/x-api-key/);
      });
      it('refuses an unknown key with 401 unknown_api_key', async () => {
        const r = await api.call<{ code: string }>('GET', '/v1/indexes', { key: 'sk_nope_123' });
        expect(r.status).toBe(401);
        expect(r.body.code).toBe('unknown_api_key');
      });
      it('refuses a public key on a mutation with 403', async () => {
        const r = await api.call<{ code: string }>('POST', '/v1/indexes', { key: a.pub, body: { index_id: 'x', name: 'x' } });
        expect(r.status).toBe(403);
        expect(r.body.code).toBe('forbidden_key_kind');
      });
      it('refuses a foreign tenant named by query and by header', async () => {
        const byQuery = await api.call<{ code: string }>('GET', `/v1/indexes?tenant_id=${b.id}`, { key: a.priv });
        expect(byQuery.status).toBe(403);
        expect(byQuery.body.code).toBe('forbidden_tenant');
        const byHeader = await api.call<{ code: string }>('GET', '/v1/indexes', { key: a.priv, headers: { 'x-tenant-id': b.id } });
        expect(byHeader.status).toBe(403);
        expect(byHeader.body.code).toBe('forbidden_tenant');
      });
      it('accepts its own tenant named explicitly', async () => {
        const r = await api.call('GET', `/v1/indexes?tenant_id=${a.id}`, { key: a.priv, headers: { 'x-tenant-id': a.id } });
        expect(r.status).toBe(200);
      });
      it('lets the admin key act for any tenant and refuses tenant administration to others', async () => {
        const r = await api.call('GET', `/v1/indexes?tenant_id=${a.id}`, { key: admin });
        expect(r.status).toBe(200);
        const denied = await api.call('GET', '/v1/admin/tenants', { key: a.priv });
        expect(denied.status).toBe(403);
      });
    });

    describe('index and document life cycle', () => {
      it('creates, lists, reads, updates, pages and deletes', async () => {
        const created = await api.call<Record<string, unknown>>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Products' } });
        expect(created.status, JSON.stringify(created.body)).toBe(200);
        expect(created.body).toMatchObject({ index_id: 'products', name: 'Products', document_count: 0 });
        expect(typeof created.body.status).toBe('string');
        expect(typeof created.body.physical_index_id).toBe('string');

        const dup = await api.call<{ code: string }>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Again' } });
        expect(dup.status).toBe(409);
        expect(dup.body.code).toBe('index_exists');

        const docs = Array.from({ length: 120 }, (_, i) => ({
          id: `sku-${String(i).padStart(3, '0')}`,
          title: `Product ${i}`,
          desc: 'A thing',
          manufacturer: i % 2 ? 'Acme' : 'Bolt',
          raw: { category: 'Tools', price: i + 0.5 },
        }));
        const up = await api.call<Record<string, unknown>>('POST', '/v1/indexes/products/documents', { key: a.priv, body: { documents: docs } });
        expect(up.status, JSON.stringify(up.body)).toBe(200);
        expect(up.body).toMatchObject({ index_id: 'products', upserted: 120, failed: 0 });

        const one = await api.call<Record<string, unknown>>('GET', '/v1/indexes/products/documents/sku-007', { key: a.priv });
        expect(one.status).toBe(200);
        expect(one.body).toMatchObject({ id: 'sku-007', title: 'Product 7', manufacturer: 'Acme', raw: { category: 'Tools', price: 7.5 } });

        const page1 = await api.call<{ items: { id: string }[]; page: number; page_size: number; total: number }>('GET', '/v1/indexes/products/documents', { key: a.priv });
        expect(page1.status).toBe(200);
        expect(page1.body.page).toBe(1);
        expect(page1.body.page_size).toBe(50);
        expect(page1.body.total).toBe(120);
        expect(page1.body.items).toHaveLength(50);
        const page3 = await api.call<{ items: { id: string }[] }>('GET', '/v1/indexes/products/documents?page=3&page_size=50', { key: a.priv });
        expect(page3.body.items).toHaveLength(20);
        const all = new Set<string>();
        for (let p = 1; p <= 2; p++) {
          const r = await api.call<{ items: { id: string }[] }>('GET', `/v1/indexes/products/documents?page=${p}&page_size=100`, { key: a.priv });
          for (const d of r.body.items) all.add(d.id);
        }
        expect(all.size).toBe(120);

        const patched = await api.call<Record<string, unknown>>('PATCH', '/v1/indexes/products/documents/sku-007', { key: a.priv, body: { title: 'Renamed', raw: { color: 'red' } } });
        expect(patched.status, JSON.stringify(patched.body)).toBe(200);
        expect(patched.body).toMatchObject({ id: 'sku-007', title: 'Renamed', manufacturer: 'Acme', raw: { category: 'Tools', price: 7.5, color: 'red' } });

        const del = await api.call('DELETE', '/v1/indexes/products/documents/sku-007', { key: a.priv });
        expect(del.status).toBe(200);
        const gone = await api.call<{ code: string }>('GET', '/v1/indexes/products/documents/sku-007', { key: a.priv });
        expect(gone.status).toBe(404);
        expect(gone.body.code).toBe('document_not_found');

        const stats = await api.call<Record<string, unknown>>('GET', '/v1/indexes/products/stats', { key: a.priv });
        expect(stats.status).toBe(200);
        expect(stats.body.document_count).toBe(119);

        const list = await api.call<{ index_id: string; document_count: number }[]>('GET', '/v1/indexes', { key: a.priv });
        expect(list.body.find((i) => i.index_id === 'products')?.document_count).toBe(119);

        const schema = { predict: { enabled: true, default_types: ['product'], action_mappings: { product: { target_field: 'url', label_field: 'title' } }, intent_rules: [] }, synonyms: [['tv', 'television']] };
        const put = await api.call('PUT', '/v1/indexes/products/schema', { key: a.priv, body: schema });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
        const got = await api.call('GET', '/v1/indexes/products/schema', { key: a.priv });
        expect(got.body).toEqual(schema);
        const badSchema = await api.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/schema', { key: a.priv, body: { predict: { enabled: 'yes', default_types: ['spaceship'] } } });
        expect(badSchema.status).toBe(422);
        expect(badSchema.body.detail.length).toBeGreaterThan(0);

        const dropped = await api.call('DELETE', '/v1/indexes/products', { key: a.priv });
        expect(dropped.status).toBe(200);
        const after = await api.call<{ code: string }>('GET', '/v1/indexes/products/documents/sku-001', { key: a.priv });
        expect(after.status).toBe(404);
        expect(after.body.code).toBe('index_not_found');
        // a new index of the same name starts empty: the old data is really gone
        await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'products', name: 'Products again' } });
        const fresh = await api.call<{ total: number }>('GET', '/v1/indexes/products/documents', { key: a.priv });
        expect(fresh.body.total).toBe(0);
        await api.call('DELETE', '/v1/indexes/products', { key: a.priv });
      });

      it('leaves no documents behind from writes racing the delete of their index, on any router', async () => {
        const stored = async () => {
          const c = await api.call<{ nodes: { document_count: number | null }[] }>('GET', '/v1/admin/cluster', { key: admin });
          expect(c.status).toBe(200);
          return c.body.nodes.reduce((n, node) => n + (node.document_count ?? 0), 0);
        };
        const before = await stored();
        const clients = target().urls.map((url) => new ApiClient(url));
        for (let round = 0; round < 3; round++) {
          const id = `racing-${round}`;
          expect((await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: id, name: 'Racing' } })).status).toBe(200);
          let deleted = false;
          const late: number[] = [];
          const writes = Array.from({ length: 30 }, (_, i) =>
            clients[i % clients.length]!.call<{ upserted: number }>('POST', `/v1/indexes/${id}/documents`, {
              key: a.priv,
              body: { documents: Array.from({ length: 5 }, (_, j) => ({ id: `w${i}-${j}`, title: `Racing widget ${i}` })) },
            }).then((r) => {
              if (deleted && r.status === 200) late.push(i);
              return r;
            }),
          );
          const drop = new Promise((resolve) => setTimeout(resolve, round * 5)).then(() => api.call('DELETE', `/v1/indexes/${id}`, { key: a.priv }));
          const dropped = await drop.then((r) => {
            deleted = true;
            return r;
          });
          expect(dropped.status, JSON.stringify(dropped.body)).toBe(200);
          for (const r of await Promise.all(writes)) {
            expect([200, 404, 409], JSON.stringify(r.body)).toContain(r.status);
            // refused by a router or by a shard, the answer names the index the caller named
            if (r.status === 404) expect(JSON.stringify(r.body)).toContain(`Index '${id}'`);
          }
          // no write is acknowledged once the delete has answered
          expect(late).toEqual([]);
        }
        // and nothing acknowledged before it outlives the index on disk
        expect(await stored()).toBe(before);
      });

      it('reports the file-size limit with its source', async () => {
        const r = await api.call<Record<string, unknown>>('GET', '/v1/indexes/file-size-limit', { key: a.priv });
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({ source: 'plan' });
        expect(r.body.limit_bytes).toBeGreaterThan(0);
        const patched = await api.call('PATCH', `/v1/admin/tenants/${b.id}`, { key: admin, body: { upload_limit_bytes: 12345 } });
        expect(patched.status).toBe(200);
        const rb = await api.call<Record<string, unknown>>('GET', '/v1/indexes/file-size-limit', { key: b.priv });
        expect(rb.body).toMatchObject({ limit_bytes: 12345, source: 'tenant', presigned_over_bytes: 20 * 1024 * 1024, cloud_required_over_bytes: 50 * 1024 * 1024 });
      });
    });

    describe('tenant isolation', () => {
      it('shows tenant B nothing of tenant A through any route', async () => {
        await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'secret', name: 'Secret' } });
        await api.call('POST', '/v1/indexes/secret/documents', { key: a.priv, body: { documents: [{ id: 'd1', title: 'Hidden', desc: '', manufacturer: '', raw: {} }] } });
        const list = await api.call<{ index_id: string }[]>('GET', '/v1/indexes', { key: b.priv });
        expect(list.status).toBe(200);
        expect(list.body.map((i) => i.index_id)).not.toContain('secret');
        for (const path of ['/v1/indexes/secret/documents/d1', '/v1/indexes/secret/documents', '/v1/indexes/secret/stats', '/v1/indexes/secret/schema']) {
          const r = await api.call<{ code: string }>('GET', path, { key: b.priv });
          expect(r.status, path).toBe(404);
          expect(r.body.code).toBe('index_not_found');
        }
        const del = await api.call('DELETE', '/v1/indexes/secret', { key: b.priv });
        expect(del.status).toBe(404);
        // B may create an index of the same name: it is a different index
        await api.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'secret', name: 'Mine' } });
        const mine = await api.call<{ total: number }>('GET', '/v1/indexes/secret/documents', { key: b.priv });
        expect(mine.body.total).toBe(0);
        const still = await api.call('GET', '/v1/indexes/secret/documents/d1', { key: a.priv });
        expect(still.status).toBe(200);
      });
    });

    describe('validation', () => {
      it('answers paging bounds with 422 bodies naming the parameter', async () => {
        await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'paging', name: 'Paging' } });
        for (const [qs, loc] of [
          ['page=0', 'page'],
          ['page=-1', 'page'],
          ['page=abc', 'page'],
          ['page_size=0', 'page_size'],
          ['page_size=101', 'page_size'],
        ] as const) {
          const r = await api.call<{ detail: Issue[] }>('GET', `/v1/indexes/paging/documents?${qs}`, { key: a.priv });
          expect(r.status, qs).toBe(422);
          expect(r.body.detail[0]!.loc).toEqual(['query', loc]);
          expect(typeof r.body.detail[0]!.msg).toBe('string');
          expect(typeof r.body.detail[0]!.type).toBe('string');
        }
        const ok = await api.call('GET', '/v1/indexes/paging/documents?page=1&page_size=100', { key: a.priv });
        expect(ok.status).toBe(200);
      });
      it('refuses bad index ids with 422', async () => {
        for (const id of ['has space', 'dot.dot', '', 'slash/x', 'ü']) {
          const r = await api.call<{ detail: Issue[] }>('POST', '/v1/indexes', { key: a.priv, body: { index_id: id, name: 'x' } });
          expect(r.status, id).toBe(422);
          expect(r.body.detail[0]!.loc).toEqual(['body', 'index_id']);
        }
        const missing = await api.call<{ detail: Issue[] }>('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'ok-id' } });
        expect(missing.status).toBe(422);
      });
      it('refuses malformed documents with 422 and writes nothing', async () => {
        await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'strict', name: 'Strict' } });
        const r = await api.call<{ detail: Issue[] }>('POST', '/v1/indexes/strict/documents', { key: a.priv, body: { documents: [{ id: 'ok', title: 't' }, { title: 'no id' }] } });
        expect(r.status).toBe(422);
        expect(r.body.detail[0]!.loc.slice(0, 3)).toEqual(['body', 'documents', 1]);
        const list = await api.call<{ total: number }>('GET', '/v1/indexes/strict/documents', { key: a.priv });
        expect(list.body.total).toBe(0);
      });
    });

    describe('limits and plans', () => {
      it('answers 409 document_limit and keeps nothing of the refused batch', async () => {
        const patched = await api.call('PATCH', `/v1/admin/tenants/${b.id}`, { key: admin, body: { limits: { max_documents_per_index: 5 } } });
        expect(patched.status, JSON.stringify(patched.body)).toBe(200);
        await api.call('POST', '/v1/indexes', { key: b.priv, body: { index_id: 'small', name: 'Small' } });
        const mk = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ id: `d${from + i}`, title: `t${i}`, desc: '', manufacturer: '', raw: {} }));
        const ok = await api.call('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: mk(4) } });
        expect(ok.status).toBe(200);
        const over = await api.call<{ code: string; detail: string }>('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: mk(2, 10) } });
        expect(over.status).toBe(409);
        expect(over.body.code).toBe('document_limit');
        const list = await api.call<{ total: number }>('GET', '/v1/indexes/small/documents', { key: b.priv });
        expect(list.body.total).toBe(4);
        // replacing existing documents does not count against the limit
        const replace = await api.call('POST', '/v1/indexes/small/documents', { key: b.priv, body: { documents: mk(4) } });
        expect(replace.status).toBe(200);
      });
      it('gates paid features with 403 plan_required and index counts by plan', async () => {
        await api.call('POST', '/v1/indexes', { key: free.priv, body: { index_id: 'f0', name: 'f0' } });
        const merch = await api.call<{ code: string }>('PUT', '/v1/indexes/f0/merchandising', { key: free.priv, body: { rules: [] } });
        expect(merch.status).toBe(403);
        expect(merch.body.code).toBe('plan_required');
        const proMerch = await api.call('PUT', '/v1/indexes/paging/merchandising', { key: a.priv, body: { rules: [] } });
        expect(proMerch.status).toBe(200);
        const integrations = await api.call<{ code: string }>('GET', '/v1/integrations', { key: free.priv });
        expect(integrations.status).toBe(403);
        expect(integrations.body.code).toBe('plan_required');
        const tenant = await api.call<{ limits: { max_indexes: number } }>('GET', `/v1/admin/tenants/${free.id}`, { key: admin });
        const max = tenant.body.limits.max_indexes;
        for (let i = 1; i < max; i++) await api.call('POST', '/v1/indexes', { key: free.priv, body: { index_id: `f${i}`, name: 'x' } });
        const blocked = await api.call<{ code: string }>('POST', '/v1/indexes', { key: free.priv, body: { index_id: 'one-too-many', name: 'x' } });
        expect(blocked.status).toBe(403);
        expect(blocked.body.code).toBe('plan_index_limit');
      });
    });

    describe('hostile input', () => {
      it('answers each with a clean 4xx and stays up', async () => {
        const cases: [string, string, { rawBody?: string | Buffer; headers?: Record<string, string> }, number[]][] = [
          ['POST', '/v1/indexes', { rawBody: '{"index_id": "x", ', headers: { 'content-type': 'application/json' } }, [422]],
          ['POST', '/v1/indexes', { rawBody: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), headers: { 'content-type': 'application/json' } }, [422]],
          ['POST', '/v1/indexes', { rawBody: '['.repeat(200_000) + ']'.repeat(200_000), headers: { 'content-type': 'application/json' } }, [413, 422]],
          ['POST', '/v1/indexes', { rawBody: 'x'.repeat(20 * 1024 * 1024), headers: { 'content-type': 'application/json' } }, [413]],
          ['POST', '/v1/indexes', { rawBody: 'index_id=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, [415, 422]],
          ['GET', '/v1/nope', {}, [404]],
          ['PUT', '/v1/indexes', {}, [405]],
          ['GET', '/v1/indexes/..%2F..%2Fetc/documents', {}, [404, 422]],
          ['GET', '/v1/indexes/a%00b/documents', {}, [404, 422]],
          ['GET', '/v1/indexes/paging/documents/..%2F..%2Fsecret', {}, [404, 422]],
          ['GET', `/v1/indexes/paging/documents?page=${'9'.repeat(5000)}`, {}, [422]],
          ['GET', `/v1/indexes/paging/documents?page=%E0%A4%A`, {}, [422]],
        ];
        for (const [method, path, opts, expected] of cases) {
          const r = await api.call<{ detail: unknown }>(method, path, { key: a.priv, ...opts });
          expect(expected, `${method} ${path.slice(0, 60)} -> ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`).toContain(r.status);
          expect(r.body.detail, `${method} ${path.slice(0, 60)}`).toBeDefined();
        }
        const health = await api.call('GET', '/healthz');
        expect(health.status).toBe(200);
      });
    });

    describe('every router serves the same API', () => {
      it('reads through each router what was written through the first', async () => {
        await api.call('POST', '/v1/indexes', { key: a.priv, body: { index_id: 'shared', name: 'Shared' } });
        await api.call('POST', '/v1/indexes/shared/documents', { key: a.priv, body: { documents: [{ id: 'x1', title: 'X', desc: '', manufacturer: '', raw: {} }] } });
        for (const url of target().urls) {
          const other = new ApiClient(url);
          const r = await other.call<{ id: string }>('GET', '/v1/indexes/shared/documents/x1', { key: a.priv });
          expect(r.status, url).toBe(200);
          expect(r.body.id).toBe('x1');
        }
      });
    });
  });
}
