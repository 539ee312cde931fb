// Property tests of the vector structures against a brute-force reference: random clustered
// unit vectors, random queries, random filters; the exact scan must agree exactly, the two HNSW
// libraries must find nearly all of the true neighbours.
import { describe, expect, it } from 'vitest';
import { ExactVectorIndex, HnswlibVectorIndex, TopK, UsearchVectorIndex, createGraph, dotRow, type VectorIndex } from '../vector-index.js';
import { random } from './helpers.js';

function unitVectors(rnd: () => number, n: number, dims: number, clusters: number): Float32Array {
  const centers = Array.from({ length: clusters }, () => Array.from({ length: dims }, () => rnd() * 2 - 1));
  const out = new Float32Array(n * dims);
  for (let i = 0; i < n; i++) {
    const c = centers[Math.floor(rnd() * clusters)] as number[];
    let norm = 0;
    for (let j = 0; j < dims; j++) {
      const v = (c[j] as number) + (rnd() * 2 - 1) * 0.6;
      out[i * dims + j] = v;
      norm += v * v;
    }
    for (let j = 0; j < dims; j++) out[i * dims + j] = (out[i * dims + j] as number) / Math.sqrt(norm);
  }
  return out;
}

/** The reference: every accepted row scored, sorted by similarity then ordinal. */
function bruteForce(m: Float32Array, dims: number, q: Float32Array, k: number, accept?: (ord: number) => boolean): { ord: number; score: number }[] {
  const all: { ord: number; score: number }[] = [];
  for (let ord = 0; ord < m.length / dims; ord++) {
    if (accept && !accept(ord)) continue;
    let s = 0;
    for (let j = 0; j < dims; j++) s += (m[ord * dims + j] as number) * (q[j] as number);
    all.push({ ord, score: s });
  }
  return all.sort((a, b) => b.score - a.score || a.ord - b.ord).slice(0, k);
}

const recall = (got: number[], want: number[]) => (want.length === 0 ? 1 : got.filter((o) => want.includes(o)).length / want.length);

describe('dotRow and TopK', () => {
  it('dotRow equals the plain dot product for every dimension count', () => {
    const rnd = random(1);
    for (const dims of [1, 2, 3, 4, 5, 7, 8, 31, 256]) {
      const m = Float32Array.from({ length: dims * 3 }, () => rnd() - 0.5);
      const q = Float32Array.from({ length: dims }, () => rnd() - 0.5);
      for (let row = 0; row < 3; row++) {
        let s = 0;
        for (let j = 0; j < dims; j++) s += (m[row * dims + j] as number) * (q[j] as number);
        expect(dotRow(m, row, q, dims)).toBeCloseTo(s, 5);
      }
    }
  });

  it('TopK keeps the k best of any stream, ties by lower ordinal first seen', () => {
    const rnd = random(2);
    for (let trial = 0; trial < 200; trial++) {
      const k = Math.floor(rnd() * 12);
      const n = Math.floor(rnd() * 60);
      // few distinct scores, so ties are common
      const items = Array.from({ length: n }, (_, ord) => ({ ord, score: Math.floor(rnd() * 8) / 8 }));
      const top = new TopK(k);
      for (const it of items) top.push(it.ord, it.score);
      const want = [...items].sort((a, b) => b.score - a.score || a.ord - b.ord).slice(0, k);
      expect(top.ords).toEqual(want.map((w) => w.ord));
      expect(top.scores).toEqual(want.map((w) => w.score));
    }
  });
});

