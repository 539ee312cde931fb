// The job runner of a shard node: starts ingestion and export jobs whose records are in the
// coordinator, each under a coordinator job lease (at most one runner per job in the cluster;
// kept alive while it runs, lapsing one TTL after a crash), and finishes them with a terminal
// status. It also finds jobs left behind by a crash: at start-up and then periodically it looks
// for queued or processing jobs whose sequencer (primary of part 0 of their physical index) is
// this node and that nobody holds, and resumes them — or fails them once they have been started
// `maxAttempts` times since the last requeue.
//
// Threads: none of its own; jobs run on the event loop between the node's other work, one
// batch at a time.
import type { Coordinator, JobRecord, PlacementTable } from '../../coordinator/coordinator.js';
import type * as pb from '../../proto/gen/shard.js';
import { fail, SuggestError } from '../../node/runtime/errors.js';
import { partitionOf } from '../../node/runtime/hash.js';
import { JobId, TenantId, type NodeId } from '../../node/runtime/ids.js';
import { copyToNodes, deleteFromHolders, readFromHolders, type BlobDeleter, type BlobReader } from '../../node/runtime/blob-copies.js';
import type { BlobLocation } from '../../node/runtime/job-state.js';
import type { Logger } from '../../node/runtime/log.js';
import type { ShardDirectory } from '../../node/runtime/shard-api.js';
import type { BlobStore } from './blob-store.js';
import { runExport } from './export-job.js';
import { runIngestion, type JobOutcome } from './ingestion-job.js';
import { makeUpdate, type JobContext, type JobSettings, type StopReason } from './job-context.js';
import { PartWriter, type PlacementSource } from './part-writer.js';

/** Parts with fewer documents are not warmed after an ingestion job (see JobRunner.warmParts). */
export const WARM_AFTER_INGESTION_MIN_DOCUMENTS = 2_000;
/** The tenant's most recent ingestion jobs looked through for one still to run into the same index. */
const RECENT_JOBS_CHECKED = 200;

export interface JobRunnerOptions {
  nodeId: NodeId;
  coordinator: Coordinator;
  directory: ShardDirectory;
  blobs: BlobStore;
  placement: PlacementSource;
  settings: JobSettings;
  leaseTtlSeconds: number;
  maxAttempts: number;
  /** how often to look for orphaned jobs (0: only at start) */
  scanIntervalMs: number;
  blobRetentionMs: number;
  log: Logger;
}

interface Running {
  stop: StopReason | null;
  done: Promise<string>;
}

const ACTIVE = new Set(['queued', 'processing']);
/** jobs listed per tenant when scanning for orphans */
const SCAN_LIMIT = 200;

export class JobRunner {
  private readonly running = new Map<string, Running>();
  private timer: NodeJS.Timeout | null = null;
  private closing = false;
  private scanning: Promise<void> | null = null;
  private readonly log: Logger;

  constructor(private readonly o: JobRunnerOptions) {
    this.log = o.log.child({ component: 'job-runner' });
  }

  /** Jobs running on this node now. */
  get active(): number {
    return this.running.size;
  }

  /** Jobs this node has brought to a terminal status since it started, by status. */
  readonly finished: Record<JobOutcome['status'], number> = { succeeded: 0, failed: 0 };

  /** Resumes orphaned jobs now, then every scanIntervalMs; sweeps old blobs. */
  startBackground(): void {
    const tick = () => {
      void this.scan();
      void this.o.blobs
        .sweep(Date.now() - this.o.blobRetentionMs, Date.now() - 24 * 3_600_000)
        .then((n) => n > 0 && this.log.info('old blobs removed', { count: n }))
        .catch((err: unknown) => this.log.warn('blob sweep failed', { err }));
    };
    tick();
    if (this.o.scanIntervalMs > 0) {
      this.timer = setInterval(tick, this.o.scanIntervalMs);
      this.timer.unref();
    }
  }

