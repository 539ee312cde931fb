// fts_rerank through an embeddings endpoint (a real HTTP server on loopback): the model's
// similarities re-order the lexical candidates; a slow or failing endpoint falls back to the
// built-in embedder and says so in debug.vector.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SuggestEngine } from '../engine/engine.js';
import { EmbeddingProvider } from '../engine/embedding-provider.js';
import { startFakeEmbeddings, type FakeEmbeddings } from '../engine/test/fake-embeddings.js';
import { rerankWithProvider, VectorCache } from '../search/provider-rerank.js';

describe('fts_rerank with an embeddings endpoint', () => {
  let fake: FakeEmbeddings;
  const engine = new SuggestEngine();
  engine.upsert([
    { id: 'black', title: 'OtterBox Case Black', desc: '', manufacturer: 'OtterBox', raw: {} },
    { id: 'beta', title: 'OtterBox Case Beta', desc: '', manufacturer: 'OtterBox', raw: {} },
    { id: 'other', title: 'Garden Hose Reel', desc: '', manufacturer: 'Suncast', raw: {} },
  ]);
  // the "model": the query (sent normalized, lower case) and titles with "Beta" point one way, the rest the other
  const embed = (t: string) => (t === t.toLowerCase() || t.includes('Beta') ? [1, 0] : [0, 1]);
  beforeAll(async () => {
    fake = await startFakeEmbeddings(embed);
  });
  afterAll(async () => {
    await fake.close();
    engine.close();
  });

  it('re-orders the lexical candidates by the model`s similarity', async () => {
    fake.behaviour = 'ok';
    const provider = new EmbeddingProvider({ url: fake.url, model: 'test-model', timeoutMs: 5000 });
    const cache = new VectorCache();
    const builtIn = engine.autocomplete({ query: 'otterbox case', mode: 'fts_rerank' });
    const r = await rerankWithProvider(engine, { query: 'otterbox case', mode: 'fts_rerank', debug: true }, provider, cache);
    expect(r.mode).toBe('fts_rerank');
    expect(new Set(r.suggestions.map((s) => s.id))).toEqual(new Set(builtIn.suggestions.map((s) => s.id)));
    expect(r.suggestions[0]?.id).toBe('beta');
    expect(r.debug?.vector).toMatchObject({ embedder: 'openai:test-model', dimensions: 2, provider: 'ok' });
    expect(cache.size).toBe(2);
    // titles already embedded are not sent again
    const before = fake.requests.length;
    await rerankWithProvider(engine, { query: 'otterbox case', mode: 'fts_rerank' }, provider, cache);
    expect(fake.requests.at(before)?.body.input).toEqual(['otterbox case']);
  });

  it('falls back to the built-in embedder when the endpoint is slow or failing', async () => {
    const quick = new EmbeddingProvider({ url: fake.url, model: 'test-model', timeoutMs: 100 });
    const patient = new EmbeddingProvider({ url: fake.url, model: 'test-model', timeoutMs: 5000 });
    const builtIn = engine.autocomplete({ query: 'otterbox case', mode: 'fts_rerank', debug: true });
    for (const [b, why] of [
      ['slow', 'timeout'],
      ['error', 'http'],
    ] as const) {
      fake.behaviour = b;
      const r = await rerankWithProvider(engine, { query: 'otterbox case', mode: 'fts_rerank', debug: true }, b === 'slow' ? quick : patient, new VectorCache());
      expect(r.suggestions).toEqual(builtIn.suggestions);
      expect(r.debug?.vector.provider).toBe(`fallback: ${why}`);
      expect(r.debug?.vector.embedder).toBe('hashed-ngram-v1-256');
    }
    fake.behaviour = 'ok';
  });

  it('answers an empty list when nothing matches lexically', async () => {
    const provider = new EmbeddingProvider({ url: fake.url, model: 'test-model', timeoutMs: 5000 });
    const r = await rerankWithProvider(engine, { query: 'zzzzqqq', mode: 'fts_rerank' }, provider, new VectorCache());
    expect(r.suggestions).toEqual([]);
  });
});
