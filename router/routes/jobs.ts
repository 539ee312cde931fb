// Ingestion and export jobs of a tenant, and the tasks of an index: list (last 50), read (with
// stuck-job detection), cancel/delete, progress streams (SSE) and admin requeue, plus the
// download of a finished export job.
//
// Progress streams: event `progress` with the job view on every change, `done` with the final
// view (then the stream ends), `deleted` when the job is deleted. The event id is the job's
// revision (`state.rev`): a client reconnecting with Last-Event-ID gets the current view only if
// it changed since. Comment lines are sent as heartbeats. The route takes no tenant parameters:
// the job id and the key decide (an admin key finds the job in any tenant).
import { Type } from '@sinclair/typebox';
import type { JobKind, JobRecord, KeyRecord } from '../../coordinator/coordinator.js';
import { fail } from '../../node/runtime/errors.js';
import { JobId, type TenantId } from '../../node/runtime/ids.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { sseReply } from '../sse.js';
import { JobDeleted, JobView } from '../schemas.js';
import { downloadReply } from './exports.js';
import { IndexParams, JobParams, tenantOf } from './common.js';

const LIST_LIMIT = 50;
const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);
const StreamHeaders = Type.Object({ 'Last-Event-ID': Type.Optional(Type.String({ maxLength: 128, description: 'Resume after this event id.' })) });

