// The one behavioural contract of the Coordinator, run against every backend
// (embedded-coordinator.test.ts, etcd-coordinator.test.ts): what routers and shards rely on.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SuggestError } from '../../node/runtime/errors.js';
import { IndexId, JobId, KeyId, NodeId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import type { IndexRecord, JobKind, JobRecord, KeyRecord, MemberRecord, MetaEvent, PhysicalIndexRecord, PlacementTable, TenantRecord } from '../coordinator.js';
import type { CoordinationBackend } from '../coordination-backend.js';
import { MetadataCoordinator } from '../metadata-coordinator.js';

export interface ContractHarness {
  /** a new client of the harness's store; every client of one harness sees the same data */
  connect(): Promise<MetadataCoordinator>;
  /** closes every client and the store */
  close(): Promise<void>;
}

export type HarnessFactory = () => Promise<ContractHarness>;

// --- fixtures

const T0 = Date.parse('2024-05-01T00:00:00.000Z');
const at = (seconds: number) => new Date(T0 + seconds * 1000).toISOString();

export function tenantRec(id: string, extra: Partial<TenantRecord> = {}): TenantRecord {
  return { tenant_id: TenantId(id), name: `Tenant ${id}`, plan: 'free', mode: 'hosted', upload_limit_bytes: null, limits: {}, search_api: null, created_at: at(0), ...extra };
}

export function keyRec(id: string, tenant: string | null, hash: string, createdSec = 0): KeyRecord {
  return { id: KeyId(id), kind: tenant === null ? 'admin' : 'private', name: id, tenant_id: tenant === null ? null : TenantId(tenant), hash, created_at: at(createdSec) };
}

export function indexRec(tenant: string, index: string, physical: string): IndexRecord {
  return {
    tenant_id: TenantId(tenant),
    index_id: IndexId(index),
    name: index,
    physical_index_id: PhysicalIndexId(physical),
    status: 'ready',
    created_at: at(0),
    updated_at: at(0),
    schema: {},
    merchandising: {},
  };
}

export function physRec(tenant: string, index: string, physical: string, createdSec = 0): PhysicalIndexRecord {
  return { tenant_id: TenantId(tenant), physical_index_id: PhysicalIndexId(physical), index_id: IndexId(index), parts: 1, created_at: at(createdSec) };
}

export function jobRec(tenant: string, job: string, kind: JobKind, createdSec: number): JobRecord {
  return {
    job_id: JobId(job),
    kind,
    tenant_id: TenantId(tenant),
    index_id: IndexId('products'),
    status: 'queued',
    source_type: 'upload',
    source_filename: 'a.csv',
    total: 0,
    processed: 0,
    failed: 0,
    attempts: 0,
    error: null,
    created_at: at(createdSec),
    started_at: null,
    finished_at: null,
    state: {},
  };
}

export function memberRec(node: string, roles: MemberRecord['roles']): MemberRecord {
  return { node_id: NodeId(node), roles, grpc_address: roles.includes('shard') ? `127.0.0.1:${1000 + node.length}` : null, http_address: null, started_at: at(0) };
}

export function table(epoch: number, nodes: string[][]): PlacementTable {
  return { epoch, partitions: nodes.length, nodes: nodes.map((l) => l.map(NodeId)) };
}

// --- helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` until it returns true; fails after `timeoutMs`. */
export async function waitFor(what: string | (() => string), check: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(20);
  }
}

/**
 * A client over `backend` whose first transaction waits, once its reads are done, until
 * `release()`: the moment between reading records and the compare-and-swap that writes them.
 */
