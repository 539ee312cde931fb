// One ingestion job from its blob to documents: decode -> records -> documents -> batches of
// `batchSize`, grouped by part and written through the PartWriter, with the job record advanced
// after every batch (counts, row errors, the resume cursor). Resuming after a crash re-reads the
// file and skips the records before the cursor; the batch that was in flight is written again,
// and because upserts by id are idempotent nothing is lost or duplicated.
//
// A row that cannot be read or mapped fails alone (its line and reason are kept, up to
// MAX_ROW_ERRORS); the job fails only when no row at all was ingested, or when a document limit
// stops it (recorded with code `document_limit`, the 409 of the inline routes).
import type { JobRecord } from '../../coordinator/coordinator.js';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { SuggestError, suggestError } from '../../node/runtime/errors.js';
import { partOf } from '../../node/runtime/hash.js';
import { MAX_ROW_ERRORS, ingestionState, type IngestionJobState, type RowError } from '../../node/runtime/job-state.js';
import { mapRecord } from './document-mapper.js';
import type { JobContext } from './job-context.js';
import { sleep } from './part-writer.js';
import { MAX_RECORD_DEPTH, readRecords } from './record-source.js';
import { decodeText } from './text-decoding.js';

export interface JobOutcome {
  status: 'succeeded' | 'failed';
  error: string | null;
  errorCode: string | null;
}

