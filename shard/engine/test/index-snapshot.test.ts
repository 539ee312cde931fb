import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { IndexSnapshot } from '../index-snapshot.js';
import { SegmentBuilder } from '../segment-builder.js';
import { random } from './helpers.js';

function doc(id: string, title: string): SuggestDocument {
  return { id, title, desc: '', manufacturer: '', raw: {} };
}

describe('IndexSnapshot', () => {
  it('counts the documents two words share like a scan of every title, over segments and lopsided word frequencies', () => {
    const rnd = random(11);
    // "common" in most titles, "rare" in a few, the others in between: the intersection gallops
    // through the longer list when one is much shorter
    const words = ['common', 'often', 'some', 'few', 'rare'];
    const chance = [0.9, 0.5, 0.2, 0.05, 0.01];
    for (let round = 0; round < 6; round++) {
      const titles: string[][] = [];
      const segments = [];
      for (let s = 0; s < 1 + (round % 3); s++) {
        const docs: SuggestDocument[] = [];
        for (let i = 0; i < 400 + round * 300; i++) {
          const title = words.filter((_, w) => rnd() < (chance[w] as number));
          titles.push(title);
          docs.push(doc(`${s}-${i}`, ['item', ...title].join(' ')));
        }
        segments.push(new SegmentBuilder().addAll(docs).build());
      }
      const snap = new IndexSnapshot(segments);
      for (const a of words) {
        for (const b of words) {
          if (a === b) continue;
          const expected = titles.filter((t) => t.includes(a) && t.includes(b)).length;
          expect(snap.cooccurrence(a, b), `${a} & ${b}`).toBe(expected);
        }
        expect(snap.cooccurrence(a, 'absent')).toBe(0);
      }
    }
  });

  it('weighs a typo of a prefix that is itself a word by every term that prefix starts', () => {
    const docs = [doc('1', 'Toile Curtain'), ...Array.from({ length: 9 }, (_, i) => doc(`t${i}`, 'Toilet Seat')), doc('x', 'Tiled Tray')];
    const snap = new IndexSnapshot([new SegmentBuilder().addAll(docs).build()]);
    const toile = snap.fuzzyTerms('toiled', 1, true, 'any').find((m) => m.matched === 'toile');
    expect(toile?.weight).toBe(10);
    // the context of a word still typed: the most documents any term it starts shares
    expect(snap.prefixCooccurrence('seat', 'toi')).toBe(9);
    expect(snap.prefixCooccurrence('curtain', 'toile')).toBe(1);
    expect(snap.prefixCooccurrence('tray', 'toile')).toBe(0);
  });
});