describe('ExactVectorIndex', () => {
  it('returns exactly the brute-force top k, with and without a filter', () => {
    const rnd = random(3);
    for (let trial = 0; trial < 30; trial++) {
      const dims = 1 + Math.floor(rnd() * 40);
      const n = Math.floor(rnd() * 300);
      const m = unitVectors(rnd, n, dims, 1 + Math.floor(rnd() * 5));
      const index = new ExactVectorIndex(m, dims);
      expect(index.size).toBe(n);
      const q = unitVectors(rnd, 1, dims, 1);
      const k = 1 + Math.floor(rnd() * 20);
      const mod = 2 + Math.floor(rnd() * 3);
      const accept = (ord: number) => ord % mod !== 0;
      for (const filter of [undefined, accept]) {
        const got = index.search(q, k, filter);
        const want = bruteForce(m, dims, q, k, filter);
        expect(got.ords).toEqual(want.map((w) => w.ord));
        got.scores.forEach((s, i) => expect(s).toBeCloseTo((want[i] as { score: number }).score, 5));
      }
    }
  });
});

describe.each([
  ['hnswlib', (m: Float32Array, d: number) => new HnswlibVectorIndex(m, d)],
  ['usearch', (m: Float32Array, d: number) => new UsearchVectorIndex(m, d)],
] as const)('%s graph', (name, make) => {
  const rnd = random(name === 'hnswlib' ? 11 : 12);
  const dims = 24;
  const n = 3000;
  const m = unitVectors(rnd, n, dims, 20);
  const queries = Array.from({ length: 60 }, () => unitVectors(rnd, 1, dims, 1));

  it('finds at least 95% of the true 10 nearest neighbours, with similarities that match', () => {
    const g = make(m, dims);
    expect(g.buildUntil(Infinity)).toBe(true);
    expect(g.ready).toBe(true);
    let sum = 0;
    for (const q of queries) {
      const got = g.search(q, 10);
      const want = bruteForce(m, dims, q, 10);
      sum += recall(got.ords, want.map((w) => w.ord));
      // reported similarities are the true ones, best first
      got.ords.forEach((ord, i) => expect(got.scores[i]).toBeCloseTo(dotRow(m, ord, q, dims), 4));
      for (let i = 1; i < got.scores.length; i++) expect(got.scores[i]).toBeLessThanOrEqual((got.scores[i - 1] as number) + 1e-6);
    }
    expect(sum / queries.length).toBeGreaterThanOrEqual(0.95);
  });

  it('honours a filter: only accepted documents, and nearly all of the filtered top k', () => {
    const g = make(m, dims);
    g.buildUntil(Infinity);
    let sum = 0;
    for (const [i, q] of queries.entries()) {
      const mod = 2 + (i % 4);
      const accept = (ord: number) => ord % mod === 1;
      const got = g.search(q, 10, accept);
      expect(got.ords.every(accept)).toBe(true);
      sum += recall(got.ords, bruteForce(m, dims, q, 10, accept).map((w) => w.ord));
    }
    expect(sum / queries.length).toBeGreaterThanOrEqual(0.9);
    // a filter nothing passes
    expect(g.search(queries[0] as Float32Array, 5, () => false).ords).toEqual([]);
  });

  it('builds in slices, and a partial graph only returns what it holds', () => {
    const g: VectorIndex = make(m, dims);
    expect(g.search(queries[0] as Float32Array, 5).ords).toEqual([]);
    let slices = 0;
    while (!g.buildUntil(performance.now() + 0.2)) {
      slices++;
      if (slices === 3) {
        const built = g.built;
        expect(built).toBeGreaterThan(0);
        expect(built).toBeLessThan(n);
        const r = g.search(queries[0] as Float32Array, 20);
        expect(r.ords.every((o) => o < built)).toBe(true);
      }
    }
    expect(slices).toBeGreaterThan(3);
    expect(g.built).toBe(n);
    expect(g.bytes()).toBeGreaterThan(n * dims * 4);
  });

  it('asks for more neighbours than it has and gets them all', () => {
    const small = m.subarray(0, 7 * dims);
    const g = createGraph(name, small, dims);
    g.buildUntil(Infinity);
    expect(new Set(g.search(queries[0] as Float32Array, 50).ords)).toEqual(new Set([0, 1, 2, 3, 4, 5, 6]));
  });
});
