// Hostile input that once got past the edge: a document id that is not valid Unicode (a lone
// surrogate, which JSON can spell as "\ud800") and a document with tens of thousands of
// attributes, inline and in uploaded files. Each must be a 422 naming the field, never a 400 meant for QUERY bodies or a 500,
// and a refused batch must leave nothing behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRouter, type TestRouter } from './harness.js';

type Issue = { loc: (string | number)[]; msg: string; type: string };

let r: TestRouter;
let t: { id: string; pub: string; priv: string };

beforeAll(async () => {
  r = await startRouter();
  t = await r.tenant('acme');
  expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'docs', name: 'Docs' } })).status).toBe(200);
});
afterAll(async () => {
  await r?.close();
});

/** A JSON body whose text spells a lone surrogate as an escape (JSON.stringify would too, but say it plainly). */
const LONE = '"\\ud800"';

async function jobCount(): Promise<number> {
  const jobs = await r.call<unknown[]>('GET', '/v1/ingestion-jobs', { key: t.priv });
  expect(jobs.status).toBe(200);
  return jobs.body.length;
}

describe('document ids that are not valid Unicode', () => {
  it('refuses an inline batch with 422 at the id and stores none of it', async () => {
    const raw = `{"documents": [{"id": "fine", "title": "Fine"}, {"id": ${LONE}, "title": "Lone"}]}`;
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/docs/documents', { key: t.priv, raw, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.loc).toEqual(['body', 'documents', 1, 'id']);
    expect((await r.call('GET', '/v1/indexes/docs/documents/fine', { key: t.priv })).status).toBe(404);
  });

  it('refuses ingest/start with 422 instead of starting a job that fails', async () => {
    const before = await jobCount();
    const raw = `[{"id": "fine", "title": "Fine"}, {"id": ${LONE}, "title": "Lone"}]`;
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/docs/ingest/start', { key: t.priv, raw, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(await jobCount()).toBe(before);
    expect((await r.call('GET', '/v1/indexes/docs/documents/fine', { key: t.priv })).status).toBe(404);
  });

  it('still takes ids outside the Basic Multilingual Plane (a valid surrogate pair)', async () => {
    const res = await r.call('POST', '/v1/indexes/docs/documents', { key: t.priv, body: { documents: [{ id: 'smile-😀', title: 'Smile' }] } });
    expect(res.status).toBe(200);
    expect((await r.call('GET', `/v1/indexes/docs/documents/${encodeURIComponent('smile-😀')}`, { key: t.priv })).status).toBe(200);
  });
});

describe('documents with a very large number of attributes', () => {
  // 2^16 keys no longer fit the document encoding (a 500 once); far fewer already cost the
  // search engine minutes, so the edge refuses them
  const wide = (n: number): Record<string, number> => {
    const raw: Record<string, number> = {};
    for (let i = 0; i < n; i++) raw[`k${i}`] = i;
    return raw;
  };

  it('refuses a raw object of 70,000 keys with 422 instead of 500, storing nothing', async () => {
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/docs/documents', {
      key: t.priv,
      body: { documents: [{ id: 'narrow', title: 'Narrow' }, { id: 'wide', title: 'Wide', raw: wide(70_000) }] },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.loc).toEqual(['body', 'documents', 1, 'raw']);
    expect((await r.call('GET', '/v1/indexes/docs/documents/narrow', { key: t.priv })).status).toBe(404);
    expect((await r.call('GET', '/healthz')).status).toBe(200);
  });

  it('counts top-level fields, which are folded into raw, and PATCH merges alike', async () => {
    const top = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/docs/ingest/start', { key: t.priv, body: [{ id: 'flat', ...wide(70_000) }] });
    expect(top.status).toBe(422);
    expect(top.body.detail[0]!.loc[0]).toBe('body');
    expect((await r.call('POST', '/v1/indexes/docs/documents', { key: t.priv, body: { documents: [{ id: 'p', title: 'P' }] } })).status).toBe(200);
    const patch = await r.call<{ detail: Issue[] }>('PATCH', '/v1/indexes/docs/documents/p', { key: t.priv, body: { raw: wide(70_000) } });
    expect(patch.status).toBe(422);
    expect(patch.body.detail[0]!.loc).toEqual(['body', 'raw']);
  });

  it('still takes a document with many attributes within the limit', async () => {
    const res = await r.call<{ upserted: number }>('POST', '/v1/indexes/docs/documents', { key: t.priv, body: { documents: [{ id: 'many', title: 'Many', raw: wide(900) }] } });
    expect(res.status).toBe(200);
    const doc = await r.call<{ raw: Record<string, number> }>('GET', '/v1/indexes/docs/documents/many', { key: t.priv });
    expect(Object.keys(doc.body.raw)).toHaveLength(900);
  });
});

