// The calibration arithmetic: the logistic fit recovers known coefficients from data drawn from
// them, the isotonic recalibration pools violators as by hand and is monotone, the service's map
// interpolates the knots it fits, the reliability table and ECE match a hand computation, and the
// labelling rule follows its definition.
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../data/seeded-random.js';
import { primaryConfidence, recalibrated } from '../../router/predict-model.js';
import { fitLogistic, fold, isotonicBlocks, isotonicKnots, isRight, reliability, sigmoid } from '../relevance/calibration-math.js';

describe('fitLogistic', () => {
  it('recovers the coefficients of data drawn from a logistic model', () => {
    const random = new SeededRandom(3);
    const truth = [-1, 2, -3];
    const xs: number[][] = [];
    const ys: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      const x = [1, random.next(), random.next()];
      xs.push(x);
      ys.push(random.next() < sigmoid(truth[0]! + truth[1]! * x[1]! + truth[2]! * x[2]!) ? 1 : 0);
    }
    const w = fitLogistic(xs, ys, 1e-6);
    w.forEach((v, j) => expect(v).toBeCloseTo(truth[j]!, 0));
    expect(Math.abs(w[2]! - truth[2]!)).toBeLessThan(0.25);
  });

  it('shrinks weights with a strong L2 penalty but never the bias', () => {
    const xs = [
      [1, 1],
      [1, 0],
      [1, 1],
      [1, 0],
    ];
    const ys = [1, 0, 1, 1];
    const loose = fitLogistic(xs, ys, 1e-6);
    const tight = fitLogistic(xs, ys, 1e4);
    expect(Math.abs(tight[1]!)).toBeLessThan(0.01);
    expect(Math.abs(loose[1]!)).toBeGreaterThan(1);
    // with the feature shrunk away, the bias alone fits the base rate 3/4
    expect(sigmoid(tight[0]!)).toBeCloseTo(0.75, 2);
  });
});

describe('isotonicKnots (pool-adjacent-violators)', () => {
  it('pools a known input as by hand', () => {
    // 1 | 0 violates -> {1,2}: 0.5; then 0 violates -> {1,2,3}: 1/3; 1 fine; 1 ties 1 -> {4,5}: 1
    const knots = isotonicKnots([1, 0, 0, 1, 1].map((y, i) => ({ x: i + 1, y })));
    expect(knots).toHaveLength(2);
    expect(knots[0]![0]).toBeCloseTo(2);
    expect(knots[0]![1]).toBeCloseTo(1 / 3);
    expect(knots[1]).toEqual([4.5, 1]);
    // already increasing: every point is a knot; input order does not matter
    expect(isotonicKnots([{ x: 3, y: 0.9 }, { x: 1, y: 0.1 }, { x: 2, y: 0.5 }])).toEqual([[1, 0.1], [2, 0.5], [3, 0.9]]);
    // equal x are one point of the function
    expect(isotonicKnots([{ x: 1, y: 0 }, { x: 1, y: 1 }, { x: 2, y: 1 }])).toEqual([[1, 0.5], [2, 1]]);
    expect(isotonicKnots([])).toEqual([]);
  });

  it('is strictly increasing and the least-squares monotone fit (brute force over contiguous runs)', () => {
    const random = new SeededRandom(11);
    for (let run = 0; run < 200; run++) {
      const points = Array.from({ length: 1 + Math.floor(random.next() * 12) }, () => ({ x: Math.floor(random.next() * 7) / 7, y: random.next() < 0.4 ? 1 : 0 }));
      const blocks = isotonicBlocks(points);
      expect(blocks.map((b) => [b.x, b.y])).toEqual(isotonicKnots(points));
      for (let i = 1; i < blocks.length; i++) {
        expect(blocks[i]!.x).toBeGreaterThan(blocks[i - 1]!.x);
        expect(blocks[i]!.y).toBeGreaterThan(blocks[i - 1]!.y);
      }
      // fitted values: each block's mean over its points, in x order
      const ys = [...points].sort((p, q) => p.x - q.x).map((p) => p.y);
      expect(blocks.reduce((t, b) => t + b.n, 0)).toBe(ys.length);
      const fitted = blocks.flatMap((b) => new Array<number>(b.n).fill(b.y));
      const sse = (values: number[]) => values.reduce((t, v, i) => t + (v - ys[i]!) ** 2, 0);
      // the optimum is a split of the distinct x into contiguous runs, each at its mean, rising
      const xs = [...new Set(points.map((p) => p.x))].sort((p, q) => p - q);
      const groups = xs.map((x) => ys.filter((_, i) => [...points].sort((p, q) => p.x - q.x)[i]!.x === x));
      let optimum = Infinity;
      for (let cuts = 0; cuts < 1 << (xs.length - 1); cuts++) {
        const runs: number[][] = [[...groups[0]!]];
        for (let g = 1; g < groups.length; g++) {
          if (cuts & (1 << (g - 1))) runs.push([...groups[g]!]);
          else runs[runs.length - 1]!.push(...groups[g]!);
        }
        const means = runs.map((r) => r.reduce((t, v) => t + v, 0) / r.length);
        if (means.some((m, i) => i > 0 && m < means[i - 1]!)) continue;
        optimum = Math.min(optimum, sse(runs.flatMap((r, i) => new Array<number>(r.length).fill(means[i]!))));
      }
      expect(sse(fitted)).toBeCloseTo(optimum, 10);
    }
  });
});

