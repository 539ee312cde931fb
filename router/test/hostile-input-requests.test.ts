// A hostile-input sweep of the HTTP API over real sockets, and what each finding now answers:
// raw bytes that are not UTF-8 in the request target (422 `url_encoding`, as their
// percent-encoded form), credentials given twice (422 `repeated`), 422 messages that say what
// was wrong and what is accepted (unions, document ids), numbers too large to represent (422 at
// their location instead of a silent null), the 405 of a POST without the QUERY override, and the
// query parameters of the job lists, and the request-head limit clients are told about.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_REQUEST_HEAD_BYTES } from '../http-server.js';
import { rawRequest, startRouter, type TestRouter } from './harness.js';

type Issue = { loc: (string | number)[]; msg: string; type: string };
type Err = { detail: string; code: string };

let r: TestRouter;
let t: { id: string; pub: string; priv: string };

beforeAll(async () => {
  r = await startRouter({}, { search: true });
  t = await r.tenant('acme');
  expect((await r.call('POST', '/v1/indexes', { key: t.priv, body: { index_id: 'products', name: 'Products' } })).status).toBe(200);
  const docs = [{ id: 'd1', title: 'Samsung television', raw: { price: 10 } }];
  expect((await r.call('POST', '/v1/indexes/products/documents', { key: t.priv, body: { documents: docs } })).status).toBe(200);
});
afterAll(async () => {
  await r?.close();
});

/** A GET whose request target is sent as these exact bytes. */
async function rawGet(target: Buffer, headers: string[] = [`x-api-key: ${t.priv}`]): Promise<{ status: number | null; body: { detail: Issue[] } & Partial<Err> }> {
  const head = Buffer.from(` HTTP/1.1\r\nHost: x\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`);
  const res = await rawRequest(r.port, Buffer.concat([Buffer.from('GET '), target, head]), { waitMs: 500 });
  const at = res.text.indexOf('\r\n\r\n');
  return { status: res.status, body: at < 0 ? ({} as never) : (JSON.parse(res.text.slice(at + 4)) as never) };
}

const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))));

describe('raw bytes that are not UTF-8 in the request target', () => {
  it('answers a raw \\xFF\\xFE in the query string as its percent-encoded form does: 422 url_encoding', async () => {
    const encoded = await rawGet(bytes('/v1/autocomplete?index=products&query=%FF%FE'));
    expect(encoded.status).toBe(422);
    const raw = await rawGet(bytes('/v1/autocomplete?index=products&query=', [0xff, 0xfe]));
    expect(raw.status).toBe(422);
    expect(raw.body.detail[0]).toMatchObject({ loc: ['query', 'query'], type: encoded.body.detail[0]!.type });
    expect(raw.body.detail[0]!.type).toBe('url_encoding');
    // typeahead (the synchronous hot path) alike
    const typeahead = await rawGet(bytes('/v1/typeahead?index=products&query=sa', [0xff]));
    expect(typeahead.status).toBe(422);
    expect(typeahead.body.detail[0]!.type).toBe('url_encoding');
  });

  it('answers a raw \\xFF in a document id as %FF: 422 url_encoding at the path, not a 404 naming U+FFFD', async () => {
    const encoded = await rawGet(bytes('/v1/indexes/products/documents/%FF'));
    expect(encoded.status).toBe(422);
    const raw = await rawGet(bytes('/v1/indexes/products/documents/', [0xff]));
    expect(raw.status).toBe(422);
    expect(raw.body.detail[0]).toMatchObject({ loc: ['path', 'doc_id'], type: 'url_encoding' });
  });

  it('still serves raw UTF-8 text and percent-encoded U+FFFD', async () => {
    const utf8 = await rawGet(Buffer.concat([Buffer.from('/v1/autocomplete?index=products&query=samsung'), Buffer.from('é', 'utf8')]));
    expect(utf8.status).toBe(200);
    const replacement = await rawGet(bytes('/v1/autocomplete?index=products&query=%EF%BF%BD'));
    expect(replacement.status).toBe(200);
  });
});

