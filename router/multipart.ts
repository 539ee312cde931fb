// Streaming uploads: a multipart/form-data body (field `file`, optional `format`, `encoding`,
// `source_type`) or a raw body (presigned PUT) goes straight from the socket into a blob on a
// shard node, chunk by chunk, never whole in memory. The size limit is enforced while the bytes
// flow (a declared Content-Length over it is refused before reading); the RecordScan sees every
// chunk on the way to tell a small file from a large one. One upload is one file: a second `file`
// part, or a field given twice, is refused (422 at the field) rather than one of them dropped.
import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type * as pb from '../proto/gen/shard.js';
import { SuggestError, suggestError, validationError } from '../node/runtime/errors.js';
import { RecordScan } from './upload-format.js';

export interface UploadTarget {
  tenantId: string;
  blobId: string;
  /** largest accepted file */
  limit: number;
  /** what the 413 says to do instead */
  hint: string;
  /** records above which the scan stops counting (the immediate/background threshold) */
  scanCap: number;
  put(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef>;
  /** removes the blob `put` stored, when the upload is refused after all */
  discard?(ref: pb.BlobRef): Promise<void>;
}

export interface ReceivedFile {
  ref: pb.BlobRef;
  filename: string | null;
  /** content type of the file part (multipart) or of the request (raw) */
  contentType: string | null;
  fields: Record<string, string>;
  scan: RecordScan;
}

/** Room for multipart boundaries and part headers around the file when checking Content-Length. */
const MULTIPART_OVERHEAD = 64 * 1024;
/** Blob messages are coalesced to about this size (fewer gRPC messages, fewer writes). */
const CHUNK_TARGET = 256 * 1024;
const FIELDS = new Set(['format', 'encoding', 'source_type', 'source_filename']);
/**
 * Parts and fields a multipart body may have. An upload needs one file and four fields; the room
 * above that is for form builders that add fields or empty file inputs of their own. Past either
 * limit the parser drops the remaining parts, which could be the file itself: the upload is
 * refused rather than answered as if the file were missing.
 */
export const MAX_PARTS = 40;
export const MAX_FIELDS = 20;
const FIELD_HINT = 'send the file in the field `file` and at most the fields format, encoding, source_type and source_filename.';

export function tooLarge(limit: number, hint: string): SuggestError {
  return suggestError('payload_too_large', { limit, hint });
}

/** The file of a multipart upload, stored as a blob. 413 over the limit, 422 without a `file` part or with too many parts. */
export function receiveMultipart(body: Readable | null, contentType: string, contentLength: number | null, target: UploadTarget): Promise<ReceivedFile> {
  if (contentLength !== null && contentLength > target.limit + MULTIPART_OVERHEAD) return Promise.reject(tooLarge(target.limit, target.hint));
  if (!body) return Promise.reject(missingFile());
  return new Promise<ReceivedFile>((resolve, reject) => {
    let settled = false;
    const settle = (err: unknown, value?: ReceivedFile) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve(value!);
    };
    let bb: busboy.Busboy;
    try {
      // busboy reports `partsLimit` once the limit-th part has ended, before anything is dropped:
      // one more than allowed makes the event mean "too many".
      bb = busboy({ headers: { 'content-type': contentType }, limits: { fields: MAX_FIELDS, fieldSize: 4096, parts: MAX_PARTS + 1, headerPairs: 100 } });
    } catch (err) {
      settle(invalidBody(`the multipart body cannot be read (${(err as Error).message})`));
      return;
    }
    const fields: Record<string, string> = {};
    let stored: Promise<ReceivedFile> | null = null;
    const refuse = (err: SuggestError) => {
      if (settled) return;
      settle(err);
      // stops the file part too; a file already stored is removed
      bb.destroy();
      stored?.then((f) => target.discard?.(f.ref)).catch(() => undefined);
    };
    bb.on('field', (name, value) => {
      if (!FIELDS.has(name)) return;
      if (Object.hasOwn(fields, name)) refuse(repeated(name, `The field \`${name}\` is given twice; send it once.`));
      else fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      if (name !== 'file' || stored) {
        // drained unread; a refusal destroys it with an error that nothing else listens for
        stream.on('error', () => undefined);
        stream.resume();
        if (name === 'file') refuse(repeated('file', 'Only one file per upload: the body has a second part named `file`; send each file in an upload of its own.'));
        return;
      }
      const scan = new RecordScan(target.scanCap);
      stored = target
        .put(blobChunks(stream, target, scan))
        .then((ref) => ({ ref, filename: info.filename || null, contentType: info.mimeType || null, fields, scan }));
      // a failed store (too large, node down) answers now; the transport drains the rest
      stored.catch((err: unknown) => settle(err));
    });
    bb.on('partsLimit', () => refuse(tooManyParts(`more than ${MAX_PARTS} parts`)));
    bb.on('fieldsLimit', () => refuse(tooManyParts(`more than ${MAX_FIELDS} fields`)));
    bb.on('error', (err: unknown) => settle(invalidBody(`the multipart body cannot be read (${(err as Error).message})`)));
    bb.on('close', () => {
      if (!stored) settle(missingFile());
      else stored.then((v) => settle(null, v), (err: unknown) => settle(err));
    });
    body.on('error', (err) => {
      settle(err);
      bb.destroy();
    });
    body.pipe(bb);
  });
}

