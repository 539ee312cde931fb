// The control plane's published interface. Routers and shards depend on this file only; the
// two backends (etcd for clusters, embedded for the single node) implement the same
// CoordinationBackend and share all metadata logic in MetadataCoordinator.
import type { PlanName, PlanLimits } from '../node/runtime/config.js';
import type { IndexId, JobId, KeyId, NodeId, PhysicalIndexId, TenantId } from '../node/runtime/ids.js';
import type { CoordinationHealth } from './coordination-backend.js';

export type TenantMode = 'hosted' | 'proxy';

export interface LimitOverrides {
  max_indexes?: number;
  max_documents_per_index?: number;
  max_documents_total?: number;
  upload_limit_bytes?: number;
}

export interface TenantRecord {
  tenant_id: TenantId;
  name: string;
  plan: PlanName;
  mode: TenantMode;
  /** tenant override of the upload limit (null = plan value) */
  upload_limit_bytes: number | null;
  limits: LimitOverrides;
  /** connected search API of proxy mode */
  search_api: { url: string; api_key?: string; headers?: Record<string, string> } | null;
  created_at: string;
}

export type KeyKind = 'public' | 'private' | 'admin';

export interface KeyRecord {
  id: KeyId;
  kind: KeyKind;
  name: string;
  /** null for admin keys, which act for every tenant */
  tenant_id: TenantId | null;
  /** sha256 hex of the secret; the secret itself is never stored */
  hash: string;
  created_at: string;
}

export type IndexStatus = 'ready' | 'building' | 'deleting';

/** A logical index: what tenants name in requests. It points at one physical index (alias). */
export interface IndexRecord {
  tenant_id: TenantId;
  index_id: IndexId;
  name: string;
  physical_index_id: PhysicalIndexId;
  status: IndexStatus;
  created_at: string;
  updated_at: string;
  /** the index schema, stored as sent (the `predict` object validated by the router) */
  schema: Record<string, unknown>;
  merchandising: Record<string, unknown>;
}

/** A physical index: the unit of storage, split into `parts` parts placed on partitions. */
export interface PhysicalIndexRecord {
  tenant_id: TenantId;
  physical_index_id: PhysicalIndexId;
  /** logical index this physical index was allocated for */
  index_id: IndexId;
  parts: number;
  created_at: string;
  /**
   * Set (once, never cleared) when its deletion began: from then on no promotion may point the
   * alias at it and nothing may write into it; the record goes once its data is dropped.
   */
  status?: 'deleting';
}

/**
 * The physical indexes one logical index may own at once, the live one included: every staging
 * build keeps its data until it is deleted, so without a cap a rebuild loop would keep them all.
 */
export const MAX_PHYSICAL_INDEXES_PER_INDEX = 16;

/** What `allocatePhysicalIndex` did: written, or refused because the index already owns `count` (at or past the cap). */
export type AllocateResult = { allocated: true } | { allocated: false; count: number };

export type JobKind = 'ingestion' | 'export' | 'sync';
export type JobStatus = 'queued' | 'processing' | 'succeeded' | 'failed' | 'canceled';

export interface JobRecord {
  job_id: JobId;
  kind: JobKind;
  tenant_id: TenantId;
  index_id: IndexId;
  status: JobStatus;
  source_type: string | null;
  source_filename: string | null;
  total: number;
  processed: number;
  failed: number;
  attempts: number;
  error: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** free-form job state (file location, resume cursor, per-row errors, download url) */
  state: Record<string, unknown>;
}

export interface MemberRecord {
  node_id: NodeId;
  /** roles this process runs */
  roles: ('router' | 'shard' | 'coordinator')[];
  /** host:port of the gRPC server (shard nodes) */
  grpc_address: string | null;
  /** host:port of the HTTP server (routers) */
  http_address: string | null;
  /** host:port of the operations endpoint (/metrics, /healthz, /readyz) of a process without the router role, when it serves one */
  metrics_address?: string | null;
  started_at: string;
}

