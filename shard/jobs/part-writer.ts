// How a job reaches the parts of the physical index it works on: part `i` lives in partition
// partitionOf(tenant, physical, i), served by that partition's primary in this node's placement
// table, reached through the ShardDirectory (this node itself in-process, others over gRPC). A
// call refused with `wrong_owner` re-reads placement and is tried again; `unavailable` (a node
// restarting) is retried a few times with backoff before the job gives up.
import { pack, unpack } from 'msgpackr';
import type { PlacementTable } from '../../coordinator/coordinator.js';
import type * as pb from '../../proto/gen/shard.js';
import { encodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { SuggestError, fail } from '../../node/runtime/errors.js';
import { partitionOf } from '../../node/runtime/hash.js';
import type { NodeId } from '../../node/runtime/ids.js';
import type { ShardApi, ShardDirectory } from '../../node/runtime/shard-api.js';
import type { WarmRequest, WarmState } from '../query-handler.js';

export interface PlacementSource {
  current(): PlacementTable | undefined;
  /** reads the table again from the coordinator */
  refresh(): Promise<void>;
}

const RETRIES = 5;
const BACKOFF_MS = 200;

export class PartWriter {
  constructor(
    private readonly directory: ShardDirectory,
    private readonly placement: PlacementSource,
    readonly tenant: string,
    readonly physical: string,
    readonly parts: number,
  ) {}

  /** The primary of a part and the ref to send it. */
  route(part: number): { node: NodeId; ref: pb.IndexRef } {
    const t = this.placement.current();
    if (!t) return fail('unavailable', { reason: 'Placement is not known yet' });
    const partition = partitionOf(this.tenant, this.physical, part, t.partitions);
    const node = t.nodes[partition]?.[0];
    if (node === undefined) return fail('unavailable', { reason: `Partition ${partition} has no primary` });
    return { node, ref: { tenantId: this.tenant, physicalIndexId: this.physical, part, parts: this.parts, partition, epoch: t.epoch } };
  }

  async call<T>(part: number, fn: (api: ShardApi, ref: pb.IndexRef) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { node, ref } = this.route(part);
        return await fn(this.directory.client(node), ref);
      } catch (err) {
        const code = err instanceof SuggestError ? err.code : null;
        if (attempt < RETRIES && (code === 'wrong_owner' || code === 'unavailable')) {
          if (code === 'unavailable') await sleep(BACKOFF_MS * 2 ** attempt);
          await this.placement.refresh().catch(() => undefined);
          continue;
        }
        throw err;
      }
    }
  }

  /**
   * Document count of every part. Read from a one-document list page rather than IndexStats,
   * which would also ask the search engine for its statistics (and build it) for nothing.
   */
  counts(): Promise<number[]> {
    return Promise.all(Array.from({ length: this.parts }, (_, p) => this.call(p, async (api, ref) => (await api.listDocuments({ ref, afterId: '', limit: 1, offset: 0 })).total)));
  }

  upsert(part: number, docs: readonly SuggestDocument[], maxDocuments: number): Promise<pb.UpsertResponse> {
    const documents = docs.map((d) => ({ id: d.id, body: encodeDocument(d) }));
    return this.call(part, (api, ref) => api.upsert({ ref, documents, maxDocuments }));
  }

  /**
   * Asks every part's primary, and with `followers` its followers, to bring its engine into memory
   * (QueryKind `warm`); their states, a follower that could not be asked left out.
   */
  async warm(minDocuments: number, followers: boolean): Promise<WarmState[]> {
    const payload = pack({ min_documents: minDocuments } satisfies WarmRequest);
    const ask = async (api: ShardApi, ref: pb.IndexRef) => unpack((await api.query({ ref, kind: 'warm', payload })).result) as WarmState;
    const calls: Promise<WarmState | null>[] = [];
    for (let part = 0; part < this.parts; part++) {
      calls.push(this.call(part, ask));
      const t = this.placement.current();
      if (!followers || !t) continue;
      const { ref } = this.route(part);
      for (const node of t.nodes[ref.partition]?.slice(1) ?? []) calls.push(ask(this.directory.client(node), ref).catch(() => null));
    }
    return (await Promise.all(calls)).filter((s): s is WarmState => s !== null);
  }

  list(part: number, afterId: string, limit: number): Promise<pb.ListDocumentsResponse> {
    return this.call(part, (api, ref) => api.listDocuments({ ref, afterId, limit, offset: 0 }));
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
