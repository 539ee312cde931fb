// Ingestion and export jobs end to end against a real single-node process: the real catalogs
// (BigBasket CSV, Best Buy JSON and the same as JSON Lines), hostile files, upload limits and the
// presigned route, progress streams, exports, promote under load, and the crash test: SIGKILL
// while a background job runs, restart, and the job resumes with no document lost or duplicated.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { ApiClient, enginesLoaded, tenantKey, waitFor } from './api-client.js';
import { bestBuyJson, bestBuyJsonl, bigBasketCsv, homeDepotLatin1, readStream, uploadFile, waitForJob, type JobView, type StartView } from './job-client.js';
import { promoteUnderLoad } from './promote-load.js';

const MB = 1024 * 1024;
type Err = { code: string; detail: string };
type Doc = { id: string; title: string; desc: string; manufacturer: string; raw: Record<string, unknown> };

describe('jobs on a single node', () => {
  let node: SingleNode;
  let api: ApiClient;
  let key: string;

  beforeAll(async () => {
    node = await startSingleNode({ echo: process.env.SUGGEST_TEST_ECHO === '1', env: { SUGGEST_SSE_HEARTBEAT_MS: '300', SUGGEST_JOB_LEASE_TTL_SECONDS: '2' } });
    api = new ApiClient(node.baseUrl);
    key = await tenantKey(api, node.adminKey, { tenant_id: 'catalog', name: 'catalog', plan: 'enterprise' });
    for (const index_id of ['bigbasket', 'bestbuy', 'hostile', 'limits']) expect((await api.call('POST', '/v1/indexes', { key, body: { index_id, name: index_id } })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await node?.stop();
  });

  it('ingests the BigBasket CSV as a background job, followed on its progress stream', async () => {
    const up = await uploadFile(node.baseUrl, key, 'bigbasket', bigBasketCsv(), { filename: 'BigBasket Products.csv', type: 'text/csv' });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.run).toBe('background');
    const stream = await readStream(`${node.baseUrl}/v1/ingestion-jobs/${up.body.job_id}/stream`, key, (ev) => ev.some((e) => e.event === 'done'));
    const done = JSON.parse(stream.events.find((e) => e.event === 'done')!.data) as JobView;
    expect(done).toMatchObject({ status: 'succeeded', processed: 27_555, failed: 0, total: 27_555, format: 'csv' });
    const count = await api.call<{ total: number }>('GET', '/v1/indexes/bigbasket/documents?page_size=1', { key });
    expect(count.body.total).toBe(27_555);
    const first = await api.call<Doc>('GET', '/v1/indexes/bigbasket/documents/1', { key });
    expect(first.body).toMatchObject({ title: 'Garlic Oil - Vegetarian Capsule 500 mg', manufacturer: 'Sri Sri Ayurveda', raw: { category: 'Beauty & Hygiene', sale_price: 220, rating: 4.1 } });
    // large enough for the job's warm-up: the engine is loaded without any query having asked
    const loaded = async () => (await enginesLoaded(api, key, 'bigbasket')).every(Boolean);
    await waitFor(loaded, 60_000, 'the engine loaded after the job');
  });

  it('leaves the warm-up to the last of two jobs into one index, so that the other does not run beside a loaded engine', async () => {
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'twice', name: 'twice' } })).status).toBe(200);
    const first = await uploadFile(node.baseUrl, key, 'twice', bigBasketCsv(), { filename: 'first.csv', type: 'text/csv' });
    const second = await uploadFile(node.baseUrl, key, 'twice', bigBasketCsv(), { filename: 'second.csv', type: 'text/csv' });
    expect([first.body.run, second.body.run]).toEqual(['background', 'background']);
    expect(await waitForJob(api, key, first.body.job_id)).toMatchObject({ status: 'succeeded' });
    expect(await waitForJob(api, key, second.body.job_id)).toMatchObject({ status: 'succeeded' });
    // the two run side by side: whichever ends first sees the other still active and leaves it the warm-up
    const lineOf = (job: string) => node.process.output.find((l) => l.includes('engine warm-up after ingestion') && l.includes(`"job":"${job}"`));
    await waitFor(async () => lineOf(first.body.job_id) !== undefined && lineOf(second.body.job_id) !== undefined, 10_000, 'both warm-up decisions');
    const left = [first, second].filter((j) => lineOf(j.body.job_id)!.includes('left to a later job'));
    expect(left, `${lineOf(first.body.job_id)}\n${lineOf(second.body.job_id)}`).toHaveLength(1);
    const loaded = async () => (await enginesLoaded(api, key, 'twice')).every(Boolean);
    await waitFor(loaded, 60_000, 'the engine loaded after the second job');
  });

  it('gives the same documents for the Best Buy JSON array and the same records as JSON Lines', async () => {
    const json = await uploadFile(node.baseUrl, key, 'bestbuy', bestBuyJson(), { filename: 'bestbuy.json' });
    expect(json.body.run).toBe('background');
    expect(await waitForJob(api, key, json.body.job_id)).toMatchObject({ status: 'succeeded', processed: 3_291, failed: 0 });
    const lines = await uploadFile(node.baseUrl, key, 'bestbuy', bestBuyJsonl(), { filename: 'bestbuy.jsonl' });
    expect(await waitForJob(api, key, lines.body.job_id)).toMatchObject({ status: 'succeeded', processed: 3_291, format: 'jsonl' });
    // records without ids get ids from their content: the second upload replaced, not added
    expect((await api.call<{ total: number }>('GET', '/v1/indexes/bestbuy/documents?page_size=1', { key })).body.total).toBe(3_291);
  });

  describe('hostile files', () => {
    const up = (file: string | Buffer, filename: string, type?: string) => uploadFile(node.baseUrl, key, 'hostile', file, { filename, ...(type ? { type } : {}) });

    it('broken CSV quoting: the bad rows fail alone, with their lines', async () => {
      const csv = 'id,title,price\nq1,"fine, quoted",1\nq2,"bad "quote" inside",2\nq3,12" screen,3\nq4,"never closed,4\nq5,after,5\n';
      const r = await up(csv, 'quotes.csv');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 4, failed: 1 });
      expect(r.body.job.errors[0]).toMatchObject({ line: 5 });
      expect(r.body.job.errors[0]!.detail).toMatch(/never closed/);
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/q2', { key })).body.title).toBe('bad "quote" inside');
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/q5', { key })).status).toBe(200);
    });

    it('a latin-1 file (Home Depot) and UTF-16 with and without BOM are read right', async () => {
      const r = await up(homeDepotLatin1(400), 'homedepot.csv');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 399, failed: 0 });
      // the bytes E5 A1 of this row, read as latin-1 (what the file is), not replaced
      const d = await api.call<Doc>('GET', '/v1/indexes/hostile/documents/1060', { key });
      expect(d.body.title).toBe('Paslode 3 in. x 0.120-Gauge 30\u00e5\u00a1 Galvanized Ring Shank Paper Tape Framing Nails (2,000-Pack)');
      const u16 = Buffer.from('id,title\nw1,Größe\n', 'utf16le');
      expect((await up(Buffer.concat([Buffer.from([0xff, 0xfe]), u16]), 'u16bom.csv')).body.job.status).toBe('succeeded');
      expect((await up(Buffer.from('id,title\nw2,Çedille\n', 'utf16le'), 'u16.csv')).body.job.status).toBe('succeeded');
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/w2', { key })).body.title).toBe('Çedille');
    });

    it('a UTF-8 BOM before the header does not rename the first column', async () => {
      const r = await up('\ufeffid,title\nbom1,With BOM\n', 'bom.csv');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 1 });
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/bom1', { key })).body).toMatchObject({ title: 'With BOM', raw: {} });
    });

    it('an enormous row fails alone; the rows around it are ingested', async () => {
      const csv = `id,title\nbig0,before\nbig1,${'x'.repeat(3 * MB)}\nbig2,after\n`;
      const r = await up(csv, 'enormous.csv');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 1 });
      expect(r.body.job.errors[0]).toMatchObject({ line: 3 });
      const jsonl = `{"id":"big3"}\n{"id":"big4","t":"${'y'.repeat(2 * MB)}"}\n{"id":"big5"}\n`;
      expect((await up(jsonl, 'enormous.jsonl')).body.job).toMatchObject({ processed: 2, failed: 1 });
    });

    it('deeply nested JSON is refused per record, without exhausting the stack', async () => {
      const deep = '['.repeat(200_000) + ']'.repeat(200_000);
      const json = `[{"id":"n1","title":"ok"},${deep},{"id":"n2","raw":${'{"a":'.repeat(40)}1${'}'.repeat(40)}},{"id":"n3"}]`;
      const r = await up(json, 'nested.json');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 2 });
      expect(r.body.job.errors.map((e) => e.detail).join(' ')).toMatch(/deeper than 32/);
      expect((await api.call('GET', '/v1/indexes/hostile/documents/n3', { key })).status).toBe(200);
      const alone = await up(deep, 'only-deep.json');
      expect(alone.body.job).toMatchObject({ status: 'failed', processed: 0 });
    });

    it('takes the format from the field, then the file name, then the content type, then the first character', async () => {
      // a .jsonl whose first line is an array: that line fails alone, the next one is read
      const a = await up('["x"]\n{"id":"ml1","title":"Second line"}\n', 'a.jsonl');
      expect(a.body.job).toMatchObject({ status: 'succeeded', processed: 1, failed: 1, format: 'jsonl' });
      expect(a.body.job.errors[0]).toMatchObject({ line: 1, detail: expect.stringMatching(/an array, not an object/) });
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/ml1', { key })).body.title).toBe('Second line');
      // a .csv holding JSON is not read as JSON Lines, nor stored as CSV pieces: it fails and says why
      const count = async () => (await api.call<{ total: number }>('GET', '/v1/indexes/hostile/documents?page_size=1', { key })).body.total;
      const before = await count();
      for (const [text, type] of [
        ['{"id":"ml2","title":"JSON named CSV"}\n', undefined],
        [JSON.stringify([{ id: 'ml2', title: 'JSON sent as CSV' }]), 'text/csv'],
      ] as const) {
        const b = await up(text, 'export.csv', type);
        expect(b.body.job).toMatchObject({ status: 'failed', processed: 0, format: 'csv', error_code: 'unreadable_file' });
        expect(b.body.job.error).toMatch(/header row .*JSON.*format/);
      }
      expect(await count()).toBe(before);
      // the field wins over the name; without a telling name the content type, then the first character
      const c = await uploadFile(node.baseUrl, key, 'hostile', '{"id":"ml3"}\n{"id":"ml4"}\n', { filename: 'lines.csv', fields: { format: 'jsonl' } });
      expect(c.body.job).toMatchObject({ status: 'succeeded', processed: 2, format: 'jsonl' });
      const d = await up('{"id":"ml5"}\n{"id":"ml6"}\n', 'lines.json', 'application/json');
      expect(d.body.job).toMatchObject({ status: 'succeeded', processed: 2, format: 'json' });
      const e = await up('id,title\nml7,CSV sent as JSON\n', 'data', 'application/json');
      expect(e.body.job).toMatchObject({ status: 'failed', processed: 0, format: 'json', error_code: 'unreadable_file' });
      const f = await up('id,title\nml8,No label\n', 'data');
      expect(f.body.job).toMatchObject({ status: 'succeeded', processed: 1, format: 'csv' });
      // what the file name says is believed: garbage fails cleanly
      const g = await up('just some words\nand more\n', 'notes.jsonl');
      expect(g.body.job).toMatchObject({ status: 'failed', processed: 0, failed: 2, error_code: 'no_valid_rows' });
    });

    it('reads a JSON object holding a `documents` array as that array, and refuses any other object', async () => {
      const body = JSON.stringify({ documents: [{ id: 'fm4', title: 'wrapped' }] });
      for (const fields of [{}, { format: 'json' }] as Record<string, string>[]) {
        const r = await uploadFile(node.baseUrl, key, 'hostile', body, { filename: 'a.json', fields });
        expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 1, failed: 0, format: 'json' });
      }
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/fm4', { key })).body).toEqual({ id: 'fm4', title: 'wrapped', desc: '', manufacturer: '', raw: {} });
      // unlabelled, it is recognised by its first key
      expect((await up(JSON.stringify({ documents: [{ id: 'fm5' }] }), 'upload.bin')).body.job).toMatchObject({ status: 'succeeded', processed: 1, format: 'json' });
      const before = (await api.call<{ total: number }>('GET', '/v1/indexes/hostile/documents?page_size=1', { key })).body.total;
      for (const other of [{ items: [{ id: 'fm6' }] }, { id: 'fm7', title: 'one document, not a list' }]) {
        const r = await up(JSON.stringify(other), 'other.json');
        expect(r.body.job).toMatchObject({ status: 'failed', processed: 0, error_code: 'unreadable_file' });
        expect(r.body.job.error).toMatch(/one JSON object without a `documents` array/);
      }
      expect((await api.call<{ total: number }>('GET', '/v1/indexes/hostile/documents?page_size=1', { key })).body.total).toBe(before);
    });

    it('fails rows that would lose data: extra CSV cells, a null id, a number too large to store', async () => {
      const csv = await up('id,title\nx1,fine\nx2,too,many,cells\nx3,"trailing empty",,\n,no id\n', 'extra.csv');
      expect(csv.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 2 });
      expect(csv.body.job.errors.map((e) => [e.line, e.detail])).toEqual([
        [3, 'The row has 4 cells but the header row has 2 columns; cells past the last column would be lost.'],
        [5, 'The id is empty; give the record an id, or leave the field out to have one made from its content.'],
      ]);
      expect((await api.call('GET', '/v1/indexes/hostile/documents/x2', { key })).status).toBe(404);
      const lines = await up('{"id":null,"title":"null id"}\n{"id":"x4","price":1e309}\n{"title":"no id field"}\n', 'ids.jsonl');
      expect(lines.body.job).toMatchObject({ status: 'succeeded', processed: 1, failed: 2 });
      expect(lines.body.job.errors.map((e) => [e.line, e.detail])).toEqual([
        [1, 'The id is null; give the record an id, or leave the field out to have one made from its content.'],
        [2, 'The value of "price" is a number too large to store (beyond ±1.8e308).'],
      ]);
    });

    it('keeps shopping-feed prices it cannot read as text, never as a number that is not finite', async () => {
      const feed = 'id,title,price,sale_price\nP1,Odd,abc XYZ,-5 USD\nP2,Huge,1e309 USD,' + '9'.repeat(400) + ' USD\n';
      const r = await uploadFile(node.baseUrl, key, 'hostile', feed, { filename: 'feed.csv', route: 'import/merchant-shopping' });
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 0 });
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/P1', { key })).body.raw).toEqual({ price: 'abc XYZ', sale_price: '-5 USD' });
      expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/P2', { key })).body.raw).toEqual({ price: '1e309 USD', sale_price: `${'9'.repeat(400)} USD` });
    });

    it('refuses a multipart body with two `file` parts (422 at the field), or a field given twice', async () => {
      // the listing holds the last 50 jobs: count the ones that are new
      const jobIds = async () => new Set((await api.call<JobView[]>('GET', '/v1/ingestion-jobs', { key })).body.map((j) => j.job_id));
      const before = await jobIds();
      const form = new FormData();
      form.append('file', new Blob(['{"id":"two1"}\n']), 'one.jsonl');
      form.append('file', new Blob(['{"id":"two2"}\n']), 'two.jsonl');
      const res = await fetch(`${node.baseUrl}/v1/indexes/hostile/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: string[]; msg: string }[] };
      expect(body.detail[0]!.loc).toEqual(['body', 'file']);
      expect(body.detail[0]!.msg).toMatch(/one file per upload/);
      const twice = await uploadFile(node.baseUrl, key, 'hostile', '{"id":"two3"}\n', { filename: 'x.jsonl', fields: { format: 'jsonl' } });
      expect(twice.status).toBe(200);
      const dup = new FormData();
      dup.append('format', 'csv');
      dup.append('format', 'jsonl');
      dup.append('file', new Blob(['{"id":"two4"}\n']), 'x.jsonl');
      const again = await fetch(`${node.baseUrl}/v1/indexes/hostile/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: dup });
      expect(again.status).toBe(422);
      expect(((await again.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(['body', 'format']);
      // the repeat after the file: the file already stored is removed
      const late = new FormData();
      late.append('file', new Blob(['{"id":"two5"}\n'.repeat(20_000)]), 'x.jsonl');
      late.append('source_type', 'a');
      late.append('source_type', 'b');
      const after = await fetch(`${node.baseUrl}/v1/indexes/hostile/upload`, { method: 'POST', headers: { 'x-api-key': key }, body: late });
      expect(after.status).toBe(422);
      expect(((await after.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(['body', 'source_type']);
      expect((await api.call('GET', '/healthz')).status).toBe(200);
      expect([...(await jobIds())].filter((id) => !before.has(id))).toEqual([twice.body.job_id]);
      for (const id of ['two1', 'two2', 'two4', 'two5']) expect((await api.call('GET', `/v1/indexes/hostile/documents/${id}`, { key })).status).toBe(404);
    });

    it('a file that ends mid-record keeps everything before it', async () => {
      const json = '[{"id":"t1","title":"a"},{"id":"t2","title":"b"},{"id":"t3","tit';
      const r = await up(json, 'truncated.json');
      expect(r.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 1 });
      expect(r.body.job.errors.map((e) => e.detail).join(' ')).toMatch(/ends inside the record/);
      const csv = await up('id,title\nt4,a\nt5,"cut in the mid', 'truncated.csv');
      expect(csv.body.job).toMatchObject({ status: 'succeeded', processed: 1, failed: 1 });
      const lines = await up('{"id":"t6"}\n{"id":"t7","x":', 'truncated.jsonl');
      expect(lines.body.job).toMatchObject({ status: 'succeeded', processed: 1, failed: 1 });
    });

    it('empty and binary files fail cleanly with a reason', async () => {
      const empty = await up('', 'empty.csv');
      expect(empty.body.job).toMatchObject({ status: 'failed', processed: 0 });
      expect(empty.body.job.error).toBeTruthy();
      const noise = Buffer.alloc(64 * 1024);
      for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
      const bin = await up(noise, 'noise.bin');
      expect(bin.status).toBe(200);
      expect(['failed', 'succeeded']).toContain(bin.body.job.status);
      expect((await api.call('GET', '/healthz')).status).toBe(200);
    });
  });

  describe('limits', () => {
    it('refuses a direct upload over the tenant limit, and over 50 MB points to the presigned route', async () => {
      const small = await tenantKey(api, node.adminKey, { tenant_id: 'small', name: 'small', plan: 'pro' });
      expect((await api.call('PATCH', '/v1/admin/tenants/small', { key: node.adminKey, body: { upload_limit_bytes: 1 * MB } })).status).toBe(200);
      await api.call('POST', '/v1/indexes', { key: small, body: { index_id: 'x', name: 'x' } });
      const limit = await api.call<{ limit_bytes: number; source: string }>('GET', '/v1/indexes/file-size-limit', { key: small });
      expect(limit.body).toMatchObject({ limit_bytes: MB, source: 'tenant' });
      const over = await uploadFile(node.baseUrl, small, 'x', bigBasketCsv(), { filename: 'bb.csv' });
      expect(over.status).toBe(413);
      expect(over.body.code).toBe('payload_too_large');
      expect(String(over.body.detail)).toMatch(/upload limit of tenant 'small' is 1048576 bytes \(tenant\)/);
      // over 50 MB (enterprise allows 1 GB): only through a presigned upload
      const huge = Buffer.alloc(51 * MB, 0x61);
      const direct = await uploadFile(node.baseUrl, key, 'limits', huge, { filename: 'huge.csv' });
      expect(direct.status).toBe(413);
      expect(String(direct.body.detail)).toMatch(/presigned URL: POST \/v1\/indexes\/limits\/upload-url/);
    });

    it('takes a 25 MB file through the presigned route and ingests it in the background', async () => {
      const items = JSON.parse(bestBuyJson().toString('utf8')) as Record<string, unknown>[];
      const lines: string[] = [];
      let size = 0;
      for (let i = 0; size < 25 * MB; i++) {
        const line = JSON.stringify({ ...items[i % items.length], id: `big-${i}` });
        lines.push(line);
        size += line.length + 1;
      }
      const u = await api.call<{ upload_id: string; upload_url: string; max_bytes: number }>('POST', '/v1/indexes/limits/upload-url', { key, body: { filename: 'big.jsonl', size_bytes: size } });
      expect(u.status).toBe(200);
      const put = await fetch(node.baseUrl + u.body.upload_url, { method: 'PUT', body: lines.join('\n') + '\n' });
      expect(put.status).toBe(200);
      const done = await api.call<StartView>('POST', '/v1/indexes/limits/ingest/cloud-complete', { key, body: { upload_id: u.body.upload_id, source_filename: 'big.jsonl' } });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body.run).toBe('background');
      expect(await waitForJob(api, key, done.body.job_id, 'ingestion', 120_000)).toMatchObject({ status: 'succeeded', processed: lines.length, failed: 0 });
    });
  });

  describe('exports', () => {
    it('exports the BigBasket index as a background job and downloads it', async () => {
      const start = await api.call<StartView>('POST', '/v1/indexes/bigbasket/export/start', { key, body: {} });
      expect(start.body.run).toBe('background');
      const job = await waitForJob(api, key, start.body.job_id, 'export');
      expect(job).toMatchObject({ status: 'succeeded', processed: 27_555 });
      const file = await api.call<{ index_id: string; documents: Doc[]; total: number }>('GET', job.download_url!, { key });
      expect(file.status).toBe(200);
      expect(file.body.total).toBe(27_555);
      expect(new Set(file.body.documents.map((d) => d.id)).size).toBe(27_555);
      const direct = await api.call<{ total: number }>('GET', '/v1/indexes/bigbasket/export', { key });
      expect(direct.body.total).toBe(27_555);
    });
  });

  it('answers every job route with its statuses', async () => {
    const feed = 'id\ttitle\tdescription\tbrand\tprice\tlink\nF1\tKettle\tHot water\tKettleCo\t19.99 USD\thttps://shop.example/f1\n';
    const imp = await uploadFile(node.baseUrl, key, 'hostile', feed, { filename: 'feed.tsv', route: 'import/merchant-shopping' });
    expect(imp.status).toBe(200);
    expect(imp.body.job).toMatchObject({ status: 'succeeded', processed: 1, source_type: 'merchant-shopping' });
    expect((await api.call<Doc>('GET', '/v1/indexes/hostile/documents/F1', { key })).body.raw).toMatchObject({ price: 19.99, currency: 'USD', url: 'https://shop.example/f1' });
    // lists (the last 50, newest first), tasks, reads
    for (let i = 0; i < 30; i++) expect((await api.call('POST', '/v1/indexes/hostile/ingest/start', { key, body: [{ id: `many-${i}` }] })).status).toBe(200);
    const list = await api.call<(JobView & { created_at: string })[]>('GET', '/v1/ingestion-jobs', { key });
    expect(list.status).toBe(200);
    expect(list.body.length).toBe(50);
    const created = list.body.map((j) => j.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    const tasks = await api.call<JobView[]>('GET', '/v1/indexes/bigbasket/tasks', { key });
    expect(tasks.body.map((j) => j.kind).sort()).toEqual(['export', 'ingestion']);
    expect((await api.call<Err>('GET', '/v1/ingestion-jobs/ing_nope', { key })).status).toBe(404);
    expect((await api.call<Err>('GET', '/v1/indexes/nope/tasks', { key })).status).toBe(404);
    // requeue: admin only, failed jobs only
    const all = await api.call<JobView[]>('GET', '/v1/indexes/hostile/tasks', { key });
    const failed = all.body.find((j) => j.status === 'failed')!;
    const ok = list.body.find((j) => j.status === 'succeeded')!;
    expect((await api.call<Err>('POST', `/v1/ingestion-jobs/${failed.job_id}/requeue`, { key })).status).toBe(403);
    const notFailed = await api.call<Err>('POST', `/v1/ingestion-jobs/${ok.job_id}/requeue?tenant_id=catalog`, { key: node.adminKey });
    expect(notFailed.status).toBe(409);
    expect(notFailed.body.code).toBe('job_not_requeueable');
    const requeued = await api.call<JobView>('POST', `/v1/ingestion-jobs/${failed.job_id}/requeue?tenant_id=catalog`, { key: node.adminKey });
    expect(requeued.status).toBe(200);
    expect((await waitForJob(api, key, failed.job_id)).status).toBe('failed');
    // delete a finished job
    expect((await api.call('DELETE', `/v1/ingestion-jobs/${ok.job_id}`, { key })).body).toEqual({ job_id: ok.job_id, deleted: true });
    expect((await api.call('DELETE', `/v1/ingestion-jobs/${ok.job_id}`, { key })).status).toBe(404);
    // exports: immediate with a signed link, the job routes, the file route's refusals
    const exp = await api.call<StartView>('POST', '/v1/indexes/hostile/export/start', { key, body: { format: 'json' } });
    expect(exp.body).toMatchObject({ run: 'immediate', status: 'succeeded' });
    const file = await api.call<{ total: number }>('GET', exp.body.download_url!, { key });
    expect(file.status).toBe(200);
    expect(file.body.total).toBeGreaterThan(10);
    const other = await tenantKey(api, node.adminKey, { tenant_id: 'stranger', name: 'stranger', plan: 'pro' });
    expect((await api.call<Err>('GET', exp.body.download_url!, { key: other })).status).toBe(404);
    expect((await api.call<Err>('GET', '/v1/exports/..%2F..%2Fmeta', { key })).status).toBeGreaterThanOrEqual(404);
    expect((await api.call<JobView[]>('GET', '/v1/export-jobs', { key })).body.map((j) => j.job_id)).toContain(exp.body.job_id);
    expect((await api.call<JobView>('GET', `/v1/export-jobs/${exp.body.job_id}`, { key })).body.download_url).toBe(exp.body.download_url);
    const exportStream = await readStream(`${node.baseUrl}/v1/export-jobs/${exp.body.job_id}/stream`, key, (ev) => ev.some((e) => e.event === 'done'), { timeoutMs: 5_000 });
    expect(exportStream.events[0]!.event).toBe('done');
    expect((await api.call<Err>('POST', `/v1/export-jobs/${exp.body.job_id}/requeue?tenant_id=catalog`, { key: node.adminKey })).status).toBe(409);
    expect((await api.call('DELETE', `/v1/export-jobs/${exp.body.job_id}`, { key })).status).toBe(200);
    expect((await api.call<Err>('GET', exp.body.download_url!, { key })).status).toBe(404);
    // the index stream starts with a snapshot of this tenant's indexes
    const snap = await readStream(`${node.baseUrl}/v1/indexes/stream`, key, (ev) => ev.length > 0, { timeoutMs: 5_000 });
    expect(snap.events[0]!.event).toBe('snapshot');
    const views = (JSON.parse(snap.events[0]!.data) as { indexes: { index_id: string; document_count: number }[] }).indexes;
    expect(views.find((i) => i.index_id === 'bigbasket')!.document_count).toBe(27_555);
  });

  it('promotes a staging index under load: no failed request, no mixed response', async () => {
    // a tenant of its own: its document-limit checks must not count (and index) the big catalogs above
    const own = await tenantKey(api, node.adminKey, { tenant_id: 'promoter', name: 'promoter', plan: 'pro' });
    const r = await promoteUnderLoad([node.baseUrl], own, 'live');
    expect(r.errors).toEqual([]);
    expect(r.mixed).toBe(0);
    expect(r.flips).toBe(0);
    expect(r.sawOld).toBeGreaterThan(0);
    expect(r.sawNew).toBeGreaterThan(0);
    expect(r.typeahead).toBeGreaterThan(0);
  });

  it('bounds the warm wait of a promotion by ready_timeout_ms, refuses a bad one with 422, and with require_ready swaps only once ready', async () => {
    const own = await tenantKey(api, node.adminKey, { tenant_id: 'swapper', name: 'swapper', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key: own, body: { index_id: 'shop', name: 'shop' } })).status).toBe(200);
    const staging = (await api.call<{ physical_index_id: string }>('POST', '/v1/indexes/shop/allocate-physical-id', { key: own })).body.physical_index_id;
    const aliasOf = async () => (await api.call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', { key: own })).body.find((i) => i.index_id === 'shop')!.physical_index_id;
    const live = await aliasOf();
    expect(live).toMatch(/^shop/);
    const documents = Array.from({ length: 500 }, (_, i) => ({ id: `s${i}`, title: `Cordless impact driver ${i}`, raw: {} }));
    expect((await api.call('POST', `/v1/indexes/${staging}/documents`, { key: own, body: { documents } })).status).toBe(200);
    for (const bad of [-1, 600_001, 1.5, '1000', null]) {
      const r = await api.call<{ detail: { loc: unknown[] }[] }>('POST', '/v1/indexes/shop/promote', { key: own, body: { physical_index_id: staging, ready_timeout_ms: bad } });
      expect(r.status, JSON.stringify(bad)).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(['body', 'ready_timeout_ms']);
    }
    // refused without a swap
    expect(await aliasOf()).toBe(live);
    // required ready with no time to get there: 409, no swap
    const early = await api.call<{ code: string; detail: string }>('POST', '/v1/indexes/shop/promote', { key: own, body: { physical_index_id: staging, ready_timeout_ms: 0, require_ready: true } });
    expect(early.status, JSON.stringify(early.body)).toBe(409);
    expect(early.body.code).toBe('conflict');
    expect(early.body.detail).toMatch(/not ready after \d+ ms \(0 of 1 replicas.*part 0 on .*: loading.*promote again later/);
    expect(await aliasOf()).toBe(live);
    // the load that refusal started goes on: a promotion requiring it ready soon succeeds
    await waitFor(
      async () => {
        const r = await api.call<{ warm: { ready: boolean } }>('POST', '/v1/indexes/shop/promote', { key: own, body: { physical_index_id: staging, ready_timeout_ms: 0, require_ready: true } });
        return r.status === 200 && r.body.warm.ready;
      },
      30_000,
      'a promotion with the engine ready',
    );
    expect(await aliasOf()).toBe(staging);
    // 0 on another staging index: the loads start, the swap does not wait for them
    const next = (await api.call<{ physical_index_id: string }>('POST', '/v1/indexes/shop/allocate-physical-id', { key: own })).body.physical_index_id;
    expect((await api.call('POST', `/v1/indexes/${next}/documents`, { key: own, body: { documents } })).status).toBe(200);
    const now = await api.call<{ physical_index_id: string; warm: { ready: boolean; waited_ms: number; replicas: number } }>('POST', '/v1/indexes/shop/promote', { key: own, body: { physical_index_id: next, ready_timeout_ms: 0 } });
    expect(now.status, JSON.stringify(now.body)).toBe(200);
    expect(now.body.physical_index_id).toBe(next);
    expect(now.body.warm.replicas).toBe(1);
    expect(now.body.warm.waited_ms).toBeLessThan(1_000);
    // the load it started is there for the first query
    const loaded = async () => (await enginesLoaded(api, own, 'shop')).every(Boolean);
    await waitFor(loaded, 30_000, 'the engine loaded after the promotion');
  });

  it('warms an index on request: its engine loads with no query, within the wait asked for', async () => {
    const own = await tenantKey(api, node.adminKey, { tenant_id: 'warmer', name: 'warmer', plan: 'pro' });
    const pub = (await api.call<{ key: string }>('POST', '/v1/admin/tenants/warmer/keys', { key: node.adminKey, body: { kind: 'public', name: 'pub' } })).body.key;
    expect((await api.call('POST', '/v1/indexes', { key: own, body: { index_id: 'cold', name: 'cold' } })).status).toBe(200);
    const documents = Array.from({ length: 300 }, (_, i) => ({ id: `c${i}`, title: `Hedge trimmer ${i}`, raw: {} }));
    expect((await api.call('POST', '/v1/indexes/cold/documents', { key: own, body: { documents } })).status).toBe(200);
    const loaded = async () => (await enginesLoaded(api, own, 'cold')).every(Boolean);
    expect(await loaded()).toBe(false);
    expect((await api.call<{ code: string }>('POST', '/v1/indexes/cold/warm', { key: pub, body: {} })).status).toBe(403);
    expect((await api.call<{ code: string }>('POST', '/v1/indexes/nope/warm', { key: own, body: {} })).status).toBe(404);
    expect((await api.call('POST', '/v1/indexes/cold/warm', { key: own, body: { ready_timeout_ms: -5 } })).status).toBe(422);
    expect(await loaded()).toBe(false);
    const warmed = await api.call<{ index_id: string; physical_index_id: string; warm: { ready: boolean; replicas: number; replicas_ready: number } }>('POST', '/v1/indexes/cold/warm', { key: own });
    expect(warmed.status, JSON.stringify(warmed.body)).toBe(200);
    expect(warmed.body).toMatchObject({ index_id: 'cold', warm: { ready: true, replicas: 1, replicas_ready: 1 } });
    expect(await loaded()).toBe(true);
    const scrape = (await api.call<string>('GET', '/metrics')).body;
    expect(Number(/^suggest_engine_warm_loads_total (\d+)$/m.exec(scrape)?.[1])).toBeGreaterThanOrEqual(1);
    expect(scrape).toMatch(/^suggest_engine_snapshots_held \d+$/m);
  });
});

