// The Coordinator over any CoordinationBackend: the key layout, the create-if-absent and
// compare-and-swap transactions, job leases, membership, placement and the watches. Both modes
// run this same code; only the backend differs. Key layout (under the backend's prefix; every
// id segment is URI-encoded so no id can reach into another's keys):
//   meta/tenants/{tenant}                        TenantRecord
//   meta/keys/{hash}                             KeyRecord
//   meta/indexes/{tenant}/{index}                IndexRecord (the alias: physical_index_id)
//   meta/jobs/{tenant}/{job}                     JobRecord
//   physical/{tenant}/{physical}                 PhysicalIndexRecord
//   key-ids/{key id}                             {hash, tenant_id}: delete by id
//   tenant-keys/t/{tenant}/{key id} | tenant-keys/admin/{key id}   hash: list per tenant
//   job-order/{tenant}/{kind|all}/{created_at}/{job}              "": newest-first listing
//   leases/jobs/{job}                            {owner, acquired_at}, under the holder's lease
//   members/{node}                               MemberRecord, under the member's lease
//   nodes/{node}                                 MemberRecord of every shard node that ever joined
//   placement                                    PlacementTable
// Everything watchMeta reports lives under meta/, so one watch sees it in commit order, except
// physical/ records, which a second watch reports (in their own commit order). A physical record
// changes once after it is written: marked `deleting` before it goes.
import { fail } from '../node/runtime/errors.js';
import type { IndexId, JobId, KeyId, NodeId, PhysicalIndexId, TenantId } from '../node/runtime/ids.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import { withTimeout } from '../node/runtime/timeout.js';
import type { BackendCampaign, BackendLease, Compare, CoordinationBackend, CoordinationHealth, KeyValue, TxnOp, TxnResult, Unwatch, WatchEvent } from './coordination-backend.js';
import type {
  AllocateResult,
  Coordinator,
  IndexRecord,
  JobKind,
  JobRecord,
  KeyRecord,
  Lease,
  MemberRecord,
  MetaEvent,
  PhysicalIndexRecord,
  PlacementTable,
  TenantRecord,
  Unsubscribe,
} from './coordinator.js';

export interface MetadataCoordinatorOptions {
  /** close the backend in close(); default true */
  ownsBackend?: boolean;
  /** election the coordinator leader is chosen by; default `coordinator` */
  electionName?: string;
  log?: Logger;
}

/** A lease held through this coordinator. */
export interface HeldLease extends Lease {
  /** stop keeping the lease alive without revoking it, as a crashed holder would; it lapses after its TTL */
  release(): void;
}

const seg = (s: string) => encodeURIComponent(s);
const unseg = (s: string) => decodeURIComponent(s);

/** ISO timestamps sort as strings; anything else is kept (encoded) so it still sorts stably. */
function sortableTime(createdAt: string): string {
  const t = Date.parse(createdAt);
  return Number.isFinite(t) ? new Date(t).toISOString() : seg(createdAt);
}

const K = {
  tenants: 'meta/tenants/',
  tenant: (t: string) => `meta/tenants/${seg(t)}`,
  key: (hash: string) => `meta/keys/${seg(hash)}`,
  keyId: (id: string) => `key-ids/${seg(id)}`,
  tenantKeys: (t: string | null) => (t === null ? 'tenant-keys/admin/' : `tenant-keys/t/${seg(t)}/`),
  tenantKey: (t: string | null, id: string) => `${K.tenantKeys(t)}${seg(id)}`,
  indexes: (t: string) => `meta/indexes/${seg(t)}/`,
  index: (t: string, i: string) => `meta/indexes/${seg(t)}/${seg(i)}`,
  physicals: (t: string) => `physical/${seg(t)}/`,
  physical: (t: string, p: string) => `physical/${seg(t)}/${seg(p)}`,
  job: (t: string, j: string) => `meta/jobs/${seg(t)}/${seg(j)}`,
  jobOrders: (t: string, kind: JobKind | 'all') => `job-order/${seg(t)}/${kind}/`,
  jobOrder: (t: string, kind: JobKind | 'all', createdAt: string, j: string) => `${K.jobOrders(t, kind)}${sortableTime(createdAt)}/${seg(j)}`,
  jobLease: (j: string) => `leases/jobs/${seg(j)}`,
  members: 'members/',
  member: (n: string) => `members/${seg(n)}`,
  nodes: 'nodes/',
  node: (n: string) => `nodes/${seg(n)}`,
  placement: 'placement',
} as const;

