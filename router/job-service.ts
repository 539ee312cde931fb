// The router's side of ingestion and export jobs: creating job records, storing their files on
// a shard node and asking the index's sequencer (primary of part 0 of the physical index) to run
// them; reading jobs with stuck detection; cancel, delete and requeue; the JSON views; and the
// active-job tracker that makes POST .../documents wait for running ingestion jobs of its index.
//
// Stuck jobs: a `processing` job whose lease has no holder lost its runner (the node died): it
// is requeued and started again on the sequencer, resuming after its last finished batch, until
// it has been started `jobMaxAttempts` times since it was last queued by a person; then it fails
// with the reason. A `queued` job nobody picked up for a while (its sequencer was down) is
// started again. A `processing` job whose holder is alive but made no progress for
// `jobStuckAfterMs` is asked to stop and is requeued the same way.
import { randomBytes } from 'node:crypto';
import type { Coordinator, JobKind, JobRecord, MetaEvent, PhysicalIndexRecord } from '../coordinator/coordinator.js';
import type * as pb from '../proto/gen/shard.js';
import type { Config } from '../node/runtime/config.js';
import { fail, SuggestError } from '../node/runtime/errors.js';
import { IndexId, JobId, PhysicalIndexId, type NodeId, type TenantId } from '../node/runtime/ids.js';
import {
  exportState,
  ingestionState,
  type BlobLocation,
  type DocumentMapping,
  type ExportJobState,
  type IngestionJobState,
  type JobRun,
  type UploadFormat,
} from '../node/runtime/job-state.js';
import type { Logger } from '../node/runtime/log.js';
import { copyToNodes, deleteFromHolders } from '../node/runtime/blob-copies.js';
import type { ShardApi, ShardDirectory } from '../node/runtime/shard-api.js';
import type { DataPlane, ResolvedIndex } from './data-plane.js';
import type { Signer } from './signing.js';
import type { TenantContext } from './tenant-context.js';

const ACTIVE = new Set(['queued', 'processing']);
const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);
/** a queued job is started again when nobody took it up for this long */
const QUEUED_GRACE_MS = 5_000;
const POLL_MS = 1_000;

export interface IngestionInput {
  jobId: JobId;
  blob: BlobLocation;
  format: UploadFormat;
  formatSource: string;
  mapping: DocumentMapping;
  encoding: string | null;
  sourceType: string;
  sourceFilename: string | null;
  estimate: number;
}

export interface StartResponse {
  job_id: string;
  index_id: string;
  status: string;
  run: JobRun;
  job: ReturnType<JobService['view']>;
}

export const newJobId = (kind: JobKind): JobId => JobId(`${kind === 'export' ? 'exp' : 'ing'}_${randomBytes(10).toString('hex')}`);
export const newBlobId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

