// Ingestion and export jobs of a tenant, and the tasks of an index: list (last 50), read (with
// stuck-job detection), cancel/delete, progress streams and admin requeue. Validated and
// authorized now; they come with the job runner (501 until then).
import { Type } from '@sinclair/typebox';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { JobView } from '../schemas.js';
import { IndexParams, JobParams, pending } from './common.js';

const MISSING = 'Job records (the background job runner)';

export function jobRoutes(deps: RouterDeps): Route[] {
  const routes: Route[] = [
    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/tasks',
      operationId: 'listIndexTasks',
      summary: 'Ingestion and export jobs of an index',
      tags: ['indexes'],
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'Tasks, newest first.', schema: Type.Array(JobView) },
      errors: ['index_not_found', 'not_implemented'],
      handler: pending(deps, MISSING),
    }),
  ];
  for (const [kind, base] of [
    ['ingestion', '/v1/ingestion-jobs'],
    ['export', '/v1/export-jobs'],
  ] as const) {
    const tags = [`${kind} jobs`];
    const Kind = kind === 'ingestion' ? 'Ingestion' : 'Export';
    routes.push(
      defineRoute({
        method: 'GET',
        path: base,
        operationId: `list${Kind}Jobs`,
        summary: `The last 50 ${kind} jobs of the tenant`,
        tags,
        access: 'private',
        tenant: true,
        response: { description: 'Jobs, newest first.', schema: Type.Array(JobView) },
        errors: ['not_implemented'],
        handler: pending(deps, MISSING),
      }),
      defineRoute({
        method: 'GET',
        path: `${base}/{job_id}`,
        operationId: `get${Kind}Job`,
        summary: `Read an ${kind} job (a job stuck in processing is requeued or failed)`,
        tags,
        access: 'private',
        tenant: true,
        params: JobParams,
        response: { description: 'The job.', schema: JobView },
        errors: ['job_not_found', 'not_implemented'],
        handler: pending(deps, MISSING),
      }),
      defineRoute({
        method: 'DELETE',
        path: `${base}/{job_id}`,
        operationId: `delete${Kind}Job`,
        summary: `Cancel a running ${kind} job or delete a finished one`,
        tags,
        access: 'private',
        tenant: true,
        params: JobParams,
        response: { description: 'The job after cancelation, or `{job_id, deleted: true}`.', schema: JobView },
        errors: ['job_not_found', 'not_implemented'],
        handler: pending(deps, MISSING),
      }),
      defineRoute({
        method: 'GET',
        path: `${base}/{job_id}/stream`,
        operationId: `stream${Kind}Job`,
        summary: `Server-sent events of ${kind} job progress`,
        description: 'Takes no tenant parameters: the job id and the key decide.',
        tags,
        access: 'private',
        params: JobParams,
        response: { description: 'An SSE stream (text/event-stream).', contentType: 'text/event-stream' },
        errors: ['job_not_found', 'not_implemented'],
        notImplemented: `${Kind} job progress streams (server-sent events)`,
      }),
      defineRoute({
        method: 'POST',
        path: `${base}/{job_id}/requeue`,
        operationId: `requeue${Kind}Job`,
        summary: `Requeue a failed ${kind} job (administrators only)`,
        tags,
        access: 'admin',
        tenant: true,
        params: JobParams,
        response: { description: 'The job, queued again.', schema: JobView },
        errors: ['job_not_found', 'conflict', 'not_implemented'],
        handler: pending(deps, MISSING),
      }),
    );
  }
  routes.push(
    defineRoute({
      method: 'GET',
      path: '/v1/export-jobs/{job_id}/download',
      operationId: 'downloadExport',
      summary: 'Download the file of a completed export job',
      tags: ['export jobs'],
      access: 'private',
      tenant: true,
      params: JobParams,
      response: { description: 'The export: a JSON array of documents.', contentType: 'application/json' },
      errors: ['job_not_found', 'file_not_found', 'not_implemented'],
      handler: pending(deps, MISSING),
    }),
  );
  return routes;
}
