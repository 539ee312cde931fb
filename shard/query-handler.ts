// The seam between the shard node and the search engine: the node checks ownership, opens the
// partition and decodes the msgpack payload, then hands the query to a QueryHandler and encodes
// whatever object it returns. The engine attaches itself with `ShardNode.setQueryHandler`
// without the node knowing anything about segments or ranking.
import type * as pb from '../proto/gen/shard.js';
import { fail } from '../node/runtime/errors.js';
import type { PartitionStore } from './partition-store.js';
import type { ChangeEvent } from './shard-node.js';

export type { UnloadState, WarmRequest, WarmState } from '../node/runtime/shard-api.js';

/**
 * `warm` and `unload` ask for no search: `warm` brings the part's engine into memory ahead of
 * its queries (the answer, a WarmState, comes at once: see SearchHost.warm); `unload` lets it go
 * ahead of its idle time, its snapshot written (an UnloadState: see SearchHost.unloadNow).
 */
export type QueryKind = 'typeahead' | 'autocomplete' | 'predict' | 'warm' | 'unload';

export const QUERY_KINDS: ReadonlySet<string> = new Set<QueryKind>(['typeahead', 'autocomplete', 'predict', 'warm', 'unload']);

export interface IndexContext {
  /** the partition that stores the index part */
  store: PartitionStore;
  ref: pb.IndexRef;
}

export interface QueryContext extends IndexContext {
  kind: QueryKind;
  /** QueryRequest.payload decoded from msgpack; undefined when the payload is empty */
  payload: unknown;
}

export interface QueryHandler {
  /** The partial result of one index part (msgpack-encoded into QueryResponse.result). */
  query(ctx: QueryContext): unknown;
  /** Engine statistics of one index part (msgpack-encoded into IndexStatsResponse.engine). */
  indexStats?(ctx: IndexContext): unknown;
  /** Drops whatever was built from a partition whose data was replaced or moved away. */
  forgetPartition?(partition: number): void;
  /**
   * Index parts of the partition with what their queries need loaded here, each as its
   * `indexPartId`.
   */
  loadedParts?(partition: number): string[];
  /**
   * Loads what queries of the partition's large index parts among `parts` need, one part at a
   * time: a copy that arrived by a move, before the placement switch sends it queries, for the
   * parts the source had loaded. Resolves with the parts loaded.
   */
  warmPartition?(store: PartitionStore, partition: number, epoch: number, parts: ReadonlySet<string>): Promise<number>;
  /**
   * A replica of the partition applied writes from its primary: they reach the store, not the
   * change feed, so anything built from the partition here is behind them. Called when they
   * cannot be read as changes (see `replicaChanged`).
   */
  replicaWritten?(partition: number): void;
  /**
   * One change of writes a replica applied from its primary, in their order, as the primary's own
   * writes report them (ShardNode.onChange): an engine a read built on a follower follows them.
   */
  replicaChanged?(event: ChangeEvent): void;
  /**
   * Called in the index's write order before an upsert or a delete reaches the store: the
   * primary's own writes, and a follower's replicated ones (`replica`; synchronous; a failure is
   * logged, not the write's): what was kept of the store as it is now can be set aside first.
   */
  beforeWrite?(store: PartitionStore, ref: pb.IndexRef, replica?: boolean): void;
  /** Called once when the node closes, before its partitions close. */
  close?(): Promise<void> | void;
}

/** What a node answers before an engine is attached. */
export const notImplementedQueryHandler: QueryHandler = {
  query: () => fail('not_implemented', { feature: 'Search on shard nodes' }),
};