describe('credentials sent twice', () => {
  it('refuses two x-api-key headers with 422 naming the header, even when both are valid', async () => {
    for (const second of [t.priv, t.pub, 'other']) {
      const res = await rawGet(bytes('/v1/indexes'), [`x-api-key: ${t.priv}`, `x-api-key: ${second}`]);
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['header', 'x-api-key'], type: 'repeated' });
    }
  });

  it('refuses two X-Tenant-Id headers, on the typeahead hot path too', async () => {
    for (const target of ['/v1/indexes', '/v1/typeahead?index=products&query=sam']) {
      const res = await rawGet(bytes(target), [`x-api-key: ${t.priv}`, 'x-tenant-id: acme', 'X-Tenant-Id: acme']);
      expect(res.status, target).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['header', 'X-Tenant-Id'], type: 'repeated' });
    }
    expect((await rawGet(bytes('/v1/typeahead?index=products&query=sam'), [`x-api-key: ${t.priv}`, 'x-tenant-id: acme'])).status).toBe(200);
  });
});

describe('422 messages a person can act on', () => {
  const post = (path: string, raw: string) => r.call<{ detail: Issue[] }>('POST', path, { key: t.priv, raw, headers: { 'content-type': 'application/json' } });

  it('says which shapes ingest/start takes, and what was sent instead', async () => {
    for (const raw of ['5', 'null', '"x"']) {
      const res = await post('/v1/indexes/products/ingest/start', raw);
      expect(res.status, raw).toBe(422);
      expect(res.body.detail[0]!.loc).toEqual(['body']);
      expect(res.body.detail[0]!.msg, raw).not.toMatch(/union/i);
      expect(res.body.detail[0]!.msg, raw).toMatch(/"documents".*array/);
    }
    const notList = await post('/v1/indexes/products/ingest/start', '{"documents":{"a":1}}');
    expect(notList.status).toBe(422);
    expect(notList.body.detail[0]!.loc).toEqual(['body', 'documents']);
    expect(notList.body.detail[0]!.msg).toMatch(/Expected an array.*got an object/);
  });

  it('names the field of a document whose title is a number', async () => {
    for (const [path, raw] of [
      ['/v1/indexes/products/documents', '{"documents":[{"id":"a","title":5}]}'],
      ['/v1/indexes/products/ingest/start', '[{"id":"a","title":5}]'],
    ] as const) {
      const res = await post(path, raw);
      expect(res.status, path).toBe(422);
      expect(res.body.detail[0]!.loc, path).toEqual(path.endsWith('documents') ? ['body', 'documents', 0, 'title'] : ['body', 0, 'title']);
      expect(res.body.detail[0]!.msg, path).toBe('Expected a string or null; got 5.');
    }
  });

  it('says what a tenant limit accepts', async () => {
    const patch = (body: unknown) => r.call<{ detail: Issue[] }>('PATCH', '/v1/admin/tenants/acme', { key: r.adminKey, body });
    const upload = await patch({ upload_limit_bytes: -1 });
    expect(upload.status).toBe(422);
    expect(upload.body.detail[0]).toMatchObject({ loc: ['body', 'upload_limit_bytes'] });
    expect(upload.body.detail[0]!.msg).toMatch(/at least 1.*null/);
    const limit = await patch({ limits: { max_indexes: -5 } });
    expect(limit.status).toBe(422);
    expect(limit.body.detail[0]).toMatchObject({ loc: ['body', 'limits', 'max_indexes'] });
    expect(limit.body.detail[0]!.msg).toMatch(/at least 0.*null/);
  });

  it('says why a document id is refused: a NUL, an unpaired surrogate', async () => {
    const nul = await post('/v1/indexes/products/documents', '{"documents":[{"id":"a\\u0000b"}]}');
    expect(nul.status).toBe(422);
    expect(nul.body.detail[0]!.loc).toEqual(['body', 'documents', 0, 'id']);
    expect(nul.body.detail[0]!.msg).toMatch(/control character.*U\+0000/);
    expect(nul.body.detail[0]!.msg).not.toMatch(/format/);
    const lone = await post('/v1/indexes/products/documents', '{"documents":[{"id":"a\\ud800"}]}');
    expect(lone.status).toBe(422);
    expect(lone.body.detail[0]!.msg).toMatch(/unpaired surrogate/);
  });

  it('answers a range bound too large to represent as it answers one that is not a number', async () => {
    const res = await r.call<{ detail: Issue[] }>('GET', `/v1/autocomplete?index=products&query=sam&filters=${encodeURIComponent('{"price":{"gte":1e309}}')}`, { key: t.pub });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'filters', 'price', 'gte'] });
    expect(res.body.detail[0]!.msg).toMatch(/gte needs a finite number/);
  });
});