interface KeyIdEntry {
  hash: string;
  tenant_id: TenantId | null;
}

interface JobLeaseEntry {
  owner: NodeId;
  acquired_at: string;
}

const RETRY = Symbol('retry');
const MAX_ATTEMPTS = 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function jobOrderKeys(rec: JobRecord): string[] {
  return [K.jobOrder(rec.tenant_id, 'all', rec.created_at, rec.job_id), K.jobOrder(rec.tenant_id, rec.kind, rec.created_at, rec.job_id)];
}

/** Puts for order keys that are new, deletes for the ones that are gone. */
function jobOrderOps(prev: JobRecord | undefined, next: JobRecord | undefined): TxnOp[] {
  const before = prev ? jobOrderKeys(prev) : [];
  const after = next ? jobOrderKeys(next) : [];
  return [
    ...after.filter((k) => !before.includes(k)).map((key): TxnOp => ({ type: 'put', key, value: '' })),
    ...before.filter((k) => !after.includes(k)).map((key): TxnOp => ({ type: 'delete', key })),
  ];
}

const unchanged = (kv: KeyValue | undefined, key: string): Compare => (kv ? { key, modRevision: kv.modRevision } : { key, absent: true });

function toMetaEvent(e: WatchEvent): MetaEvent | undefined {
  const parts = e.key.split('/').map(unseg);
  const put = e.type === 'put';
  switch (parts[1]) {
    case 'tenants':
      return { type: 'tenant', tenant_id: parts[2] as TenantId, record: put ? (e.value as TenantRecord) : null };
    case 'keys':
      return { type: 'key', hash: parts[2] ?? '', record: put ? (e.value as KeyRecord) : null };
    case 'indexes':
      return { type: 'index', tenant_id: parts[2] as TenantId, index_id: parts[3] as IndexId, record: put ? (e.value as IndexRecord) : null };
    case 'jobs':
      return { type: 'job', tenant_id: parts[2] as TenantId, job_id: parts[3] as JobId, record: put ? (e.value as JobRecord) : null };
    default:
      return undefined;
  }
}

function toPhysicalEvent(e: WatchEvent): MetaEvent | undefined {
  const parts = e.key.split('/').map(unseg);
  if (parts[0] !== 'physical' || parts.length !== 3) return undefined;
  return { type: 'physical', tenant_id: parts[1] as TenantId, physical_index_id: parts[2] as PhysicalIndexId, record: e.type === 'put' ? (e.value as PhysicalIndexRecord) : null };
}

const liveOf = (physical: PhysicalIndexId, index: IndexId) =>
  `Physical index '${physical}' is the live one of index '${index}' (the alias points at it); promote another physical index first (POST /v1/indexes/${index}/promote), then delete this one.`;

export class MetadataCoordinator implements Coordinator {
  private readonly log: Logger;
  private readonly ownsBackend: boolean;
  private readonly electionName: string;
  /** active subscriptions (watches, campaigns): close() ends them */
  private readonly subscriptions = new Set<Unsubscribe>();
  /** endings of subscriptions still in flight */
  private readonly ending = new Set<Promise<void>>();
  private readonly leases = new Set<HeldLease>();
  private closed = false;

  constructor(
    readonly backend: CoordinationBackend,
    opts: MetadataCoordinatorOptions = {},
  ) {
    this.log = opts.log ?? rootLog.child({ component: 'coordinator' });
    this.ownsBackend = opts.ownsBackend ?? true;
    this.electionName = opts.electionName ?? 'coordinator';
  }

  // --- tenants

  async createTenant(rec: TenantRecord): Promise<void> {
    const key = K.tenant(rec.tenant_id);
    const res = await this.backend.txn([{ key, absent: true }], [{ type: 'put', key, value: rec }]);
    if (!res.succeeded) fail('tenant_exists', { tenant: rec.tenant_id });
  }

