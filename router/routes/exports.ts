// Export of an index: immediate GET, export/start (immediate or background job) and the download
// of an immediate export file. Validated and authorized now; 501 until the export pipeline lands.
import { Type } from '@sinclair/typebox';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { DocumentView, ExportStartBody, StartExport } from '../schemas.js';
import { IndexParams, pending } from './common.js';

const tags = ['export'];
const MISSING = 'Index export (the export pipeline)';

export function exportRoutes(deps: RouterDeps): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/export',
      operationId: 'exportIndex',
      summary: 'All documents of the index as JSON',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'A JSON array of documents.', schema: Type.Array(DocumentView) },
      errors: ['index_not_found', 'not_implemented'],
      handler: pending(deps, MISSING),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/export/start',
      operationId: 'startExport',
      summary: 'Start an export, immediate or background depending on size',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: ExportStartBody,
      response: { description: 'The export job; `download_url` is set once the file is ready.', schema: StartExport },
      errors: ['index_not_found', 'not_implemented'],
      handler: pending(deps, MISSING),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/exports/{filename}',
      operationId: 'downloadExportFile',
      summary: 'Download an immediate export file',
      tags,
      access: 'private',
      tenant: true,
      params: Type.Object({ filename: Type.String({ pattern: '^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$', description: 'File name as returned in download_url.' }) }),
      response: { description: 'The export: a JSON array of documents.', contentType: 'application/json' },
      errors: ['file_not_found', 'not_implemented'],
      handler: pending(deps, MISSING),
    }),
  ];
}
