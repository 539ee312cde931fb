// Files of ingestion and export jobs on a shard node's disk: `${dataDir}/blobs/{tenant}/{blob}`.
// A blob is written to a temporary file, fsynced, renamed into place and its directory fsynced
// before it is acknowledged, so an acknowledged blob survives a crash and a half-written one is
// never seen under its name. Names are checked against a strict pattern before they reach the
// file system: no id can climb out of its tenant's directory.
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type * as pb from '../../proto/gen/shard.js';
import { fail } from '../../node/runtime/errors.js';
import { isValidId } from '../../node/runtime/ids.js';
import type { Logger } from '../../node/runtime/log.js';

/** Size of the chunks GetBlob answers with. */
export const BLOB_CHUNK_BYTES = 256 * 1024;
const TMP_SUFFIX = '.tmp';

/** A blob being written; nothing is visible under its name until `commit`. */
export interface BlobWriter {
  readonly size: number;
  write(data: Uint8Array): Promise<void>;
  /** fsync, rename into place, fsync the directory */
  commit(): Promise<pb.BlobRef>;
  /** removes the temporary file */
  abort(): Promise<void>;
}

export class BlobStore {
  readonly root: string;

  constructor(
    dataDir: string,
    private readonly nodeId: string,
    private readonly log: Logger,
  ) {
    this.root = path.join(dataDir, 'blobs');
  }

  /** The path of a blob; 400 when either id could name anything but one file of one tenant. */
  location(tenant: string, blobId: string): string {
    if (!isValidId(tenant)) fail('bad_request', { reason: `'${tenant.slice(0, 64)}' is not a valid tenant id` });
    if (!isValidId(blobId)) fail('bad_request', { reason: `'${blobId.slice(0, 64)}' is not a valid blob id` });
    return path.join(this.root, tenant, blobId);
  }

  async writer(tenant: string, blobId: string, maxBytes = 0): Promise<BlobWriter> {
    const final = this.location(tenant, blobId);
    const dir = path.dirname(final);
    await mkdir(dir, { recursive: true });
    const tmp = `${final}.${randomBytes(6).toString('hex')}${TMP_SUFFIX}`;
    const fh: FileHandle = await open(tmp, 'wx', 0o600);
    const hash = createHash('sha256');
    let size = 0;
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await fh.close();
    };
    return {
      get size() {
        return size;
      },
      async write(data) {
        if (maxBytes > 0 && size + data.byteLength > maxBytes) {
          fail('payload_too_large', { limit: maxBytes, hint: 'the file is larger than the upload limit of this tenant; see GET /v1/indexes/file-size-limit.' });
        }
        let offset = 0;
        while (offset < data.byteLength) {
          const { bytesWritten } = await fh.write(data, offset, data.byteLength - offset);
          offset += bytesWritten;
        }
        hash.update(data);
        size += data.byteLength;
      },
      commit: async () => {
        await fh.sync();
        await close();
        await rename(tmp, final);
        await syncDir(dir);
        return { tenantId: tenant, blobId, size, sha256: hash.digest('hex'), nodeId: this.nodeId };
      },
      abort: async () => {
        await close().catch(() => undefined);
        await unlink(tmp).catch(() => undefined);
      },
    };
  }

  /** PutBlob: the first chunk names the blob; any failure (cap passed, caller gone) leaves nothing. */
  async put(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef> {
    const it = chunks[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) fail('bad_request', { reason: 'PutBlob received no chunk' });
    const head = first.value;
    const w = await this.writer(head.tenantId, head.blobId, head.maxBytes);
    try {
      if (head.data.byteLength > 0) await w.write(head.data);
      for (;;) {
        const next = await it.next();
        if (next.done) break;
        if (next.value.data.byteLength > 0) await w.write(next.value.data);
      }
      return await w.commit();
    } catch (err) {
      await w.abort();
      await it.return?.();
      throw err;
    }
  }

  /** Size in bytes; `file_not_found` when the blob does not exist. */
  async size(tenant: string, blobId: string): Promise<number> {
    try {
      return (await stat(this.location(tenant, blobId))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') fail('file_not_found', { file: blobId });
      throw err;
    }
  }

  /** A local read stream from `offset` (the job runner reads its own blobs without a transport). */
  async open(tenant: string, blobId: string, offset = 0): Promise<ReadStream> {
    await this.size(tenant, blobId);
    return createReadStream(this.location(tenant, blobId), { start: offset, highWaterMark: BLOB_CHUNK_BYTES });
  }

  async *get(req: pb.BlobRequest): AsyncIterable<pb.BlobChunk> {
    const stream = await this.open(req.tenantId, req.blobId, req.offset);
    try {
      for await (const data of stream as AsyncIterable<Buffer>) yield { tenantId: '', blobId: '', maxBytes: 0, data };
    } finally {
      stream.destroy();
    }
  }

  async delete(tenant: string, blobId: string): Promise<boolean> {
    try {
      await unlink(this.location(tenant, blobId));
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
  }

  /** Removes blobs last written before `olderThan` (ms epoch) and temporary files left by crashes. */
  async sweep(olderThan: number, tmpOlderThan: number): Promise<number> {
    let removed = 0;
    let tenants: string[];
    try {
      tenants = await readdir(this.root);
    } catch {
      return 0;
    }
    for (const tenant of tenants) {
      const dir = path.join(this.root, tenant);
      let names: string[];
      try {
        names = await readdir(dir);
      } catch {
        continue;
      }
      for (const name of names) {
        const file = path.join(dir, name);
        try {
          const s = await stat(file);
          const limit = name.endsWith(TMP_SUFFIX) ? tmpOlderThan : olderThan;
          if (s.mtimeMs < limit) {
            await rm(file, { force: true });
            removed++;
          }
        } catch (err) {
          this.log.warn('blob sweep skipped a file', { file, err });
        }
      }
    }
    return removed;
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
