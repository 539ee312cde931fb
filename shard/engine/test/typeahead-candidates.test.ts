import { describe, expect, it } from 'vitest';
import type { Segment } from '../segment.js';
import { TypeaheadCandidates } from '../typeahead-candidates.js';
import { random } from './helpers.js';

const segA = { name: 'a' } as unknown as Segment;
const segB = { name: 'b' } as unknown as Segment;

/** The candidates as a map from identity (suggestion id, or key) to the best factor, in order of first addition. */
function contents(c: TypeaheadCandidates): [string | number, number][] {
  return Array.from({ length: c.count }, (_, i) => [c.byId ? (c.sug[i] as number) : (c.key[i] as string), c.factor[i] as number]);
}

describe('TypeaheadCandidates', () => {
  it('keeps one candidate per suggestion id with its best factor, as a map would, through growth and rehashing', () => {
    const rnd = random(7);
    const c = new TypeaheadCandidates();
    for (const distinct of [5, 60, 129, 700, 3]) {
      c.reset(true);
      const reference = new Map<number, number>();
      for (let n = 0; n < distinct * 3; n++) {
        // ids spread wide and clustered alike (the table hashes them)
        const sug = rnd() < 0.5 ? Math.floor(rnd() * distinct) * 1024 : Math.floor(rnd() * distinct);
        const factor = Math.round(rnd() * 8) / 4;
        c.add(segA, sug, null, factor);
        reference.set(sug, Math.max(reference.get(sug) ?? -1, factor));
      }
      expect(new Map(contents(c))).toEqual(reference);
      expect(c.count).toBe(reference.size);
      // first additions keep their place (the rank's tie-break never depends on it, but the segment does)
      expect(contents(c).map(([id]) => id)).toEqual([...reference.keys()]);
    }
  });

  it('keeps one candidate per key over several segments, the segment it was first found in', () => {
    const c = new TypeaheadCandidates().reset(false);
    c.add(segA, 4, 'samsung', 1);
    c.add(segB, 9, 'samsung galaxy', 0.5);
    c.add(segB, 2, 'samsung', 1.25);
    c.add(segA, 4, 'samsung', 0.3);
    expect(contents(c)).toEqual([
      ['samsung', 1.25],
      ['samsung galaxy', 0.5],
    ]);
    expect(c.segment.slice(0, c.count)).toEqual([segA, segB]);
    expect(Array.from(c.sug.subarray(0, c.count))).toEqual([4, 9]);
  });

  it('starts each query empty and holds no segment of the last one', () => {
    const c = new TypeaheadCandidates().reset(true);
    for (let s = 0; s < 200; s++) c.add(segA, s, null, 1);
    c.reset(true);
    expect(c.count).toBe(0);
    expect(c.segment.every((s) => s === undefined)).toBe(true);
    c.add(segB, 5, null, 0.5);
    c.add(segB, 5, null, 0.25);
    expect(contents(c)).toEqual([[5, 0.5]]);
    c.reset(false);
    c.add(segB, 5, 'five', 0.25);
    expect(contents(c)).toEqual([['five', 0.25]]);
  });
});
