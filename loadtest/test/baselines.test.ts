// The baseline servers as real processes (compiled: `npx tsc -p tsconfig.json` first, as the
// project's test command does), and one short autocannon round through the driver's code.
import { get as httpGet } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suggestContractProblems } from '../load/contract-check.js';
import { runRound } from '../load/load-round.js';
import { parseBaselineSpec, spawnBaseline, type SpawnedServer } from '../load/spawned-server.js';

let bare: SpawnedServer;
let fastify: SpawnedServer;
const KEY = 'test-key';

beforeAll(async () => {
  [bare, fastify] = await Promise.all([
    spawnBaseline('bare-uws', ['--index', 'products']),
    spawnBaseline('fastify-flexsearch', ['--index', 'products', '--key', KEY, '--catalog', 'bestbuy']),
  ]);
});
afterAll(async () => {
  await Promise.all([bare?.stop(), fastify?.stop()]);
});

const get = async (s: SpawnedServer, path: string, key: string | null = KEY) => {
  const res = await fetch(s.url + path, { headers: key === null ? {} : { 'x-api-key': key } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('bare-uws baseline', () => {
  it('answers any request with the fixed typeahead-sized body', async () => {
    const r = await get(bare, '/v1/typeahead?query=x&index=products');
    expect(r.status).toBe(200);
    expect(suggestContractProblems(r.body, '/v1/typeahead')).toEqual([]);
    expect((r.body['suggestions'] as unknown[]).length).toBe(10);
    expect(bare.ready['body_bytes']).toBeGreaterThan(1000);
  });
});

describe('bare-uws with work per request (bare-uws@MICROS)', () => {
  it('names the work in its spec and refuses it elsewhere', () => {
    expect(parseBaselineSpec('bare-uws')).toEqual({ name: 'bare-uws', label: 'bare-uws', args: [] });
    expect(parseBaselineSpec('bare-uws@20')).toEqual({ name: 'bare-uws', label: 'bare-uws@20', args: ['--work-us', '20'] });
    expect(parseBaselineSpec('bare-uws@45x2')).toEqual({ name: 'bare-uws', label: 'bare-uws@45x2', args: ['--work-us', '45', '--threads', '2'] });
    expect(() => parseBaselineSpec('bare-uws@45x0')).toThrow(/only bare-uws takes/);
    expect(() => parseBaselineSpec('bare-uws@45x')).toThrow(/only bare-uws takes/);
    expect(() => parseBaselineSpec('fastify-flexsearch@20')).toThrow(/only bare-uws takes/);
    expect(() => parseBaselineSpec('bare-uws@soon')).toThrow(/only bare-uws takes/);
    expect(() => parseBaselineSpec('nginx')).toThrow(/unknown baseline/);
  });

  it('spends the work on every answer before sending it', async () => {
    const spec = parseBaselineSpec('bare-uws@3000');
    const slow = await spawnBaseline(spec.name, ['--index', 'products', ...spec.args]);
    try {
      expect(slow.ready['work_us']).toBe(3000);
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        const r = await get(slow, '/v1/typeahead?query=x&index=products');
        expect(r.status).toBe(200);
        expect(performance.now() - t0).toBeGreaterThanOrEqual(3);
      }
    } finally {
      await slow.stop();
    }
  });
});

const statusOnNewConnection = (url: string) =>
  new Promise<number>((resolve, reject) => {
    httpGet(url, { agent: false }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    }).once('error', reject);
  });

describe('bare-uws on several event loops (bare-uws@MICROSxTHREADS)', () => {
  it('answers from every thread at once', async () => {
    // Each answer busy-waits 200 ms (of wall time) on its thread. Two event loops answer two connections
    // together; one would take twice as long. The kernel spreads connections over the
    // listening sockets by a hash of the client port, so several tries are made, each on two new
    // connections, for a pair that lands on both threads.
    const spec = parseBaselineSpec('bare-uws@200000x2');
    const server = await spawnBaseline(spec.name, ['--index', 'products', ...spec.args]);
    try {
      expect(server.ready['threads']).toBe(2);
      let fastest = Infinity;
      for (let attempt = 0; attempt < 16 && fastest >= 350; attempt++) {
        const t0 = performance.now();
        const statuses = await Promise.all([0, 1].map(() => statusOnNewConnection(server.url + '/v1/typeahead?query=x&index=products')));
        expect(statuses).toEqual([200, 200]);
        fastest = Math.min(fastest, performance.now() - t0);
      }
      expect(fastest).toBeLessThan(350);
    } finally {
      await server.stop();
    }
  });

  it('refuses a thread count it cannot serve', async () => {
    await expect(spawnBaseline('bare-uws', ['--threads', '0'])).rejects.toThrow(/--threads must be a whole number/);
  });
});

describe('fastify-flexsearch baseline', () => {
  it('answers typeahead and autocomplete in the contract shape', async () => {
    const t = await get(fastify, '/v1/typeahead?query=samsung%20gal&index=products&limit=5');
    expect(t.status).toBe(200);
    expect(suggestContractProblems(t.body, '/v1/typeahead')).toEqual([]);
    const titles = (t.body['suggestions'] as { title: string }[]).map((s) => s.title);
    expect(titles.length).toBe(5);
    expect(titles.every((x) => /samsung/i.test(x) && /galaxy/i.test(x))).toBe(true);
    const a = await get(fastify, '/v1/autocomplete?query=lenovo%20ada&index=products&mode=fts_only');
    expect(a.status).toBe(200);
    expect(suggestContractProblems(a.body, '/v1/autocomplete')).toEqual([]);
    expect((a.body['suggestions'] as { price: unknown }[])[0]?.price).toEqual(expect.any(Number));
  });

  it('refuses what the service refuses', async () => {
    expect((await get(fastify, '/v1/typeahead?query=&index=products')).status).toBe(422);
    expect((await get(fastify, '/v1/typeahead?query=a&index=products&limit=51')).status).toBe(422);
    expect((await get(fastify, '/v1/typeahead?query=a&index=other')).status).toBe(404);
    expect((await get(fastify, '/v1/typeahead?query=a&index=products', null)).status).toBe(401);
    expect((await get(fastify, '/v1/typeahead?query=a&index=products', 'wrong')).status).toBe(401);
  });
});

describe('load round', () => {
  it('cycles the given paths and records every 2xx latency', async () => {
    const paths = ['/v1/typeahead?query=a', '/v1/typeahead?query=ab'];
    const r = await runRound({ url: bare.url, paths, startAt: 1, headers: { 'x-api-key': KEY }, connections: 2, pipelining: 1, durationS: 1, timeoutS: 5 });
    expect(r.ok).toBeGreaterThan(100);
    expect(r.stats.count).toBe(r.ok);
    expect(r.non2xx).toBe(0);
    expect(r.rps).toBeGreaterThan(100);
    expect(r.latency.p50_ms).toBeGreaterThan(0);
    expect(r.latency.p50_ms).toBeLessThanOrEqual(r.latency.p99_ms);
  });

  it('counts non-2xx answers apart', async () => {
    const r = await runRound({ url: fastify.url, paths: ['/v1/typeahead?query=a&index=products'], startAt: 0, headers: { 'x-api-key': 'wrong' }, connections: 1, pipelining: 1, durationS: 1, timeoutS: 5 });
    expect(r.ok).toBe(0);
    expect(r.status_counts['401']).toBeGreaterThan(0);
    expect(r.non2xx).toBe(r.status_counts['401']);
  });
});