export function jobRoutes(deps: RouterDeps): Route[] {
  const { coordinator, data } = deps;

  /** The job a stream asks for: the key's own tenant, or for an admin key whichever tenant has it. */
  const findForKey = async (key: KeyRecord, jobId: string, kind: JobKind): Promise<JobRecord> => {
    if (key.tenant_id !== null) return deps.jobs.get(key.tenant_id, jobId, kind);
    for (const t of await coordinator.listTenants()) {
      const rec = await coordinator.getJob(t.tenant_id, JobId(jobId));
      if (rec && rec.kind === kind) return deps.jobs.inspect(rec);
    }
    return fail('job_not_found', { job: jobId });
  };

  const routes: Route[] = [
    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/tasks',
      operationId: 'listIndexTasks',
      summary: 'Ingestion and export jobs of an index',
      description: `The last ${LIST_LIMIT} jobs of the index (staging builds of its physical indexes included), newest first.`,
      tags: ['indexes'],
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'Tasks, newest first.', schema: Type.Array(JobView) },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const jobs = await coordinator.listJobs(t.id, null, LIST_LIMIT * 4);
        const own = jobs.filter((j) => j.index_id === target.index.index_id && (j.kind === 'ingestion' || j.kind === 'export'));
        // a task named by its physical id lists only that physical index's jobs
        const mine = target.viaPhysical ? own.filter((j) => j.state.physical_index_id === target.physical.physical_index_id) : own;
        return mine.slice(0, LIST_LIMIT).map((j) => deps.jobs.view(j));
      },
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
        summary: `The last ${LIST_LIMIT} ${kind} jobs of the tenant`,
        description:
          `Newest first, at most ${LIST_LIMIT}. Takes the tenant parameters only; other query parameters (\`limit\`, \`index_id\`, ...) are ignored, as on every route. ` +
          'The jobs of one index: GET /v1/indexes/{index_id}/tasks.',
        tags,
        access: 'private',
        tenant: true,
        response: { description: 'Jobs, newest first.', schema: Type.Array(JobView) },
        errors: ['unavailable'],
        async handler(req) {
          const t = tenantOf(req);
          return (await coordinator.listJobs(t.id, kind, LIST_LIMIT)).map((j) => deps.jobs.view(j));
        },
      }),
      defineRoute({
        method: 'GET',
        path: `${base}/{job_id}`,
        operationId: `get${Kind}Job`,
        summary: `Read an ${kind} job (a job stuck in processing is requeued or failed)`,
        description:
          'A `processing` job whose runner is gone (its lease lapsed: the node stopped) is requeued and started again, resuming after its last finished batch, up to `jobMaxAttempts` starts; then it fails with the reason. A `queued` job nobody picked up is started again. The answer shows the job after that.',
        tags,
        access: 'private',
        tenant: true,
        params: JobParams,
        response: { description: 'The job.', schema: JobView },
        errors: ['job_not_found', 'unavailable'],
        async handler(req) {
          const t = tenantOf(req);
          return deps.jobs.view(await deps.jobs.get(t.id, req.params.job_id, kind));
        },
      }),
      defineRoute({
        method: 'DELETE',
        path: `${base}/{job_id}`,
        operationId: `delete${Kind}Job`,
        summary: `Cancel a running ${kind} job or delete a finished one`,
        description: 'A queued or processing job is canceled (it stops at its next batch; what it wrote stays) and the canceled job is returned. A finished job is deleted with its file: `{job_id, deleted: true}`.',
        tags,
        access: 'private',
        tenant: true,
        params: JobParams,
        response: { description: 'The job after cancelation, or `{job_id, deleted: true}`.', schema: Type.Union([JobView, JobDeleted]) },
        errors: ['job_not_found', 'unavailable'],
        async handler(req) {
          const t = tenantOf(req);
          return deps.jobs.remove(t.id, req.params.job_id, kind);
        },
      }),
      defineRoute({
        method: 'GET',
        path: `${base}/{job_id}/stream`,
        operationId: `stream${Kind}Job`,
        summary: `Server-sent events of ${kind} job progress`,
        description:
          'Takes no tenant parameters: the job id and the key decide. Events: `progress` (the job view, on every change), `done` (the final view; the stream then ends), `deleted`. Event ids are the job revision; send Last-Event-ID to resume. Heartbeat comment lines every `sseHeartbeatMs`.',
        tags,
        access: 'private',
        params: JobParams,
        headers: StreamHeaders,
        response: { description: 'An SSE stream (text/event-stream).', contentType: 'text/event-stream' },
        errors: ['job_not_found', 'unavailable'],
        async handler(req) {
          const key = req.key!;
          const jobId = req.params.job_id;
          const first = await findForKey(key, jobId, kind);
          const tenant = first.tenant_id;
          const lastSeen = Number(req.headers['Last-Event-ID'] ?? '-1');
          let sent = Number.isFinite(lastSeen) ? lastSeen : -1;
          let lastChange = Date.now();
          const rev = (r: JobRecord) => (r.state.rev as number | undefined) ?? 0;
          return sseReply(
            deps.config.sseHeartbeatMs,
            async (w) => {
              const show = (r: JobRecord) => {
                lastChange = Date.now();
                const done = TERMINAL.has(r.status);
                if (rev(r) > sent) {
                  sent = rev(r);
                  w.send({ id: String(sent), event: done ? 'done' : 'progress', data: deps.jobs.view(r) });
                }
                if (done) w.end();
              };
              const unsubscribe = deps.events.subscribe(({ event }) => {
                if (event.type !== 'job' || event.tenant_id !== tenant || event.job_id !== jobId) return;
                if (event.record) show(event.record);
                else {
                  w.send({ event: 'deleted', data: { job_id: jobId, deleted: true } });
                  w.end();
                }
              });
              w.onClose(unsubscribe);
              // read again after subscribing, so no change falls between the two
              const now = await coordinator.getJob(tenant, JobId(jobId));
              if (!now) {
                w.send({ event: 'deleted', data: { job_id: jobId, deleted: true } });
                w.end();
              } else show(now);
            },
            // a quiet processing job may have lost its runner: check it as a read would
            () => {
              if (Date.now() - lastChange < deps.config.jobLeaseTtlSeconds * 2_000) return;
              lastChange = Date.now();
              void coordinator
                .getJob(tenant as TenantId, JobId(jobId))
                .then((r) => (r && !TERMINAL.has(r.status) ? deps.jobs.inspect(r) : r))
                .catch(() => undefined);
            },
          );
        },
      }),
      defineRoute({
        method: 'POST',
        path: `${base}/{job_id}/requeue`,
        operationId: `requeue${Kind}Job`,
        summary: `Requeue a failed ${kind} job (administrators only)`,
        description:
          kind === 'ingestion'
            ? 'failed -> queued, and started again on its sequencer; it resumes after its last finished batch (rows already ingested are not repeated). 409 `job_not_requeueable` unless the job failed.'
            : 'failed -> queued, and started again; an export starts over. 409 `job_not_requeueable` unless the job failed.',
        tags,
        access: 'admin',
        tenant: true,
        params: JobParams,
        response: { description: 'The job, queued again (or already running).', schema: JobView },
        errors: ['job_not_found', 'job_not_requeueable', 'unavailable'],
        async handler(req) {
          const t = tenantOf(req);
          return deps.jobs.view(await deps.jobs.requeue(t.id, req.params.job_id, kind));
        },
      }),
    );
  }
  routes.push(
    defineRoute({
      method: 'GET',
      path: '/v1/export-jobs/{job_id}/download',
      operationId: 'downloadExport',
      summary: 'Download the file of a completed export job',
      description: '409 `export_not_ready` until the job has succeeded; 404 `file_not_found` once the file has expired or was deleted.',
      tags: ['export jobs'],
      access: 'private',
      tenant: true,
      params: JobParams,
      response: { description: 'The export: JSON `{index_id, physical_index_id, documents, total}` or JSON Lines.', contentType: 'application/json' },
      errors: ['job_not_found', 'export_not_ready', 'file_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const rec = await deps.jobs.get(t.id, req.params.job_id, 'export');
        if (rec.status !== 'succeeded') fail('export_not_ready', { job: rec.job_id, status: rec.status });
        const expires = rec.state.expires_at as string | null | undefined;
        if (expires && Date.parse(expires) < Date.now()) fail('file_not_found', { file: rec.job_id });
        return downloadReply(deps.jobs, rec);
      },
    }),
  );
  return routes;
}
