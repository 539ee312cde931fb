// Ingestion and export jobs through a real router over a real shard node and job runner in one
// process: uploads (multipart, presigned, ingest/start), immediate vs background runs, limits
// and their 413 hints, row errors, cancel/delete/requeue, progress streams, exports and their
// signed links, and POST .../documents waiting for a running job.
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter, type TestRouter } from './harness.js';

type Job = { job_id: string; status: string; run: string; processed: number; failed: number; total: number; error: string | null; errors: { line: number; detail: string; record: number }[]; download_url?: string | null; attempts: number; kind: string };
type Start = { job_id: string; index_id: string; status: string; run: 'immediate' | 'background'; job: Job; hint?: string; download_url?: string | null };
type Err = { code: string; detail: string };

let r: TestRouter;
let t: { id: string; priv: string; pub: string };
let other: { id: string; priv: string; pub: string };

beforeAll(async () => {
  r = await startRouter({ backgroundJobThreshold: 50, jobBatchSize: 20, sseHeartbeatMs: 200, jobLeaseTtlSeconds: 2 });
  t = await r.tenant('acme');
  other = await r.tenant('bolt');
  for (const index_id of ['docs', 'feed', 'big', 'exp']) expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id, name: index_id } })).status).toBe(200);
  expect((await r.call('POST', '/v1/indexes', { key: other.priv, body: { index_id: 'docs', name: 'docs' } })).status).toBe(200);
});
afterAll(async () => {
  await r?.close();
});

async function upload(index: string, file: string | Buffer, filename: string, fields: Record<string, string> = {}, key = t.priv, route = 'upload') {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([typeof file === 'string' ? file : new Uint8Array(file)]), filename);
  const res = await fetch(`${r.url}/v1/indexes/${index}/${route}`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
  return { status: res.status, body: (await res.json()) as Start & Err };
}

