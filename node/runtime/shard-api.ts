// What a shard node offers its callers, whichever transport carries it: the gRPC client
// (grpc-client-pool.ts) and the in-process transport of the single node implement the same
// interface with the same generated message types. Streaming calls are async iterables on both
// sides, so a blob flows through the in-process transport exactly as it does over gRPC.
import type * as pb from '../../proto/gen/shard.js';
import type { NodeId } from './ids.js';

export interface ShardApi {
  upsert(req: pb.UpsertRequest): Promise<pb.UpsertResponse>;
  getDocument(req: pb.DocumentRequest): Promise<pb.GetDocumentResponse>;
  deleteDocument(req: pb.DocumentRequest): Promise<pb.DeleteDocumentResponse>;
  listDocuments(req: pb.ListDocumentsRequest): Promise<pb.ListDocumentsResponse>;
  dropIndex(req: pb.DropIndexRequest): Promise<pb.DropIndexResponse>;
  indexStats(req: pb.IndexStatsRequest): Promise<pb.IndexStatsResponse>;
  query(req: pb.QueryRequest): Promise<pb.QueryResponse>;
  /**
   * The same query with its payload and result as values, not msgpack: only the in-process
   * transport offers it. Synchronous when the part's partition and engine are loaded (the
   * router's hot path answers inside the HTTP callback then), a promise otherwise.
   */
  queryValue?(req: QueryValueRequest): unknown;
  partitionStats(req: pb.PartitionStatsRequest): Promise<pb.PartitionStatsResponse>;
  /** Appends engagement events to the part holding their documents (a write: in index order). */
  recordEvents(req: pb.RecordEventsRequest): Promise<pb.RecordEventsResponse>;
  /** Stores a blob: the first chunk names it; durable (fsynced) when the promise resolves. */
  putBlob(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef>;
  /** Reads a blob from `offset`; `file_not_found` when it does not exist. */
  getBlob(req: pb.BlobRequest): AsyncIterable<pb.BlobChunk>;
  deleteBlob(req: pb.BlobRequest): Promise<pb.DeleteBlobResponse>;
  /** Runs the job whose record is in the coordinator, unless another runner holds its lease. */
  startJob(req: pb.JobRequest): Promise<pb.JobResponse>;
  /** Stops the runner of a job at its next batch. */
  cancelJob(req: pb.JobRequest): Promise<pb.JobResponse>;
}

export interface QueryValueRequest {
  ref: pb.IndexRef;
  kind: string;
  /** what QueryRequest.payload would decode to */
  payload: unknown;
}

/** Finds the client for a shard node; throws `unavailable` when the node is not reachable. */
export interface ShardDirectory {
  client(node: NodeId): ShardApi;
  /**
   * Every applied write to any index, reported after it is durable and visible to queries; a
   * router uses it to keep a response cache that never serves data older than the last write.
   * The single node's in-process transport sees every write; the gRPC pool follows every shard
   * node's WatchChanges stream and calls `reset` whenever announcements may have been missed
   * (a stream opened, dropped or went silent): everything cached must then be forgotten.
   */
  subscribeChanges?(listener: (tenantId: string, physicalIndexId: string) => void, reset?: () => void): () => void;
  /**
   * Whether every write is being announced right now; a cache must not answer while false.
   * Absent: always, when `subscribeChanges` is offered. Called on the hot path: must be cheap.
   */
  changesLive?(): boolean;
  /**
   * Tells this process's subscribers that a physical index changed through writes it caused but
   * did not forward itself (a job it waited for). Absent where every write is seen in process.
   */
  announceChange?(tenantId: string, physicalIndexId: string): void;
}

/** Payload of a `warm` query (QueryRequest.kind `warm`: a part's engine brought into memory ahead of its queries). */
export interface WarmRequest {
  /** parts holding fewer documents are left as they are (`skipped`): their first query builds them quickly */
  min_documents?: number;
  /** only a part with a snapshot to read back is loaded (`skipped` otherwise): nothing is built from the stored documents */
  snapshot_only?: boolean;
}

/**
 * A part's engine after a `warm` query: `ready` (in memory), `loading` (a load runs, started by
 * this query or an earlier one), `skipped` (fewer documents than `min_documents`, or no snapshot
 * with `snapshot_only`).
 */
export interface WarmState {
  state: 'ready' | 'loading' | 'skipped';
  documents: number;
}

/**
 * A part's engine after an `unload` query: `unloading` (its snapshot is being written; a query
 * meanwhile keeps it), `not_loaded`.
 */
export interface UnloadState {
  state: 'unloading' | 'not_loaded';
}
