import { describe, expect, it } from 'vitest';
import { PrefixIndex } from '../prefix-index.js';
import type { Segment } from '../segment.js';
import { TypeaheadCandidates } from '../typeahead-candidates.js';
import { random } from './helpers.js';

/** A stand-in segment with just a suggestion key table (what the candidates read of one). */
function segmentOf(name: string, keys: string[]): Segment & { id(key: string): number } {
  const table = PrefixIndex.build(keys);
  return { name, suggestions: { keys: table }, id: (key: string) => table.get(key) } as unknown as Segment & { id(key: string): number };
}

const segA = segmentOf('a', ['five', 'samsung']);
const segB = segmentOf('b', ['five', 'samsung', 'samsung galaxy']);

/** The candidates as a map from identity (suggestion id, or key) to the best factor, in order of first addition. */
function contents(c: TypeaheadCandidates): [string | number, number][] {
  return Array.from({ length: c.count }, (_, i) => [c.byId ? (c.sug[i] as number) : (c.segment[i] as Segment).suggestions.keys.termAt(c.sug[i] as number), c.factor[i] as number]);
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
    c.add(segA, segA.id('samsung'), null, 1);
    c.add(segB, segB.id('samsung galaxy'), 'samsung galaxy', 0.5);
    c.add(segB, segB.id('samsung'), null, 1.25);
    c.add(segA, segA.id('samsung'), null, 0.3);
    expect(contents(c)).toEqual([
      ['samsung', 1.25],
      ['samsung galaxy', 0.5],
    ]);
    expect(c.segment.slice(0, c.count)).toEqual([segA, segB]);
    expect(Array.from(c.sug.subarray(0, c.count))).toEqual([segA.id('samsung'), segB.id('samsung galaxy')]);
    // a key given is kept; one not given is decoded later, when needed
    expect(c.key.slice(0, c.count)).toEqual([null, 'samsung galaxy']);
  });

  it('tells keys apart by their code units over segments, as a map of decoded keys would, through growth and rehashing', () => {
    const rnd = random(11);
    // keys sharing prefixes, of equal lengths, and non-Latin: the table's hashes and compares see them all
    const words = ['drill', 'drills', 'dril', 'sam', 'samsung', 'ßtraße', '電動', '電動ドリル', 'x', 'x b', 'x c', ''];
    const keysOf = (n: number) => Array.from({ length: n }, (_, i) => `${words[i % words.length]} ${Math.floor(i / words.length)}`.trim());
    const segments = [segmentOf('big', keysOf(900)), segmentOf('small', keysOf(40)), segmentOf('other', keysOf(300).map((k) => `${k}!`).concat(keysOf(25)))];
    const c = new TypeaheadCandidates();
    for (let round = 0; round < 5; round++) {
      c.reset(false);
      const reference = new Map<string, number>();
      for (let n = 0; n < 600; n++) {
        const seg = segments[Math.floor(rnd() * segments.length)]!;
        const sug = Math.floor(rnd() * seg.suggestions.keys.size);
        const factor = Math.round(rnd() * 8) / 4;
        c.add(seg, sug, null, factor);
        const key = seg.suggestions.keys.termAt(sug);
        reference.set(key, Math.max(reference.get(key) ?? -1, factor));
      }
      expect(contents(c)).toEqual([...reference]);
    }
  });

  it('starts each query empty and holds no segment of the last one', () => {
    const c = new TypeaheadCandidates().reset(true);
    for (let s = 0; s < 200; s++) c.add(segA, s, null, 1);
    c.reset(true);
    expect(c.count).toBe(0);
    expect(c.segment.every((s) => s === undefined)).toBe(true);
    c.add(segB, 2, null, 0.5);
    c.add(segB, 2, null, 0.25);
    expect(contents(c)).toEqual([[2, 0.5]]);
    c.reset(false);
    c.add(segB, segB.id('five'), 'five', 0.25);
    expect(contents(c)).toEqual([['five', 0.25]]);
  });
});
