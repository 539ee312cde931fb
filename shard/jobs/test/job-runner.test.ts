// The job runner over a real ShardNode and the embedded coordinator: a resumed job skips what
// its cursor says and ends with every row once; a job held by another runner is left alone; a
// job interrupted too often fails with the reason; cancelation and shutdown stop it between
// batches; document limits stop it exactly at the limit; an export writes the file it promises.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Coordinator, JobRecord } from '../../../coordinator/coordinator.js';
import { createCoordinator } from '../../../coordinator/create-coordinator.js';
import { loadConfig } from '../../../node/runtime/config.js';
import { decodeDocument } from '../../../node/runtime/document.js';
import { JobId, NodeId, TenantId } from '../../../node/runtime/ids.js';
import type { IngestionJobState } from '../../../node/runtime/job-state.js';
import { ShardNode } from '../../shard-node.js';
import { quietLogger, refOf, tempDir } from '../../test/helpers.js';

const P = 4;
const ME = NodeId('runner-node');
const T = TenantId('acme');

let dir: { dir: string; remove: () => Promise<void> };
let coordinator: Coordinator;
let node: ShardNode;

function makeNode(opts: { batchSize?: number; delayMs?: number } = {}): ShardNode {
  const n: ShardNode = new ShardNode({
    nodeId: ME,
    dataDir: dir.dir,
    partitions: P,
    logger: quietLogger,
    jobs: {
      coordinator,
      directory: { client: () => n },
      settings: { batchSize: opts.batchSize ?? 10, batchDelayMs: opts.delayMs ?? 0, maxRecordChars: 10_000, exportTtlSeconds: 60 },
      leaseTtlSeconds: 1,
      maxAttempts: 3,
      scanIntervalMs: 0,
      blobRetentionMs: 3_600_000,
    },
  });
  n.setPlacement(ShardNode.soloPlacement(ME, P));
  return n;
}

beforeEach(async () => {
  dir = await tempDir('job-runner-');
  coordinator = await createCoordinator({ ...loadConfig({}), dataDir: dir.dir, partitions: P });
  node = makeNode();
});
afterEach(async () => {
  await node.close();
  await coordinator.close();
  await dir.remove();
});

async function* once(tenantId: string, blobId: string, text: string) {
  yield { tenantId, blobId, maxBytes: 0, data: Buffer.from(text) };
}

