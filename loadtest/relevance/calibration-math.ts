// The arithmetic of predict's calibration (loadtest/relevance/predict-calibration.ts), apart from
// the CLI so that it is tested on its own: the labelling rule, an L2 logistic regression by
// Newton's method, the isotonic recalibration of the primary prediction and the reliability
// table with its expected calibration error.
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';
import { singular } from '../../node/runtime/text/tokenize.js';

export const fold = (text: string): string[] => analyzeQuery(text).words.map((w) => singular(w.term) ?? w.term);

/** Whether a candidate is right for the query (the rule in predict-calibration.ts): a product when it is perfect; a phrase when it has exactly the query's words, or all of them and only words of a perfect title. */
export function isRight(c: { key: string; label: string }, fullQuery: string[], perfect: ReadonlySet<string>, perfectTitles: readonly string[][]): boolean {
  if (c.key.startsWith('d:')) return perfect.has(c.key.slice(2));
  const words = fold(c.label);
  if (words.length === 0) return false;
  const q = new Set(fullQuery);
  const w = new Set(words);
  if (q.size === w.size && [...q].every((x) => w.has(x))) return true;
  if (![...q].every((x) => w.has(x))) return false;
  return perfectTitles.some((t) => {
    const ts = new Set(t);
    return words.every((x) => ts.has(x));
  });
}

// ------------------------------------------------------------------ logistic regression

export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** L2-regularized logistic regression by Newton's method (the bias is not penalized). */
export function fitLogistic(xs: number[][], ys: number[], l2: number, iterations = 25): number[] {
  const d = xs[0]?.length ?? 0;
  let w = new Array<number>(d).fill(0);
  for (let it = 0; it < iterations; it++) {
    const grad = new Array<number>(d).fill(0);
    const hess = Array.from({ length: d }, () => new Array<number>(d).fill(0));
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i]!;
      let z = 0;
      for (let j = 0; j < d; j++) z += w[j]! * x[j]!;
      const p = sigmoid(z);
      const r = p - ys[i]!;
      const s = p * (1 - p);
      for (let j = 0; j < d; j++) {
        grad[j]! += r * x[j]!;
        const sxj = s * x[j]!;
        if (sxj === 0) continue;
        for (let k = j; k < d; k++) hess[j]![k]! += sxj * x[k]!;
      }
    }
    for (let j = 0; j < d; j++) {
      for (let k = 0; k < j; k++) hess[j]![k] = hess[k]![j]!;
      if (j > 0) {
        grad[j]! += l2 * w[j]!;
        hess[j]![j]! += l2;
      }
      hess[j]![j]! += 1e-9;
    }
    const step = solve(hess, grad);
    let change = 0;
    w = w.map((v, j) => {
      change = Math.max(change, Math.abs(step[j]!));
      return v - step[j]!;
    });
    if (change < 1e-7) break;
  }
  return w;
}

/** Gaussian elimination with partial pivoting. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((r, i) => [...r, b[i]!]);
  for (let c = 0; c < n; c++) {
    let p = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[p]![c]!)) p = r;
    [m[c], m[p]] = [m[p]!, m[c]!];
    const pivot = m[c]![c]!;
    if (Math.abs(pivot) < 1e-12) continue;
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = m[r]![c]! / pivot;
      if (f === 0) continue;
      for (let k = c; k <= n; k++) m[r]![k]! -= f * m[c]![k]!;
    }
  }
  return m.map((r, i) => (Math.abs(r[i]!) < 1e-12 ? 0 : r[n]! / r[i]!));
}

// ------------------------------------------------------------------ isotonic recalibration

/**
 * Isotonic regression by pool-adjacent-violators: the non-decreasing step function of x closest
 * to y in squared error. Points with equal x are pooled first (a function has one value there),
 * then a block whose mean y is not below the next block's is merged with it until every block's
 * mean rises. Returns the blocks in x order with their mean x, mean y and point count; mean x and
 * mean y both strictly increase.
 */
export function isotonicBlocks(points: readonly { x: number; y: number }[]): { x: number; y: number; n: number }[] {
  const sorted = [...points].sort((a, b) => a.x - b.x);
  const blocks: { sx: number; sy: number; n: number }[] = [];
  for (let i = 0; i < sorted.length; ) {
    const x = sorted[i]!.x;
    const block = { sx: 0, sy: 0, n: 0 };
    for (; i < sorted.length && sorted[i]!.x === x; i++) {
      block.sx += x;
      block.sy += sorted[i]!.y;
      block.n++;
    }
    blocks.push(block);
    while (blocks.length > 1) {
      const a = blocks[blocks.length - 2]!;
      const b = blocks[blocks.length - 1]!;
      if (a.sy / a.n < b.sy / b.n) break;
      blocks.pop();
      a.sx += b.sx;
      a.sy += b.sy;
      a.n += b.n;
    }
  }
  return blocks.map((b) => ({ x: b.sx / b.n, y: b.sy / b.n, n: b.n }));
}

/** The blocks as `[mean x, mean y]` knots: what router/predict-model.ts interpolates (`recalibrated`). */
export const isotonicKnots = (points: readonly { x: number; y: number }[]): [number, number][] => isotonicBlocks(points).map((b) => [b.x, b.y]);

// ------------------------------------------------------------------ calibration metrics

export interface ReliabilityBin {
  from: number;
  to: number;
  count: number;
  mean_confidence: number;
  accuracy: number;
}

export function reliability(pairs: readonly { p: number; y: boolean }[], bins = 10): { ece: number; brier: number; bins: ReliabilityBin[] } {
  const out: ReliabilityBin[] = Array.from({ length: bins }, (_, i) => ({ from: i / bins, to: (i + 1) / bins, count: 0, mean_confidence: 0, accuracy: 0 }));
  let brier = 0;
  for (const { p, y } of pairs) {
    const b = out[Math.min(bins - 1, Math.floor(p * bins))]!;
    b.count++;
    b.mean_confidence += p;
    b.accuracy += y ? 1 : 0;
    brier += (p - (y ? 1 : 0)) ** 2;
  }
  let ece = 0;
  for (const b of out) {
    if (b.count === 0) continue;
    b.mean_confidence /= b.count;
    b.accuracy /= b.count;
    ece += (b.count / Math.max(1, pairs.length)) * Math.abs(b.accuracy - b.mean_confidence);
  }
  return { ece, brier: pairs.length ? brier / pairs.length : 0, bins: out };
}
