// Export of an index. GET .../export answers `{index_id, physical_index_id, documents, total}`
// (a published decision): built in memory for at most `backgroundJobThreshold` documents,
// streamed page by page (with the client's pace) beyond. POST .../export/start writes the same
// JSON (or JSON Lines) as a file on the index's sequencer: small indexes before the answer
// (`run: "immediate"`, `download_url` = a signed /v1/exports/{filename} link), large ones as a
// background export job (`download_url` once it has succeeded). Downloads stream the file from
// the shard node that wrote it. File names are `{job}.{expires}.{signature}.{ext}`: bound to the
// tenant by an HMAC and expiring, never a path.
import { Type } from '@sinclair/typebox';
import type { JobRecord, PhysicalIndexRecord } from '../../coordinator/coordinator.js';
import { decodeDocument } from '../../node/runtime/document.js';
import { fail } from '../../node/runtime/errors.js';
import type { TenantId } from '../../node/runtime/ids.js';
import { readFromHolders } from '../../node/runtime/blob-copies.js';
import { exportState } from '../../node/runtime/job-state.js';
import type { DataPlane } from '../data-plane.js';
import type { JobService } from '../job-service.js';
import { defineRoute, StreamReply, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { ExportDocuments, ExportStartBody, StartExport } from '../schemas.js';
import { documentView } from '../views.js';
import { IndexParams, tenantOf } from './common.js';

const tags = ['export'];
const PAGE = 1_000;
const FLUSH_CHARS = 256 * 1024;

type View = ReturnType<typeof documentView>;

/** Every document of a physical index, part by part in id order, a page at a time. */
async function* pages(data: DataPlane, tenant: TenantId, physical: PhysicalIndexRecord): AsyncIterable<View[]> {
  for (let part = 0; part < physical.parts; part++) {
    let afterId = '';
    for (;;) {
      const r = await data.onPart(tenant, physical, part, (api, ref) => api.listDocuments({ ref, afterId, limit: PAGE, offset: 0 }));
      if (r.documents.length > 0) yield r.documents.map((d) => documentView(decodeDocument(d.body)));
      if (r.documents.length < PAGE) break;
      afterId = r.documents[r.documents.length - 1]!.id;
    }
  }
}

/**
 * Streams the file of a finished export job from the node that wrote it. The first chunk is read
 * before the answer starts, so a file that is gone is a 404, not a truncated 200.
 */
export async function downloadReply(jobs: JobService, rec: JobRecord): Promise<StreamReply> {
  const st = exportState(rec.state);
  const file = st.file;
  if (!file) return fail('file_not_found', { file: rec.job_id });
  const jsonl = st.format === 'jsonl';
  const name = `${rec.index_id}-${rec.job_id}.${jsonl ? 'jsonl' : 'json'}`;
  // from the node that wrote it, or a copy when that node cannot answer
  const it = readFromHolders((n) => jobs.node(n), rec.tenant_id, file)[Symbol.asyncIterator]();
  const first = await it.next();
  return new StreamReply(
    jsonl ? 'application/x-ndjson' : 'application/json',
    async (sink) => {
      try {
        for (let next = first; !next.done; next = await it.next()) {
          if (sink.aborted) return;
          await sink.write(Buffer.from(next.value.data));
        }
      } finally {
        await it.return?.();
      }
    },
    { 'content-disposition': `attachment; filename="${name}"`, 'cache-control': 'private, no-store' },
  );
}

export function exportRoutes(deps: RouterDeps): Route[] {
  const { data, config } = deps;
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/export',
      operationId: 'exportIndex',
      summary: 'All documents of the index as JSON',
      description: '`{index_id, physical_index_id, documents: [...], total}`, documents part by part in id order. Large indexes are streamed (chunked); a failure midway closes the connection, so a truncated body never parses. For a file to download later use POST .../export/start.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'Every document of the index.', schema: ExportDocuments },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const physical = target.physical;
        const head = { index_id: req.params.index_id, physical_index_id: physical.physical_index_id as string };
        const count = await deps.jobs.countDocuments(t.id, physical);
        if (count <= config.backgroundJobThreshold) {
          const documents: View[] = [];
          for await (const page of pages(data, t.id, physical)) documents.push(...page);
          return { ...head, documents, total: documents.length };
        }
        return new StreamReply('application/json', async (sink) => {
          let buf = `{"index_id":${JSON.stringify(head.index_id)},"physical_index_id":${JSON.stringify(head.physical_index_id)},"documents":[`;
          let n = 0;
          for await (const page of pages(data, t.id, physical)) {
            for (const d of page) {
              buf += `${n++ > 0 ? ',' : ''}\n${JSON.stringify(d)}`;
              if (buf.length >= FLUSH_CHARS) {
                await sink.write(buf);
                buf = '';
                if (sink.aborted) return;
              }
            }
          }
          await sink.write(`${buf}${n > 0 ? '\n' : ''}],"total":${n}}\n`);
        });
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/export/start',
      operationId: 'startExport',
      summary: 'Start an export, immediate or background depending on size',
      description:
        'Body `{format?: "json" | "jsonl"}`. At most `backgroundJobThreshold` documents: written before the answer, `download_url` is a signed /v1/exports/{filename} link valid for `exportTtlSeconds`. More: a background export job; `download_url` is null until it has succeeded (GET /v1/export-jobs/{job_id}, its stream, or GET /v1/export-jobs/{job_id}/download).',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: Type.Optional(ExportStartBody),
      response: { description: 'The export job; `download_url` is set once the file is ready.', schema: StartExport },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const count = await deps.jobs.countDocuments(t.id, target.physical);
        const format = (req.body as { format?: 'json' | 'jsonl' } | undefined)?.format ?? 'json';
        const rec = await deps.jobs.createExport(t, target, format, count);
        const started = await deps.jobs.start(rec);
        const now = (await deps.coordinator.getJob(t.id, rec.job_id)) ?? rec;
        return { ...started, download_url: deps.jobs.downloadUrl(now) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/exports/{filename}',
      operationId: 'downloadExportFile',
      summary: 'Download an immediate export file',
      description: 'The file name comes from `download_url`; it works only for the tenant it was made for and until it expires (404 `file_not_found` otherwise, whatever was wrong).',
      tags,
      access: 'private',
      tenant: true,
      params: Type.Object({ filename: Type.String({ pattern: '^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$', description: 'File name as returned in download_url.' }) }),
      response: { description: 'The export: JSON (or JSON Lines) as written by the export.', contentType: 'application/json' },
      errors: ['file_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const rec = await deps.jobs.fileJob(t.id, req.params.filename);
        return downloadReply(deps.jobs, rec);
      },
    }),
  ];
}