/** A raw request body (presigned PUT) stored as a blob. */
export async function receiveRaw(body: Readable | null, contentType: string, contentLength: number | null, target: UploadTarget): Promise<ReceivedFile> {
  if (contentLength !== null && contentLength > target.limit) throw tooLarge(target.limit, target.hint);
  const scan = new RecordScan(target.scanCap);
  const source: Readable | AsyncIterable<Buffer> = body ?? emptySource();
  const ref = await target.put(blobChunks(source, target, scan));
  return { ref, filename: null, contentType: contentType || null, fields: {}, scan };
}

async function* emptySource(): AsyncIterable<Buffer> {}

/** The blob messages of a byte stream: the first names the blob; the size is checked as bytes pass. */
async function* blobChunks(stream: AsyncIterable<Buffer | Uint8Array>, target: UploadTarget, scan: RecordScan): AsyncIterable<pb.BlobChunk> {
  let first = true;
  let size = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const message = (data: Buffer): pb.BlobChunk => {
    const m = first ? { tenantId: target.tenantId, blobId: target.blobId, maxBytes: target.limit, data } : { tenantId: '', blobId: '', maxBytes: 0, data };
    first = false;
    return m;
  };
  for await (const raw of stream) {
    const data = Buffer.isBuffer(raw) ? raw : Buffer.from(raw);
    size += data.length;
    if (size > target.limit) throw tooLarge(target.limit, target.hint);
    scan.feed(data);
    pending.push(data);
    pendingBytes += data.length;
    if (pendingBytes >= CHUNK_TARGET) {
      yield message(Buffer.concat(pending, pendingBytes));
      pending = [];
      pendingBytes = 0;
    }
  }
  if (pendingBytes > 0 || first) yield message(Buffer.concat(pending, pendingBytes));
}

function missingFile(): SuggestError {
  return validationError([{ loc: ['body', 'file'], msg: 'Field required: send the file in the multipart field `file`.', type: 'missing' }]);
}

function repeated(field: string, msg: string): SuggestError {
  return validationError([{ loc: ['body', field], msg, type: 'value_error' }]);
}

function tooManyParts(what: string): SuggestError {
  return validationError([{ loc: ['body'], msg: `Too many parts in the multipart body (${what}): ${FIELD_HINT}`, type: 'too_long' }]);
}

function invalidBody(msg: string): SuggestError {
  return validationError([{ loc: ['body'], msg, type: 'value_error' }]);
}
