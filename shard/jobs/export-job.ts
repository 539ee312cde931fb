// One export job: every document of a physical index, part by part in id order (paged with
// `after_id`, so deep pages cost no offset scans), written as one file blob on this node:
//   json:  {"index_id": ..., "physical_index_id": ..., "documents": [ ...views... ], "total": N}
//          (the same shape GET /v1/indexes/{index_id}/export answers)
//   jsonl: one document view per line
// An interrupted export starts over: the file is only committed (renamed into place) at the end.
import type { JobRecord } from '../../coordinator/coordinator.js';
import { decodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { exportState, type ExportJobState } from '../../node/runtime/job-state.js';
import type { BlobWriter } from './blob-store.js';
import type { JobContext } from './job-context.js';
import type { JobOutcome } from './ingestion-job.js';
import { sleep } from './part-writer.js';

const PAGE = 1_000;
const FLUSH_BYTES = 256 * 1024;

/** The document view of the HTTP contract: the five fields, always present. */
export function documentView(d: SuggestDocument): { id: string; title: string; desc: string; manufacturer: string; raw: SuggestDocument['raw'] } {
  return { id: d.id, title: d.title ?? '', desc: d.desc ?? '', manufacturer: d.manufacturer ?? '', raw: d.raw ?? {} };
}

export async function runExport(rec: JobRecord, ctx: JobContext): Promise<JobOutcome | null> {
  const st = exportState(rec.state);
  const { writer } = ctx;
  const counts = await writer.counts();
  const expected = counts.reduce((a, b) => a + b, 0);
  const out: BlobWriter = await ctx.writeBlob(rec.job_id);
  let committed = false;
  try {
    let pending: string[] = [];
    let pendingBytes = 0;
    const emit = async (s: string, force = false) => {
      pending.push(s);
      pendingBytes += s.length;
      if (pendingBytes >= FLUSH_BYTES || force) {
        await out.write(Buffer.from(pending.join(''), 'utf8'));
        pending = [];
        pendingBytes = 0;
      }
    };
    const json = st.format !== 'jsonl';
    if (json) await emit(`{"index_id":${JSON.stringify(rec.index_id)},"physical_index_id":${JSON.stringify(st.physical_index_id)},"documents":[`);
    let written = 0;
    let lastReport = Date.now();
    for (let part = 0; part < writer.parts; part++) {
      let afterId = '';
      for (;;) {
        const page = await writer.list(part, afterId, PAGE);
        for (const d of page.documents) {
          const view = JSON.stringify(documentView(decodeDocument(d.body)));
          await emit(json ? `${written > 0 ? ',' : ''}\n${view}` : `${view}\n`);
          written++;
        }
        if (page.documents.length < PAGE) break;
        afterId = page.documents[page.documents.length - 1]!.id;
        if (Date.now() - lastReport >= 1_000) {
          lastReport = Date.now();
          const done = written;
          if (!(await ctx.update((r) => ({ ...r, processed: done, total: Math.max(expected, done), state: { ...r.state, heartbeat_at: new Date().toISOString() } })))) return null;
          if (ctx.settings.batchDelayMs > 0) await sleep(ctx.settings.batchDelayMs);
        }
        if (ctx.stopReason() !== null) return null;
      }
    }
    if (json) await emit(`${written > 0 ? '\n' : ''}],"total":${written}}\n`, true);
    else await emit('', true);
    const ref = await out.commit();
    committed = true;
    const expiresAt = new Date(Date.now() + ctx.settings.exportTtlSeconds * 1000).toISOString();
    // copies on the sequencer partition's followers: the file outlives this node
    const copies = await ctx.copyBlob(ref.blobId);
    const file = { node: ctx.nodeId, id: ref.blobId, size: Number(ref.size), copies };
    const stored = await ctx.update((r) => ({
      ...r,
      processed: written,
      total: written,
      state: { ...r.state, file, expires_at: expiresAt, heartbeat_at: new Date().toISOString() } satisfies Partial<ExportJobState>,
    }));
    if (!stored) {
      // canceled or deleted at the last moment: the file has no job to belong to
      await ctx.deleteBlob(file).catch(() => undefined);
      return null;
    }
    return { status: 'succeeded', error: null, errorCode: null };
  } finally {
    if (!committed) await out.abort();
  }
}