export class JobService {
  /** tenant -> (physical index -> active ingestion job ids) */
  private readonly active = new Map<string, Map<string, Set<string>>>();
  private readonly loading = new Map<string, Promise<void>>();
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly coordinator: Coordinator,
    private readonly data: DataPlane,
    private readonly shards: ShardDirectory,
    private readonly signer: Signer,
    private readonly config: Config,
    private readonly log: Logger,
  ) {}

  // ------------------------------------------------------------------ shard nodes

  /** The sequencer of a physical index: the primary of its part 0. */
  async sequencer(tenant: TenantId, physical: PhysicalIndexRecord): Promise<{ node: NodeId; api: ShardApi }> {
    return this.data.onPart(tenant, physical, 0, async (api, _ref, node) => ({ node, api }));
  }

  /**
   * Where a presigned upload is kept: the primary of a partition chosen by hashing the upload id
   * (any router finds it; after a failover, the promoted follower, which holds its copy).
   */
  async uploadHome(tenant: TenantId, uploadId: string): Promise<{ node: NodeId; api: ShardApi; place: PhysicalIndexRecord }> {
    const place: PhysicalIndexRecord = { tenant_id: tenant, physical_index_id: PhysicalIndexId(`~upload/${uploadId}`), index_id: IndexId('~upload'), parts: 1, created_at: '' };
    return this.data.onPart(tenant, place, 0, async (api, _ref, node) => ({ node, api, place }));
  }

  /**
   * Copies a file `from` stored to the live followers of the partition that placed it (part 0 of
   * `place`: the index's sequencer partition, or an upload's), so that it outlives that node;
   * the nodes that took a copy (node/runtime/blob-copies.ts).
   */
  copyBlob(tenant: TenantId, blobId: string, from: { node: NodeId; api: ShardApi }, place: PhysicalIndexRecord): Promise<string[]> {
    return copyToNodes((n) => this.node(n), from, tenant, blobId, this.data.followers(tenant, place, 0), (node, err) =>
      this.log.warn('could not copy a job file to a follower; it has one copy fewer', { tenant, blob: blobId, node, err }),
    );
  }

  /** Removes a job's file from every node holding it; a node that cannot be reached leaves it to its retention sweep. */
  async deleteBlob(tenant: TenantId, loc: BlobLocation | null | undefined): Promise<void> {
    if (!loc) return;
    for (const { node, err } of await deleteFromHolders((n) => this.node(n), tenant, loc)) this.log.warn('could not remove a job file', { tenant, blob: loc.id, node, err });
  }

  /** The shard API of a node by id (`unavailable` when it is not a live member). */
  node(node: string): ShardApi {
    return this.shards.client(node as NodeId);
  }

  // ------------------------------------------------------------------ creation and start

  async createIngestion(t: TenantContext, target: ResolvedIndex, input: IngestionInput): Promise<JobRecord> {
    const now = new Date().toISOString();
    const [account, indexCount] = await Promise.all([this.accountCount(t.id), this.countDocuments(t.id, target.physical)]);
    const state: IngestionJobState = {
      physical_index_id: target.physical.physical_index_id,
      parts: target.physical.parts,
      // the record estimate is a scan of the bytes; a large file runs in the background whatever it says
      run: input.estimate <= this.config.backgroundJobThreshold && input.blob.size <= this.config.maxJsonBody ? 'immediate' : 'background',
      rev: 1,
      heartbeat_at: null,
      attempt_base: 0,
      format: input.format,
      format_source: input.formatSource,
      mapping: input.mapping,
      encoding: input.encoding,
      blob: input.blob,
      limits: { max_documents_per_index: t.limits.max_documents_per_index, max_documents_total: t.limits.max_documents_total },
      account_other: Math.max(0, account - indexCount),
      cursor: 0,
      bytes_total: input.blob.size,
      bytes_done: 0,
      errors: [],
    };
    const rec = queuedJob(input.jobId, 'ingestion', t, target, now, state, { source_type: input.sourceType, source_filename: input.sourceFilename, total: 0 });
    await this.coordinator.putJob(rec);
    this.track(rec);
    return rec;
  }

  async createExport(t: TenantContext, target: ResolvedIndex, format: 'json' | 'jsonl', documents: number): Promise<JobRecord> {
    const now = new Date().toISOString();
    const state: ExportJobState = {
      physical_index_id: target.physical.physical_index_id,
      parts: target.physical.parts,
      run: documents <= this.config.backgroundJobThreshold ? 'immediate' : 'background',
      rev: 1,
      heartbeat_at: null,
      attempt_base: 0,
      format,
      file: null,
      expires_at: null,
    };
    const rec = queuedJob(newJobId('export'), 'export', t, target, now, state, { source_type: 'api', source_filename: null, total: documents });
    await this.coordinator.putJob(rec);
    return rec;
  }

  /** Starts a new job: waits for it when it is small ("immediate"), otherwise returns at once. */
  async start(rec: JobRecord): Promise<StartResponse> {
    const run = (rec.state.run as JobRun | undefined) ?? 'background';
    try {
      await this.kick(rec, run === 'immediate');
    } catch (err) {
      // the job is recorded: it is picked up when the sequencer is back (stuck handling, start-up scan)
      if (!(err instanceof SuggestError && (err.code === 'unavailable' || err.code === 'wrong_owner'))) throw err;
      this.log.warn('job recorded but not started', { job: rec.job_id, err });
    }
    const now = (await this.coordinator.getJob(rec.tenant_id, rec.job_id)) ?? rec;
    return { job_id: now.job_id, index_id: now.index_id, status: now.status, run, job: this.view(now) };
  }

  /** Asks the job's sequencer to run it (idempotent: a running job is left alone). */
  async kick(rec: JobRecord, wait = false): Promise<pb.JobResponse> {
    const physical = await this.data.physical(rec.tenant_id, rec.state.physical_index_id as string);
    if (!physical) {
      await this.coordinator
        .updateJob(rec.tenant_id, rec.job_id, (r) => (ACTIVE.has(r.status) ? { ...r, status: 'failed', error: 'The index of this job was deleted.', finished_at: new Date().toISOString(), state: bump(r.state) } : r))
        .catch(() => undefined);
      return { accepted: false, status: 'failed' };
    }
    const { api } = await this.sequencer(rec.tenant_id, physical);
    const started = api.startJob({ tenantId: rec.tenant_id, jobId: rec.job_id, wait, requeue: false });
    if (!wait) return started;
    // the job wrote on shard nodes, not through this router: its answer to the caller must not
    // come before this router's caches forget the index (the feed may still be carrying it)
    return started.finally(() => this.shards.announceChange?.(rec.tenant_id, physical.physical_index_id));
  }

  /**
   * Documents of a physical index, from one-document list pages: IndexStats would also build the
   * search engine of every part it asks about, which an ingestion or an export does not need.
   */
  async countDocuments(tenant: TenantId, physical: PhysicalIndexRecord): Promise<number> {
    const totals = await this.data.onAllParts(tenant, physical, async (api, ref) => (await api.listDocuments({ ref, afterId: '', limit: 1, offset: 0 })).total);
    return totals.reduce((a, b) => a + b, 0);
  }

  /** Documents of the tenant across every physical index (the account limit of a job). */
  private async accountCount(tenant: TenantId): Promise<number> {
    const indexes = await this.coordinator.listIndexes(tenant);
    const counts = await Promise.all(
      indexes.map(async (ix) => {
        const physicals = await this.coordinator.listPhysicalIndexes(tenant, ix.index_id);
        return (await Promise.all(physicals.map((p) => this.countDocuments(tenant, p)))).reduce((a, b) => a + b, 0);
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  // ------------------------------------------------------------------ reading, stuck detection

  /** The job of this tenant and kind, after stuck handling; 404 otherwise. */
  async get(tenant: TenantId, jobId: string, kind: JobKind): Promise<JobRecord> {
    const rec = await this.coordinator.getJob(tenant, JobId(jobId));
    if (!rec || rec.kind !== kind) return fail('job_not_found', { job: jobId });
    return this.inspect(rec);
  }

  /** Detects a stuck job and handles it; returns the record as it is afterwards. */
  async inspect(rec: JobRecord): Promise<JobRecord> {
    if (rec.status === 'processing') {
      const holder = await this.coordinator.jobLeaseHolder(rec.job_id);
      if (holder === null) return this.recover(rec, 'the node running it stopped');
      const beat = Date.parse((rec.state.heartbeat_at as string | null) ?? rec.started_at ?? rec.created_at);
      if (Date.now() - beat > this.config.jobStuckAfterMs) {
        // alive but not moving: ask its runner to stop and leave it queued, then start it again
        this.log.warn('job made no progress; asking its runner to stop', { job: rec.job_id, holder });
        await Promise.resolve()
          .then(() => this.node(holder).cancelJob({ tenantId: rec.tenant_id, jobId: rec.job_id, wait: false, requeue: true }))
          .catch((err: unknown) => this.log.warn('could not reach the runner of a stuck job', { job: rec.job_id, err }));
      }
      return rec;
    }
    if (rec.status === 'queued') {
      const since = Date.parse((rec.state.heartbeat_at as string | null) ?? rec.created_at);
      const requeued = typeof rec.state.requeue_reason === 'string';
      if ((requeued || Date.now() - since > QUEUED_GRACE_MS) && (await this.coordinator.jobLeaseHolder(rec.job_id)) === null) {
        await this.kick(rec).catch((err: unknown) => this.log.warn('could not start a queued job', { job: rec.job_id, err }));
        return (await this.coordinator.getJob(rec.tenant_id, rec.job_id)) ?? rec;
      }
    }
    return rec;
  }

  private async recover(rec: JobRecord, reason: string): Promise<JobRecord> {
    const max = this.config.jobMaxAttempts;
    let next: JobRecord;
    try {
      next = await this.coordinator.updateJob(rec.tenant_id, rec.job_id, (r) => {
        if (r.status !== 'processing') return r;
        const base = (r.state.attempt_base as number | undefined) ?? 0;
        if (r.attempts - base >= max) {
          return { ...r, status: 'failed', error: `The job stopped ${r.attempts - base} times (${reason}); requeue it to try again.`, finished_at: new Date().toISOString(), state: { ...bump(r.state), error_code: 'stuck' } };
        }
        return { ...r, status: 'queued', state: { ...bump(r.state), requeue_reason: `stuck: ${reason}`, heartbeat_at: new Date().toISOString() } };
      });
    } catch (err) {
      if (err instanceof SuggestError && err.code === 'job_not_found') return fail('job_not_found', { job: rec.job_id });
      throw err;
    }
    if (next.status === 'queued') {
      this.log.warn('stuck job requeued', { job: rec.job_id, attempts: next.attempts, reason });
      await this.kick(next).catch((err: unknown) => this.log.warn('could not restart a stuck job', { job: rec.job_id, err }));
      return (await this.coordinator.getJob(rec.tenant_id, rec.job_id)) ?? next;
    }
    if (next.status === 'failed') this.log.warn('stuck job failed', { job: rec.job_id, attempts: next.attempts, reason });
    return next;
  }

  // ------------------------------------------------------------------ cancel, delete, requeue

  /** Cancels an active job (view of the canceled job) or deletes a finished one. */
  async remove(tenant: TenantId, jobId: string, kind: JobKind): Promise<{ job_id: string; deleted: true } | ReturnType<JobService['view']>> {
    const rec = await this.coordinator.getJob(tenant, JobId(jobId));
    if (!rec || rec.kind !== kind) return fail('job_not_found', { job: jobId });
    if (ACTIVE.has(rec.status)) {
      const canceled = await this.cancel(rec);
      if (ACTIVE.has(canceled.status) || canceled.status === 'canceled') return this.view(canceled);
    }
    const current = (await this.coordinator.getJob(tenant, JobId(jobId))) ?? rec;
    if (ACTIVE.has(current.status)) return this.view(current);
    await this.coordinator.deleteJob(tenant, JobId(jobId));
    await this.deleteBlob(tenant, (current.state.blob ?? current.state.file) as BlobLocation | undefined);
    return { job_id: jobId, deleted: true };
  }

  async cancel(rec: JobRecord): Promise<JobRecord> {
    const next = await this.coordinator.updateJob(rec.tenant_id, rec.job_id, (r) =>
      ACTIVE.has(r.status) ? { ...r, status: 'canceled', error: 'Canceled.', finished_at: new Date().toISOString(), state: bump(r.state) } : r,
    );
    const holder = await this.coordinator.jobLeaseHolder(rec.job_id);
    if (holder) {
      await Promise.resolve()
        .then(() => this.node(holder).cancelJob({ tenantId: rec.tenant_id, jobId: rec.job_id, wait: false, requeue: false }))
        .catch((err: unknown) => this.log.warn('could not reach the runner of a canceled job', { job: rec.job_id, err }));
    }
    return next;
  }

  /** Cancels every active job of an index and waits (bounded) until their runners let go. */
  async cancelIndexJobs(tenant: TenantId, indexId: string): Promise<void> {
    const jobs = (await this.coordinator.listJobs(tenant, null, 200)).filter((j) => j.index_id === indexId && ACTIVE.has(j.status));
    for (const j of jobs) await this.cancel(j).catch(() => undefined);
    const deadline = Date.now() + 10_000;
    for (const j of jobs) {
      while (Date.now() < deadline && (await this.coordinator.jobLeaseHolder(j.job_id)) !== null) await sleep(100);
    }
  }

  async requeue(tenant: TenantId, jobId: string, kind: JobKind): Promise<JobRecord> {
    const rec = await this.coordinator.getJob(tenant, JobId(jobId));
    if (!rec || rec.kind !== kind) return fail('job_not_found', { job: jobId });
    let refused: string | null = null;
    const next = await this.coordinator.updateJob(tenant, JobId(jobId), (r) => {
      refused = null;
      if (r.status !== 'failed') {
        refused = r.status;
        return r;
      }
      const state = { ...bump(r.state), attempt_base: r.attempts, requeue_reason: 'requeued by an administrator', error_code: undefined, heartbeat_at: new Date().toISOString() };
      // an export starts over; an ingestion resumes after its last finished batch
      const reset = r.kind === 'export' ? { processed: 0, state: { ...state, file: null, expires_at: null } } : { state };
      return { ...r, status: 'queued', error: null, finished_at: null, ...reset };
    });
    if (refused !== null) fail('job_not_requeueable', { job: jobId, status: refused });
    this.track(next);
    await this.kick(next).catch((err: unknown) => this.log.warn('requeued job not started yet', { job: jobId, err }));
    return (await this.coordinator.getJob(tenant, JobId(jobId))) ?? next;
  }

  // ------------------------------------------------------------------ views

  view(rec: JobRecord) {
    const s = rec.state;
    const base = {
      job_id: rec.job_id as string,
      kind: rec.kind,
      index_id: rec.index_id as string,
      status: rec.status,
      source_type: rec.source_type,
      source_filename: rec.source_filename,
      total: rec.total,
      processed: rec.processed,
      failed: rec.failed,
      attempts: rec.attempts,
      error: rec.error,
      created_at: rec.created_at,
      started_at: rec.started_at,
      finished_at: rec.finished_at,
      physical_index_id: (s.physical_index_id as string | undefined) ?? null,
      run: (s.run as JobRun | undefined) ?? null,
      error_code: (s.error_code as string | undefined) ?? null,
    };
    if (rec.kind === 'export') {
      const e = exportState(s);
      return { ...base, format: e.format ?? 'json', download_url: this.downloadUrl(rec), expires_at: e.expires_at ?? null };
    }
    const i = ingestionState(s);
    return {
      ...base,
      format: i.format ?? null,
      errors: i.errors ?? [],
      progress: { bytes_total: i.bytes_total ?? 0, bytes_done: Math.min(i.bytes_done ?? 0, i.bytes_total ?? 0), records_done: i.cursor ?? 0 },
    };
  }

  /** The link of a finished export: a signed file link for immediate ones, the job route otherwise. */
  downloadUrl(rec: JobRecord): string | null {
    const e = exportState(rec.state);
    if (rec.status !== 'succeeded' || !e.file || !e.expires_at) return null;
    if (e.run !== 'immediate') return `/v1/export-jobs/${rec.job_id}/download`;
    const expires = Math.floor(Date.parse(e.expires_at) / 1000);
    const sig = this.signer.sign('export', [rec.tenant_id, rec.job_id, String(expires)]);
    return `/v1/exports/${rec.job_id}.${expires}.${sig}.${e.format === 'jsonl' ? 'jsonl' : 'json'}`;
  }

  /** The job behind an export file name, if the name is one this service signed for this tenant. */
  async fileJob(tenant: TenantId, filename: string): Promise<JobRecord> {
    const m = /^([A-Za-z0-9_-]{1,128})\.(\d{1,12})\.([A-Za-z0-9_-]{43})\.(json|jsonl)$/.exec(filename);
    // one answer for every failure: no oracle for which part was wrong
    const missing = () => fail('file_not_found', { file: filename.slice(0, 200) });
    if (!m) return missing();
    const [, jobId, expires, sig] = m;
    if (!this.signer.verify('export', [tenant, jobId!, expires!], sig!)) return missing();
    if (Number(expires) * 1000 < Date.now()) return missing();
    const rec = await this.coordinator.getJob(tenant, JobId(jobId!));
    if (!rec || rec.kind !== 'export' || rec.status !== 'succeeded' || !exportState(rec.state).file) return missing();
    return rec;
  }

  // ------------------------------------------------------------------ active ingestion jobs

  onMetaEvent(e: MetaEvent): void {
    if (e.type !== 'job') return;
    if (e.record) this.track(e.record);
    else this.untrack(e.tenant_id, e.job_id);
  }

  /** Active ingestion jobs writing into a physical index, loading the tenant's jobs on first use. */
  async activeJobsOn(tenant: TenantId, physical: string): Promise<string[]> {
    await this.ensureLoaded(tenant);
    return this.activeOn(tenant, physical);
  }

  /** Active ingestion jobs writing into a physical index (as this router knows them). */
  activeOn(tenant: TenantId, physical: string): string[] {
    return [...(this.active.get(tenant)?.get(physical) ?? [])];
  }

  /**
   * Resolves when no ingestion job is active on the physical index (spec: POST .../documents waits
   * for them); 503 after `documentsWaitForJobsMs`. Free when there is none.
   */
  async awaitIdle(tenant: TenantId, physical: string): Promise<void> {
    await this.ensureLoaded(tenant);
    if (this.activeOn(tenant, physical).length === 0) return;
    const key = `${tenant}\0${physical}`;
    const deadline = Date.now() + this.config.documentsWaitForJobsMs;
    for (;;) {
      const ids = this.activeOn(tenant, physical);
      if (ids.length === 0) return;
      if (Date.now() >= deadline) {
        fail('unavailable', { reason: `Ingestion job ${ids[0]} is still writing to this index (requests wait for it, up to ${Math.round(this.config.documentsWaitForJobsMs / 1000)} s)` });
      }
      await new Promise<void>((resolve) => {
        let set = this.waiters.get(key);
        if (!set) this.waiters.set(key, (set = new Set()));
        const wake = () => {
          clearTimeout(timer);
          set!.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, POLL_MS);
        set.add(wake);
      });
      // the watch is the fast path; this re-read covers a missed event and a runner that died
      for (const id of this.activeOn(tenant, physical)) {
        const rec = await this.coordinator.getJob(tenant, JobId(id));
        if (!rec) this.untrack(tenant, JobId(id));
        else this.track(await this.inspect(rec).catch(() => rec));
      }
    }
  }

  private async ensureLoaded(tenant: TenantId): Promise<void> {
    if (this.active.has(tenant)) return;
    let p = this.loading.get(tenant);
    if (!p) {
      p = (async () => {
        const jobs = await this.coordinator.listJobs(tenant, 'ingestion', 200);
        if (!this.active.has(tenant)) this.active.set(tenant, new Map());
        for (const j of jobs) if (ACTIVE.has(j.status)) this.track(j);
      })().finally(() => this.loading.delete(tenant));
      this.loading.set(tenant, p);
    }
    await p;
  }

  private track(rec: JobRecord): void {
    if (rec.kind !== 'ingestion') return;
    const physical = rec.state.physical_index_id as string | undefined;
    if (!physical) return;
    if (TERMINAL.has(rec.status)) {
      this.untrack(rec.tenant_id, rec.job_id);
      return;
    }
    const byPhysical = this.active.get(rec.tenant_id);
    // tenants never asked about are loaded on first use; events before that are not needed
    if (!byPhysical) return;
    let set = byPhysical.get(physical);
    if (!set) byPhysical.set(physical, (set = new Set()));
    set.add(rec.job_id);
  }

  private untrack(tenant: TenantId, jobId: JobId): void {
    const byPhysical = this.active.get(tenant);
    if (!byPhysical) return;
    for (const [physical, set] of byPhysical) {
      if (!set.delete(jobId)) continue;
      if (set.size === 0) {
        byPhysical.delete(physical);
        for (const wake of [...(this.waiters.get(`${tenant}\0${physical}`) ?? [])]) wake();
      }
    }
  }
}

function bump(state: Record<string, unknown>): Record<string, unknown> {
  return { ...state, rev: ((state.rev as number | undefined) ?? 0) + 1 };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A new job record in `queued`, with no progress yet. */
function queuedJob(
  jobId: JobRecord['job_id'],
  kind: JobRecord['kind'],
  t: TenantContext,
  target: ResolvedIndex,
  now: string,
  state: object,
  source: Pick<JobRecord, 'source_type' | 'source_filename' | 'total'>,
): JobRecord {
  return {
    job_id: jobId,
    kind,
    tenant_id: t.id,
    index_id: target.index.index_id,
    status: 'queued',
    ...source,
    processed: 0,
    failed: 0,
    attempts: 0,
    error: null,
    created_at: now,
    started_at: null,
    finished_at: null,
    state: state as Record<string, unknown>,
  };
}
