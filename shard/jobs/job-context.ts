// What a running job is given by the runner, and the one way it writes its record: a
// compare-and-swap update that applies only while the job is still `processing`. When anyone
// else moved the record on (canceled, requeued, deleted), the update is a no-op and the job
// learns it must stop — that is how cancelation reaches a job at its next batch.
import type { Coordinator, JobRecord } from '../../coordinator/coordinator.js';
import { SuggestError } from '../../node/runtime/errors.js';
import type { BlobLocation } from '../../node/runtime/job-state.js';
import type { Logger } from '../../node/runtime/log.js';
import type { BlobWriter } from './blob-store.js';
import type { PartWriter } from './part-writer.js';

export interface JobSettings {
  batchSize: number;
  batchDelayMs: number;
  maxRecordChars: number;
  exportTtlSeconds: number;
  /** an ingestion job's warm-up also reaches the followers of its parts (they share the reads) */
  warmFollowers?: boolean;
}

/** Why a job stops before its end. */
export type StopReason = 'canceled' | 'requeue' | 'shutdown' | 'lease-lost' | 'deleted';

export interface JobContext {
  readonly nodeId: string;
  readonly coordinator: Coordinator;
  readonly writer: PartWriter;
  readonly settings: JobSettings;
  readonly log: Logger;
  /** set by the runner (cancel RPC, shutdown, lost lease) and by `update` */
  stopReason(): StopReason | null;
  /** the bytes of a blob, wherever it lives */
  readBlob(loc: BlobLocation): Promise<AsyncIterable<Uint8Array>>;
  /** a new blob on this node */
  writeBlob(blobId: string): Promise<BlobWriter>;
  /**
   * Copies a blob this node wrote to the followers of the index's sequencer partition (see
   * node/runtime/blob-copies.ts); the nodes that took a copy.
   */
  copyBlob(blobId: string): Promise<string[]>;
  /** removes the blob from every node that holds it */
  deleteBlob(loc: BlobLocation): Promise<void>;
  /**
   * Applies `change` to the record if it is still `processing` (and bumps `state.rev`); returns
   * the record as stored, or null when the job was moved on or deleted (the job must stop).
   */
  update(change: (rec: JobRecord) => JobRecord): Promise<JobRecord | null>;
}

export function makeUpdate(coordinator: Coordinator, rec: JobRecord, onStop: (reason: StopReason) => void): JobContext['update'] {
  return async (change) => {
    try {
      let moved: JobRecord['status'] | null = null;
      const next = await coordinator.updateJob(rec.tenant_id, rec.job_id, (r) => {
        moved = null;
        if (r.status !== 'processing') {
          moved = r.status;
          return r;
        }
        const c = change(r);
        return { ...c, state: { ...c.state, rev: ((r.state.rev as number | undefined) ?? 0) + 1 } };
      });
      if (moved !== null) {
        onStop(moved === 'canceled' ? 'canceled' : 'requeue');
        return null;
      }
      return next;
    } catch (err) {
      if (err instanceof SuggestError && err.code === 'job_not_found') {
        onStop('deleted');
        return null;
      }
      throw err;
    }
  };
}
