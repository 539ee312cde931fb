import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheLookups, hitRatio, metricLookup, parseExposition, readMetrics } from '../load/metrics-reader.js';

const lookup = (text: string) => metricLookup(parseExposition(text));

describe('parsing the text exposition format', () => {
  it('reads label values holding escaped quotes, backslashes, newlines, commas and braces', () => {
    const text = String.raw`suggest_cache_lookups_total{cache="say \"hi\", then {go}",path="C:\\tmp\\x",note="two\nlines"} 7`;
    expect(parseExposition(text)).toEqual([
      { name: 'suggest_cache_lookups_total', labels: { cache: 'say "hi", then {go}', path: String.raw`C:\tmp\x`, note: 'two\nlines' }, value: 7 },
    ]);
  });

  it('tells the series of one metric apart by their whole label set, in any order', () => {
    const read = lookup(
      [
        'http_requests_total 100',
        'http_requests_total{route="/v1/typeahead",status="200"} 90',
        'http_requests_total{route="/v1/typeahead",status="429"} 4',
        'http_requests_total{ route = "/v1/predict" , status="200", } 6',
      ].join('\n'),
    );
    expect(read('http_requests_total')).toBe(100);
    expect(read('http_requests_total', { status: '429', route: '/v1/typeahead' })).toBe(4);
    expect(read('http_requests_total', { route: '/v1/predict', status: '200' })).toBe(6);
    // a subset of the labels names no single series
    expect(read('http_requests_total', { route: '/v1/typeahead' })).toBeUndefined();
  });

  it('skips comments, blank lines and timestamps', () => {
    const text = ['# HELP up Whether the target answers.', '# TYPE up gauge', '', '  up 1 1700000000000  ', '#up 5'].join('\r\n');
    expect(parseExposition(text)).toEqual([{ name: 'up', labels: {}, value: 1 }]);
  });

  it('reads NaN and the infinities in any case, and exponents', () => {
    const read = lookup(['a NaN', 'b Nan', 'c +Inf', 'd -Inf', 'e 1.5e+3', 'f{le="+Inf"} 3'].join('\n'));
    expect(read('a')).toBeNaN();
    expect(read('b')).toBeNaN();
    expect(read('c')).toBe(Infinity);
    expect(read('d')).toBe(-Infinity);
    expect(read('e')).toBe(1500);
    expect(read('f', { le: '+Inf' })).toBe(3);
  });

  it('answers undefined for a metric that is absent, unlike one whose value is NaN', () => {
    const read = lookup('present NaN\n');
    expect(read('absent')).toBeUndefined();
    expect(read('present')).toBeNaN();
  });

  it('rejects a line that is not a sample', () => {
    expect(() => parseExposition('up one')).toThrow(/not a Prometheus sample: up one/);
    expect(() => parseExposition('up{job="x} 1')).toThrow(/not a Prometheus sample/);
  });
});

describe('reading /metrics over HTTP', () => {
  const exposition = ['# TYPE process_resident_memory_bytes gauge', 'process_resident_memory_bytes 52428800', 'suggest_engines_loaded{role="shard"} 3', ''].join('\n');
  let server: Server;
  let base: string;

  beforeAll(async () => {
    // answers only a scrape carrying the key, so the test sees the headers sent
    server = createServer((req, res) => {
      const allowed = req.url === '/metrics' && req.headers['x-api-key'] === 'k';
      res.writeHead(allowed ? 200 : 401, { 'content-type': 'text/plain; version=0.0.4' }).end(allowed ? exposition : 'no');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('scrapes the samples, sending the headers given', async () => {
    const read = await readMetrics(base, { 'x-api-key': 'k' });
    expect(read('process_resident_memory_bytes')).toBe(52428800);
    expect(read('suggest_engines_loaded', { role: 'shard' })).toBe(3);
  });

  it('fails on a refused scrape rather than reading nothing', async () => {
    await expect(readMetrics(base)).rejects.toThrow(/metrics answered HTTP 401/);
  });
});

describe('response-cache lookups of a server under load', () => {
  let server: Server;
  let base: (path: string) => string;

  beforeAll(async () => {
    // /svc answers like the service, /json like a bare baseline (a fixed JSON body for any path), the rest 404
    server = createServer((req, res) => {
      if (req.url === '/svc/metrics') {
        res.end(
          [
            'suggest_cache_lookups_total{cache="search_response",result="hit"} 90',
            'suggest_cache_lookups_total{cache="search_response",result="miss"} 10',
            'suggest_cache_lookups_total{cache="predict_response",result="hit"} 5',
            'suggest_cache_lookups_total{cache="predict_response",result="miss"} 15',
            'suggest_cache_lookups_total{cache="api_key",result="hit"} 1000',
          ].join('\n'),
        );
      } else if (req.url?.startsWith('/json/')) res.end('{"suggestions":[]}');
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    base = (path) => `http://127.0.0.1:${port}${path}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sums hits and misses over the caches of answers (not the API-key cache), and has none for a server without /metrics', async () => {
    const l = await cacheLookups(base('/svc'));
    expect(l).toEqual({ hit: 95, miss: 25 });
    expect(hitRatio(l!)).toBeCloseTo(95 / 120, 12);
    expect(await cacheLookups(base('/json'))).toBeNull();
    expect(await cacheLookups(base('/none'))).toBeNull();
    expect(await cacheLookups('http://127.0.0.1:1')).toBeNull();
  });
});