  async start(req: pb.JobRequest): Promise<pb.JobResponse> {
    if (this.closing) fail('unavailable', { reason: `Shard node ${this.o.nodeId} is shutting down` });
    const key = `${req.tenantId}\0${req.jobId}`;
    const current = this.running.get(key);
    if (current) return { accepted: true, status: req.wait ? await current.done : 'processing' };
    const rec = await this.o.coordinator.getJob(TenantId(req.tenantId), JobId(req.jobId));
    if (!rec) return fail('job_not_found', { job: req.jobId });
    if (!ACTIVE.has(rec.status)) return { accepted: false, status: rec.status };
    const lease = await this.o.coordinator.acquireJobLease(rec.job_id, this.o.nodeId, this.o.leaseTtlSeconds);
    if (!lease) return { accepted: false, status: rec.status };
    // a start that raced this one may have registered meanwhile
    const raced = this.running.get(key);
    if (raced) {
      await lease.revoke().catch(() => undefined);
      return { accepted: true, status: req.wait ? await raced.done : 'processing' };
    }
    const run: Running = { stop: null, done: Promise.resolve('processing') };
    this.running.set(key, run);
    run.done = this.execute(rec, run, lease)
      .catch((err: unknown) => {
        // the record could not be finished (coordinator unreachable): the lapsed lease makes it stuck, and stuck jobs are restarted
        this.log.error('job runner failed', { tenant: rec.tenant_id, job: rec.job_id, err });
        return 'processing';
      })
      .finally(() => {
        this.running.delete(key);
        void lease.revoke().catch(() => undefined);
      });
    if (!req.wait) return { accepted: true, status: 'processing' };
    return { accepted: true, status: await run.done };
  }

  cancel(req: pb.JobRequest): pb.JobResponse {
    const run = this.running.get(`${req.tenantId}\0${req.jobId}`);
    if (!run) return { accepted: false, status: '' };
    run.stop ??= req.requeue ? 'requeue' : 'canceled';
    return { accepted: true, status: 'processing' };
  }

  /** Stops every running job at its next batch and leaves it queued for the next start. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.timer) clearInterval(this.timer);
    for (const run of this.running.values()) run.stop ??= 'shutdown';
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
    await this.scanning?.catch(() => undefined);
  }

  /** Queued or processing jobs sequenced by this node that nobody runs: resume them. */
  scan(): Promise<void> {
    this.scanning ??= this.scanOnce().finally(() => {
      this.scanning = null;
    });
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    try {
      const table = this.o.placement.current();
      if (!table) return;
      for (const tenant of await this.o.coordinator.listTenants()) {
        if (this.closing) return;
        const jobs = await this.o.coordinator.listJobs(tenant.tenant_id, null, SCAN_LIMIT);
        for (const rec of jobs) {
          if (!ACTIVE.has(rec.status) || !this.sequencedHere(rec, table)) continue;
          if (this.running.has(`${rec.tenant_id}\0${rec.job_id}`)) continue;
          if ((await this.o.coordinator.jobLeaseHolder(rec.job_id)) !== null) continue;
          this.log.info('resuming an orphaned job', { tenant: rec.tenant_id, job: rec.job_id, status: rec.status, attempts: rec.attempts });
          void this.start({ tenantId: rec.tenant_id, jobId: rec.job_id, wait: false, requeue: false }).catch((err: unknown) => this.log.warn('could not resume job', { job: rec.job_id, err }));
        }
      }
    } catch (err) {
      this.log.warn('orphaned job scan failed', { err });
    }
  }

  private sequencedHere(rec: JobRecord, table: PlacementTable): boolean {
    const physical = rec.state.physical_index_id;
    if (typeof physical !== 'string') return false;
    return table.nodes[partitionOf(rec.tenant_id, physical, 0, table.partitions)]?.[0] === this.o.nodeId;
  }