describe('numbers too large to represent in a body', () => {
  it('refuses 1e309 in a document raw attribute instead of storing null', async () => {
    const res = await r.call<{ detail: Issue[] }>('POST', '/v1/indexes/products/documents', {
      key: t.priv,
      raw: '{"documents":[{"id":"inf","raw":{"p":1e309}}]}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'documents', 0, 'raw', 'p'], type: 'finite_number' });
    expect((await r.call('GET', '/v1/indexes/products/documents/inf', { key: t.priv })).status).toBe(404);
  });

  it('refuses -1e309 in a schema instead of echoing null', async () => {
    const res = await r.call<{ detail: Issue[] }>('PUT', '/v1/indexes/products/schema', { key: t.priv, raw: '{"limit":-1e309}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'limit'], type: 'finite_number' });
    expect((await r.call('GET', '/v1/indexes/products/schema', { key: t.priv })).body).toEqual({});
  });
});

describe('POST on a QUERY route without the override', () => {
  it('says how to send QUERY to this server', async () => {
    const res = await r.call<Err>('POST', '/v1/typeahead', { key: t.pub, body: { query: 'tv' } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD, QUERY');
    expect(res.body.detail).toMatch(/POST with X-HTTP-Method-Override: QUERY/);
  });
});

describe('query parameters of the job lists', () => {
  it('validates the tenant parameters and ignores parameters the route does not take, as every route does', async () => {
    const all = await r.call<unknown[]>('GET', '/v1/ingestion-jobs', { key: t.priv });
    expect(all.status).toBe(200);
    const extra = await r.call<unknown[]>('GET', '/v1/ingestion-jobs?limit=5&index_id=../x', { key: t.priv });
    expect(extra.status).toBe(200);
    expect(extra.body).toEqual(all.body);
    const badTenant = await r.call<{ detail: Issue[] }>('GET', '/v1/ingestion-jobs?tenant_id=../x', { key: t.priv });
    expect(badTenant.status).toBe(422);
    expect(badTenant.body.detail[0]!.loc).toEqual(['query', 'tenant_id']);
  });
});

/** Sends `data` in pieces of `piece` bytes, a few milliseconds apart, and collects the answer. */
function sendInPieces(port: number, data: Buffer, piece: number): Promise<{ status: number | null; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let closed = false;
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    socket.on('connect', async () => {
      for (let i = 0; i < data.length && !closed; i += piece) {
        socket.write(data.subarray(i, i + piece));
        await new Promise((r) => setTimeout(r, 5));
      }
      setTimeout(() => {
        socket.destroy();
        const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
        resolve({ status: m ? Number(m[1]) : null, closed });
      }, 500);
    });
  });
}

describe('request heads', () => {
  const head = (bytes: number): Buffer => {
    const empty = 'GET /healthz HTTP/1.1\r\nHost: x\r\nx-pad: \r\n\r\n';
    return Buffer.from(`GET /healthz HTTP/1.1\r\nHost: x\r\nx-pad: ${'x'.repeat(bytes - empty.length)}\r\n\r\n`);
  };

  it('reads a head of MAX_REQUEST_HEAD_BYTES arriving in pieces; a larger one gets no answer from uWS v20.30 (a build that answers says 431)', async () => {
    expect(head(MAX_REQUEST_HEAD_BYTES).length).toBe(MAX_REQUEST_HEAD_BYTES);
    expect((await sendInPieces(r.port, head(MAX_REQUEST_HEAD_BYTES), 1000)).status).toBe(200);
    const over = await sendInPieces(r.port, head(MAX_REQUEST_HEAD_BYTES + 1), 1000);
    if (over.status === null) expect(over.closed).toBe(true);
    else expect(over.status).toBe(431);
    expect((await r.call('GET', '/healthz')).status).toBe(200);
  });

  it('tells clients the limit in the contract and the README', async () => {
    const doc = await r.call<{ info: { description: string } }>('GET', '/.well-known/openapi.json');
    expect(doc.body.info.description).toContain(`within ${MAX_REQUEST_HEAD_BYTES.toLocaleString('en-US')} bytes`);
    expect(doc.body.info.description).toMatch(/sent more than once answers 422/);
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('Request heads within 4 KB');
  });
});
