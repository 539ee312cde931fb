import { describe, expect, it } from 'vitest';
import { HashedNgramEmbedder, cosine } from '../embedder.js';

describe('HashedNgramEmbedder', () => {
  const e = new HashedNgramEmbedder();

  it('returns unit vectors of the configured size', () => {
    const [v] = e.embed(['Samsung Galaxy S7']);
    expect(v?.length).toBe(256);
    expect(cosine(v as Float32Array, v as Float32Array)).toBeCloseTo(1, 5);
    expect(e.embed([''])[0]?.every((x) => x === 0)).toBe(true);
  });

  it('puts misspellings and shared words close, unrelated texts far', () => {
    const [a, b, c, d] = e.embed(['iphone case', 'iphne case', 'apple iphone 7 case', 'garden hose reel']);
    const near = cosine(a as Float32Array, b as Float32Array);
    const related = cosine(a as Float32Array, c as Float32Array);
    const far = cosine(a as Float32Array, d as Float32Array);
    expect(near).toBeGreaterThan(far + 0.3);
    expect(related).toBeGreaterThan(far + 0.3);
  });

  it('is deterministic and named after its configuration', () => {
    expect(e.embed(['x y'])).toEqual(new HashedNgramEmbedder().embed(['x y']));
    expect(new HashedNgramEmbedder({ dimensions: 64 }).name).toBe('hashed-ngram-v1-64');
  });
});
