// Copies of job files (uploads, exports) on the followers of the partition that placed them, so a
// file outlives the node that stored it as the partition's documents do: in a cluster with
// replication factor 2 or more, a job whose node died reads its upload from a copy, and an export
// is downloaded from one. The copies are made after the file is stored (a node streams it to each
// follower: GetBlob into PutBlob); one that fails leaves the file with fewer copies, never
// fails the upload. Readers try the holders in order (job-state.ts `holdersOf`).
import type * as pb from '../../proto/gen/shard.js';
import { SuggestError } from './errors.js';
import type { BlobLocation } from './job-state.js';
import { holdersOf } from './job-state.js';
import type { ShardApi } from './shard-api.js';

/** The blob calls of a node, all a copy, a read or a delete needs. */
export type BlobReader = Pick<ShardApi, 'getBlob'>;
export type BlobWriter = Pick<ShardApi, 'putBlob'>;
export type BlobDeleter = Pick<ShardApi, 'deleteBlob'>;

/** Streams blob `blobId` of `tenant` from one node into another; the copy's reference. */
export function copyBlob(from: BlobReader, to: BlobWriter, tenant: string, blobId: string): Promise<pb.BlobRef> {
  async function* chunks(): AsyncIterable<pb.BlobChunk> {
    let first = true;
    for await (const c of from.getBlob({ tenantId: tenant, blobId, offset: 0 })) {
      yield { tenantId: first ? tenant : '', blobId: first ? blobId : '', maxBytes: 0, data: c.data };
      first = false;
    }
    // an empty blob is still one chunk, which names it
    if (first) yield { tenantId: tenant, blobId, maxBytes: 0, data: Buffer.alloc(0) };
  }
  return to.putBlob(chunks());
}

/**
 * Copies blob `blobId` from `from` to each node of `targets` (skipping `from` itself); the nodes
 * that hold a copy afterwards. `onError` hears each failed copy.
 */
export async function copyToNodes(
  client: (node: string) => BlobWriter,
  from: { node: string; api: BlobReader },
  tenant: string,
  blobId: string,
  targets: readonly string[],
  onError: (node: string, err: unknown) => void,
): Promise<string[]> {
  const copies: string[] = [];
  for (const node of targets) {
    if (node === from.node) continue;
    try {
      await copyBlob(from.api, client(node), tenant, blobId);
      copies.push(node);
    } catch (err) {
      onError(node, err);
    }
  }
  return copies;
}

/**
 * Deletes the blob from every node that holds it, each tried whatever the others did; the
 * failures, by node (the caller logs them, or raises one).
 */
export async function deleteFromHolders(client: (node: string) => BlobDeleter, tenant: string, loc: BlobLocation): Promise<{ node: string; err: unknown }[]> {
  const failures: { node: string; err: unknown }[] = [];
  for (const node of holdersOf(loc)) {
    try {
      await client(node).deleteBlob({ tenantId: tenant, blobId: loc.id, offset: 0 });
    } catch (err) {
      failures.push({ node, err });
    }
  }
  return failures;
}

/** Whether a failed read from one holder should move on to the next (the node or its copy is gone). */
function tryNextHolder(err: unknown): boolean {
  return err instanceof SuggestError && (err.code === 'unavailable' || err.code === 'file_not_found');
}

/**
 * The blob's chunks from the first holder that answers: a holder that is down, or lost its copy,
 * before the first chunk arrives passes the read to the next. A failure after the first chunk ends
 * the read (what was read cannot be taken back).
 */
export async function* readFromHolders(client: (node: string) => BlobReader, tenant: string, loc: BlobLocation): AsyncIterable<pb.BlobChunk> {
  const holders = holdersOf(loc);
  for (let i = 0; i < holders.length; i++) {
    const it = client(holders[i]!).getBlob({ tenantId: tenant, blobId: loc.id, offset: 0 })[Symbol.asyncIterator]();
    let first: IteratorResult<pb.BlobChunk>;
    try {
      first = await it.next();
    } catch (err) {
      if (i < holders.length - 1 && tryNextHolder(err)) continue;
      throw err;
    }
    for (let next = first; !next.done; next = await it.next()) yield next.value;
    return;
  }
}