  async getTenant(id: TenantId): Promise<TenantRecord | undefined> {
    return (await this.backend.get(K.tenant(id)))?.value as TenantRecord | undefined;
  }

  async listTenants(): Promise<TenantRecord[]> {
    return (await this.backend.range(K.tenants)).map((kv) => kv.value as TenantRecord);
  }

  updateTenant(id: TenantId, update: (rec: TenantRecord) => TenantRecord): Promise<TenantRecord> {
    return this.modify<TenantRecord>(
      `tenant '${id}'`,
      K.tenant(id),
      () => fail('tenant_not_found', { tenant: id }),
      update,
      (next) => next.tenant_id === id,
    );
  }

  // --- keys

  /** Upsert. The hash is the identity of a secret: a record for a hash held by another key id replaces that key. */
  putKey(rec: KeyRecord): Promise<void> {
    return this.retry(`key '${rec.id}'`, async () => {
      const [byId, byHash] = await Promise.all([this.backend.get(K.keyId(rec.id)), this.backend.get(K.key(rec.hash))]);
      const ops: TxnOp[] = [
        { type: 'put', key: K.key(rec.hash), value: rec },
        { type: 'put', key: K.keyId(rec.id), value: { hash: rec.hash, tenant_id: rec.tenant_id } satisfies KeyIdEntry },
        { type: 'put', key: K.tenantKey(rec.tenant_id, rec.id), value: rec.hash },
      ];
      const old = byId?.value as KeyIdEntry | undefined;
      if (old && old.hash !== rec.hash) ops.push({ type: 'delete', key: K.key(old.hash) });
      if (old && old.tenant_id !== rec.tenant_id) ops.push({ type: 'delete', key: K.tenantKey(old.tenant_id, rec.id) });
      const displaced = byHash?.value as KeyRecord | undefined;
      const compares = [unchanged(byId, K.keyId(rec.id)), unchanged(byHash, K.key(rec.hash))];
      if (displaced && displaced.id !== rec.id) {
        ops.push({ type: 'delete', key: K.keyId(displaced.id) }, { type: 'delete', key: K.tenantKey(displaced.tenant_id, displaced.id) });
      }
      const res = await this.backend.txn(compares, ops);
      return res.succeeded ? undefined : RETRY;
    });
  }

  async getKeyByHash(hash: string): Promise<KeyRecord | undefined> {
    return (await this.backend.get(K.key(hash)))?.value as KeyRecord | undefined;
  }

