// The calibration arithmetic: the logistic fit recovers known coefficients from data drawn from
// them, the reliability table and ECE match a hand computation, and the labelling rule follows
// its definition.
import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../data/seeded-random.js';
import { fitLogistic, fold, isRight, reliability, sigmoid } from '../relevance/calibration-math.js';

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
