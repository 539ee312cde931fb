import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ClearingMemo, MemoBudget, MemoPerOwner } from '../memo.js';

describe('ClearingMemo', () => {
  it('forgets everything once its entries are full', () => {
    const m = new ClearingMemo<number, string>({ maxEntries: 2, entryBytes: 10 });
    m.set(1, 'a');
    m.set(2, 'b');
    expect([m.get(1), m.get(2)]).toEqual(['a', 'b']);
    m.set(3, 'c');
    expect([m.get(1), m.get(2), m.get(3)]).toEqual([undefined, undefined, 'c']);
  });

  it('forgets everything when a value would pass the weight bound', () => {
    const m = new ClearingMemo<string, number[]>({ maxWeight: 5, weightOf: (v) => v.length, entryBytes: 10 });
    m.set('a', [1, 2, 3]);
    m.set('b', [1, 2]); // 5: still fits
    expect(m.get('a')).toHaveLength(3);
    m.set('c', [1]); // 6: over
    expect([m.get('a'), m.get('b'), m.get('c')]).toEqual([undefined, undefined, [1]]);
  });
});

describe('MemoBudget', () => {
  const fill = (m: ClearingMemo<number, number>, from: number, n: number) => {
    for (let i = from; i < from + n; i++) m.set(i, i);
  };

  it('charges entries and weights, and gives them back when a memo clears itself', () => {
    const budget = new MemoBudget(10_000);
    const m = new ClearingMemo<string, number[]>({ maxEntries: 3, weightOf: (v) => v.length, entryBytes: 100, weightBytes: 10, budget });
    m.set('a', [1, 2]);
    m.set('b', [1]);
    expect(budget.stats()).toMatchObject({ bytes: 230, memos: 1, evictions: 0 });
    m.set('c', []);
    m.set('d', [1, 2, 3]); // the memo's own bound: cleared first
    expect(budget.stats().bytes).toBe(130);
    m.clear();
    expect(budget.stats()).toMatchObject({ bytes: 0, memos: 0 });
  });

  it('past its limit, clears the memos written least recently until a tenth is free', () => {
    const budget = new MemoBudget(1_000);
    const [a, b, c] = [0, 1, 2].map(() => new ClearingMemo<number, number>({ entryBytes: 100, budget })) as [ClearingMemo<number, number>, ClearingMemo<number, number>, ClearingMemo<number, number>];
    fill(a, 0, 3);
    fill(b, 0, 3);
    fill(c, 0, 3);
    fill(a, 3, 1); // 1,000: at the limit, a written last but one
    expect(budget.stats()).toMatchObject({ bytes: 1_000, evictions: 0 });
    fill(c, 3, 1); // 1,100: b is the least recently written
    expect([a.size, b.size, c.size]).toEqual([4, 0, 4]);
    expect(budget.stats()).toMatchObject({ bytes: 800, memos: 2, evictions: 1 });
    fill(c, 4, 3); // 1,100 again: a goes, c (being written) stays
    expect([a.size, b.size, c.size]).toEqual([0, 0, 7]);
    expect(budget.stats()).toMatchObject({ bytes: 700, evictions: 2 });
  });

  it('clears the memo being written when it alone passes the limit', () => {
    const budget = new MemoBudget(500);
    const m = new ClearingMemo<number, number>({ entryBytes: 100, budget });
    fill(m, 0, 5);
    expect(m.size).toBe(5);
    fill(m, 5, 1);
    expect(m.size).toBe(0);
    expect(budget.stats()).toMatchObject({ bytes: 0, evictions: 1 });
  });

  it('forgets the bytes of memos whose owners were collected', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const budget = new MemoBudget(1_000_000);
    const memos = new MemoPerOwner<object, number, number>(() => new ClearingMemo({ entryBytes: 100, budget }));
    const kept = {};
    fill(memos.of(kept), 0, 2);
    (() => {
      for (let i = 0; i < 10; i++) fill(memos.of({}), 0, 5);
    })();
    expect(budget.stats().bytes).toBe(5_200);
    for (let i = 0; i < 50 && budget.stats().bytes > 200; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(budget.stats()).toMatchObject({ bytes: 200, memos: 1 });
    expect(memos.of(kept).get(1)).toBe(1);
  });
});

describe('MemoPerOwner', () => {
  it('keeps one memo per owner', () => {
    const memos = new MemoPerOwner<object, string, number>(() => new ClearingMemo({ maxEntries: 10, entryBytes: 10 }));
    const a = {};
    const b = {};
    memos.of(a).set('k', 1);
    expect(memos.of(a).get('k')).toBe(1);
    expect(memos.of(b).get('k')).toBeUndefined();
    expect(memos.of(a)).toBe(memos.of(a));
  });
});
