// Bulk ingestion entry points: multipart upload (CSV, JSON array, JSONL), shopping-feed import,
// presigned upload (upload-url, the signed PUT, then ingest/cloud-complete) and ingest/start.
// Every one stores its input as a blob and records an ingestion job that runs on the index's
// sequencer; inputs of at most `backgroundJobThreshold` records run to their end before the
// answer (`run: "immediate"`), larger ones in the background (`run: "background"`).
//
// Upload limits (spec "Limits"): the tenant's limit (tenant override, else plan, else 10 MB)
// applies to every upload; a direct upload over `cloudRequiredOverBytes` (50 MB) is refused with
// a 413 that explains the presigned route; over `presignedOverBytes` (20 MB) it is accepted
// with a hint to use the presigned route next time.
import { Type } from '@sinclair/typebox';
import type { JobRecord } from '../../coordinator/coordinator.js';
import { hasControlChar } from '../../node/runtime/document.js';
import { fail, invalid } from '../../node/runtime/errors.js';
import type { DocumentMapping, UploadFormat } from '../../node/runtime/job-state.js';
import type { ShardApi } from '../../node/runtime/shard-api.js';
import type { ResolvedIndex } from '../data-plane.js';
import { newBlobId, newJobId, type StartResponse } from '../job-service.js';
import { MAX_FIELDS, MAX_PARTS, receiveMultipart, receiveRaw, tooLarge } from '../multipart.js';
import { defineRoute, type Req, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { CloudComplete, DocumentInput, DocumentsBody, MAX_INLINE_DOCUMENTS, PlainText, StartIngestion, UploadReceived, UploadUrl, UploadUrlRequest } from '../schemas.js';
import type { TenantContext } from '../tenant-context.js';
import { resolveFormat } from '../upload-format.js';
import { IndexParams, tenantOf } from './common.js';
import { toDocument } from './documents.js';
import { assertWritable } from './indexes.js';

const tags = ['ingestion'];
const ENCODINGS = new Set(['utf-8', 'utf8', 'utf-16le', 'utf-16be', 'windows-1252', 'latin1', 'iso-8859-1']);
const UPLOAD_ID = /^up_[0-9a-f]{24}$/;
const META_SUFFIX = '-meta';
/** `source_type` and `source_filename` are labels shown in job listings: bounded, no control characters. */
const SOURCE_TYPE_MAX = 64;
const SOURCE_FILENAME_MAX = 512;

/** What the presigned PUT records next to the file, for cloud-complete to read. */
interface UploadMeta {
  index_id: string;
  size: number;
  first_byte: number;
  /** the content's start (RecordScan.head); absent in descriptions stored before it was kept */
  head?: string;
  estimates: Record<UploadFormat, number>;
  content_type: string | null;
  /** the nodes that hold the file: its home when it was stored, then its copies (absent before copies existed) */
  holders?: string[];
}

export function ingestionRoutes(deps: RouterDeps): Route[] {
  const { data, config, signer } = deps;
  const started = { description: 'The ingestion job that was started (after its run, when it was small).', schema: StartIngestion };
  const errors = ['index_not_found', 'document_limit', 'payload_too_large', 'conflict', 'unavailable'] as const;

  /** Upload limits of a tenant for the direct routes, and what a 413 should suggest. */
  const directLimit = (t: TenantContext, index: string) => {
    const own = t.limits.upload_limit_bytes;
    const presigned = `upload it through a presigned URL: POST /v1/indexes/${index}/upload-url, PUT the file to the upload_url it returns, then POST /v1/indexes/${index}/ingest/cloud-complete`;
    if (own > config.cloudRequiredOverBytes) {
      return { limit: config.cloudRequiredOverBytes, hint: `files over ${config.cloudRequiredOverBytes} bytes must not be sent directly; ${presigned} (limit ${own} bytes).` };
    }
    return { limit: own, hint: `the upload limit of tenant '${t.id}' is ${own} bytes (${t.uploadLimitSource}); split the file, or ask an administrator for a higher limit.` };
  };

  const upload = (mapping: DocumentMapping, sourceType: string) => async (req: Req<{ index_id: string }>): Promise<StartResponse & { hint?: string }> => {
    const t = tenantOf(req);
    const named = req.params.index_id;
    const target = await data.resolve(t.id, named);
    assertWritable(target, named);
    const { limit, hint } = directLimit(t, named);
    const jobId = newJobId('ingestion');
    const seq = await deps.jobs.sequencer(t.id, target.physical);
    const file = await receiveMultipart(req.bodyStream, req.contentType, req.contentLength, {
      tenantId: t.id,
      blobId: jobId,
      limit,
      hint,
      scanCap: config.backgroundJobThreshold,
      put: (chunks) => seq.api.putBlob(chunks),
      discard: () => deps.jobs.deleteBlob(t.id, { node: seq.node, id: jobId, size: 0 }),
    });
    const copies = await deps.jobs.copyBlob(t.id, jobId, seq, target.physical);
    const blob = { node: seq.node as string, id: jobId, size: Number(file.ref.size), copies };
    let rec: JobRecord;
    try {
      const explicit = file.fields.format ?? null;
      if (explicit !== null && !['csv', 'json', 'jsonl'].includes(explicit)) invalid(['body', 'format'], 'Expected one of: "csv", "json", "jsonl".', 'literal_error');
      const encoding = checkEncoding(file.fields.encoding, ['body', 'encoding']);
      const labelledType = checkLabel(file.fields.source_type, 'source_type', SOURCE_TYPE_MAX);
      const labelledName = checkLabel(file.fields.source_filename, 'source_filename', SOURCE_FILENAME_MAX);
      const { format, source } = resolveFormat({ explicit, filename: file.filename, contentType: file.contentType, firstByte: file.scan.firstByte, head: file.scan.head });
      rec = await deps.jobs.createIngestion(t, target, {
        jobId,
        blob,
        format,
        formatSource: source,
        mapping,
        encoding,
        sourceType: labelledType ?? sourceType,
        sourceFilename: labelledName ?? (file.filename?.slice(0, SOURCE_FILENAME_MAX) || null),
        estimate: file.scan.estimate(format),
      });
    } catch (err) {
      await deps.jobs.deleteBlob(t.id, blob);
      throw err;
    }
    const res = await deps.jobs.start(rec);
    return blob.size > config.presignedOverBytes ? { ...res, hint: `Files over ${config.presignedOverBytes} bytes should use a presigned upload (POST /v1/indexes/${named}/upload-url).` } : res;
  };

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/upload',
      operationId: 'uploadFile',
      summary: 'Upload a CSV, JSON or JSONL file',
      description:
        'multipart/form-data with one part `file` and optional fields `format`: csv, json, jsonl, otherwise from the file name (.csv/.tsv, .json, .jsonl/.ndjson), else the part content type, else the first character (`[` JSON; `{` JSON Lines, or JSON when its first key is `documents`; anything else CSV), in that order, a label being believed even when the content disagrees; ' +
        '`encoding`: otherwise from a BOM or sniffed, invalid UTF-8 is read as Windows-1252; `source_type`, `source_filename`: labels of at most 64 and 512 characters without control characters. ' +
        `At most ${MAX_PARTS} parts and ${MAX_FIELDS} fields; a second \`file\` part or a field given twice is refused (422 at the field). ` +
        'JSON: an array of documents, or an object `{"documents": [...]}` (its other keys are skipped), or objects one after another; a single object without a `documents` array fails the job. JSON Lines: one document per line. ' +
        'CSV needs a header row (delimiter `,` `;` tab or `|`, sniffed; a header row that is JSON fails the job); columns id/title/desc/manufacturer (or name, description, brand, ...) map to the document, the rest to `raw`, numeric cells become numbers; a row with more non-empty cells than the header has columns fails. ' +
        'A record without an id field gets `h-` and a hash of its content as id; an id that is null or empty fails the record, as does a JSON number beyond ±1.8e308. ' +
        'A row that cannot be read fails alone and is listed with its line on the job. Size limit: GET /v1/indexes/file-size-limit; over 50 MB only through a presigned upload (413 otherwise).',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      bodyMode: 'multipart',
      response: started,
      errors: [...errors],
      handler: upload('documents', 'upload'),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/import/merchant-shopping',
      operationId: 'importShoppingFeed',
      summary: 'Import a shopping-feed CSV',
      description:
        'multipart/form-data with field `file`: a merchant shopping feed (comma or tab separated) with columns id, title, description, link, image_link, price ("19.99 USD"), sale_price, brand, gtin, mpn, availability, google_product_category, product_type, custom_label_0..4 (a `g:` prefix is accepted). ' +
        'Mapped to documents: title, desc = description, manufacturer = brand, raw {url, image, price, currency, sale_price, category, gtin, mpn, availability, ...}; a price that does not read as a finite amount with an optional currency ("abc", "-5 USD", "1e309 USD") is kept as the text of the feed. ' +
        'Same multipart rules as upload; a row with more non-empty cells than the header has columns fails.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      bodyMode: 'multipart',
      response: started,
      errors: [...errors],
      handler: upload('shopping-feed', 'merchant-shopping'),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/upload-url',
      operationId: 'createUploadUrl',
      summary: 'A presigned URL to upload a large file to',
      description:
        'Returns an HMAC-signed, expiring URL (relative to the service) to PUT the raw file to, without an API key, up to the tenant\'s upload limit; then POST .../ingest/cloud-complete with the upload_id. The route for files over 20 MB, and the only one over 50 MB.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: Type.Optional(UploadUrlRequest),
      response: { description: 'Where and until when to upload.', schema: UploadUrl },
      errors: ['index_not_found', 'payload_too_large', 'conflict'],
      async handler(req) {
        const t = tenantOf(req);
        const named = req.params.index_id;
        const target = await data.resolve(t.id, named);
        assertWritable(target, named);
        const max = t.limits.upload_limit_bytes;
        const size = (req.body as { size_bytes?: number } | undefined)?.size_bytes;
        if (size !== undefined && size > max) throw tooLarge(max, `the upload limit of tenant '${t.id}' is ${max} bytes (${t.uploadLimitSource}); split the file, or ask an administrator for a higher limit.`);
        const uploadId = newBlobId('up');
        const expires = Math.floor(Date.now() / 1000) + config.presignTtlSeconds;
        const index = target.index.index_id as string;
        const signature = signer.sign('upload', [t.id, index, uploadId, String(expires), String(max)]);
        const q = new URLSearchParams({ tenant: t.id, index, expires: String(expires), max_bytes: String(max), signature });
        return {
          upload_id: uploadId,
          object_key: uploadId,
          upload_url: `/v1/uploads/${uploadId}?${q.toString()}`,
          method: 'PUT' as const,
          expires_at: new Date(expires * 1000).toISOString(),
          max_bytes: max,
          complete_url: `/v1/indexes/${named}/ingest/cloud-complete`,
        };
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/uploads/{upload_id}',
      operationId: 'putPresignedUpload',
      summary: 'Upload a file to a presigned URL',
      description: 'The raw file as the body (any content type). No API key: the signature in the URL names the tenant, the index, the size cap and the expiry. 403 `upload_url_invalid` when it does not match or has expired.',
      tags,
      access: 'none',
      params: Type.Object({ upload_id: Type.String({ pattern: UPLOAD_ID.source, description: 'As returned by upload-url.' }) }),
      query: Type.Object({
        tenant: Type.String({ maxLength: 128 }),
        index: Type.String({ maxLength: 128 }),
        expires: Type.Integer({ minimum: 0 }),
        max_bytes: Type.Integer({ minimum: 0 }),
        signature: Type.String({ maxLength: 64 }),
      }),
      bodyMode: 'stream',
      response: { description: 'The file was stored.', schema: UploadReceived },
      errors: ['upload_url_invalid', 'payload_too_large', 'unavailable'],
      async handler(req) {
        const { upload_id } = req.params;
        const q = req.query;
        if (!signer.verify('upload', [q.tenant, q.index, upload_id, String(q.expires), String(q.max_bytes)], q.signature)) fail('upload_url_invalid', { reason: 'the signature does not match' });
        if (q.expires * 1000 < Date.now()) fail('upload_url_invalid', { reason: 'it has expired' });
        const tenant = q.tenant as TenantContext['id'];
        const home = await deps.jobs.uploadHome(tenant, upload_id);
        const file = await receiveRaw(req.bodyStream, req.contentType, req.contentLength, {
          tenantId: tenant,
          blobId: upload_id,
          limit: q.max_bytes,
          hint: `this upload URL accepts at most ${q.max_bytes} bytes (the tenant's upload limit).`,
          scanCap: config.backgroundJobThreshold,
          put: (chunks) => home.api.putBlob(chunks),
        });
        // the file and its description go to the partition's followers too: after a failover the
        // upload's home is a promoted follower, which then holds both
        const copies = await deps.jobs.copyBlob(tenant, upload_id, home, home.place);
        const meta: UploadMeta = {
          index_id: q.index,
          size: Number(file.ref.size),
          holders: [home.node, ...copies],
          first_byte: file.scan.firstByte,
          head: file.scan.head,
          estimates: { csv: file.scan.estimate('csv'), json: file.scan.estimate('json'), jsonl: file.scan.estimate('jsonl') },
          content_type: file.contentType,
        };
        const metaBytes = Buffer.from(JSON.stringify(meta));
        await home.api.putBlob(once({ tenantId: tenant, blobId: `${upload_id}${META_SUFFIX}`, maxBytes: 0, data: metaBytes }));
        await deps.jobs.copyBlob(tenant, `${upload_id}${META_SUFFIX}`, home, home.place);
        return { upload_id, object_key: upload_id, size_bytes: meta.size, sha256: file.ref.sha256 };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/ingest/cloud-complete',
      operationId: 'completeCloudUpload',
      summary: 'Process a file uploaded through a presigned URL',
      description:
        'Body `{upload_id}` (or `object_key`), optional `format`, `encoding`, `source_filename`, `mapping`. The format is `format`, else from `source_filename` (or `filename`), else the content type of the PUT, else the first character, and the file is read as on POST .../upload. ' +
        'The file must have been PUT to the upload_url of POST .../upload-url for this index (404 `file_not_found` otherwise).',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: CloudComplete,
      response: started,
      errors: ['index_not_found', 'document_limit', 'file_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const named = req.params.index_id;
        const body = req.body;
        const uploadId = body.upload_id ?? body.object_key;
        if (uploadId === undefined) return invalid(['body', 'upload_id'], 'Field required: the upload_id returned by upload-url.', 'missing');
        const target = await data.resolve(t.id, named);
        assertWritable(target, named);
        if (!UPLOAD_ID.test(uploadId)) fail('file_not_found', { file: uploadId.slice(0, 100) });
        const encoding = checkEncoding(body.encoding, ['body', 'encoding']);
        const home = await deps.jobs.uploadHome(t.id, uploadId);
        const meta = await readMeta(home.api, t.id, uploadId);
        if (!meta || meta.index_id !== target.index.index_id) fail('file_not_found', { file: uploadId });
        const filename = body.source_filename ?? body.filename ?? null;
        const { format, source } = resolveFormat({ explicit: body.format ?? null, filename, contentType: meta.content_type, firstByte: meta.first_byte, head: meta.head });
        const rec = await deps.jobs.createIngestion(t, target, {
          jobId: newJobId('ingestion'),
          blob: { node: home.node, id: uploadId, size: meta.size, copies: (meta.holders ?? []).filter((n) => n !== home.node) },
          format,
          formatSource: source,
          mapping: body.mapping ?? 'documents',
          encoding,
          sourceType: 'cloud',
          sourceFilename: filename,
          estimate: meta.estimates[format],
        });
        // one job per upload: a second cloud-complete finds no upload
        await deps.jobs.deleteBlob(t.id, { node: home.node, id: `${uploadId}${META_SUFFIX}`, size: 0, copies: meta.holders ?? [] });
        return deps.jobs.start(rec);
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/ingest/start',
      operationId: 'startIngestion',
      summary: 'Ingest documents, immediately or as a background job depending on size',
      description: `Body \`{documents: [...]}\` or a raw array (at most ${MAX_INLINE_DOCUMENTS * 10}; the request body limit applies). At most \`backgroundJobThreshold\` documents run before the answer; more run as a background job. Invalid documents refuse the request (422), as on POST .../documents.`,
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      query: Type.Object({
        source_type: PlainText(SOURCE_TYPE_MAX, { description: 'Label stored on the job and shown in job listings.', default: 'api', minLength: 1 }),
        source_filename: Type.Optional(PlainText(SOURCE_FILENAME_MAX, { description: 'File name stored on the job and shown in job listings.' })),
      }),
      body: Type.Union([DocumentsBody, Type.Array(DocumentInput, { maxItems: MAX_INLINE_DOCUMENTS * 10 })], { description: '`{documents: [...]}` or a raw array of documents.' }),
      response: started,
      errors: ['index_not_found', 'document_limit', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const named = req.params.index_id;
        const target = await data.resolve(t.id, named);
        assertWritable(target, named);
        const inputs = (Array.isArray(req.body) ? req.body : req.body.documents) as Parameters<typeof toDocument>[0][];
        return startInline(t, target, inputs.map(toDocument), req.query.source_type, req.query.source_filename ?? null);
      },
    }),
  ];

  /** Inline documents as a JSON Lines blob on the sequencer, then the same job as an upload. */
  async function startInline(t: TenantContext, target: ResolvedIndex, docs: ReturnType<typeof toDocument>[], sourceType: string, sourceFilename: string | null): Promise<StartResponse> {
    const jobId = newJobId('ingestion');
    const seq = await deps.jobs.sequencer(t.id, target.physical);
    const ref = await seq.api.putBlob(jsonLines(t.id, jobId, docs));
    const copies = await deps.jobs.copyBlob(t.id, jobId, seq, target.physical);
    let rec: JobRecord;
    const blob = { node: seq.node as string, id: jobId, size: Number(ref.size), copies };
    try {
      rec = await deps.jobs.createIngestion(t, target, { jobId, blob, format: 'jsonl', formatSource: 'api', mapping: 'documents', encoding: 'utf-8', sourceType, sourceFilename, estimate: docs.length });
    } catch (err) {
      await deps.jobs.deleteBlob(t.id, blob);
      throw err;
    }
    return deps.jobs.start(rec);
  }
}

/** A label field of a multipart upload, checked as ingest/start checks its query parameters; undefined when not given. */
function checkLabel(value: string | undefined, name: string, max: number): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (hasControlChar(value)) invalid(['body', name], `At most ${max} characters, without control characters.`, 'string_pattern_mismatch');
  if (value.length > max) invalid(['body', name], `At most ${max} characters, without control characters.`, 'string_too_long');
  return value;
}