function jsonl(n: number, prefix = 'd'): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}${i}`, title: `t${i}` })).join('\n') + '\n';
}

async function ingestionJob(id: string, text: string, over: Partial<JobRecord> = {}, state: Partial<IngestionJobState> = {}): Promise<JobRecord> {
  const ref = await node.putBlob(once(T, id, text));
  const now = new Date().toISOString();
  const s: IngestionJobState = {
    physical_index_id: 'phys',
    parts: 1,
    run: 'background',
    rev: 1,
    heartbeat_at: null,
    attempt_base: 0,
    format: 'jsonl',
    format_source: 'test',
    mapping: 'documents',
    encoding: null,
    blob: { node: ME, id, size: Number(ref.size) },
    limits: { max_documents_per_index: 1_000_000, max_documents_total: 1_000_000 },
    account_other: 0,
    cursor: 0,
    bytes_total: Number(ref.size),
    bytes_done: 0,
    errors: [],
    ...state,
  };
  const rec: JobRecord = {
    job_id: JobId(id),
    kind: 'ingestion',
    tenant_id: T,
    index_id: 'idx' as JobRecord['index_id'],
    status: 'queued',
    source_type: 'test',
    source_filename: null,
    total: 0,
    processed: 0,
    failed: 0,
    attempts: 0,
    error: null,
    created_at: now,
    started_at: null,
    finished_at: null,
    state: s as unknown as Record<string, unknown>,
    ...over,
  };
  await coordinator.putJob(rec);
  return rec;
}

const stored = async () => (await node.listDocuments({ ref: refOf(T, 'phys', { partitions: P }), afterId: '', limit: 10_000, offset: 0 })).documents.map((d) => decodeDocument(d.body));
const job = async (id: string) => (await coordinator.getJob(T, JobId(id)))!;

describe('JobRunner', () => {
  it('runs a job to the end, recording counts, cursor and row errors', async () => {
    await ingestionJob('j1', jsonl(25) + 'oops\n');
    expect((await node.startJob({ tenantId: T, jobId: 'j1', wait: true, requeue: false })).status).toBe('succeeded');
    const rec = await job('j1');
    expect(rec).toMatchObject({ status: 'succeeded', processed: 25, failed: 1, total: 26, attempts: 1 });
    expect(rec.state).toMatchObject({ cursor: 26, errors: [{ record: 26, line: 26 }] });
    expect((await stored()).length).toBe(25);
    // the upload is removed once ingested
    expect((await node.deleteBlob({ tenantId: T, blobId: 'j1', offset: 0 })).deleted).toBe(false);
  });

  it('resumes an interrupted job after its cursor: nothing lost, nothing counted twice', async () => {
    // as a crash leaves it: processing, 20 rows recorded, no lease holder
    await ingestionJob('j2', jsonl(50), { status: 'processing', attempts: 1, processed: 20, total: 20 }, { cursor: 20 });
    expect((await node.startJob({ tenantId: T, jobId: 'j2', wait: true, requeue: false })).status).toBe('succeeded');
    const rec = await job('j2');
    expect(rec).toMatchObject({ status: 'succeeded', processed: 50, total: 50, attempts: 2 });
    // the rows before the cursor were not written again by this run (they were written before the "crash")
    const ids = (await stored()).map((d) => d.id);
    expect(ids.length).toBe(30);
    expect(ids).not.toContain('d0');
    expect(ids).toContain('d20');
  });

  it('leaves a job alone while another runner holds its lease', async () => {
    await ingestionJob('j3', jsonl(5));
    const lease = await coordinator.acquireJobLease(JobId('j3'), NodeId('other'), 5);
    try {
      expect(await node.startJob({ tenantId: T, jobId: 'j3', wait: true, requeue: false })).toEqual({ accepted: false, status: 'queued' });
      expect((await job('j3')).attempts).toBe(0);
    } finally {
      await lease?.revoke();
    }
  });

  it('fails a job interrupted maxAttempts times, with the reason', async () => {
    await ingestionJob('j4', jsonl(5), { status: 'processing', attempts: 3 });
    expect((await node.startJob({ tenantId: T, jobId: 'j4', wait: true, requeue: false })).status).toBe('failed');
    const rec = await job('j4');
    expect(rec.error).toMatch(/interrupted 3 times/);
    expect(rec.state.error_code).toBe('stuck');
    expect(await stored()).toEqual([]);
  });

  it('stops at the next batch when canceled, and leaves a job queued on shutdown', async () => {
    await node.close();
    node = makeNode({ batchSize: 5, delayMs: 20 });
    await ingestionJob('j5', jsonl(200));
    expect((await node.startJob({ tenantId: T, jobId: 'j5', wait: false, requeue: false })).accepted).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    await coordinator.updateJob(T, JobId('j5'), (r) => ({ ...r, status: 'canceled' }));
    await new Promise((r) => setTimeout(r, 150));
    const count = (await stored()).length;
    expect(count).toBeGreaterThan(0);
    expect(count).toBeLessThan(200);
    await new Promise((r) => setTimeout(r, 150));
    expect((await stored()).length).toBe(count);
    expect(node.jobs!.active).toBe(0);

    await ingestionJob('j6', jsonl(200, 'e'));
    await node.startJob({ tenantId: T, jobId: 'j6', wait: false, requeue: false });
    await new Promise((r) => setTimeout(r, 100));
    await node.close();
    const rec = await job('j6');
    expect(rec.status).toBe('queued');
    expect(rec.state.requeue_reason).toBe('shutdown');
    expect((rec.state.cursor as number) > 0).toBe(true);
    // the next start resumes it
    node = makeNode();
    expect((await node.startJob({ tenantId: T, jobId: 'j6', wait: true, requeue: false })).status).toBe('succeeded');
    expect((await job('j6')).processed).toBe(200);
  });

  it('stops exactly at the document limit and records it as document_limit', async () => {
    await ingestionJob('j7', jsonl(40), {}, { limits: { max_documents_per_index: 25, max_documents_total: 1_000 } });
    expect((await node.startJob({ tenantId: T, jobId: 'j7', wait: true, requeue: false })).status).toBe('failed');
    const rec = await job('j7');
    expect(rec.state.error_code).toBe('document_limit');
    expect(rec.error).toMatch(/Index document limit of 25 reached/);
    expect((await stored()).length).toBe(25);
  });

  it('writes an export file of every document', async () => {
    await ingestionJob('j8', jsonl(23));
    await node.startJob({ tenantId: T, jobId: 'j8', wait: true, requeue: false });
    const now = new Date().toISOString();
    await coordinator.putJob({
      job_id: JobId('x1'),
      kind: 'export',
      tenant_id: T,
      index_id: 'idx' as JobRecord['index_id'],
      status: 'queued',
      source_type: 'api',
      source_filename: null,
      total: 23,
      processed: 0,
      failed: 0,
      attempts: 0,
      error: null,
      created_at: now,
      started_at: null,
      finished_at: null,
      state: { physical_index_id: 'phys', parts: 1, run: 'immediate', rev: 1, heartbeat_at: null, attempt_base: 0, format: 'json', file: null, expires_at: null },
    });
    expect((await node.startJob({ tenantId: T, jobId: 'x1', wait: true, requeue: false })).status).toBe('succeeded');
    const rec = await job('x1');
    expect(rec.processed).toBe(23);
    const chunks: Buffer[] = [];
    for await (const c of node.getBlob({ tenantId: T, blobId: 'x1', offset: 0 })) chunks.push(Buffer.from(c.data));
    const file = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { index_id: string; documents: { id: string }[]; total: number };
    expect(file).toMatchObject({ index_id: 'idx', physical_index_id: 'phys', total: 23 });
    expect(file.documents.map((d) => d.id).sort()).toEqual(Array.from({ length: 23 }, (_, i) => `d${i}`).sort());
  });

  it('finds and resumes an orphaned job on its scan', async () => {
    await ingestionJob('j9', jsonl(12), { status: 'processing', attempts: 1 });
    await coordinator.createTenant({ tenant_id: T, name: 'acme', plan: 'pro', mode: 'hosted', upload_limit_bytes: null, limits: {}, search_api: null, created_at: new Date().toISOString() });
    await node.jobs!.scan();
    for (let i = 0; i < 50 && (await job('j9')).status !== 'succeeded'; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await job('j9')).toMatchObject({ status: 'succeeded', processed: 12, attempts: 2 });
  });
});
