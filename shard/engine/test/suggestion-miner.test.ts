// The miner's phrase counters belong to the thread: a miner takes them, counts, and gives them
// back cleared, so the next build (often of a few fresh documents) neither allocates nor clears
// 4 MB, and mines exactly what it would with counters of its own.
import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { docFields } from '../doc-fields.js';
import { docWeightOf } from '../segment.js';
import { SUG, SuggestionMiner } from '../suggestion-miner.js';
import { loadBestBuy, loadBigBasket } from './helpers.js';

const countsOf = (m: SuggestionMiner): Uint8Array => (m as unknown as { phraseCounts: Uint8Array }).phraseCounts;

function mine(docs: SuggestDocument[]) {
  const miner = new SuggestionMiner();
  docs.forEach((d, i) => miner.addDocument(i, docFields(d), docWeightOf(0.5)));
  return { counts: countsOf(miner), mined: miner.finish() };
}

describe('suggestion miner phrase counters', () => {
  it('are shared by the builds of a thread, left cleared, and mine what counters of its own mine', () => {
    for (const all of [loadBestBuy(), loadBigBasket()]) {
      const large = all.slice(0, 3000);
      const small = all.slice(3000, 3040);
      // a miner that has not finished holds the thread's counters: the next one gets its own
      const holder = new SuggestionMiner();
      const own = mine(small);
      expect(own.counts).not.toBe(countsOf(holder));
      holder.finish();
      const shared = countsOf(holder);
      // a large build, then the small one again, on the shared counters
      const big = mine(large);
      expect(big.counts).toBe(shared);
      expect(shared.every((c) => c === 0)).toBe(true);
      expect(big.mined.suggestions.length).toBeGreaterThan(1000);
      const again = mine(small);
      expect(again.counts).toBe(shared);
      expect(again.mined).toEqual(own.mined);
      expect(shared.every((c) => c === 0)).toBe(true);
      // and the large one mines as it did, after the small one
      expect(mine(large).mined).toEqual(big.mined);
    }
  });
});

describe('suggestion miner displays', () => {
  it('gives a phrase that is also a whole product title the words it was mined from', () => {
    // "Garlic Naan" is one product's whole title (mined first as a product, which has no display
    // of its own) and a phrase of two other titles: the phrase wins the type and must show text
    const docs: SuggestDocument[] = [
      { id: 'a', title: 'Garlic Naan', desc: '', manufacturer: 'Kitchens', raw: {} },
      { id: 'b', title: 'Frozen Garlic Naan - Family Pack', desc: '', manufacturer: 'Kitchens', raw: {} },
      { id: 'c', title: 'Butter Garlic Naan, 4 pcs', desc: '', manufacturer: 'Kitchens', raw: {} },
    ];
    const naan = mine(docs).mined.suggestions.find((s) => s.key === 'garlic naan');
    expect(naan?.display).toBe('Garlic Naan');
  });

  it('shows a brand in its most frequent spelling in every suggestion that has it, whichever came first', () => {
    const docs: SuggestDocument[] = [
      { id: 'a', title: 'Commuter Series Case for Apple iPhone 7', desc: '', manufacturer: 'Otterbox', raw: { category: 'iPhone Cases & Clips' } },
      { id: 'b', title: 'Defender Series Case for Apple iPhone 7', desc: '', manufacturer: 'OtterBox', raw: { category: 'iPhone Cases & Clips' } },
      { id: 'c', title: 'Symmetry Series Case for Apple iPhone 7', desc: '', manufacturer: 'OtterBox', raw: { category: 'iPhone Accessories' } },
      { id: 'd', title: 'Alpha Glass Screen Protector', desc: '', manufacturer: 'OtterBox', raw: { category: 'iPhone Accessories' } },
    ];
    const shown = mine(docs).mined.suggestions.filter((s) => s.key.startsWith('otterbox')).map((s) => s.display);
    expect(shown).toEqual(expect.arrayContaining(['OtterBox', 'OtterBox iPhone Cases & Clips', 'OtterBox iPhone Accessories']));
    expect(shown.filter((d) => d.startsWith('Otterbox'))).toEqual([]);
  });

  it('leaves no suggestion but a product without text to show, on real catalogues', () => {
    for (const all of [loadBestBuy(), loadBigBasket()]) {
      const blank = mine(all).mined.suggestions.filter((s) => s.display === '' && s.type !== SUG.product);
      expect(blank.map((s) => s.key)).toEqual([]);
    }
  });
});
