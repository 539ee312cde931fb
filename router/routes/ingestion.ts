// Bulk ingestion entry points: multipart upload (CSV, JSON, JSONL), shopping-feed import,
// cloud-upload completion and ingest/start. Validated and authorized now; they start ingestion
// jobs, which arrive with the job runner (501 until then).
import { Type } from '@sinclair/typebox';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { CloudComplete, DocumentInput, DocumentsBody, MAX_INLINE_DOCUMENTS, StartIngestion } from '../schemas.js';
import { IndexParams, pending } from './common.js';

const tags = ['ingestion'];
const MISSING = 'Ingestion jobs (the background job runner)';

export function ingestionRoutes(deps: RouterDeps): Route[] {
  const started = { description: 'The ingestion job that was started.', schema: StartIngestion };
  const errors = ['index_not_found', 'document_limit', 'not_implemented'] as const;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/upload',
      operationId: 'uploadFile',
      summary: 'Upload a CSV, JSON or JSONL file',
      description: 'multipart/form-data with field `file` (and optional `format`: csv, json, jsonl; otherwise from the file name or content type). Size limit: see GET /v1/indexes/file-size-limit.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      bodyMode: 'multipart',
      response: started,
      errors: [...errors],
      handler: pending(deps, MISSING),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/import/merchant-shopping',
      operationId: 'importShoppingFeed',
      summary: 'Import a shopping-feed CSV',
      description: 'multipart/form-data with field `file`.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      bodyMode: 'multipart',
      response: started,
      errors: [...errors],
      handler: pending(deps, MISSING),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/ingest/cloud-complete',
      operationId: 'completeCloudUpload',
      summary: 'Process a file uploaded through a presigned URL',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: CloudComplete,
      response: started,
      errors: [...errors],
      handler: pending(deps, MISSING),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/ingest/start',
      operationId: 'startIngestion',
      summary: 'Ingest documents, immediately or as a background job depending on size',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      query: Type.Object({
        source_type: Type.String({ default: 'api', minLength: 1, maxLength: 64, description: 'Label stored on the job.' }),
        source_filename: Type.Optional(Type.String({ maxLength: 512 })),
      }),
      body: Type.Union([DocumentsBody, Type.Array(DocumentInput, { maxItems: MAX_INLINE_DOCUMENTS * 10 })], { description: '`{documents: [...]}` or a raw array of documents.' }),
      response: started,
      errors: [...errors],
      handler: pending(deps, MISSING),
    }),
  ];
}