/**
 * A replica change in progress: `to` receives a snapshot of the partition from its primary and
 * then every write, and joins the replica list (in the place of `replaces`, or appended when null)
 * when it has caught up. See coordinator/placement-planner.ts.
 */
export interface PartitionMove {
  partition: number;
  to: NodeId;
  replaces: NodeId | null;
  started_at: string;
}

/** Partition -> nodes. `nodes[p][0]` is the primary of partition p, the rest followers. */
export interface PlacementTable {
  epoch: number;
  partitions: number;
  nodes: NodeId[][];
  /** replica changes in progress (absent in tables written before moves existed) */
  moves?: PartitionMove[];
}

// Moves are part of the table's contract: the planner starts them, the partition's primary
// completes them, and both sides must agree on what completion means.

/** Replica list of `p` once `move` completes: `to` takes the place of `replaces`, or is appended. */
export function applyMove(list: readonly NodeId[], move: Pick<PartitionMove, 'to' | 'replaces'>): NodeId[] {
  if (list.includes(move.to)) return list.filter((n) => n !== move.replaces);
  const at = move.replaces === null ? -1 : list.indexOf(move.replaces);
  return at < 0 ? [...list, move.to] : list.map((n, i) => (i === at ? move.to : n));
}

/**
 * The table after the move of `partition` to `to` has caught up: the replica list changes, the
 * move leaves the table, the epoch grows. Undefined when that move is no longer in `table` (the
 * planner cancelled it: its target died, or the partition changed under it).
 */
export function completeMove(table: PlacementTable, partition: number, to: NodeId): PlacementTable | undefined {
  const moves = table.moves ?? [];
  const move = moves.find((m) => m.partition === partition && m.to === to);
  if (!move) return undefined;
  const nodes = table.nodes.map((list, p) => (p === partition ? applyMove(list, move) : [...list]));
  return { ...table, epoch: table.epoch + 1, nodes, moves: moves.filter((m) => m !== move) };
}

export type Unsubscribe = () => void;

export type MetaEvent =
  | { type: 'index'; tenant_id: TenantId; index_id: IndexId; record: IndexRecord | null }
  | { type: 'tenant'; tenant_id: TenantId; record: TenantRecord | null }
  | { type: 'key'; hash: string; record: KeyRecord | null }
  | { type: 'job'; tenant_id: TenantId; job_id: JobId; record: JobRecord | null }
  /** ordered among themselves, not against the other kinds (physical records live outside meta/) */
  | { type: 'physical'; tenant_id: TenantId; physical_index_id: PhysicalIndexId; record: PhysicalIndexRecord | null };

export interface Lease {
  readonly id: string;
  /** resolves when the lease is lost (expired or revoked) */
  readonly lost: Promise<void>;
  revoke(): Promise<void>;
}

export interface Coordinator {
  // tenants
  createTenant(rec: TenantRecord): Promise<void>; // tenant_exists on conflict
  getTenant(id: TenantId): Promise<TenantRecord | undefined>;
  listTenants(): Promise<TenantRecord[]>;
  /** read-modify-write with compare-and-swap retries */
  updateTenant(id: TenantId, update: (rec: TenantRecord) => TenantRecord): Promise<TenantRecord>;

  // keys
  putKey(rec: KeyRecord): Promise<void>;
  getKeyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(tenant: TenantId | null): Promise<KeyRecord[]>;
  deleteKey(id: KeyId): Promise<boolean>;

