import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { IndexSnapshot } from '../index-snapshot.js';
import { regroupWords } from '../regroup.js';
import { SegmentBuilder } from '../segment-builder.js';

const doc = (id: string, title: string): SuggestDocument => ({ id, title, desc: '', manufacturer: '', raw: {} });

function snapshotOf(titles: string[]): IndexSnapshot {
  return new IndexSnapshot([new SegmentBuilder().addAll(titles.map((t, i) => doc(String(i), t))).build()]);
}

describe('regroupWords', () => {
  const snap = snapshotOf([
    ...Array.from({ length: 5 }, (_, i) => `Built-In Dishwasher ${i}`),
    ...Array.from({ length: 5 }, (_, i) => `Gas Lawn Mower ${i}`),
    'Lawnmower Oil',
    'Soap Dish',
    'Pressure Washer',
    'Keyboard Tray',
    'Key Hook',
    'Board Game',
  ]);

  it('joins two neighbours the index knows as one word, the last one as a prefix while typed', () => {
    expect(regroupWords(snap, ['dish', 'washer'], false, 'any')).toEqual(['dishwasher']);
    expect(regroupWords(snap, ['built', 'in', 'dish', 'wash'], true, 'any')).toEqual(['built', 'in', 'dishwash']);
    expect(regroupWords(snap, ['dish', 'wash'], false, 'any')).toBeNull();
  });

  it('joins the pair whose joined word the index uses most, a word still typed weighed by the terms it starts', () => {
    // "keyboard" (one title) against the start of "dishwasher" (five): the dishwasher
    expect(regroupWords(snap, ['key', 'board', 'dish', 'wash'], true, 'any')).toEqual(['key', 'board', 'dishwash']);
    // finished, "dish wash" is no known word: the keyboard
    expect(regroupWords(snap, ['key', 'board', 'dish', 'wash'], false, 'any')).toEqual(['keyboard', 'dish', 'wash']);
  });

  it('splits a word into two the index knows, where they stand together in more documents than the word', () => {
    expect(regroupWords(snap, ['lawnmower'], false, 'any')).toEqual(['lawn', 'mower']);
    // "key" and "board" are words, but no document has both: "keyboard" stays
    expect(regroupWords(snap, ['keyboard'], false, 'any')).toBeNull();
    // typed, the second half is a prefix
    expect(regroupWords(snap, ['lawnmow'], true, 'any')).toEqual(['lawn', 'mow']);
  });

  it('leaves sizes, model numbers and short words as typed', () => {
    expect(regroupWords(snap, ['lawn', '21'], false, 'any')).toBeNull();
    expect(regroupWords(snap, ['so', 'ap'], false, 'any')).toBeNull();
    expect(regroupWords(snap, [], false, 'any')).toBeNull();
  });
});