function checkEncoding(value: string | undefined, loc: (string | number)[]): string | null {
  if (value === undefined || value === '') return null;
  const v = value.trim().toLowerCase();
  if (!ENCODINGS.has(v)) invalid(loc, `Unknown encoding; use one of ${[...ENCODINGS].join(', ')}.`, 'value_error');
  return v === 'utf8' ? 'utf-8' : v;
}

async function* jsonLines(tenantId: string, blobId: string, docs: readonly object[]) {
  let first = true;
  const CHUNK = 256 * 1024;
  let parts: string[] = [];
  let size = 0;
  for (const d of docs) {
    const line = JSON.stringify(d) + '\n';
    parts.push(line);
    size += line.length;
    if (size >= CHUNK) {
      yield { tenantId: first ? tenantId : '', blobId: first ? blobId : '', maxBytes: 0, data: Buffer.from(parts.join(''), 'utf8') };
      first = false;
      parts = [];
      size = 0;
    }
  }
  if (size > 0 || first) yield { tenantId: first ? tenantId : '', blobId: first ? blobId : '', maxBytes: 0, data: Buffer.from(parts.join(''), 'utf8') };
}

async function* once<T>(value: T): AsyncIterable<T> {
  yield value;
}

async function readMeta(api: ShardApi, tenant: string, uploadId: string): Promise<UploadMeta | null> {
  const parts: Uint8Array[] = [];
  try {
    for await (const c of api.getBlob({ tenantId: tenant, blobId: `${uploadId}${META_SUFFIX}`, offset: 0 })) parts.push(c.data);
  } catch (err) {
    if ((err as { code?: string }).code === 'file_not_found') return null;
    throw err;
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8')) as UploadMeta;
  } catch {
    return null;
  }
}