  // indexes and aliases
  /** creates the logical index and its first physical index in one transaction; index_exists on conflict */
  createIndex(rec: IndexRecord, physical: PhysicalIndexRecord): Promise<void>;
  getIndex(tenant: TenantId, index: IndexId): Promise<IndexRecord | undefined>;
  listIndexes(tenant: TenantId): Promise<IndexRecord[]>;
  updateIndex(tenant: TenantId, index: IndexId, update: (rec: IndexRecord) => IndexRecord): Promise<IndexRecord>;
  /** removes the logical index and returns every physical index it owned (for data deletion) */
  deleteIndex(tenant: TenantId, index: IndexId): Promise<PhysicalIndexRecord[]>;
  putPhysicalIndex(rec: PhysicalIndexRecord): Promise<void>;
  /**
   * Writes a new physical index for its logical index unless that one already owns `max`
   * (refused, nothing written). index_not_found when the logical index is gone, conflict while
   * it is being deleted. Allocations racing past the cap on several routers are undone, the
   * latest committed first, so at most `max` remain once they have all returned.
   */
  allocatePhysicalIndex(rec: PhysicalIndexRecord, max: number): Promise<AllocateResult>;
  /**
   * First step of deleting a physical index: marks it `deleting`, in one transaction that commits
   * only while the alias of its logical index names another physical index (conflict when it
   * names this one). A promotion racing it either commits first (and the mark is refused) or
   * finds the mark and is refused. Idempotent; the marked record, undefined when there is none.
   */
  markPhysicalIndexDeleting(tenant: TenantId, physical: PhysicalIndexId): Promise<PhysicalIndexRecord | undefined>;
  /**
   * Last step: removes the record of a physical index marked `deleting` (its data dropped first),
   * again only while the alias names another one. False when there was no record.
   */
  deletePhysicalIndex(tenant: TenantId, physical: PhysicalIndexId): Promise<boolean>;
  getPhysicalIndex(tenant: TenantId, physical: PhysicalIndexId): Promise<PhysicalIndexRecord | undefined>;
  listPhysicalIndexes(tenant: TenantId, index: IndexId): Promise<PhysicalIndexRecord[]>;
  /** atomic alias swap: succeeds only if the alias still points at `expected`; conflict when `next` is being deleted */
  swapAlias(tenant: TenantId, index: IndexId, expected: PhysicalIndexId, next: PhysicalIndexId): Promise<boolean>;

  // jobs
  putJob(rec: JobRecord): Promise<void>;
  getJob(tenant: TenantId, job: JobId): Promise<JobRecord | undefined>;
  /** newest first */
  listJobs(tenant: TenantId, kind: JobKind | null, limit: number): Promise<JobRecord[]>;
  updateJob(tenant: TenantId, job: JobId, update: (rec: JobRecord) => JobRecord): Promise<JobRecord>;
  deleteJob(tenant: TenantId, job: JobId): Promise<boolean>;
  /** job lease: held by the node running the job; lapses when that node dies */
  acquireJobLease(job: JobId, owner: NodeId, ttlSeconds: number): Promise<Lease | null>;
  jobLeaseHolder(job: JobId): Promise<NodeId | null>;

  // membership and placement
  register(member: MemberRecord, ttlSeconds: number): Promise<Lease>;
  listMembers(): Promise<MemberRecord[]>;
  /** every shard node that ever joined (placement is sticky to them) */
  listKnownShardNodes(): Promise<MemberRecord[]>;
  getPlacement(): Promise<PlacementTable | undefined>;
  /** compare-and-swap on the epoch: writes only if the stored epoch is `expectedEpoch` (0 = none yet) */
  putPlacement(table: PlacementTable, expectedEpoch: number): Promise<boolean>;
  /** runs `onLeader` while this node is the coordinator leader */
  campaign(node: NodeId, onLeader: () => void): Promise<Unsubscribe>;

  /** whether this process reaches the coordination store (etcd), from its own latest calls */
  health(): CoordinationHealth;

  // watches (metadata changes and placement), delivered in commit order (physical-index events
  // in commit order among themselves)
  watchMeta(cb: (e: MetaEvent) => void): Promise<Unsubscribe>;
  watchPlacement(cb: (t: PlacementTable) => void): Promise<Unsubscribe>;
  watchMembers(cb: (members: MemberRecord[]) => void): Promise<Unsubscribe>;

  close(): Promise<void>;
}

export type { PlanName, PlanLimits, CoordinationHealth };