async function waitJob(id: string, kind = 'ingestion'): Promise<Job> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const j = await r.call<Job>('GET', `/v1/${kind}-jobs/${id}`, { key: t.priv });
    expect(j.status).toBe(200);
    if (['succeeded', 'failed', 'canceled'].includes(j.body.status)) return j.body;
    if (Date.now() > deadline) throw new Error(`job ${id} still ${j.body.status}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

function jsonl(n: number, from = 0, prefix = 'd'): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ id: `${prefix}${from + i}`, title: `Item ${from + i}`, brand: 'Acme', price: i })).join('\n') + '\n';
}

describe('uploads', () => {
  it('runs a small CSV immediately, mapping columns, numbers and blank headers', async () => {
    const csv = '\ufeffindex,product,category,brand,sale_price,,\n1,Garlic Oil,Beauty,Sri Sri ,220,,4.1\n2,"Water Bottle, Orange",Kitchen,Mastercook,180,,\n';
    const up = await upload('docs', csv, 'products.csv');
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ index_id: 'docs', run: 'immediate', status: 'succeeded' });
    expect(up.body.job).toMatchObject({ processed: 2, failed: 0, total: 2, source_type: 'upload', source_filename: 'products.csv', format: 'csv' });
    const doc = await r.call<Record<string, unknown>>('GET', '/v1/indexes/docs/documents/2', { key: t.priv });
    expect(doc.body).toEqual({ id: '2', title: 'Water Bottle, Orange', desc: '', manufacturer: 'Mastercook', raw: { category: 'Kitchen', sale_price: 180 } });
    const one = await r.call<{ raw: Record<string, unknown> }>('GET', '/v1/indexes/docs/documents/1', { key: t.priv });
    expect(one.body.raw).toEqual({ category: 'Beauty', sale_price: 220, column_7: 4.1 });
  });

  it('runs a large JSON array in the background and reports progress to the end', async () => {
    const docs = Array.from({ length: 130 }, (_, i) => ({ id: `b${i}`, name: `Big ${i}`, description: 'x', categories: ['a', 'b'], price: i + 0.99 }));
    const up = await upload('big', JSON.stringify(docs, null, 2), 'items.txt', { format: 'json' });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.run).toBe('background');
    expect(['queued', 'processing', 'succeeded']).toContain(up.body.status);
    const done = await waitJob(up.body.job_id);
    expect(done).toMatchObject({ status: 'succeeded', processed: 130, failed: 0, total: 130, attempts: 1 });
    const list = await r.call<{ total: number }>('GET', '/v1/indexes/big/documents?page_size=1', { key: t.priv });
    expect(list.body.total).toBe(130);
    const one = await r.call<Record<string, unknown>>('GET', '/v1/indexes/big/documents/b7', { key: t.priv });
    expect(one.body).toMatchObject({ title: 'Big 7', desc: 'x', raw: { categories: ['a', 'b'], price: 7.99 } });
  });

  it('runs a large `{documents: [...]}` file in the background, counted by its documents', async () => {
    const documents = Array.from({ length: 80 }, (_, i) => ({ id: `w${i}`, title: `Wrapped ${i}`, tags: ['a', 'b'] }));
    expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'wrapped', name: 'wrapped' } })).status).toBe(200);
    const up = await upload('wrapped', JSON.stringify({ documents }), 'wrapped.json');
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.run).toBe('background');
    expect(await waitJob(up.body.job_id)).toMatchObject({ status: 'succeeded', processed: 80, failed: 0 });
    expect((await r.call<Record<string, unknown>>('GET', '/v1/indexes/wrapped/documents/w79', { key: t.priv })).body).toMatchObject({ title: 'Wrapped 79', raw: { tags: ['a', 'b'] } });
  });

  it('keeps good rows and lists bad ones with their lines; fails when nothing is valid', async () => {
    const text = '{"id":"ok1","title":"A"}\n{"id":"broken",\n[1,2]\n{"title":"no id but hashed"}\n{"id":"ok2","title":"' + 'y'.repeat(50) + '"}\n{"id":"cut"';
    const up = await upload('docs', text, 'rows.jsonl');
    expect(up.status).toBe(200);
    const job = up.body.job;
    expect(job).toMatchObject({ status: 'succeeded', processed: 3, failed: 3 });
    expect(job.errors.map((e) => e.line)).toEqual([2, 3, 6]);
    const bad = await upload('docs', 'not json at all\n{"x":\n', 'bad.jsonl');
    expect(bad.body.job).toMatchObject({ status: 'failed', processed: 0, failed: 2 });
    expect(bad.body.job.error).toMatch(/No row could be ingested/);
  });

  it('reads a file as its name says, failing JSON named .csv with a hint, and reads wrong encodings and BOMs', async () => {
    const json = JSON.stringify([{ id: 'm1', title: 'Labelled CSV' }]);
    const mis = await upload('docs', json, 'really-json.csv');
    expect(mis.body.job).toMatchObject({ status: 'failed', processed: 0, format: 'csv', error_code: 'unreadable_file' });
    expect(mis.body.job.error).toMatch(/header row .*JSON/);
    expect((await upload('docs', json, 'really-json.csv', { format: 'json' })).body.job).toMatchObject({ status: 'succeeded', processed: 1, format: 'json' });
    const latin = Buffer.concat([Buffer.from('id,title\nl1,Caf'), Buffer.from([0xe9]), Buffer.from('\n')]);
    const l = await upload('docs', latin, 'latin.csv');
    expect(l.body.job.status).toBe('succeeded');
    expect((await r.call<{ title: string }>('GET', '/v1/indexes/docs/documents/l1', { key: t.priv })).body.title).toBe('Café');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('id,title\nu1,Über\n', 'utf16le')]);
    expect((await upload('docs', utf16, 'u16.csv')).body.job.status).toBe('succeeded');
    expect((await r.call<{ title: string }>('GET', '/v1/indexes/docs/documents/u1', { key: t.priv })).body.title).toBe('Über');
  });

  it('imports a shopping feed (tab separated, g: prefixes, prices with currency)', async () => {
    const feed = 'g:id\tg:title\tg:description\tg:link\tg:image_link\tg:price\tg:sale_price\tg:brand\tg:gtin\tg:availability\tg:google_product_category\tg:custom_label_0\n' + 'SKU-1\tBlue Kettle\tBoils water\thttps://s.example/1\thttps://s.example/1.jpg\t19.99 USD\t15.50 USD\tKettleCo\t00012345678905\tin stock\tKitchen > Kettles\tsummer\n';
    const up = await upload('feed', feed, 'feed.tsv', {}, t.priv, 'import/merchant-shopping');
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.job).toMatchObject({ status: 'succeeded', processed: 1, source_type: 'merchant-shopping' });
    const d = await r.call<Record<string, unknown>>('GET', '/v1/indexes/feed/documents/SKU-1', { key: t.priv });
    expect(d.body).toEqual({
      id: 'SKU-1',
      title: 'Blue Kettle',
      desc: 'Boils water',
      manufacturer: 'KettleCo',
      raw: { url: 'https://s.example/1', image: 'https://s.example/1.jpg', price: 19.99, sale_price: 15.5, currency: 'USD', category: 'Kitchen > Kettles', gtin: '00012345678905', availability: 'in stock', google_product_category: 'Kitchen > Kettles', custom_label_0: 'summer' },
    });
  });

  it('refuses a file over the tenant limit with 413 and says what to do', async () => {
    await r.call('PATCH', `/v1/admin/tenants/${t.id}`, { key: r.adminKey, body: { upload_limit_bytes: 1000 } });
    try {
      const big = await upload('docs', jsonl(100), 'big.jsonl');
      expect(big.status).toBe(413);
      expect(big.body.code).toBe('payload_too_large');
      expect(big.body.detail).toMatch(/upload limit of tenant 'acme' is 1000 bytes \(tenant\)/);
      const url = await r.call<Err>('POST', '/v1/indexes/docs/upload-url', { key: t.priv, body: { size_bytes: 5000 } });
      expect(url.status).toBe(413);
      // nothing half-written: the index did not change
      expect((await r.call<{ total: number }>('GET', '/v1/indexes/docs/documents/d0', { key: t.priv })).status).toBe(404);
    } finally {
      await r.call('PATCH', `/v1/admin/tenants/${t.id}`, { key: r.adminKey, body: { upload_limit_bytes: null } });
    }
  });

  it('answers 422 without a file part and 415 for a body that is not multipart', async () => {
    const form = new FormData();
    form.append('format', 'csv');
    const none = await fetch(`${r.url}/v1/indexes/docs/upload`, { method: 'POST', headers: { 'x-api-key': t.priv }, body: form });
    expect(none.status).toBe(422);
    expect(((await none.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(['body', 'file']);
    const wrong = await r.call<Err>('POST', '/v1/indexes/docs/upload', { key: t.priv, body: { documents: [] } });
    expect(wrong.status).toBe(415);
  });
});

describe('presigned upload', () => {
  it('hands out a signed URL, takes the PUT without a key, then ingests on cloud-complete', async () => {
    const u = await r.call<{ upload_id: string; upload_url: string; max_bytes: number; expires_at: string }>('POST', '/v1/indexes/docs/upload-url', { key: t.priv, body: {} });
    expect(u.status).toBe(200);
    expect(u.body.max_bytes).toBe(r.config.plans.pro.upload_limit_bytes);
    const put = await fetch(r.url + u.body.upload_url, { method: 'PUT', body: jsonl(60, 0, 'p'), headers: { 'content-type': 'application/x-ndjson' } });
    expect(put.status).toBe(200);
    expect(((await put.json()) as { size_bytes: number }).size_bytes).toBeGreaterThan(100);
    const done = await r.call<Start>('POST', '/v1/indexes/docs/ingest/cloud-complete', { key: t.priv, body: { upload_id: u.body.upload_id, source_filename: 'p.jsonl' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.run).toBe('background');
    expect(await waitJob(done.body.job_id)).toMatchObject({ status: 'succeeded', processed: 60, source_type: 'cloud' } as Partial<Job>);
    // one job per upload
    const again = await r.call<Err>('POST', '/v1/indexes/docs/ingest/cloud-complete', { key: t.priv, body: { upload_id: u.body.upload_id } });
    expect(again.status).toBe(404);
  });

  it('refuses a tampered, foreign or expired URL and an upload over its cap', async () => {
    const u = await r.call<{ upload_id: string; upload_url: string }>('POST', '/v1/indexes/docs/upload-url', { key: t.priv });
    const tampered = u.body.upload_url.replace(/index=docs/, 'index=big');
    const bad = await fetch(r.url + tampered, { method: 'PUT', body: 'id\n1\n' });
    expect(bad.status).toBe(403);
    expect(((await bad.json()) as Err).code).toBe('upload_url_invalid');
    const expired = u.body.upload_url.replace(/expires=\d+/, 'expires=1000');
    expect((await fetch(r.url + expired, { method: 'PUT', body: 'x' })).status).toBe(403);
    // another tenant cannot complete this tenant's upload
    await fetch(r.url + u.body.upload_url, { method: 'PUT', body: 'id,title\nz,Z\n' });
    const foreign = await r.call<Err>('POST', '/v1/indexes/docs/ingest/cloud-complete', { key: other.priv, body: { upload_id: u.body.upload_id } });
    expect(foreign.status).toBe(404);
    const capped = await r.call<{ upload_url: string }>('POST', '/v1/indexes/docs/upload-url', { key: t.priv });
    await r.call('PATCH', `/v1/admin/tenants/${t.id}`, { key: r.adminKey, body: { upload_limit_bytes: 100 } });
    try {
      const small = await r.call<{ upload_url: string }>('POST', '/v1/indexes/docs/upload-url', { key: t.priv });
      const over = await fetch(r.url + small.body.upload_url, { method: 'PUT', body: jsonl(20) });
      expect(over.status).toBe(413);
      expect(((await over.json()) as Err).detail).toMatch(/at most 100 bytes/);
    } finally {
      await r.call('PATCH', `/v1/admin/tenants/${t.id}`, { key: r.adminKey, body: { upload_limit_bytes: null } });
    }
    expect(capped.status).toBe(200);
  });
});

describe('ingest/start', () => {
  it('runs small batches immediately and large ones in the background', async () => {
    const small = await r.call<Start>('POST', '/v1/indexes/docs/ingest/start?source_type=crm&source_filename=a.json', { key: t.priv, body: [{ id: 's1', title: 'Small', color: 'red' }] });
    expect(small.status).toBe(200);
    expect(small.body).toMatchObject({ run: 'immediate', status: 'succeeded' });
    expect(small.body.job).toMatchObject({ source_type: 'crm', source_filename: 'a.json', processed: 1 });
    expect((await r.call<{ raw: unknown }>('GET', '/v1/indexes/docs/documents/s1', { key: t.priv })).body.raw).toEqual({ color: 'red' });
    const documents = Array.from({ length: 120 }, (_, i) => ({ id: `L${i}`, title: `L ${i}` }));
    const large = await r.call<Start>('POST', '/v1/indexes/docs/ingest/start', { key: t.priv, body: { documents } });
    expect(large.body.run).toBe('background');
    expect(await waitJob(large.body.job_id)).toMatchObject({ status: 'succeeded', processed: 120, source_type: 'api' } as Partial<Job>);
  });

  it('records a document limit as the job error (409 semantics) and keeps what fit', async () => {
    await r.call('PATCH', `/v1/admin/tenants/${other.id}`, { key: r.adminKey, body: { limits: { max_documents_per_index: 30 } } });
    const documents = Array.from({ length: 45 }, (_, i) => ({ id: `c${i}`, title: 'c' }));
    const res = await r.call<Start>('POST', '/v1/indexes/docs/ingest/start', { key: other.priv, body: { documents } });
    expect(res.status).toBe(200);
    expect(res.body.job).toMatchObject({ status: 'failed', error_code: 'document_limit' } as Partial<Job>);
    expect(res.body.job.error).toMatch(/Index document limit of 30 reached/);
    expect((await r.call<{ total: number }>('GET', '/v1/indexes/docs/documents', { key: other.priv })).body.total).toBe(30);
  });
});

describe('job records', () => {
  it('lists the last jobs, cancels a running one, deletes finished ones, requeues failed ones (admin only)', async () => {
    const list = await r.call<Job[]>('GET', '/v1/ingestion-jobs', { key: t.priv });
    expect(list.status).toBe(200);
    expect(list.body.length).toBeGreaterThan(3);
    expect(list.body.every((j) => j.kind === 'ingestion')).toBe(true);
    const tasks = await r.call<Job[]>('GET', '/v1/indexes/big/tasks', { key: t.priv });
    expect(tasks.body.length).toBe(1);
    // a failed job: requeue is admin-only and only for failed jobs
    const bad = await upload('docs', 'garbage\n', 'x.jsonl');
    expect(bad.body.job.status).toBe('failed');
    expect((await r.call<Err>('POST', `/v1/ingestion-jobs/${bad.body.job_id}/requeue`, { key: t.priv })).status).toBe(403);
    const requeued = await r.call<Job>('POST', `/v1/ingestion-jobs/${bad.body.job_id}/requeue?tenant_id=${t.id}`, { key: r.adminKey });
    expect(requeued.status).toBe(200);
    const after = await waitJob(bad.body.job_id);
    expect(after.status).toBe('failed');
    const ok = list.body.find((j) => j.status === 'succeeded')!;
    const notFailed = await r.call<Err>('POST', `/v1/ingestion-jobs/${ok.job_id}/requeue?tenant_id=${t.id}`, { key: r.adminKey });
    expect(notFailed.status).toBe(409);
    expect(notFailed.body.code).toBe('job_not_requeueable');
    // delete a finished job
    const del = await r.call<{ deleted: boolean }>('DELETE', `/v1/ingestion-jobs/${ok.job_id}`, { key: t.priv });
    expect(del.body).toEqual({ job_id: ok.job_id, deleted: true });
    expect((await r.call('GET', `/v1/ingestion-jobs/${ok.job_id}`, { key: t.priv })).status).toBe(404);
    // other tenants see nothing
    expect((await r.call('GET', `/v1/ingestion-jobs/${bad.body.job_id}`, { key: other.priv })).status).toBe(404);
  });

  it('cancels a running background job at its next batch', async () => {
    const slow = await startRouter({ backgroundJobThreshold: 10, jobBatchSize: 10, jobBatchDelayMs: 50 });
    try {
      const s = await slow.tenant('slow');
      await slow.call('POST', '/v1/indexes', { key: s.priv, body: { index_id: 'i', name: 'i' } });
      const documents = Array.from({ length: 400 }, (_, i) => ({ id: `x${i}`, title: 'x' }));
      const start = await slow.call<Start>('POST', '/v1/indexes/i/ingest/start', { key: s.priv, body: { documents } });
      expect(start.body.run).toBe('background');
      await new Promise((res) => setTimeout(res, 200));
      const canceled = await slow.call<Job>('DELETE', `/v1/ingestion-jobs/${start.body.job_id}`, { key: s.priv });
      expect(canceled.body.status).toBe('canceled');
      await new Promise((res) => setTimeout(res, 300));
      const stored = (await slow.call<{ total: number }>('GET', '/v1/indexes/i/documents?page_size=1', { key: s.priv })).body.total;
      expect(stored).toBeGreaterThan(0);
      expect(stored).toBeLessThan(400);
      await new Promise((res) => setTimeout(res, 300));
      expect((await slow.call<{ total: number }>('GET', '/v1/indexes/i/documents?page_size=1', { key: s.priv })).body.total).toBe(stored);
      const job = await slow.call<Job>('GET', `/v1/ingestion-jobs/${start.body.job_id}`, { key: s.priv });
      expect(job.body.status).toBe('canceled');
    } finally {
      await slow.close();
    }
  });

  it('makes POST .../documents wait for the running job of its index, so the later write wins', async () => {
    const slow = await startRouter({ backgroundJobThreshold: 10, jobBatchSize: 10, jobBatchDelayMs: 30 });
    try {
      const s = await slow.tenant('wait');
      await slow.call('POST', '/v1/indexes', { key: s.priv, body: { index_id: 'i', name: 'i' } });
      const documents = Array.from({ length: 200 }, (_, i) => ({ id: `w${i}`, title: 'from job' }));
      const start = await slow.call<Start>('POST', '/v1/indexes/i/ingest/start', { key: s.priv, body: { documents } });
      const t0 = Date.now();
      const inline = await slow.call('POST', '/v1/indexes/i/documents', { key: s.priv, body: { documents: [{ id: 'w199', title: 'from request' }] } });
      expect(inline.status).toBe(200);
      const job = await slow.call<Job>('GET', `/v1/ingestion-jobs/${start.body.job_id}`, { key: s.priv });
      expect(job.body.status).toBe('succeeded');
      expect(Date.now() - t0).toBeGreaterThan(200);
      expect((await slow.call<{ title: string }>('GET', '/v1/indexes/i/documents/w199', { key: s.priv })).body.title).toBe('from request');
    } finally {
      await slow.close();
    }
  });
});

async function readEvents(url: string, key: string, headers: Record<string, string> = {}, until: (e: EventSourceMessage[]) => boolean, timeoutMs = 10_000): Promise<{ events: EventSourceMessage[]; comments: number; ended: boolean }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  const events: EventSourceMessage[] = [];
  let comments = 0;
  let ended = false;
  try {
    const res = await fetch(url, { headers: { 'x-api-key': key, ...headers }, signal: abort.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const parser = createParser({ onEvent: (e) => events.push(e), onComment: () => comments++ });
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      parser.feed(Buffer.from(value).toString('utf8'));
      if (until(events)) break;
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return { events, comments, ended };
}

describe('progress streams', () => {
  it('streams job progress with ids and heartbeats, ends on done, and resumes from Last-Event-ID', async () => {
    const slow = await startRouter({ backgroundJobThreshold: 10, jobBatchSize: 10, jobBatchDelayMs: 80, sseHeartbeatMs: 100 });
    try {
      const s = await slow.tenant('sse');
      await slow.call('POST', '/v1/indexes', { key: s.priv, body: { index_id: 'i', name: 'i' } });
      const documents = Array.from({ length: 60 }, (_, i) => ({ id: `e${i}`, title: 'x' }));
      const start = await slow.call<Start>('POST', '/v1/indexes/i/ingest/start', { key: s.priv, body: { documents } });
      const first = await readEvents(`${slow.url}/v1/ingestion-jobs/${start.body.job_id}/stream`, s.priv, {}, (ev) => ev.some((e) => e.event === 'done'));
      const done = first.events.find((e) => e.event === 'done')!;
      expect(JSON.parse(done.data)).toMatchObject({ status: 'succeeded', processed: 60 });
      expect(first.events.filter((e) => e.event === 'progress').length).toBeGreaterThan(1);
      const ids = first.events.map((e) => Number(e.id));
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      expect(first.comments).toBeGreaterThan(0);
      // resuming at the last id: nothing new, the stream just ends
      const resumed = await readEvents(`${slow.url}/v1/ingestion-jobs/${start.body.job_id}/stream`, s.priv, { 'last-event-id': done.id! }, () => false, 3_000);
      expect(resumed.events).toEqual([]);
      expect(resumed.ended).toBe(true);
      // resuming earlier: the current state at once
      const earlier = await readEvents(`${slow.url}/v1/ingestion-jobs/${start.body.job_id}/stream`, s.priv, { 'last-event-id': '1' }, (ev) => ev.length > 0, 3_000);
      expect(earlier.events[0]!.event).toBe('done');
      // another tenant's key does not find it
      const foreign = await slow.tenant('sse2');
      expect((await fetch(`${slow.url}/v1/ingestion-jobs/${start.body.job_id}/stream`, { headers: { 'x-api-key': foreign.priv } })).status).toBe(404);
    } finally {
      await slow.close();
    }
  });

  it('streams index status: a snapshot, then index and task events of the tenant only', async () => {
    const pending = readEvents(`${r.url}/v1/indexes/stream`, t.priv, {}, (ev) => ev.some((e) => e.event === 'index' && JSON.parse(e.data).index_id === 'streamed'));
    await new Promise((res) => setTimeout(res, 200));
    await r.call('POST', '/v1/indexes', { key: other.priv, body: { index_id: 'not-mine', name: 'x' } });
    await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'streamed', name: 'x' } });
    const { events } = await pending;
    expect(events[0]!.event).toBe('snapshot');
    expect((JSON.parse(events[0]!.data) as { indexes: { index_id: string }[] }).indexes.map((i) => i.index_id)).toContain('docs');
    expect(events.some((e) => e.data.includes('not-mine'))).toBe(false);
    const last = events[events.length - 1]!;
    // resume: events after the id are replayed (here: none of this tenant), no snapshot
    await r.call('DELETE', '/v1/indexes/streamed', { key: t.priv });
    const resumed = await readEvents(`${r.url}/v1/indexes/stream`, t.priv, { 'last-event-id': last.id! }, (ev) => ev.some((e) => e.data.includes('"deleted":true')), 5_000);
    expect(resumed.events[0]!.event).toBe('index');
    expect(resumed.events.some((e) => e.event === 'snapshot')).toBe(false);
  });
});

describe('exports', () => {
  beforeAll(async () => {
    const documents = Array.from({ length: 30 }, (_, i) => ({ id: `x${String(i).padStart(2, '0')}`, title: `Export ${i}`, raw: { n: i } }));
    expect((await r.call('POST', '/v1/indexes/exp/documents', { key: t.priv, body: { documents } })).status).toBe(200);
  });

  it('answers GET .../export with every document', async () => {
    const res = await r.call<{ index_id: string; documents: { id: string }[]; total: number }>('GET', '/v1/indexes/exp/export', { key: t.priv });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(30);
    expect(res.body.documents[29]).toEqual({ id: 'x29', title: 'Export 29', desc: '', manufacturer: '', raw: { n: 29 } });
  });

  it('streams GET .../export of a large index with the same shape', async () => {
    const res = await r.call<{ documents: { id: string }[]; total: number }>('GET', '/v1/indexes/big/export', { key: t.priv });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(130);
    expect(res.body.documents.length).toBe(130);
  });

  it('starts an immediate export with a signed, tenant-bound download link', async () => {
    const start = await r.call<Start>('POST', '/v1/indexes/exp/export/start', { key: t.priv, body: {} });
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ run: 'immediate', status: 'succeeded' });
    const url = start.body.download_url!;
    expect(url).toMatch(/^\/v1\/exports\/exp_[0-9a-f]+\.\d+\.[A-Za-z0-9_-]{43}\.json$/);
    const file = await r.call<{ documents: unknown[]; total: number }>('GET', url, { key: t.priv });
    expect(file.status).toBe(200);
    expect(file.body.total).toBe(30);
    expect(file.headers.get('content-disposition')).toMatch(/attachment/);
    expect((await r.call<Err>('GET', url, { key: other.priv })).status).toBe(404);
    const tampered = url.replace(/\.(\d+)\./, (_, n: string) => `.${Number(n) + 1}.`);
    expect((await r.call<Err>('GET', tampered, { key: t.priv })).status).toBe(404);
    for (const trick of ['..%2F..%2Fetc%2Fpasswd', '.json', 'x.json']) expect((await r.call('GET', `/v1/exports/${trick}`, { key: t.priv })).status).toBeGreaterThanOrEqual(404);
    const job = await r.call<Job>('GET', `/v1/export-jobs/${start.body.job_id}`, { key: t.priv });
    expect(job.body.download_url).toBe(url);
  });

  it('runs a large export as a background job with a download route, JSON Lines too', async () => {
    const start = await r.call<Start>('POST', '/v1/indexes/big/export/start', { key: t.priv, body: { format: 'jsonl' } });
    expect(start.body.run).toBe('background');
    const done = await waitJob(start.body.job_id, 'export');
    expect(done).toMatchObject({ status: 'succeeded', processed: 130, download_url: `/v1/export-jobs/${start.body.job_id}/download` } as Partial<Job>);
    const file = await fetch(`${r.url}/v1/export-jobs/${start.body.job_id}/download`, { headers: { 'x-api-key': t.priv } });
    expect(file.status).toBe(200);
    const lines = (await file.text()).trim().split('\n');
    expect(lines.length).toBe(130);
    expect(JSON.parse(lines[0]!)).toHaveProperty('id');
    const listed = await r.call<Job[]>('GET', '/v1/export-jobs', { key: t.priv });
    expect(listed.body.map((j) => j.job_id)).toContain(start.body.job_id);
    expect((await r.call('DELETE', `/v1/export-jobs/${start.body.job_id}`, { key: t.priv })).status).toBe(200);
    expect((await r.call('GET', `/v1/export-jobs/${start.body.job_id}/download`, { key: t.priv })).status).toBe(404);
  });
});