  /** Keys whose tenant_id equals `tenant`; `null` lists the admin keys. Oldest first. */
  async listKeys(tenant: TenantId | null): Promise<KeyRecord[]> {
    const refs = await this.backend.range(K.tenantKeys(tenant));
    const recs = await Promise.all(refs.map((kv) => this.getKeyByHash(kv.value as string)));
    return recs
      .filter((r): r is KeyRecord => r !== undefined && r.tenant_id === tenant)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  deleteKey(id: KeyId): Promise<boolean> {
    return this.retry(`key '${id}'`, async () => {
      const ref = await this.backend.get(K.keyId(id));
      if (!ref) return false;
      const entry = ref.value as KeyIdEntry;
      const rec = await this.backend.get(K.key(entry.hash));
      const ops: TxnOp[] = [
        { type: 'delete', key: K.keyId(id) },
        { type: 'delete', key: K.tenantKey(entry.tenant_id, id) },
      ];
      // the hash may already belong to a newer key id (putKey replaced it): leave that one
      if (rec && (rec.value as KeyRecord).id === id) ops.push({ type: 'delete', key: K.key(entry.hash) });
      const res = await this.backend.txn([unchanged(ref, K.keyId(id)), unchanged(rec, K.key(entry.hash))], ops);
      return res.succeeded ? true : RETRY;
    });
  }

  // --- indexes and aliases

  async createIndex(rec: IndexRecord, physical: PhysicalIndexRecord): Promise<void> {
    if (physical.tenant_id !== rec.tenant_id || physical.index_id !== rec.index_id || physical.physical_index_id !== rec.physical_index_id) {
      throw new Error('createIndex: the physical index must belong to the logical index and be the one it points at');
    }
    const ik = K.index(rec.tenant_id, rec.index_id);
    const pk = K.physical(rec.tenant_id, physical.physical_index_id);
    const res = await this.backend.txn(
      [
        { key: ik, absent: true },
        { key: pk, absent: true },
      ],
      [
        { type: 'put', key: ik, value: rec },
        { type: 'put', key: pk, value: physical },
      ],
    );
    if (res.succeeded) return;
    if (await this.backend.get(ik)) fail('index_exists', { index: rec.index_id, tenant: rec.tenant_id });
    fail('conflict', { reason: `Physical index id '${physical.physical_index_id}' is already in use; retry to get a new one.` });
  }

  async getIndex(tenant: TenantId, index: IndexId): Promise<IndexRecord | undefined> {
    return (await this.backend.get(K.index(tenant, index)))?.value as IndexRecord | undefined;
  }

  async listIndexes(tenant: TenantId): Promise<IndexRecord[]> {
    return (await this.backend.range(K.indexes(tenant))).map((kv) => kv.value as IndexRecord);
  }

  updateIndex(tenant: TenantId, index: IndexId, update: (rec: IndexRecord) => IndexRecord): Promise<IndexRecord> {
    return this.modify<IndexRecord>(
      `index '${index}'`,
      K.index(tenant, index),
      () => fail('index_not_found', { index, tenant }),
      update,
      (next) => next.tenant_id === tenant && next.index_id === index,
    );
  }

  deleteIndex(tenant: TenantId, index: IndexId): Promise<PhysicalIndexRecord[]> {
    return this.retry(`index '${index}'`, async () => {
      const ik = K.index(tenant, index);
      const [idx, all] = await Promise.all([this.backend.get(ik), this.backend.range(K.physicals(tenant))]);
      const owned = all.filter((kv) => (kv.value as PhysicalIndexRecord).index_id === index);
      if (!idx && owned.length === 0) return [];
      const compares: Compare[] = [unchanged(idx, ik), ...owned.map((kv) => unchanged(kv, kv.key))];
      const ops: TxnOp[] = [...(idx ? [{ type: 'delete' as const, key: ik }] : []), ...owned.map((kv) => ({ type: 'delete' as const, key: kv.key }))];
      const res = await this.backend.txn(compares, ops);
      return res.succeeded ? owned.map((kv) => kv.value as PhysicalIndexRecord) : RETRY;
    });
  }

  async putPhysicalIndex(rec: PhysicalIndexRecord): Promise<void> {
    await this.backend.put(K.physical(rec.tenant_id, rec.physical_index_id), rec);
  }

  async allocatePhysicalIndex(rec: PhysicalIndexRecord, max: number): Promise<AllocateResult> {
    const tenant = rec.tenant_id;
    const ik = K.index(tenant, rec.index_id);
    const pk = K.physical(tenant, rec.physical_index_id);
    const owned = async () => (await this.backend.range(K.physicals(tenant))).filter((kv) => (kv.value as PhysicalIndexRecord).index_id === rec.index_id);
    const refused = await this.retry(`index '${rec.index_id}'`, async (): Promise<number | null | typeof RETRY> => {
      const [idx, before] = await Promise.all([this.backend.get(ik), owned()]);
      if (!idx) fail('index_not_found', { index: rec.index_id, tenant });
      // the logical delete drops what it finds; a physical index written behind it would be left over
      if ((idx.value as IndexRecord).status === 'deleting') fail('conflict', { reason: `Index '${rec.index_id}' is being deleted.` });
      if (before.length >= max) return before.length;
      const res = await this.backend.txn([unchanged(idx, ik), { key: pk, absent: true }], [{ type: 'put', key: pk, value: rec }]);
      if (res.succeeded) return null;
      if (await this.backend.get(pk)) fail('conflict', { reason: `Physical index id '${rec.physical_index_id}' is already in use; retry to get a new one.` });
      return RETRY;
    });
    if (refused !== null) return { allocated: false, count: refused };
    // A count is no lock: allocations on other routers may have passed it too. Commit order
    // ranks every allocation the same for all of them, so the ones past the cap withdraw.
    const after = await owned();
    if (after.length <= max) return { allocated: true };
    const rank = after.sort((a, b) => a.createRevision - b.createRevision).findIndex((kv) => kv.key === pk);
    if (rank >= 0 && rank < max) return { allocated: true };
    const mine = after[rank];
    if (mine) await this.backend.txn([unchanged(mine, pk)], [{ type: 'delete', key: pk }]);
    return { allocated: false, count: after.length - 1 };
  }

  markPhysicalIndexDeleting(tenant: TenantId, physical: PhysicalIndexId): Promise<PhysicalIndexRecord | undefined> {
    return this.retry(`physical index '${physical}'`, async () => {
      const pk = K.physical(tenant, physical);
      const phys = await this.backend.get(pk);
      if (!phys) return undefined;
      const rec = phys.value as PhysicalIndexRecord;
      const ik = K.index(tenant, rec.index_id);
      const idx = await this.backend.get(ik);
      if (idx && (idx.value as IndexRecord).physical_index_id === physical) fail('conflict', { reason: liveOf(physical, rec.index_id) });
      if (rec.status === 'deleting') return rec;
      const marked: PhysicalIndexRecord = { ...rec, status: 'deleting' };
      // swapAlias compares the physical record too: whichever of the two commits second retries and sees the other
      const res = await this.backend.txn([unchanged(idx, ik), unchanged(phys, pk)], [{ type: 'put', key: pk, value: marked }]);
      return res.succeeded ? marked : RETRY;
    });
  }

  deletePhysicalIndex(tenant: TenantId, physical: PhysicalIndexId): Promise<boolean> {
    return this.retry(`physical index '${physical}'`, async () => {
      const pk = K.physical(tenant, physical);
      const phys = await this.backend.get(pk);
      if (!phys) return false;
      const rec = phys.value as PhysicalIndexRecord;
      if (rec.status !== 'deleting') fail('conflict', { reason: `Physical index '${physical}' is not being deleted; mark it first.` });
      const ik = K.index(tenant, rec.index_id);
      const idx = await this.backend.get(ik);
      if (idx && (idx.value as IndexRecord).physical_index_id === physical) fail('conflict', { reason: liveOf(physical, rec.index_id) });
      const res = await this.backend.txn([unchanged(idx, ik), unchanged(phys, pk)], [{ type: 'delete', key: pk }]);
      return res.succeeded ? true : RETRY;
    });
  }

  async getPhysicalIndex(tenant: TenantId, physical: PhysicalIndexId): Promise<PhysicalIndexRecord | undefined> {
    return (await this.backend.get(K.physical(tenant, physical)))?.value as PhysicalIndexRecord | undefined;
  }

  async listPhysicalIndexes(tenant: TenantId, index: IndexId): Promise<PhysicalIndexRecord[]> {
    return (await this.backend.range(K.physicals(tenant)))
      .map((kv) => kv.value as PhysicalIndexRecord)
      .filter((p) => p.index_id === index)
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.physical_index_id.localeCompare(b.physical_index_id));
  }