  /** Runs one job under its lease; resolves with the status it left the job in. */
  private async execute(initial: JobRecord, run: Running, lease: { lost: Promise<void> }): Promise<string> {
    const { coordinator } = this.o;
    const log = this.log.child({ tenant: initial.tenant_id, job: initial.job_id, kind: initial.kind });
    let finished = false;
    void lease.lost.then(() => {
      if (!finished) run.stop ??= 'lease-lost';
    });
    const base = (initial.state.attempt_base as number | undefined) ?? 0;
    // a job found `processing` without a holder was interrupted; each start counts as an attempt
    if (initial.status === 'processing' && initial.attempts - base >= this.o.maxAttempts) {
      const rec = await this.finish(initial, {
        status: 'failed',
        error: `The job was interrupted ${initial.attempts - base} times (its node stopped while running it); requeue it to try again.`,
        errorCode: 'stuck',
      });
      return rec?.status ?? 'failed';
    }
    let rec: JobRecord;
    try {
      let started = false;
      rec = await coordinator.updateJob(initial.tenant_id, initial.job_id, (r) => {
        started = ACTIVE.has(r.status);
        if (!started) return r;
        const now = new Date().toISOString();
        return { ...r, status: 'processing', attempts: r.attempts + 1, started_at: r.started_at ?? now, error: null, state: { ...r.state, rev: ((r.state.rev as number | undefined) ?? 0) + 1, heartbeat_at: now, requeue_reason: undefined } };
      });
      if (!started) return rec.status;
    } catch (err) {
      if (err instanceof SuggestError && err.code === 'job_not_found') return 'deleted';
      throw err;
    }
    log.info('job started', { attempt: rec.attempts, cursor: rec.state.cursor ?? 0 });
    const ctx = this.context(rec, run);
    let outcome: JobOutcome | null;
    try {
      outcome = rec.kind === 'export' ? await runExport(rec, ctx) : await runIngestion(rec, ctx);
    } catch (err) {
      if (run.stop === 'lease-lost' || run.stop === 'shutdown') outcome = null;
      else {
        log.warn('job failed', { err });
        outcome = { status: 'failed', error: err instanceof SuggestError ? err.message : `The job stopped on an internal error: ${String((err as Error)?.message ?? err)}`, errorCode: err instanceof SuggestError ? err.code : 'internal' };
      }
    }
    finished = true;
    if (outcome) {
      const done = await this.finish(rec, outcome);
      log.info('job finished', { status: done?.status ?? 'moved', processed: done?.processed, failed: done?.failed });
      // after its own status is final: of two jobs ending together, each then sees the other's
      if (done?.status === 'succeeded' && rec.kind === 'ingestion') this.warmParts(rec, ctx.writer);
      if (done?.status === 'succeeded' && rec.kind === 'ingestion') await this.dropUpload(done);
      return done?.status ?? 'canceled';
    }
    const reason = run.stop;
    if (reason === 'shutdown' || reason === 'requeue') {
      // leave it for the next start (this node after restart, or the stuck handling that asked)
      const back = await coordinator
        .updateJob(rec.tenant_id, rec.job_id, (r) => (r.status === 'processing' ? { ...r, status: 'queued', state: { ...r.state, rev: ((r.state.rev as number | undefined) ?? 0) + 1, requeue_reason: reason } } : r))
        .catch(() => null);
      log.info('job stopped', { reason, status: back?.status });
      return back?.status ?? 'queued';
    }
    log.info('job stopped', { reason });
    const now = await coordinator.getJob(rec.tenant_id, rec.job_id).catch(() => undefined);
    return now?.status ?? 'deleted';
  }

  /** Terminal status, only if the job is still ours to finish (not canceled meanwhile). */
  private async finish(rec: JobRecord, outcome: JobOutcome): Promise<JobRecord | null> {
    try {
      let ours = false;
      const done = await this.o.coordinator.updateJob(rec.tenant_id, rec.job_id, (r) => {
        ours = ACTIVE.has(r.status);
        if (!ours) return r;
        return {
          ...r,
          status: outcome.status,
          error: outcome.error,
          finished_at: new Date().toISOString(),
          state: { ...r.state, rev: ((r.state.rev as number | undefined) ?? 0) + 1, error_code: outcome.errorCode },
        };
      });
      // the last attempt of the update decides (a retried transaction calls it again)
      if (ours) this.finished[outcome.status]++;
      return done;
    } catch (err) {
      if (err instanceof SuggestError && err.code === 'job_not_found') return null;
      throw err;
    }
  }

