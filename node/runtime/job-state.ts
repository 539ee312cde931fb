// The `state` of a job record (coordinator JobRecord.state) as routers write it and the job
// runner on the shard node reads and advances it. Shared by both roles, so its fields are a
// contract: add fields, never rename them (old records must still run after an upgrade).

export type UploadFormat = 'csv' | 'json' | 'jsonl';
export type DocumentMapping = 'documents' | 'shopping-feed';
export type JobRun = 'immediate' | 'background';

/**
 * Where a blob (an uploaded or exported file) lives: the shard node that stored it and, in a
 * cluster with replication, the nodes that took a copy (the followers of the partition that
 * placed it, see blob-copies.ts), read in that order when the first cannot answer.
 */
export interface BlobLocation {
  node: string;
  id: string;
  size: number;
  copies?: string[];
}

/** Every node that holds the blob: where it was stored first, then its copies. */
export function holdersOf(loc: BlobLocation): string[] {
  return [loc.node, ...(loc.copies ?? []).filter((n) => n !== loc.node)];
}

/** One row that could not be ingested. */
export interface RowError {
  /** record number (1-based data record; 0: the file as a whole) */
  record: number;
  line: number;
  id: string | null;
  detail: string;
}

/** Row errors kept on a job; the count of failed rows goes on beyond it. */
export const MAX_ROW_ERRORS = 100;

interface CommonState {
  physical_index_id: string;
  parts: number;
  run: JobRun;
  /** bumped by every writer of the record: the event id of the job's progress stream */
  rev: number;
  /** last progress write of the runner (ISO time) */
  heartbeat_at: string | null;
  /** `attempts` when the job was last (re)queued by a person: stuck handling counts from here */
  attempt_base: number;
  /** a runner was asked to stop and leave the job queued (stuck handling) */
  requeue_reason?: string;
}

export interface IngestionJobState extends CommonState {
  format: UploadFormat;
  mapping: DocumentMapping;
  /** encoding named by the client; null: BOM or sniffed */
  encoding: string | null;
  /** how the format was chosen (field, file name, content type, content) */
  format_source: string;
  blob: BlobLocation;
  /** plan limits when the job was created */
  limits: { max_documents_per_index: number; max_documents_total: number };
  /** documents of the tenant outside this index when the job was created (account limit) */
  account_other: number;
  /** records fully handled: a resumed job skips this many */
  cursor: number;
  bytes_total: number;
  bytes_done: number;
  errors: RowError[];
  /** encoding the runner read the file with */
  encoding_used?: string;
}

export interface ExportJobState extends CommonState {
  format: 'json' | 'jsonl';
  /** the finished file */
  file: BlobLocation | null;
  /** when the download link stops working (ISO time), set when the file is written */
  expires_at: string | null;
}

export function ingestionState(state: Record<string, unknown>): IngestionJobState {
  return state as unknown as IngestionJobState;
}

export function exportState(state: Record<string, unknown>): ExportJobState {
  return state as unknown as ExportJobState;
}
