// The forwarder on its own: which addresses a connected search API may not be reached at, the
// refusal at forward time when private addresses are not allowed (the API never sees a request),
// and how result lists are found in the answers of common search APIs.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SuggestError } from '../../node/runtime/errors.js';
import { Metrics } from '../../node/runtime/metrics.js';
import { isRefusedAddress, itemsOf, SearchProxy } from '../search-proxy.js';

describe('isRefusedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.1.2.3',
    '10.0.0.8',
    '172.16.0.1',
    '172.31.255.254',
    '192.168.1.10',
    '169.254.169.254',
    '169.254.10.1',
    '100.100.100.200',
    '0.0.0.0',
    '255.255.255.255',
    '::',
    '::1',
    'fe80::1',
    'febf::1',
    'fc00::1',
    'fd00:ec2::254',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    'not-an-address',
  ])('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each(['8.8.8.8', '93.184.216.34', '172.32.0.1', '172.15.255.255', '192.169.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', 'fec0::1'])('allows %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });
});

describe('SearchProxy address check', () => {
  let upstream: http.Server;
  let port: number;
  let requests = 0;

  beforeAll(async () => {
    upstream = http.createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([{ id: 'a', title: 'Alpha' }]));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    port = (upstream.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  const ask = (proxy: SearchProxy, url: string) => proxy.forward({ url, api_key: 'secret-key-1' }, { kind: 'autocomplete', query: 'al', limit: 5, index: 'default' });

  it('refuses loopback hosts unless private addresses are allowed, before any request', async () => {
    const strict = new SearchProxy({ timeoutMs: 2000, allowPrivate: false }, new Metrics());
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]) {
      const err = await ask(strict, `http://${host}/search`).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err, host).toBeInstanceOf(SuggestError);
      expect((err as SuggestError).code).toBe('upstream_unavailable');
      expect((err as SuggestError).status).toBe(502);
      expect((err as SuggestError).message).toMatch(/loopback, private, link-local or metadata address/);
      expect((err as SuggestError).message).not.toContain('secret-key-1');
    }
    expect(requests).toBe(0);

    const open = new SearchProxy({ timeoutMs: 2000, allowPrivate: true }, new Metrics());
    const body = JSON.parse(`{${await ask(open, `http://127.0.0.1:${port}/search`)}`) as { mode: string; suggestions: { id: string }[] };
    expect(body.mode).toBe('proxy');
    expect(body.suggestions.map((s) => s.id)).toEqual(['a']);
    expect(requests).toBe(1);
  });

  it('reads an answer only up to its size limit', async () => {
    const small = new SearchProxy({ timeoutMs: 2000, allowPrivate: true, maxBodyBytes: 10 }, new Metrics());
    await expect(ask(small, `http://127.0.0.1:${port}/search`)).rejects.toThrow(/larger than 10 bytes/);
  });
});

describe('itemsOf', () => {
  it('finds the result list of common answer shapes', () => {
    expect(itemsOf([1, 2])).toEqual([1, 2]);
    expect(itemsOf({ total: 1, hits: [{ id: 'x' }] })).toEqual([{ id: 'x' }]);
    expect(itemsOf({ meta: {}, data: [{ id: 'd' }], results: [{ id: 'r' }] })).toEqual([{ id: 'r' }]);
    expect(itemsOf({ hits: { total: 1, hits: [{ _id: 'e' }] } })).toEqual([{ _id: 'e' }]);
    expect(itemsOf({ data: { items: [{ id: 'i' }] } })).toEqual([{ id: 'i' }]);
    expect(itemsOf({ total: 0 })).toBeNull();
    expect(itemsOf('text')).toBeNull();
    expect(itemsOf(null)).toBeNull();
  });
});