  /**
   * One transaction: it commits only if neither the logical record nor the target physical record
   * changed since they were read and the alias still named `expected`. `next` must be a physical
   * index allocated for this logical index (index_not_found / conflict otherwise).
   */
  swapAlias(tenant: TenantId, index: IndexId, expected: PhysicalIndexId, next: PhysicalIndexId): Promise<boolean> {
    return this.retry(`alias of '${index}'`, async () => {
      const ik = K.index(tenant, index);
      const pk = K.physical(tenant, next);
      const [idx, phys] = await Promise.all([this.backend.get(ik), this.backend.get(pk)]);
      if (!idx) fail('index_not_found', { index, tenant });
      const rec = idx.value as IndexRecord;
      if (rec.physical_index_id !== expected) return false;
      if (!phys) fail('index_not_found', { index: next, tenant });
      if ((phys.value as PhysicalIndexRecord).index_id !== index) {
        fail('conflict', { reason: `Physical index '${next}' was allocated for another index than '${index}'.` });
      }
      if (expected === next) return true;
      if ((phys.value as PhysicalIndexRecord).status === 'deleting') fail('conflict', { reason: `Physical index '${next}' is being deleted; it cannot be promoted.` });
      const updated: IndexRecord = { ...rec, physical_index_id: next, updated_at: new Date().toISOString() };
      const res = await this.backend.txn([unchanged(idx, ik), unchanged(phys, pk)], [{ type: 'put', key: ik, value: updated }]);
      return res.succeeded ? true : RETRY;
    });
  }

