import { describe, expect, it } from 'vitest';
import { ClearingMemo, MemoPerOwner } from '../memo.js';

describe('ClearingMemo', () => {
  it('forgets everything once its entries are full', () => {
    const m = new ClearingMemo<number, string>(2);
    m.set(1, 'a');
    m.set(2, 'b');
    expect([m.get(1), m.get(2)]).toEqual(['a', 'b']);
    m.set(3, 'c');
    expect([m.get(1), m.get(2), m.get(3)]).toEqual([undefined, undefined, 'c']);
  });

  it('forgets everything when a value would pass the weight bound', () => {
    const m = new ClearingMemo<string, number[]>(Number.POSITIVE_INFINITY, 5, (v) => v.length);
    m.set('a', [1, 2, 3]);
    m.set('b', [1, 2]); // 5: still fits
    expect(m.get('a')).toHaveLength(3);
    m.set('c', [1]); // 6: over
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([undefined, undefined, [1]]);
  });
});

describe('MemoPerOwner', () => {
  it('keeps one memo per owner', () => {
    const memos = new MemoPerOwner<object, string, number>(() => new ClearingMemo(10));
    const a = {};
    const b = {};
    memos.of(a).set('k', 1);
    expect(memos.of(a).get('k')).toBe(1);
    expect(memos.of(b).get('k')).toBeUndefined();
    expect(memos.of(a)).toBe(memos.of(a));
  });
});
