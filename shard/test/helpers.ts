// Shared test fixtures for the shard tests: temp data directories, documents, index refs.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type * as pb from '../../proto/gen/shard.js';
import { decodeDocument, encodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { partitionOf } from '../../node/runtime/hash.js';
import type { Logger } from '../../node/runtime/log.js';

export async function tempDir(prefix = 'shard-test-'): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export function doc(id: string, title = `title of ${id}`, raw: SuggestDocument['raw'] = {}): pb.EncodedDocument {
  return { id, body: encodeDocument({ id, title, desc: '', manufacturer: '', raw }) };
}

export function titleOf(body: Buffer | undefined): string | undefined {
  return body === undefined ? undefined : decodeDocument(body).title;
}

/** A ref whose partition is where the shared hash places it. */
export function refOf(tenantId: string, physicalIndexId: string, opts: { part?: number; parts?: number; partitions?: number; epoch?: number } = {}): pb.IndexRef {
  const part = opts.part ?? 0;
  const partitions = opts.partitions ?? 8;
  return {
    tenantId,
    physicalIndexId,
    part,
    parts: opts.parts ?? 1,
    partition: partitionOf(tenantId, physicalIndexId, part, partitions),
    epoch: opts.epoch ?? 1,
  };
}

/** The rejection of a promise, asserting that it rejects. */
export async function rejection(p: Promise<unknown>): Promise<Error & { code?: string; status?: number }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: string; status?: number };
  }
  throw new Error('expected the promise to reject');
}

export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A logger that drops everything (tests assert on behaviour, not log lines). */
export const quietLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => quietLogger,
};