function gatedClient(backend: CoordinationBackend): { client: MetadataCoordinator; reached: Promise<void>; release: () => void } {
  let arrived!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((resolve) => (arrived = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  let first = true;
  const gated = new Proxy(backend, {
    get(target, prop) {
      if (prop === 'txn') {
        return async (...args: Parameters<CoordinationBackend['txn']>) => {
          if (first) {
            first = false;
            arrived();
            await gate;
          }
          return target.txn(...args);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { client: new MetadataCoordinator(gated, { ownsBackend: false }), reached, release };
}

async function errorCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof SuggestError) return err.code;
    throw err;
  }
  return 'no error';
}

/** Resources keeping the event loop alive, by kind (timers that are unref'd do not count). */
function liveHandles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) counts.set(r, (counts.get(r) ?? 0) + 1);
  return counts;
}

function extraHandles(base: Map<string, number>): string[] {
  const extra: string[] = [];
  for (const [kind, n] of liveHandles()) if (n > (base.get(kind) ?? 0)) extra.push(`${kind} +${n - (base.get(kind) ?? 0)}`);
  return extra;
}

export function coordinatorContract(name: string, createHarness: HarnessFactory): void {
  describe(`coordinator contract (${name})`, () => {
    let h: ContractHarness;
    let c: MetadataCoordinator;

    beforeEach(async () => {
      h = await createHarness();
      c = await h.connect();
    });
    afterEach(async () => {
      await h.close();
    });

    describe('tenants', () => {
      it('creates, reads, lists and refuses a second create', async () => {
        await c.createTenant(tenantRec('acme'));
        await c.createTenant(tenantRec('globex'));
        expect(await c.getTenant(TenantId('acme'))).toEqual(tenantRec('acme'));
        expect(await c.getTenant(TenantId('nope'))).toBeUndefined();
        expect((await c.listTenants()).map((t) => t.tenant_id)).toEqual(['acme', 'globex']);
        expect(await errorCode(c.createTenant(tenantRec('acme', { name: 'other' })))).toBe('tenant_exists');
        expect((await c.getTenant(TenantId('acme')))?.name).toBe('Tenant acme');
      });

      it('updates with compare-and-swap: concurrent increments are all kept', async () => {
        await c.createTenant(tenantRec('acme', { limits: { max_indexes: 0 } }));
        const c2 = await h.connect();
        await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? c : c2).updateTenant(TenantId('acme'), (t) => ({ ...t, limits: { ...t.limits, max_indexes: (t.limits.max_indexes ?? 0) + 1 } })),
          ),
        );
        expect((await c.getTenant(TenantId('acme')))?.limits.max_indexes).toBe(20);
        const updated = await c.updateTenant(TenantId('acme'), (t) => ({ ...t, plan: 'pro' }));
        expect(updated.plan).toBe('pro');
        expect((await c2.getTenant(TenantId('acme')))?.plan).toBe('pro');
        expect(await errorCode(c.updateTenant(TenantId('missing'), (t) => t))).toBe('tenant_not_found');
      });
    });

    describe('keys', () => {
      it('finds keys by hash, lists them per tenant and deletes by id', async () => {
        await c.putKey(keyRec('k-admin', null, 'h0'));
        await c.putKey(keyRec('k-a1', 'a', 'h1', 1));
        await c.putKey(keyRec('k-a2', 'a', 'h2', 2));
        await c.putKey(keyRec('k-ab', 'ab', 'h3'));
        expect(await c.getKeyByHash('h2')).toEqual(keyRec('k-a2', 'a', 'h2', 2));
        expect(await c.getKeyByHash('nope')).toBeUndefined();
        expect((await c.listKeys(TenantId('a'))).map((k) => k.id)).toEqual(['k-a1', 'k-a2']);
        expect((await c.listKeys(TenantId('ab'))).map((k) => k.id)).toEqual(['k-ab']);
        expect((await c.listKeys(null)).map((k) => k.id)).toEqual(['k-admin']);
        expect(await c.deleteKey(KeyId('k-a1'))).toBe(true);
        expect(await c.deleteKey(KeyId('k-a1'))).toBe(false);
        expect(await c.getKeyByHash('h1')).toBeUndefined();
        expect((await c.listKeys(TenantId('a'))).map((k) => k.id)).toEqual(['k-a2']);
      });

      it('re-putting a key id with a new hash retires the old hash', async () => {
        await c.putKey(keyRec('k1', 'a', 'old'));
        await c.putKey(keyRec('k1', 'a', 'new'));
        expect(await c.getKeyByHash('old')).toBeUndefined();
        expect((await c.getKeyByHash('new'))?.id).toBe('k1');
        expect((await c.listKeys(TenantId('a'))).map((k) => k.hash)).toEqual(['new']);
        // the same secret registered under a new id (two first boots racing) replaces the old id
        await c.putKey(keyRec('k2', 'a', 'new'));
        expect((await c.listKeys(TenantId('a'))).map((k) => k.id)).toEqual(['k2']);
        expect(await c.deleteKey(KeyId('k1'))).toBe(false);
      });
    });

    describe('indexes and aliases', () => {
      it('creates an index with its first physical index; a second create is index_exists', async () => {
        await c.createIndex(indexRec('a', 'products', 'p1'), physRec('a', 'products', 'p1'));
        expect(await c.getIndex(TenantId('a'), IndexId('products'))).toEqual(indexRec('a', 'products', 'p1'));
        expect(await c.getPhysicalIndex(TenantId('a'), PhysicalIndexId('p1'))).toEqual(physRec('a', 'products', 'p1'));
        expect(await errorCode(c.createIndex(indexRec('a', 'products', 'p2'), physRec('a', 'products', 'p2')))).toBe('index_exists');
        // the failed create left nothing behind
        expect(await c.getPhysicalIndex(TenantId('a'), PhysicalIndexId('p2'))).toBeUndefined();
        // a physical id already in use is a conflict, and the logical index is not created
        expect(await errorCode(c.createIndex(indexRec('a', 'other', 'p1'), physRec('a', 'other', 'p1')))).toBe('conflict');
        expect(await c.getIndex(TenantId('a'), IndexId('other'))).toBeUndefined();
      });

      it('lists indexes per tenant only', async () => {
        await c.createIndex(indexRec('a', 'x', 'pa1'), physRec('a', 'x', 'pa1'));
        await c.createIndex(indexRec('a', 'y', 'pa2'), physRec('a', 'y', 'pa2'));
        await c.createIndex(indexRec('ab', 'x', 'pb1'), physRec('ab', 'x', 'pb1'));
        await c.createIndex(indexRec('b', 'x', 'pc1'), physRec('b', 'x', 'pc1'));
        expect((await c.listIndexes(TenantId('a'))).map((i) => i.index_id)).toEqual(['x', 'y']);
        expect((await c.listIndexes(TenantId('ab'))).map((i) => `${i.tenant_id}/${i.index_id}`)).toEqual(['ab/x']);
        expect(await c.listIndexes(TenantId('zzz'))).toEqual([]);
        expect(await c.getIndex(TenantId('b'), IndexId('y'))).toBeUndefined();
      });

      it('updates an index and refuses unknown ones', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        const next = await c.updateIndex(TenantId('a'), IndexId('x'), (i) => ({ ...i, schema: { fields: ['title'] }, status: 'building' }));
        expect(next.status).toBe('building');
        expect((await c.getIndex(TenantId('a'), IndexId('x')))?.schema).toEqual({ fields: ['title'] });
        expect(await errorCode(c.updateIndex(TenantId('a'), IndexId('nope'), (i) => i))).toBe('index_not_found');
        expect(await errorCode(c.updateIndex(TenantId('b'), IndexId('x'), (i) => i))).toBe('index_not_found');
      });

      it('swaps the alias when it still points at the expected physical index', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 5));
        await c.putPhysicalIndex(physRec('a', 'x', 'p3', 6));
        expect(await c.swapAlias(TenantId('a'), IndexId('x'), PhysicalIndexId('p1'), PhysicalIndexId('p2'))).toBe(true);
        expect((await c.getIndex(TenantId('a'), IndexId('x')))?.physical_index_id).toBe('p2');
        // stale expectation: nothing changes
        expect(await c.swapAlias(TenantId('a'), IndexId('x'), PhysicalIndexId('p1'), PhysicalIndexId('p3'))).toBe(false);
        expect((await c.getIndex(TenantId('a'), IndexId('x')))?.physical_index_id).toBe('p2');
        // the target must be an allocated physical index of this index
        expect(await errorCode(c.swapAlias(TenantId('a'), IndexId('x'), PhysicalIndexId('p2'), PhysicalIndexId('ghost')))).toBe('index_not_found');
        expect(await errorCode(c.swapAlias(TenantId('a'), IndexId('nope'), PhysicalIndexId('p2'), PhysicalIndexId('p3')))).toBe('index_not_found');
        expect((await c.listPhysicalIndexes(TenantId('a'), IndexId('x'))).map((p) => p.physical_index_id)).toEqual(['p1', 'p2', 'p3']);
      });

      it('lets exactly one of many concurrent swaps from the same alias win', async () => {
        await c.createIndex(indexRec('a', 'x', 'p0'), physRec('a', 'x', 'p0'));
        const targets = Array.from({ length: 10 }, (_, i) => `p${i + 1}`);
        for (const p of targets) await c.putPhysicalIndex(physRec('a', 'x', p));
        const c2 = await h.connect();
        const results = await Promise.all(
          targets.map((p, i) => (i % 2 ? c : c2).swapAlias(TenantId('a'), IndexId('x'), PhysicalIndexId('p0'), PhysicalIndexId(p))),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = targets[results.indexOf(true)];
        expect((await c.getIndex(TenantId('a'), IndexId('x')))?.physical_index_id).toBe(winner);
      });

      it('deletes a logical index with all its physical indexes and returns them', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 1));
        await c.createIndex(indexRec('a', 'y', 'q1'), physRec('a', 'y', 'q1'));
        await c.createIndex(indexRec('b', 'x', 'p1'), physRec('b', 'x', 'p1'));
        const removed = await c.deleteIndex(TenantId('a'), IndexId('x'));
        expect(removed.map((p) => p.physical_index_id).sort()).toEqual(['p1', 'p2']);
        expect(await c.getIndex(TenantId('a'), IndexId('x'))).toBeUndefined();
        expect(await c.getPhysicalIndex(TenantId('a'), PhysicalIndexId('p1'))).toBeUndefined();
        expect(await c.listPhysicalIndexes(TenantId('a'), IndexId('x'))).toEqual([]);
        // neighbours untouched
        expect(await c.getIndex(TenantId('a'), IndexId('y'))).toBeDefined();
        expect(await c.getPhysicalIndex(TenantId('b'), PhysicalIndexId('p1'))).toBeDefined();
        expect(await c.deleteIndex(TenantId('a'), IndexId('x'))).toEqual([]);
        // the name is free again
        await c.createIndex(indexRec('a', 'x', 'p9'), physRec('a', 'x', 'p9'));
      });
    });

    describe('physical index lifecycle', () => {
      const A = TenantId('a');
      const X = IndexId('x');
      const P = PhysicalIndexId;

      it('allocates up to the cap, the live physical index included, and refuses past it with the count', async () => {
        await c.createIndex(indexRec('a', 'x', 'p0'), physRec('a', 'x', 'p0'));
        for (let i = 1; i < 3; i++) expect(await c.allocatePhysicalIndex(physRec('a', 'x', `p${i}`, i), 3)).toEqual({ allocated: true });
        expect(await c.allocatePhysicalIndex(physRec('a', 'x', 'p3', 3), 3)).toEqual({ allocated: false, count: 3 });
        expect(await c.getPhysicalIndex(A, P('p3'))).toBeUndefined();
        // other indexes and tenants have caps of their own
        await c.createIndex(indexRec('a', 'y', 'q0'), physRec('a', 'y', 'q0'));
        expect(await c.allocatePhysicalIndex(physRec('a', 'y', 'q1'), 3)).toEqual({ allocated: true });
        // the logical index must exist and not be going away
        expect(await errorCode(c.allocatePhysicalIndex(physRec('a', 'nope', 'n1'), 3))).toBe('index_not_found');
        await c.updateIndex(A, IndexId('y'), (r) => ({ ...r, status: 'deleting' }));
        expect(await errorCode(c.allocatePhysicalIndex(physRec('a', 'y', 'q2'), 3))).toBe('conflict');
        expect(await c.getPhysicalIndex(A, P('q2'))).toBeUndefined();
        // an id in use is not overwritten
        expect(await errorCode(c.allocatePhysicalIndex(physRec('a', 'x', 'q0'), 99))).toBe('conflict');
        expect((await c.getPhysicalIndex(A, P('q0')))?.index_id).toBe('y');
      });

      it('leaves exactly the cap when many clients allocate at once', async () => {
        await c.createIndex(indexRec('a', 'x', 'p0'), physRec('a', 'x', 'p0'));
        const c2 = await h.connect();
        const results = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? c : c2).allocatePhysicalIndex(physRec('a', 'x', `s${i}`, i), 4)));
        expect(results.filter((r) => r.allocated)).toHaveLength(3);
        const kept = (await c.listPhysicalIndexes(A, X)).map((p) => p.physical_index_id as string);
        expect(kept).toHaveLength(4);
        // what each was told matches what is stored
        results.forEach((r, i) => expect(kept.includes(`s${i}`), `s${i}`).toBe(r.allocated));
      });

      it('marks and deletes a physical index that is not live, and refuses the live one', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 1));
        expect(await errorCode(c.markPhysicalIndexDeleting(A, P('p1')))).toBe('conflict');
        expect((await c.getPhysicalIndex(A, P('p1')))?.status).toBeUndefined();
        // only a marked record may be removed
        expect(await errorCode(c.deletePhysicalIndex(A, P('p2')))).toBe('conflict');
        const marked = await c.markPhysicalIndexDeleting(A, P('p2'));
        expect(marked).toEqual({ ...physRec('a', 'x', 'p2', 1), status: 'deleting' });
        expect(await c.markPhysicalIndexDeleting(A, P('p2'))).toEqual(marked);
        // once marked it can never become live
        expect(await errorCode(c.swapAlias(A, X, P('p1'), P('p2')))).toBe('conflict');
        expect((await c.getIndex(A, X))?.physical_index_id).toBe('p1');
        expect(await c.deletePhysicalIndex(A, P('p2'))).toBe(true);
        expect(await c.getPhysicalIndex(A, P('p2'))).toBeUndefined();
        expect(await c.deletePhysicalIndex(A, P('p2'))).toBe(false);
        expect(await c.markPhysicalIndexDeleting(A, P('p2'))).toBeUndefined();
        expect((await c.listPhysicalIndexes(A, X)).map((p) => p.physical_index_id)).toEqual(['p1']);
        // another tenant's id of the same name is another record
        expect(await c.markPhysicalIndexDeleting(TenantId('b'), P('p1'))).toBeUndefined();
      });

      it('a promotion racing a delete of the same physical index never leaves the alias naming a deleted one', async () => {
        await c.createIndex(indexRec('a', 'x', 'p0'), physRec('a', 'x', 'p0'));
        const c2 = await h.connect();
        for (let round = 1; round <= 25; round++) {
          const next = P(`r${round}`);
          await c.putPhysicalIndex(physRec('a', 'x', next, round));
          const live = (await c.getIndex(A, X))!.physical_index_id;
          // each side as the routes run it: the promotion swaps, the delete marks then removes;
          // which one sets off first alternates, so that each wins some rounds
          const promote = () => c.swapAlias(A, X, live, next);
          const remove = () => c2.markPhysicalIndexDeleting(A, next).then(() => c2.deletePhysicalIndex(A, next));
          let swap: PromiseSettledResult<boolean>;
          let del: PromiseSettledResult<boolean>;
          if (round % 2) [swap, del] = await Promise.allSettled([promote(), remove()]);
          else [del, swap] = await Promise.allSettled([remove(), promote()]);
          const swapped = swap.status === 'fulfilled' && swap.value;
          const deleted = del.status === 'fulfilled' && del.value;
          // exactly one side won, and the loser was refused: a promotion that reads after the
          // delete has removed the record finds no physical index (index_not_found), one that reads
          // the mark is a conflict
          expect(swapped !== deleted, `round ${round}`).toBe(true);
          if (!swapped) expect(['conflict', 'index_not_found']).toContain(swap.status === 'rejected' && swap.reason instanceof SuggestError && swap.reason.code);
          if (!deleted) expect(del.status === 'rejected' && del.reason instanceof SuggestError && del.reason.code).toBe('conflict');
          const alias = (await c.getIndex(A, X))!.physical_index_id;
          const target = await c.getPhysicalIndex(A, alias);
          expect(target, `round ${round}: the alias names ${alias}, which has no record`).toBeDefined();
          expect(target?.status, `round ${round}`).toBeUndefined();
        }
      });

      // The two interleavings the race above may or may not hit, forced: one side has read and
      // is about to commit when the other commits.
      it('a promotion that read before a delete marked the physical index is refused when it commits', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 1));
        const g = gatedClient(c.backend);
        const swap = errorCode(g.client.swapAlias(A, X, P('p1'), P('p2')));
        await g.reached;
        await c.markPhysicalIndexDeleting(A, P('p2'));
        g.release();
        expect(await swap).toBe('conflict');
        expect((await c.getIndex(A, X))?.physical_index_id).toBe('p1');
        expect(await c.deletePhysicalIndex(A, P('p2'))).toBe(true);
        await g.client.close();
      });

      it('a delete that read before a promotion made the physical index live is refused when it commits', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 1));
        const g = gatedClient(c.backend);
        const mark = errorCode(g.client.markPhysicalIndexDeleting(A, P('p2')));
        await g.reached;
        expect(await c.swapAlias(A, X, P('p1'), P('p2'))).toBe(true);
        g.release();
        expect(await mark).toBe('conflict');
        expect((await c.getPhysicalIndex(A, P('p2')))?.status).toBeUndefined();
        expect((await c.getIndex(A, X))?.physical_index_id).toBe('p2');
        await g.client.close();
      });

      it('the logical delete still removes physical indexes marked for deletion', async () => {
        await c.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c.putPhysicalIndex(physRec('a', 'x', 'p2', 1));
        await c.markPhysicalIndexDeleting(A, P('p2'));
        expect((await c.deleteIndex(A, X)).map((p) => p.physical_index_id).sort()).toEqual(['p1', 'p2']);
        expect(await c.getPhysicalIndex(A, P('p2'))).toBeUndefined();
      });
    });

    describe('jobs', () => {
      it('lists newest first with a limit, per tenant and per kind', async () => {
        // inserted out of order: the listing must follow created_at, not insertion
        const order = Array.from({ length: 60 }, (_, i) => (i * 37) % 60);
        for (const i of order) await c.putJob(jobRec('a', `job-${i}`, i % 3 === 0 ? 'export' : 'ingestion', i));
        await c.putJob(jobRec('b', 'job-b', 'ingestion', 1_000));
        const listed = await c.listJobs(TenantId('a'), null, 50);
        expect(listed.map((j) => j.job_id)).toEqual(Array.from({ length: 50 }, (_, i) => `job-${59 - i}`));
        const exports = await c.listJobs(TenantId('a'), 'export', 50);
        expect(exports.map((j) => j.job_id)).toEqual(Array.from({ length: 20 }, (_, i) => `job-${57 - 3 * i}`));
        expect((await c.listJobs(TenantId('a'), 'ingestion', 3)).map((j) => j.job_id)).toEqual(['job-59', 'job-58', 'job-56']);
        expect(await c.listJobs(TenantId('a'), 'sync', 50)).toEqual([]);
        expect(await c.listJobs(TenantId('a'), null, 0)).toEqual([]);
        expect((await c.listJobs(TenantId('b'), null, 50)).map((j) => j.job_id)).toEqual(['job-b']);
      });

      it('gets, updates, upserts and deletes jobs', async () => {
        await c.putJob(jobRec('a', 'j1', 'ingestion', 1));
        await c.putJob(jobRec('a', 'j2', 'ingestion', 2));
        expect(await c.getJob(TenantId('a'), JobId('j1'))).toEqual(jobRec('a', 'j1', 'ingestion', 1));
        expect(await c.getJob(TenantId('b'), JobId('j1'))).toBeUndefined();
        const next = await c.updateJob(TenantId('a'), JobId('j1'), (j) => ({ ...j, status: 'processing', processed: j.processed + 10, attempts: 1 }));
        expect(next).toMatchObject({ status: 'processing', processed: 10, attempts: 1 });
        expect((await c.getJob(TenantId('a'), JobId('j1')))?.processed).toBe(10);
        expect(await errorCode(c.updateJob(TenantId('a'), JobId('nope'), (j) => j))).toBe('job_not_found');
        // upsert with a later created_at moves the job in the listing (the order index follows)
        await c.putJob({ ...jobRec('a', 'j1', 'export', 3), status: 'queued' });
        expect((await c.listJobs(TenantId('a'), null, 10)).map((j) => j.job_id)).toEqual(['j1', 'j2']);
        expect((await c.listJobs(TenantId('a'), 'ingestion', 10)).map((j) => j.job_id)).toEqual(['j2']);
        expect(await c.deleteJob(TenantId('a'), JobId('j1'))).toBe(true);
        expect(await c.deleteJob(TenantId('a'), JobId('j1'))).toBe(false);
        expect(await c.getJob(TenantId('a'), JobId('j1'))).toBeUndefined();
        expect((await c.listJobs(TenantId('a'), null, 10)).map((j) => j.job_id)).toEqual(['j2']);
        expect(await c.listJobs(TenantId('a'), 'export', 10)).toEqual([]);
      });

      it('concurrent progress updates are all kept', async () => {
        await c.putJob(jobRec('a', 'j1', 'ingestion', 1));
        const c2 = await h.connect();
        await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 ? c : c2).updateJob(TenantId('a'), JobId('j1'), (j) => ({ ...j, processed: j.processed + 1 }))));
        expect((await c.getJob(TenantId('a'), JobId('j1')))?.processed).toBe(16);
      });
    });

    describe('job leases', () => {
      it('admits one holder at a time; revoke frees the job', async () => {
        const c2 = await h.connect();
        const lease = await c.acquireJobLease(JobId('j1'), NodeId('n1'), 5);
        expect(lease).not.toBeNull();
        expect(await c2.jobLeaseHolder(JobId('j1'))).toBe('n1');
        expect(await c2.acquireJobLease(JobId('j1'), NodeId('n2'), 5)).toBeNull();
        expect(await c.acquireJobLease(JobId('j1'), NodeId('n1'), 5)).toBeNull();
        // other jobs are independent
        expect(await c2.acquireJobLease(JobId('j2'), NodeId('n2'), 5)).not.toBeNull();
        await lease!.revoke();
        await lease!.lost;
        expect(await c2.jobLeaseHolder(JobId('j1'))).toBeNull();
        const again = await c2.acquireJobLease(JobId('j1'), NodeId('n2'), 5);
        expect(again).not.toBeNull();
        expect(await c.jobLeaseHolder(JobId('j1'))).toBe('n2');
      });

      it('stays held while kept alive and lapses one TTL after the holder stops', async () => {
        const c2 = await h.connect();
        const lease = await c2.acquireJobLease(JobId('j1'), NodeId('n1'), 1);
        expect(lease).not.toBeNull();
        // kept alive past twice its TTL
        await sleep(2_200);
        expect(await c.jobLeaseHolder(JobId('j1'))).toBe('n1');
        expect(await c.acquireJobLease(JobId('j1'), NodeId('n2'), 1)).toBeNull();
        // the holder goes silent (a crash): the lease lapses, its key goes, the job is free
        const stoppedAt = Date.now();
        lease!.release();
        await waitFor('the job lease to lapse', async () => (await c.jobLeaseHolder(JobId('j1'))) === null, 6_000);
        expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(500);
        await lease!.lost;
        expect(await c.acquireJobLease(JobId('j1'), NodeId('n2'), 1)).not.toBeNull();
      });
    });

    describe('membership', () => {
      it('registers members under leases; a silent member expires, a known shard node is remembered', async () => {
        const c2 = await h.connect();
        const lists: string[][] = [];
        const unwatch = await c.watchMembers((ms) => lists.push(ms.map((m) => m.node_id)));
        expect(lists).toEqual([[]]);
        const router = await c.register(memberRec('router-1', ['router']), 5);
        const shard = await c2.register(memberRec('shard-1', ['shard', 'coordinator']), 1);
        await waitFor('both members', () => lists.at(-1)?.length === 2);
        expect((await c.listMembers()).map((m) => m.node_id)).toEqual(['router-1', 'shard-1']);
        expect((await c.listKnownShardNodes()).map((m) => m.node_id)).toEqual(['shard-1']);
        expect(await c.listKnownShardNodes()).toEqual([memberRec('shard-1', ['shard', 'coordinator'])]);
        shard.release();
        await waitFor('the shard member to expire', () => lists.at(-1)?.join() === 'router-1', 6_000);
        expect((await c.listMembers()).map((m) => m.node_id)).toEqual(['router-1']);
        expect((await c.listKnownShardNodes()).map((m) => m.node_id)).toEqual(['shard-1']);
        await router.revoke();
        await waitFor('no members', () => lists.at(-1)?.length === 0);
        // every delivery was a change
        for (let i = 1; i < lists.length; i++) expect(lists[i]).not.toEqual(lists[i - 1]);
        unwatch();
      });

      it('a re-registration under a new lease survives the old lease', async () => {
        const first = await c.register(memberRec('shard-1', ['shard']), 5);
        const second = await c.register({ ...memberRec('shard-1', ['shard']), grpc_address: '127.0.0.1:9' }, 5);
        await first.revoke();
        expect((await c.listMembers()).map((m) => m.grpc_address)).toEqual(['127.0.0.1:9']);
        expect((await c.listKnownShardNodes()).map((m) => m.grpc_address)).toEqual(['127.0.0.1:9']);
        await second.revoke();
        expect(await c.listMembers()).toEqual([]);
      });
    });

    describe('watches', () => {
      it('watchMeta reports every metadata change in commit order', async () => {
        const c2 = await h.connect();
        const events: MetaEvent[] = [];
        const unwatch = await c.watchMeta((e) => events.push(e));
        await c2.createTenant(tenantRec('a'));
        await c2.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
        await c2.putPhysicalIndex(physRec('a', 'x', 'p2')); // reported, but ordered apart from meta/
        await c2.swapAlias(TenantId('a'), IndexId('x'), PhysicalIndexId('p1'), PhysicalIndexId('p2'));
        await c2.putKey(keyRec('k1', 'a', 'h1'));
        await c2.putJob(jobRec('a', 'j1', 'ingestion', 1));
        await c2.updateJob(TenantId('a'), JobId('j1'), (j) => ({ ...j, status: 'succeeded' }));
        await c2.updateTenant(TenantId('a'), (t) => ({ ...t, plan: 'pro' }));
        await c2.deleteKey(KeyId('k1'));
        await c2.deleteJob(TenantId('a'), JobId('j1'));
        await c2.deleteIndex(TenantId('a'), IndexId('x'));
        await waitFor('ten events', () => events.filter((e) => e.type !== 'physical').length >= 10);
        const summary = events.filter((e) => e.type !== 'physical').map((e) => {
          switch (e.type) {
            case 'tenant':
              return `tenant ${e.tenant_id} ${e.record ? e.record.plan : 'deleted'}`;
            case 'index':
              return `index ${e.tenant_id}/${e.index_id} ${e.record ? e.record.physical_index_id : 'deleted'}`;
            case 'key':
              return `key ${e.hash} ${e.record ? e.record.id : 'deleted'}`;
            case 'job':
              return `job ${e.tenant_id}/${e.job_id} ${e.record ? e.record.status : 'deleted'}`;
          }
        });
        expect(summary).toEqual([
          'tenant a free',
          'index a/x p1',
          'index a/x p2',
          'key h1 k1',
          'job a/j1 queued',
          'job a/j1 succeeded',
          'tenant a pro',
          'key h1 deleted',
          'job a/j1 deleted',
          'index a/x deleted',
        ]);
        // after unsubscribing nothing more arrives (a second watcher proves the write happened)
        unwatch();
        const later: MetaEvent[] = [];
        const unwatch2 = await c2.watchMeta((e) => later.push(e));
        await c2.createTenant(tenantRec('b'));
        await waitFor('the later event', () => later.length === 1);
        expect(events.filter((e) => e.type !== 'physical')).toHaveLength(10);
        unwatch2();
      });

      it('watchMeta reports physical index records: written, marked for deletion, deleted', async () => {
        const c2 = await h.connect();
        const events: MetaEvent[] = [];
        const unwatch = await c.watchMeta((e) => {
          if (e.type === 'physical') events.push(e);
        });
        await c2.createIndex(indexRec('a/b', 'x', 'p/1'), physRec('a/b', 'x', 'p/1'));
        await c2.allocatePhysicalIndex(physRec('a/b', 'x', 'p2'), 16);
        await c2.markPhysicalIndexDeleting(TenantId('a/b'), PhysicalIndexId('p2'));
        await c2.deletePhysicalIndex(TenantId('a/b'), PhysicalIndexId('p2'));
        await c2.deleteIndex(TenantId('a/b'), IndexId('x'));
        await waitFor('five physical events', () => events.length >= 5);
        const summary = events.map((e) => (e.type === 'physical' ? `${e.tenant_id} ${e.physical_index_id} ${e.record ? (e.record.status ?? 'ready') : 'deleted'}` : e.type));
        expect(summary).toEqual(['a/b p/1 ready', 'a/b p2 ready', 'a/b p2 deleting', 'a/b p2 deleted', 'a/b p/1 deleted']);
        unwatch();
      });

      it('watchPlacement delivers the current table, then newer epochs in order', async () => {
        const c2 = await h.connect();
        expect(await c.putPlacement(table(1, [['n1'], ['n1']]), 0)).toBe(true);
        const seen: number[] = [];
        const unwatch = await c.watchPlacement((t) => seen.push(t.epoch));
        expect(seen).toEqual([1]);
        expect(await c2.putPlacement(table(2, [['n1'], ['n2']]), 1)).toBe(true);
        expect(await c2.putPlacement(table(3, [['n2'], ['n2']]), 2)).toBe(true);
        // stale compare-and-swap: refused, not delivered
        expect(await c2.putPlacement(table(9, [['n9'], ['n9']]), 2)).toBe(false);
        expect(await c2.putPlacement(table(9, [['n9'], ['n9']]), 0)).toBe(false);
        expect(await c2.putPlacement(table(4, [['n1'], ['n2']]), 3)).toBe(true);
        await waitFor('epoch 4', () => seen.at(-1) === 4);
        expect(seen).toEqual([1, 2, 3, 4]);
        expect(await c.getPlacement()).toEqual(table(4, [['n1'], ['n2']]));
        unwatch();
      });

      it('placement compare-and-swap admits one of two racing writers', async () => {
        const c2 = await h.connect();
        expect(await c.getPlacement()).toBeUndefined();
        const results = await Promise.all([c.putPlacement(table(1, [['n1']]), 0), c2.putPlacement(table(1, [['n2']]), 0)]);
        expect(results.filter(Boolean)).toHaveLength(1);
        const stored = await c.getPlacement();
        expect(stored?.nodes[0]).toEqual([results[0] ? 'n1' : 'n2']);
        // an epoch that does not advance is a programming error
        await expect(Promise.resolve().then(() => c.putPlacement(table(1, [['n1']]), 1))).rejects.toThrow();
      });
    });

    describe('leader election', () => {
      it('elects one candidate at a time, the next when the leader resigns', async () => {
        const c2 = await h.connect();
        const elected: string[] = [];
        const stop1 = await c.campaign(NodeId('n1'), () => elected.push('n1'));
        await waitFor('n1 elected', () => elected.includes('n1'));
        const stop2 = await c2.campaign(NodeId('n2'), () => elected.push('n2'));
        await sleep(300);
        expect(elected).toEqual(['n1']);
        stop1();
        await waitFor('n2 elected', () => elected.includes('n2'));
        expect(elected).toEqual(['n1', 'n2']);
        stop2();
      });

      it('elects the next candidate when the leader closes', async () => {
        const c2 = await h.connect();
        const elected: string[] = [];
        await c2.campaign(NodeId('n1'), () => elected.push('n1'));
        await waitFor('n1 elected', () => elected.includes('n1'));
        await c.campaign(NodeId('n2'), () => elected.push('n2'));
        await c2.close();
        await waitFor('n2 elected', () => elected.includes('n2'));
      });
    });

    describe('backend transactions', () => {
      it('compares absence, revision, version and value, and applies all or nothing', async () => {
        const b = c.backend;
        const rev1 = await b.put('t/a', { n: 1 });
        const a = await b.get('t/a');
        expect(a).toMatchObject({ key: 't/a', value: { n: 1 }, version: 1, modRevision: rev1, createRevision: rev1, lease: null });
        const failed = await b.txn([{ key: 't/a', version: 1 }, { key: 't/b', absent: true }, { key: 't/a', value: { n: 2 } }], [{ type: 'put', key: 't/c', value: 1 }]);
        expect(failed.succeeded).toBe(false);
        expect(await b.get('t/c')).toBeUndefined();
        const ok = await b.txn(
          [{ key: 't/a', modRevision: rev1 }, { key: 't/b', absent: true }, { key: 't/a', value: { n: 1 } }],
          [
            { type: 'put', key: 't/a', value: { n: 2 } },
            { type: 'put', key: 't/c', value: 'x' },
          ],
        );
        expect(ok.succeeded).toBe(true);
        expect(ok.revision).toBeGreaterThan(rev1);
        const a2 = await b.get('t/a');
        const c3 = await b.get('t/c');
        expect(a2).toMatchObject({ value: { n: 2 }, version: 2, createRevision: rev1, modRevision: ok.revision });
        expect(c3?.modRevision).toBe(ok.revision);
        expect((await b.range('t/')).map((kv) => kv.key)).toEqual(['t/a', 't/c']);
        expect((await b.range('t/', { reverse: true, limit: 1 })).map((kv) => kv.key)).toEqual(['t/c']);
        await expect(b.txn([], [{ type: 'delete', key: 't/a' }, { type: 'put', key: 't/a', value: 1 }])).rejects.toThrow();
        expect(await b.delete('t/a')).toBe(true);
        expect(await b.delete('t/a')).toBe(false);
        expect(await b.deletePrefix('t/')).toBe(1);
        expect(await b.range('t/')).toEqual([]);
      });

      it('refuses a put under a lease that is gone', async () => {
        const lease = await c.backend.grantLease(5);
        await c.backend.put('t/leased', 1, { lease: lease.id });
        expect((await c.backend.get('t/leased'))?.lease).toBe(lease.id);
        await lease.revoke();
        expect(await c.backend.get('t/leased')).toBeUndefined();
        await expect(c.backend.put('t/leased', 2, { lease: lease.id })).rejects.toThrow();
      });
    });

    it('close() releases every handle it opened', async () => {
      const base = liveHandles();
      const h2 = await createHarness();
      const a = await h2.connect();
      const b = await h2.connect();
      await a.createTenant(tenantRec('a'));
      await a.watchMeta(() => undefined);
      await b.watchPlacement(() => undefined);
      await b.watchMembers(() => undefined);
      await a.register(memberRec('n1', ['shard']), 2);
      await b.acquireJobLease(JobId('j'), NodeId('n1'), 2);
      const elected: string[] = [];
      await a.campaign(NodeId('n1'), () => elected.push('n1'));
      await waitFor('elected', () => elected.length === 1);
      await h2.close();
      await waitFor(() => `handles to close (extra: ${extraHandles(base).join(', ')})`, () => extraHandles(base).length === 0, 5_000);
    });
  });
}