describe('the recalibration the service applies', () => {
  const knots: [number, number][] = [
    [0.1, 0.05],
    [0.5, 0.4],
    [0.75, 0.6],
  ];
  it('interpolates between knots and is flat beyond them', () => {
    expect(recalibrated(0.5, knots)).toBeCloseTo(0.4);
    expect(recalibrated(0.3, knots)).toBeCloseTo(0.225);
    expect(recalibrated(0.625, knots)).toBeCloseTo(0.5);
    expect(recalibrated(0.01, knots)).toBe(0.05);
    expect(recalibrated(0.99, knots)).toBe(0.6);
    expect(recalibrated(0.3, [])).toBe(0.3);
  });
  it('never reorders: monotone over [0, 1], inside [0, 1]', () => {
    let last = -1;
    for (let p = 0; p <= 1; p += 0.001) {
      const v = recalibrated(p, knots);
      expect(v).toBeGreaterThanOrEqual(last);
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(1);
      last = v;
    }
  });
  it('maps the primary through the knots, then adds the fixed log-odds of other signals', () => {
    const z = Math.log(0.8 / 0.2);
    expect(primaryConfidence(z, 0, [[0.2, 0.1], [0.8, 0.6]])).toBe(0.6);
    expect(primaryConfidence(0, 0, [[0.2, 0.1], [0.8, 0.6]])).toBeCloseTo(0.35, 4);
    // a signal the data does not carry still adds its log-odds to the recalibrated probability
    expect(primaryConfidence(z, Math.log(3), [[0.2, 0.1], [0.8, 0.6]])).toBeCloseTo(sigmoid(Math.log(0.6 / 0.4) + Math.log(3)), 4);
    expect(primaryConfidence(z, 0, [])).toBe(0.8);
  });
});

describe('reliability', () => {
  it('bins by confidence and weighs each bin gap by its share (ECE)', () => {
    const pairs = [
      { p: 0.05, y: false },
      { p: 0.15, y: false },
      { p: 0.95, y: true },
      { p: 0.95, y: false },
    ];
    const r = reliability(pairs);
    expect(r.bins[0]).toMatchObject({ count: 1, accuracy: 0 });
    expect(r.bins[9]).toMatchObject({ count: 2, accuracy: 0.5 });
    expect(r.bins[9]!.mean_confidence).toBeCloseTo(0.95);
    // 1/4 * 0.05 + 1/4 * 0.15 + 2/4 * 0.45
    expect(r.ece).toBeCloseTo(0.275);
    expect(r.brier).toBeCloseTo((0.05 ** 2 + 0.15 ** 2 + 0.05 ** 2 + 0.95 ** 2) / 4);
    expect(reliability([{ p: 1, y: true }]).bins[9]!.count).toBe(1);
  });
});

describe('isRight', () => {
  const perfect = new Set(['100']);
  const titles = [fold('Simpson Strong-Tie 12-Gauge Angle Bracket')];
  const full = fold('angle brackets');
  it('takes a product when it is perfect for the query', () => {
    expect(isRight({ key: 'd:100', label: 'x' }, full, perfect, titles)).toBe(true);
    expect(isRight({ key: 'd:101', label: 'angle bracket' }, full, perfect, titles)).toBe(false);
  });
  it('takes a phrase with the query words, or more words found in a perfect title', () => {
    expect(isRight({ key: 's:q:angle bracket', label: 'Angle Bracket' }, full, perfect, titles)).toBe(true);
    expect(isRight({ key: 's:q:bracket angle', label: 'bracket angles' }, full, perfect, titles)).toBe(true);
    expect(isRight({ key: 's:q:x', label: 'Strong-Tie Angle Bracket' }, full, perfect, titles)).toBe(true);
    expect(isRight({ key: 's:q:x', label: 'Angle Bracket Shelf' }, full, perfect, titles)).toBe(false);
    expect(isRight({ key: 's:q:x', label: 'Angle' }, full, perfect, titles)).toBe(false);
    expect(isRight({ key: 's:q:x', label: '' }, full, perfect, titles)).toBe(false);
  });
});