describe('a background job survives SIGKILL of its node', () => {
  let node: SingleNode;
  let api: ApiClient;
  let key: string;

  beforeAll(async () => {
    // small, slowed batches so the kill lands mid-job
    node = await startSingleNode({ env: { SUGGEST_JOB_BATCH_SIZE: '200', SUGGEST_JOB_BATCH_DELAY_MS: '15', SUGGEST_JOB_LEASE_TTL_SECONDS: '2' } });
    api = new ApiClient(node.baseUrl);
    key = await tenantKey(api, node.adminKey, { tenant_id: 'crash', name: 'crash', plan: 'pro' });
    expect((await api.call('POST', '/v1/indexes', { key, body: { index_id: 'bb', name: 'bb' } })).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await node?.stop();
  });

  it('resumes after restart from its last batch, with every row exactly once', async () => {
    const up = await uploadFile(node.baseUrl, key, 'bb', bigBasketCsv(), { filename: 'bigbasket.csv' });
    expect(up.body.run).toBe('background');
    const jobId = up.body.job_id;
    await waitFor(async () => (await api.call<JobView>('GET', `/v1/ingestion-jobs/${jobId}`, { key })).body.processed >= 3_000, 30_000, 'the job to be under way');
    await node.process.kill();
    await node.restart();
    api = new ApiClient(node.baseUrl);
    const done = await waitForJob(api, key, jobId, 'ingestion', 120_000);
    expect(done).toMatchObject({ status: 'succeeded', processed: 27_555, failed: 0, total: 27_555 });
    expect(done.attempts).toBe(2);
    const exported = await api.call<{ documents: Doc[]; total: number }>('GET', '/v1/indexes/bb/export', { key });
    expect(exported.body.total).toBe(27_555);
    const ids = new Set(exported.body.documents.map((d) => Number(d.id)));
    expect(ids.size).toBe(27_555);
    for (let i = 1; i <= 27_555; i++) if (!ids.has(i)) throw new Error(`document ${i} was lost`);
    const err = await api.call<Err>('GET', `/v1/ingestion-jobs/${jobId}`, { key });
    expect(err.status).toBe(200);
  });
});