  // --- jobs

  putJob(rec: JobRecord): Promise<void> {
    const key = K.job(rec.tenant_id, rec.job_id);
    return this.retry(`job '${rec.job_id}'`, async () => {
      const cur = await this.backend.get(key);
      const ops: TxnOp[] = [{ type: 'put', key, value: rec }, ...jobOrderOps(cur?.value as JobRecord | undefined, rec)];
      const res = await this.backend.txn([unchanged(cur, key)], ops);
      return res.succeeded ? undefined : RETRY;
    });
  }

  async getJob(tenant: TenantId, job: JobId): Promise<JobRecord | undefined> {
    return (await this.backend.get(K.job(tenant, job)))?.value as JobRecord | undefined;
  }

  /** Newest first by created_at; one range read over the order index plus one read per job. */
  async listJobs(tenant: TenantId, kind: JobKind | null, limit: number): Promise<JobRecord[]> {
    if (limit <= 0) return [];
    const refs = await this.backend.range(K.jobOrders(tenant, kind ?? 'all'), { reverse: true, limit });
    const ids = refs.map((kv) => unseg(kv.key.slice(kv.key.lastIndexOf('/') + 1)) as JobId);
    const recs = await Promise.all(ids.map((id) => this.getJob(tenant, id)));
    return recs.filter((r): r is JobRecord => r !== undefined);
  }

  updateJob(tenant: TenantId, job: JobId, update: (rec: JobRecord) => JobRecord): Promise<JobRecord> {
    const key = K.job(tenant, job);
    return this.retry(`job '${job}'`, async () => {
      const cur = await this.backend.get(key);
      if (!cur) fail('job_not_found', { job });
      const prev = cur.value as JobRecord;
      const next = update(cur.value as JobRecord);
      if (next.tenant_id !== tenant || next.job_id !== job) throw new Error('updateJob: the update must not change tenant_id or job_id');
      const res = await this.backend.txn([unchanged(cur, key)], [{ type: 'put', key, value: next }, ...jobOrderOps(prev, next)]);
      return res.succeeded ? next : RETRY;
    });
  }

  deleteJob(tenant: TenantId, job: JobId): Promise<boolean> {
    const key = K.job(tenant, job);
    return this.retry(`job '${job}'`, async () => {
      const cur = await this.backend.get(key);
      if (!cur) return false;
      const res = await this.backend.txn([unchanged(cur, key)], [{ type: 'delete', key }, ...jobOrderOps(cur.value as JobRecord, undefined)]);
      return res.succeeded ? true : RETRY;
    });
  }

  /** Null when another holder has it. The lease is kept alive until revoked or this coordinator closes. */
  async acquireJobLease(job: JobId, owner: NodeId, ttlSeconds: number): Promise<HeldLease | null> {
    const key = K.jobLease(job);
    const lease = await this.backend.grantLease(ttlSeconds);
    let res: TxnResult;
    try {
      const entry: JobLeaseEntry = { owner, acquired_at: new Date().toISOString() };
      res = await this.backend.txn([{ key, absent: true }], [{ type: 'put', key, value: entry, lease: lease.id }]);
    } catch (err) {
      await lease.revoke().catch(() => undefined);
      throw err;
    }
    if (!res.succeeded) {
      await lease.revoke();
      return null;
    }
    return this.hold(lease);
  }

  async jobLeaseHolder(job: JobId): Promise<NodeId | null> {
    const kv = await this.backend.get(K.jobLease(job));
    return kv ? (kv.value as JobLeaseEntry).owner : null;
  }

  health(): CoordinationHealth {
    return this.backend.health();
  }

  // --- membership and placement

  /** members/{node} under a new lease; shard nodes are also remembered for good under nodes/{node}. */
  async register(member: MemberRecord, ttlSeconds: number): Promise<HeldLease> {
    const lease = await this.backend.grantLease(ttlSeconds);
    const ops: TxnOp[] = [{ type: 'put', key: K.member(member.node_id), value: member, lease: lease.id }];
    if (member.roles.includes('shard')) ops.push({ type: 'put', key: K.node(member.node_id), value: member });
    try {
      await this.backend.txn([], ops);
    } catch (err) {
      await lease.revoke().catch(() => undefined);
      throw err;
    }
    return this.hold(lease);
  }

