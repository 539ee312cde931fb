// Copies of job files and reads over their holders, with shard APIs that hold blobs in memory
// (the cluster test node/test/job-files-cluster.test.ts runs the same over real nodes).
import { describe, expect, it } from 'vitest';
import type * as pb from '../../../proto/gen/shard.js';
import { copyToNodes, deleteFromHolders, readFromHolders } from '../blob-copies.js';
import { suggestError } from '../errors.js';
import type { ShardApi } from '../shard-api.js';

/** A node's blob calls over a map; `down` makes every call fail as an unreachable node does. */
function memoryNode(blobs = new Map<string, Buffer>(), opts: { down?: boolean; failAfterFirstChunk?: boolean } = {}) {
  const unavailable = () => suggestError('unavailable', { reason: 'A shard node did not answer' });
  const api = {
    async putBlob(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef> {
      if (opts.down) throw unavailable();
      let id = '';
      const parts: Buffer[] = [];
      for await (const c of chunks) {
        if (c.blobId) id = `${c.tenantId}/${c.blobId}`;
        parts.push(Buffer.from(c.data));
      }
      const data = Buffer.concat(parts);
      blobs.set(id, data);
      return { tenantId: id.split('/')[0]!, blobId: id.split('/')[1]!, size: data.length, sha256: '', nodeId: '' };
    },
    async deleteBlob(req: pb.BlobRequest): Promise<pb.DeleteBlobResponse> {
      if (opts.down) throw unavailable();
      return { deleted: blobs.delete(`${req.tenantId}/${req.blobId}`) };
    },
    async *getBlob(req: pb.BlobRequest): AsyncIterable<pb.BlobChunk> {
      if (opts.down) throw unavailable();
      const data = blobs.get(`${req.tenantId}/${req.blobId}`);
      if (data === undefined) throw suggestError('file_not_found', { file: req.blobId });
      for (let i = 0; i < data.length; i += 4) {
        if (opts.failAfterFirstChunk && i > 0) throw unavailable();
        yield { tenantId: '', blobId: '', maxBytes: 0, data: data.subarray(i, i + 4) };
      }
    },
  };
  return { api: api as unknown as ShardApi, blobs };
}

const read = async (it: AsyncIterable<pb.BlobChunk>) => {
  const parts: Buffer[] = [];
  for await (const c of it) parts.push(Buffer.from(c.data));
  return Buffer.concat(parts).toString();
};

describe('copyToNodes', () => {
  it('copies to every target but the source, whole, and lists the nodes that took a copy', async () => {
    const nodes = new Map([
      ['a', memoryNode(new Map([['t/f', Buffer.from('hello, world')]]))],
      ['b', memoryNode()],
      ['c', memoryNode(new Map(), { down: true })],
      ['d', memoryNode()],
    ]);
    const failed: string[] = [];
    const copies = await copyToNodes((n) => nodes.get(n)!.api, { node: 'a', api: nodes.get('a')!.api }, 't', 'f', ['a', 'b', 'c', 'd'], (n) => failed.push(n));
    expect(copies).toEqual(['b', 'd']);
    expect(failed).toEqual(['c']);
    expect(nodes.get('b')!.blobs.get('t/f')?.toString()).toBe('hello, world');
    expect(nodes.get('d')!.blobs.get('t/f')?.toString()).toBe('hello, world');
  });

  it('copies an empty file as an empty file', async () => {
    const a = memoryNode(new Map([['t/e', Buffer.alloc(0)]]));
    const b = memoryNode();
    expect(await copyToNodes(() => b.api, { node: 'a', api: a.api }, 't', 'e', ['b'], () => undefined)).toEqual(['b']);
    expect(b.blobs.get('t/e')).toEqual(Buffer.alloc(0));
  });
});

describe('readFromHolders', () => {
  const file = Buffer.from('0123456789abcdef');
  const loc = { node: 'a', id: 'f', size: file.length, copies: ['b', 'c'] };

  it('reads from the first holder that answers: a node that is down or lost the file passes the read on', async () => {
    const nodes = new Map([
      ['a', memoryNode(new Map(), { down: true })],
      ['b', memoryNode()], // lost its copy
      ['c', memoryNode(new Map([['t/f', file]]))],
    ]);
    expect(await read(readFromHolders((n) => nodes.get(n)!.api, 't', loc))).toBe(file.toString());
  });

  it('raises what the last holder raises, and a failure after the first chunk as it is', async () => {
    const gone = new Map([
      ['a', memoryNode(new Map(), { down: true })],
      ['b', memoryNode()],
      ['c', memoryNode()],
    ]);
    await expect(read(readFromHolders((n) => gone.get(n)!.api, 't', loc))).rejects.toMatchObject({ code: 'file_not_found' });
    const cut = new Map([
      ['a', memoryNode(new Map([['t/f', file]]), { failAfterFirstChunk: true })],
      ['b', memoryNode(new Map([['t/f', file]]))],
    ]);
    await expect(read(readFromHolders((n) => cut.get(n)!.api, 't', { ...loc, copies: ['b'] }))).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('reads a location without copies (written before copies existed) from its node', async () => {
    const a = memoryNode(new Map([['t/f', file]]));
    expect(await read(readFromHolders(() => a.api, 't', { node: 'a', id: 'f', size: file.length }))).toBe(file.toString());
  });
});

describe('deleteFromHolders', () => {
  it('deletes from every holder, one that is down included in the failures without stopping the others', async () => {
    const file = Buffer.from('x');
    const nodes = new Map([
      ['a', memoryNode(new Map([['t/f', file]]))],
      ['b', memoryNode(new Map([['t/f', file]]), { down: true })],
      ['c', memoryNode(new Map([['t/f', file]]))],
    ]);
    const failures = await deleteFromHolders((n) => nodes.get(n)!.api, 't', { node: 'a', id: 'f', size: 1, copies: ['b', 'c'] });
    expect(failures.map((f) => f.node)).toEqual(['b']);
    expect(failures[0]!.err).toMatchObject({ code: 'unavailable' });
    expect([...nodes.values()].map((n) => n.blobs.has('t/f'))).toEqual([false, true, false]);
  });
});