describe('uploaded files with the same hostile records', () => {
  async function upload(file: string, filename: string) {
    const form = new FormData();
    form.append('file', new Blob([file]), filename);
    const res = await fetch(`${r.url}/v1/indexes/docs/upload`, { method: 'POST', headers: { 'x-api-key': t.priv }, body: form });
    return { status: res.status, body: (await res.json()) as { job: { status: string; processed: number; failed: number; errors: { line: number; detail: string }[] } } };
  }

  it('fails only the record with a lone-surrogate id or too many attributes, and stores the rest', async () => {
    const wide = JSON.stringify({ id: 'up-wide', title: 'Wide', ...Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`k${i}`, i])) });
    const text = [`{"id": "up-ok", "title": "Fine"}`, `{"id": ${LONE}, "title": "Lone"}`, wide, `{"id": "up-ok2", "title": "Fine too"}`].join('\n') + '\n';
    const up = await upload(text, 'rows.jsonl');
    expect(up.status).toBe(200);
    expect(up.body.job).toMatchObject({ status: 'succeeded', processed: 2, failed: 2 });
    expect(up.body.job.errors.map((e) => e.line)).toEqual([2, 3]);
    expect(up.body.job.errors[0]!.detail).toMatch(/not valid Unicode/);
    expect(up.body.job.errors[1]!.detail).toMatch(/1500 attributes/);
    for (const id of ['up-ok', 'up-ok2']) expect((await r.call('GET', `/v1/indexes/docs/documents/${id}`, { key: t.priv })).status).toBe(200);
    expect((await r.call('GET', '/v1/indexes/docs/documents/up-wide', { key: t.priv })).status).toBe(404);
  });

  it('refuses a PATCH that would grow a document past the attribute limit, leaving it as it was', async () => {
    const half = (prefix: string) => Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`${prefix}${i}`, i]));
    expect((await r.call('POST', '/v1/indexes/docs/documents', { key: t.priv, body: { documents: [{ id: 'grow', title: 'Grow', raw: half('a') }] } })).status).toBe(200);
    const res = await r.call<{ detail: Issue[] }>('PATCH', '/v1/indexes/docs/documents/grow', { key: t.priv, body: { raw: half('b') } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]!.loc).toEqual(['body', 'raw']);
    expect(res.body.detail[0]!.msg).toMatch(/would have 1200 attributes/);
    const doc = await r.call<{ raw: Record<string, number> }>('GET', '/v1/indexes/docs/documents/grow', { key: t.priv });
    expect(Object.keys(doc.body.raw)).toHaveLength(600);
  });

  it('answers a PATCH with the text as stored: a lone surrogate in a title reads back as U+FFFD', async () => {
    expect((await r.call('POST', '/v1/indexes/docs/documents', { key: t.priv, body: { documents: [{ id: 'txt', title: 'Text' }] } })).status).toBe(200);
    const raw = `{"title": "caf${LONE.slice(1, -1)}"}`;
    const res = await r.call<{ title: string }>('PATCH', '/v1/indexes/docs/documents/txt', { key: t.priv, raw, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    const stored = await r.call<{ title: string }>('GET', '/v1/indexes/docs/documents/txt', { key: t.priv });
    expect(res.body.title).toBe('caf\ufffd');
    expect(stored.body.title).toBe(res.body.title);
  });
});