  async listMembers(): Promise<MemberRecord[]> {
    return (await this.backend.range(K.members)).map((kv) => kv.value as MemberRecord);
  }

  async listKnownShardNodes(): Promise<MemberRecord[]> {
    return (await this.backend.range(K.nodes)).map((kv) => kv.value as MemberRecord);
  }

  async getPlacement(): Promise<PlacementTable | undefined> {
    return (await this.backend.get(K.placement))?.value as PlacementTable | undefined;
  }

  putPlacement(table: PlacementTable, expectedEpoch: number): Promise<boolean> {
    if (table.epoch <= expectedEpoch) throw new Error(`putPlacement: epoch ${table.epoch} must exceed the expected ${expectedEpoch}`);
    if (table.nodes.length !== table.partitions) throw new Error('putPlacement: one node list per partition');
    return this.retry('placement', async () => {
      const cur = await this.backend.get(K.placement);
      const epoch = cur ? (cur.value as PlacementTable).epoch : 0;
      if (epoch !== expectedEpoch) return false;
      const res = await this.backend.txn([unchanged(cur, K.placement)], [{ type: 'put', key: K.placement, value: table }]);
      return res.succeeded ? true : RETRY;
    });
  }

  /**
   * Campaigns in the background; `onLeader` runs each time this node is elected. A candidacy whose
   * lease is lost is renewed, so `onLeader` can run again later. A deposed leader is not told:
   * work done as leader must be guarded by compare-and-swap (putPlacement is).
   */
  async campaign(node: NodeId, onLeader: () => void): Promise<Unsubscribe> {
    this.assertOpen();
    let stopped = false;
    let current: BackendCampaign | undefined;
    let timer: NodeJS.Timeout | undefined;
    const again = () => {
      timer = setTimeout(run, 1_000);
      timer.unref();
    };
    const run = () => {
      if (stopped || this.closed) return;
      try {
        current = this.backend.campaign(this.electionName, node, {
          elected: () => {
            if (stopped) return;
            this.log.info('elected coordinator leader', { node });
            onLeader();
          },
          lost: (err) => {
            if (stopped) return;
            this.log.warn('coordinator candidacy lost; campaigning again', { node, err });
            again();
          },
        });
      } catch (err) {
        // only reachable from a retry timer racing close(); the first call throws to the caller
        if (!current) throw err;
        this.log.warn('could not campaign again', { node, err });
      }
    };
    run();
    return this.subscription(async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await current?.resign();
    });
  }

  // --- watches

  async watchMeta(cb: (e: MetaEvent) => void): Promise<Unsubscribe> {
    this.assertOpen();
    const unwatch = await this.backend.watch('meta/', (e) => {
      const ev = toMetaEvent(e);
      if (ev) cb(ev);
    });
    // Routers cache physical records: one deleted (or marked) must leave every router's cache,
    // or a write through a stale entry would put data back into parts already dropped.
    let unwatchPhysical: Unwatch;
    try {
      unwatchPhysical = await this.backend.watch('physical/', (e) => {
        const ev = toPhysicalEvent(e);
        if (ev) cb(ev);
      });
    } catch (err) {
      await unwatch();
      throw err;
    }
    return this.subscription(async () => {
      await Promise.all([unwatch(), unwatchPhysical()]);
    });
  }

  /** Delivers the current table (if any), then every newer one; epochs only ever increase. */
  async watchPlacement(cb: (t: PlacementTable) => void): Promise<Unsubscribe> {
    this.assertOpen();
    let last = 0;
    let active = true;
    const deliver = (t: PlacementTable | undefined) => {
      if (!active || !t || t.epoch <= last) return;
      last = t.epoch;
      try {
        cb(t);
      } catch (err) {
        this.log.error('placement watcher failed', { err });
      }
    };
    const unwatch = await this.backend.watch(K.placement, (e) => {
      if (e.key === K.placement && e.type === 'put') deliver(e.value as PlacementTable);
    });
    try {
      deliver(await this.getPlacement());
    } catch (err) {
      await unwatch();
      throw err;
    }
    return this.subscription(async () => {
      active = false;
      await unwatch();
    });
  }

  /** Delivers the current member list, then the full list again after every change. */
  async watchMembers(cb: (members: MemberRecord[]) => void): Promise<Unsubscribe> {
    this.assertOpen();
    let active = true;
    let running: Promise<void> | undefined;
    let dirty = false;
    let lastSeen = '';
    let retry: NodeJS.Timeout | undefined;
    // re-read the whole list rather than patch a copy: a read is never older than the event
    // that triggered it, so the last delivery is always current; runs are serialized
    const refresh = (): Promise<void> => {
      if (running) {
        dirty = true;
        return running;
      }
      running = (async () => {
        try {
          do {
            dirty = false;
            const list = await this.listMembers();
            if (!active) return;
            const sig = JSON.stringify(list);
            if (sig !== lastSeen) {
              lastSeen = sig;
              try {
                cb(list);
              } catch (err) {
                this.log.error('member watcher failed', { err });
              }
            }
          } while (dirty && active);
        } catch (err) {
          if (!active) return;
          this.log.warn('member list refresh failed; retrying', { err });
          retry = setTimeout(() => void refresh(), 1_000);
          retry.unref();
        } finally {
          running = undefined;
        }
      })();
      return running;
    };
    const unwatch = await this.backend.watch(K.members, () => void refresh());
    await refresh();
    return this.subscription(async () => {
      active = false;
      if (retry) clearTimeout(retry);
      await unwatch();
    });
  }

  /** Ends every watch and campaign, revokes the leases this coordinator granted, closes an owned backend. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const unsub of [...this.subscriptions]) unsub();
    await Promise.all([...this.ending]);
    await Promise.all(
      [...this.leases].map((l) => withTimeout(l.revoke(), 2_000).catch((err: unknown) => this.log.warn('lease revoke on close failed', { lease: l.id, err }))),
    );
    if (this.ownsBackend) await this.backend.close();
  }

  // --- internals

  private assertOpen(): void {
    if (this.closed) throw new Error('the coordinator is closed');
  }

  /** Runs `attempt` until it returns something other than RETRY (a lost compare-and-swap). */
  private async retry<T>(what: string, attempt: () => Promise<T | typeof RETRY>): Promise<T> {
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const r = await attempt();
      if (r !== RETRY) return r;
      // contention: spread the retries out so the writers stop colliding
      if (i >= 2) await sleep(Math.random() * Math.min(50, 2 ** i));
    }
    fail('conflict', { reason: `${what} kept changing under concurrent writers; retry the request` });
  }

  /** Read-modify-write of one record; `update` may run more than once and must not have side effects. */
  private modify<T>(what: string, key: string, notFound: () => never, update: (rec: T) => T, sameIdentity: (next: T) => boolean): Promise<T> {
    return this.retry(what, async () => {
      const cur = await this.backend.get(key);
      if (!cur) notFound();
      const next = update(cur.value as T);
      if (!sameIdentity(next)) throw new Error(`update of ${what} must not change its ids`);
      const res = await this.backend.txn([{ key, modRevision: cur.modRevision }], [{ type: 'put', key, value: next }]);
      return res.succeeded ? next : RETRY;
    });
  }

  private hold(lease: BackendLease): HeldLease {
    let held = true;
    const drop = () => {
      held = false;
      this.leases.delete(handle);
    };
    const handle: HeldLease = {
      id: lease.id,
      lost: lease.lost,
      revoke: async () => {
        if (held) drop();
        await lease.revoke();
      },
      release: () => {
        if (held) drop();
        lease.release();
      },
    };
    this.leases.add(handle);
    void lease.lost.then(() => {
      if (held) drop();
    });
    return handle;
  }

  private subscription(end: Unwatch): Unsubscribe {
    let done = false;
    const unsub: Unsubscribe = () => {
      if (done) return;
      done = true;
      this.subscriptions.delete(unsub);
      const p = end().catch((err: unknown) => this.log.warn('unsubscribe failed', { err }));
      this.ending.add(p);
      void p.finally(() => this.ending.delete(p));
    };
    this.subscriptions.add(unsub);
    return unsub;
  }
}