/** Runs to the end, or until `ctx.stopReason()` is set; returns null when stopped early. */
export async function runIngestion(rec: JobRecord, ctx: JobContext): Promise<JobOutcome | null> {
  const st = ingestionState(rec.state);
  const { writer, settings } = ctx;
  const startCursor = st.cursor ?? 0;
  let processed = rec.processed;
  let failed = rec.failed;
  let cursor = startCursor;
  let seen = startCursor;
  const errors: RowError[] = [...(st.errors ?? [])];
  let bytesDone = 0;
  let fileError: string | null = null;

  let batch: SuggestDocument[] = [];
  let batchRows = 0;
  let pendingErrors: RowError[] = [];
  let pendingFailed = 0;

  const counts = await writer.counts();
  const limits = st.limits;
  const accountOther = st.account_other ?? 0;

  const keepError = (e: RowError) => {
    // a resumed job reads the file again: an error about the file as a whole is kept once
    if (e.record === 0 && errors.some((x) => x.record === 0 && x.detail === e.detail)) return;
    if (errors.length < MAX_ROW_ERRORS) errors.push(e);
  };

  const flush = async (): Promise<boolean> => {
    if (batch.length > 0) await writeBatch(batch);
    processed += batchRows;
    failed += pendingFailed;
    cursor = seen;
    for (const e of pendingErrors) keepError(e);
    batch = [];
    batchRows = 0;
    pendingErrors = [];
    pendingFailed = 0;
    const total = seen;
    const stored = await ctx.update((r) => ({
      ...r,
      processed,
      failed,
      total,
      state: { ...r.state, cursor, errors, bytes_done: bytesDone, heartbeat_at: new Date().toISOString() } satisfies Partial<IngestionJobState>,
    }));
    if (!stored) return false;
    if (settings.batchDelayMs > 0) await sleep(settings.batchDelayMs);
    return ctx.stopReason() === null;
  };

  /** Documents that may still be added before the index or the account limit. */
  const room = () => {
    const indexCount = counts.reduce((a, b) => a + b, 0);
    return Math.min(limits.max_documents_per_index - indexCount, limits.max_documents_total - accountOther - indexCount);
  };

  /** Writes one batch, part by part, within the plan's document limits. */
  const writeBatch = async (docs: SuggestDocument[]) => {
    // within a batch the last occurrence of an id wins (the shard applies repeats in order too)
    const groups = new Map<number, SuggestDocument[]>();
    for (const d of docs) {
      const p = partOf(d.id, writer.parts);
      let g = groups.get(p);
      if (!g) groups.set(p, (g = []));
      g.push(d);
    }
    if (room() >= docs.length) {
      // every document fits even if all are new: all parts at once
      await Promise.all([...groups].map(async ([part, g]) => write(part, g, counts[part]! + room())));
      return;
    }
    for (const [part, g] of groups) await writeNearLimit(part, g);
  };

  const write = async (part: number, docs: SuggestDocument[], cap: number) => {
    const res = await writer.upsert(part, docs, cap);
    counts[part] = res.documentCount;
  };

  /** Near a limit: halves a refused batch until the documents that fit are written. */
  const writeNearLimit = async (part: number, docs: SuggestDocument[]): Promise<void> => {
    const r = room();
    const cap = counts[part]! + Math.max(0, r);
    // cap 0 would mean "no cap": an empty part with no room takes nothing new
    if (cap === 0) throw limitError(docs.length);
    try {
      await write(part, docs, cap);
    } catch (err) {
      if (!(err instanceof SuggestError && err.code === 'document_limit')) throw err;
      if (docs.length === 1) throw limitError(1);
      const half = Math.ceil(docs.length / 2);
      await writeNearLimit(part, docs.slice(0, half));
      await writeNearLimit(part, docs.slice(half));
    }
  };

  const limitError = (adding: number) => {
    const indexCount = counts.reduce((a, b) => a + b, 0);
    const byIndex = limits.max_documents_per_index - indexCount <= limits.max_documents_total - accountOther - indexCount;
    const params = byIndex
      ? { scope: 'Index', limit: limits.max_documents_per_index, count: indexCount, adding }
      : { scope: 'Account', limit: limits.max_documents_total, count: accountOther + indexCount, adding };
    return suggestError('document_limit', params);
  };

  const source = await ctx.readBlob(st.blob);
  const decoded = await decodeText(source, st.encoding ?? null, (n) => {
    bytesDone += n;
  });
  if (decoded.encoding !== st.encoding_used) {
    await ctx.update((r) => ({ ...r, state: { ...r.state, encoding_used: decoded.encoding } }));
  }
  const records = readRecords(decoded.chunks, { format: st.format, maxRecordChars: settings.maxRecordChars, maxDepth: MAX_RECORD_DEPTH });
  const it = records[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      const r = next.value;
      if (r.fileError) {
        fileError ??= `${r.error} (line ${r.line})`;
        pendingErrors.push({ record: 0, line: r.line, id: null, detail: r.error ?? 'The file cannot be read.' });
        continue;
      }
      if (r.n <= startCursor) continue;
      seen = r.n;
      if (r.error !== undefined) {
        pendingErrors.push({ record: r.n, line: r.line, id: null, detail: r.error });
        pendingFailed++;
      } else {
        const m = mapRecord(r.value!, st.mapping, st.format === 'csv');
        if (m.error !== undefined) {
          pendingErrors.push({ record: r.n, line: r.line, id: m.id, detail: m.error });
          pendingFailed++;
        } else {
          batch.push(m.doc);
          batchRows++;
        }
      }
      if (batch.length >= settings.batchSize || pendingFailed >= settings.batchSize) {
        if (!(await flush())) return null;
      }
    }
    if (!(await flush())) return null;
  } catch (err) {
    if (err instanceof SuggestError && err.code === 'document_limit') {
      return { status: 'failed', error: err.message, errorCode: 'document_limit' };
    }
    throw err;
  } finally {
    await it.return?.();
  }
  if (processed > 0) return { status: 'succeeded', error: null, errorCode: null };
  if (fileError && failed === 0) return { status: 'failed', error: fileError, errorCode: 'unreadable_file' };
  if (failed > 0) {
    const first = errors.find((e) => e.record > 0);
    return { status: 'failed', error: `No row could be ingested (${failed} failed${first ? `; first: line ${first.line}: ${first.detail}` : ''}).`, errorCode: 'no_valid_rows' };
  }
  return { status: 'failed', error: fileError ?? 'The file has no records.', errorCode: 'empty_file' };
}
