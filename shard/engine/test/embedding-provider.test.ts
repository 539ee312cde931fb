// The OpenAI-compatible embeddings client against a real HTTP server on loopback that implements
// POST /v1/embeddings: request shape, batching, order, normalization, and every failure a caller
// must survive (timeout, HTTP error, malformed answers, wrong dimensions).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddingProvider, EmbeddingProviderError, embeddingProviderFromEnv } from '../embedding-provider.js';
import { startFakeEmbeddings, type FakeEmbeddings } from './fake-embeddings.js';

describe('EmbeddingProvider', () => {
  let fake: FakeEmbeddings;
  // a vector per text: [length, vowels, 2]
  const embed = (t: string) => [t.length, (t.match(/[aeiou]/g) ?? []).length, 2];
  beforeAll(async () => {
    fake = await startFakeEmbeddings(embed);
  });
  afterAll(async () => {
    await fake.close();
  });

  it('posts the model, input, dimensions and key, and returns unit vectors in input order', async () => {
    fake.behaviour = 'ok';
    const p = new EmbeddingProvider({ url: fake.url, model: 'm1', apiKey: 'secret', dimensions: 3, timeoutMs: 5000 });
    expect(p.endpoint).toBe(`${fake.url}/v1/embeddings`);
    expect(p.name).toBe('openai:m1:3');
    const [a, b] = await p.embed(['hello', 'xyz']);
    const req = fake.requests.at(-1)!;
    expect(req.body).toMatchObject({ model: 'm1', input: ['hello', 'xyz'], dimensions: 3 });
    expect(req.auth).toBe('Bearer secret');
    const norm = Math.hypot(5, 2, 2);
    expect(Array.from(a!)).toEqual([5 / norm, 2 / norm, 2 / norm].map((x) => Math.fround(x)));
    expect(Math.hypot(...b!)).toBeCloseTo(1, 6);
    fake.behaviour = 'reversed';
    const again = await p.embed(['hello', 'xyz']);
    expect(again).toEqual([a, b]);
  });

  it('takes a full endpoint URL too, and splits large inputs into batches', async () => {
    fake.behaviour = 'ok';
    const p = new EmbeddingProvider({ url: `${fake.url}/v1/embeddings`, model: 'm', maxBatch: 3, timeoutMs: 5000 });
    const before = fake.requests.length;
    const out = await p.embed(['a', 'bb', 'ccc', 'dddd', 'eeeee', 'ffffff', 'g']);
    expect(out).toHaveLength(7);
    expect(fake.requests.length - before).toBe(3);
    expect(fake.requests.at(-1)!.auth).toBeUndefined();
    expect(await p.embed([])).toEqual([]);
  });

  it('fails with a reason on timeout, HTTP errors, malformed answers and wrong dimensions', async () => {
    // only the slow case runs into the short timeout (a loaded machine may take longer than 100 ms for the others)
    const quick = new EmbeddingProvider({ url: fake.url, model: 'm', dimensions: 3, timeoutMs: 100 });
    const patient = new EmbeddingProvider({ url: fake.url, model: 'm', dimensions: 3, timeoutMs: 5000 });
    let p = quick;
    const reason = async () => {
      try {
        await p.embed(['x', 'y']);
        return 'none';
      } catch (err) {
        expect(err).toBeInstanceOf(EmbeddingProviderError);
        return (err as EmbeddingProviderError).reason;
      }
    };
    for (const [b, want] of [
      ['slow', 'timeout'],
      ['error', 'http'],
      ['not-json', 'malformed'],
      ['short', 'malformed'],
      ['wrong-dims', 'dimensions'],
    ] as const) {
      fake.behaviour = b;
      p = b === 'slow' ? quick : patient;
      expect(await reason(), b).toBe(want);
    }
    fake.behaviour = 'ok';
    const unreachable = new EmbeddingProvider({ url: 'http://127.0.0.1:1', model: 'm' });
    await expect(unreachable.embed(['x'])).rejects.toMatchObject({ reason: 'network' });
  });

  it('is configured from the environment, and refuses half or bad configurations', () => {
    expect(embeddingProviderFromEnv({})).toBeNull();
    const p = embeddingProviderFromEnv({ SUGGEST_EMBEDDINGS_URL: 'http://127.0.0.1:9/base', SUGGEST_EMBEDDINGS_MODEL: 'bge-small', SUGGEST_EMBEDDINGS_DIMENSIONS: '384' });
    expect(p?.endpoint).toBe('http://127.0.0.1:9/base/v1/embeddings');
    expect(p?.name).toBe('openai:bge-small:384');
    expect(() => embeddingProviderFromEnv({ SUGGEST_EMBEDDINGS_URL: 'http://x' })).toThrow(/MODEL/);
    expect(() => embeddingProviderFromEnv({ SUGGEST_EMBEDDINGS_URL: 'http://x', SUGGEST_EMBEDDINGS_MODEL: 'm', SUGGEST_EMBEDDINGS_DIMENSIONS: '-1' })).toThrow(/positive integer/);
    expect(() => embeddingProviderFromEnv({ SUGGEST_EMBEDDINGS_URL: 'ftp://x', SUGGEST_EMBEDDINGS_MODEL: 'm' })).toThrow(/http/);
  });
});