  /**
   * Asks each part of the index an ingestion job filled (each replica that answers reads) to
   * bring its engine into memory, so that its first queries do not wait for a build from the
   * stored documents (seconds for a large part). Parts under WARM_AFTER_INGESTION_MIN_DOCUMENTS
   * are left to their first query, which builds them in well under a second: a feed of thousands
   * of small indexes does not load them all; so is an index another ingestion job is still queued
   * or running for. Not awaited; a failure is logged (the first query builds the engine as before).
   */
  private warmParts(rec: JobRecord, writer: PartWriter): void {
    const physical = rec.state.physical_index_id;
    void (async () => {
      // another ingestion job still to write into the index would run beside a loaded engine, which
      // follows every write (about half the ingestion throughput): the last job warms it instead
      const jobs = await this.o.coordinator.listJobs(rec.tenant_id, 'ingestion', RECENT_JOBS_CHECKED);
      const next = jobs.find((j) => j.job_id !== rec.job_id && ACTIVE.has(j.status) && j.state.physical_index_id === physical);
      if (next) {
        this.log.info('engine warm-up after ingestion left to a later job', { job: rec.job_id, next: next.job_id });
        return;
      }
      const states = await writer.warm(WARM_AFTER_INGESTION_MIN_DOCUMENTS, this.o.settings.warmFollowers === true);
      this.log.info('engine warm-up after ingestion', { job: rec.job_id, parts: states.map((w) => w.state) });
    })().catch((err: unknown) => this.log.warn('engine warm-up after ingestion failed', { job: rec.job_id, err }));
  }

  private async dropUpload(rec: JobRecord): Promise<void> {
    const blob = rec.state.blob as BlobLocation | undefined;
    if (!blob) return;
    await this.deleteBlob(rec.tenant_id, blob).catch((err: unknown) => this.log.warn('could not remove an ingested upload', { job: rec.job_id, err }));
  }

  /** Removes a blob from every node that holds it; the first failure is raised once all were tried. */
  private async deleteBlob(tenant: string, loc: BlobLocation): Promise<void> {
    const failures = await deleteFromHolders((n) => this.blobApi(n), tenant, loc);
    if (failures.length > 0) throw failures[0]!.err;
  }

  /** The blob calls of this node on its disk, of another over its API. */
  private blobApi(node: string): BlobReader & BlobDeleter {
    if (node !== this.o.nodeId) return this.o.directory.client(node as NodeId);
    const blobs = this.o.blobs;
    return { getBlob: (req: pb.BlobRequest) => blobs.get(req), deleteBlob: async (req: pb.BlobRequest) => ({ deleted: await blobs.delete(req.tenantId, req.blobId) }) };
  }

  private context(rec: JobRecord, run: Running): JobContext {
    const { coordinator, blobs, directory } = this.o;
    const tenant = rec.tenant_id;
    const writer = new PartWriter(directory, this.o.placement, tenant, rec.state.physical_index_id as string, (rec.state.parts as number | undefined) ?? 1);
    return {
      nodeId: this.o.nodeId,
      coordinator,
      writer,
      settings: this.o.settings,
      log: this.log,
      stopReason: () => run.stop,
      // from the node that stored it, or a copy when that node cannot answer
      readBlob: async (loc) => dataOf(readFromHolders((n) => this.blobApi(n), tenant, loc)),
      writeBlob: (blobId) => blobs.writer(tenant, blobId),
      copyBlob: (blobId) => {
        const t = this.o.placement.current();
        if (!t) return Promise.resolve([]);
        const replicas = t.nodes[partitionOf(tenant, rec.state.physical_index_id as string, 0, t.partitions)] ?? [];
        return copyToNodes((n) => directory.client(n as NodeId), { node: this.o.nodeId, api: this.blobApi(this.o.nodeId) }, tenant, blobId, replicas, (node, err) =>
          this.log.warn('could not copy a job file to a follower; it has one copy fewer', { job: rec.job_id, node, err }),
        );
      },
      deleteBlob: (loc) => this.deleteBlob(tenant, loc),
      update: makeUpdate(coordinator, rec, (reason) => {
        run.stop ??= reason;
      }),
    };
  }
}

async function* dataOf(chunks: AsyncIterable<pb.BlobChunk>): AsyncIterable<Uint8Array> {
  for await (const c of chunks) yield c.data;
}

