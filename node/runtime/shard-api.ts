// What a shard node offers its callers, whichever transport carries it: the gRPC client
// (grpc-client-pool.ts) and the in-process transport of the single node implement the same
// interface with the same generated message types.
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
  partitionStats(req: pb.PartitionStatsRequest): Promise<pb.PartitionStatsResponse>;
}

/** Finds the client for a shard node; throws `unavailable` when the node is not reachable. */
export interface ShardDirectory {
  client(node: NodeId): ShardApi;
}
