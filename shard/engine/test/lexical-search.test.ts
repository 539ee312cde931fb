import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { analyzeQuery } from '../../../node/runtime/text/analyze-query.js';
import { gridAverage, IndexSnapshot } from '../index-snapshot.js';
import { headStats, lexicalSearch, pruning, type LexicalOptions } from '../lexical-search.js';
import { SegmentBuilder } from '../segment-builder.js';
import { random, randomWord } from './helpers.js';

const doc = (id: string, title: string, extra: Partial<SuggestDocument> = {}): SuggestDocument => ({ id, title, desc: '', manufacturer: '', raw: {}, ...extra });

function search(docs: SuggestDocument[], query: string, options: Partial<LexicalOptions> = {}): string[] {
  const seg = new SegmentBuilder().addAll(docs).build();
  const snap = new IndexSnapshot([seg]);
  return lexicalSearch(snap, analyzeQuery(query), { limit: 10, ...options }).hits.map((h) => seg.idAt(h.ord));
}

describe('lexicalSearch', () => {
  it('weights title over brand over category over description', () => {
    const docs = [
      doc('desc', 'Thing one', { desc: 'made of walnut' }),
      doc('cat', 'Thing two', { raw: { category: 'Walnut' } }),
      doc('brand', 'Thing three', { manufacturer: 'Walnut' }),
      doc('title', 'Walnut thing'),
    ];
    expect(search(docs, 'walnut ')).toEqual(['title', 'brand', 'cat', 'desc']);
  });

  it('ranks documents with every word above those missing one', () => {
    const docs = [doc('a', 'red shoe'), doc('b', 'red red red hat'), doc('c', 'blue shoe red laces')];
    expect(search(docs, 'red shoe ')).toEqual(['a', 'c', 'b']);
    expect(search(docs, 'red shoe ', { requireAll: true })).toEqual(['a', 'c']);
  });

  it('does not fill an answer with documents matching only a last word of one or two letters', () => {
    const docs = [
      doc('lego-house', 'LEGO House Bricks'),
      doc('lego-red', 'LEGO Red Classic Bricks'),
      doc('red-hat', 'Red Hat'),
      doc('pvc', 'PVC Fitting H x H'),
      doc('hammer', 'Hammer Drill'),
      doc('hose', 'Heavy Hose'),
    ];
    // "lego h": the match with both words, then "lego" alone; never "h..." alone
    expect(search(docs, 'lego h')).toEqual(['lego-house', 'lego-red']);
    expect(search(docs, 'lego ho')).toEqual(['lego-house', 'lego-red']);
    // from three letters the last word stands on its own again
    expect(search(docs, 'lego ham').sort()).toEqual(['hammer', 'lego-house', 'lego-red']);
    // with more words, documents with any other word still fill the answer
    expect(search(docs, 'lego red h').sort()).toEqual(['lego-house', 'lego-red', 'red-hat']);
    // a finished word is not a prefix: "h " matches the fitting alone
    expect(search(docs, 'lego h ')).toContain('pvc');
  });

  it('reads a repeated word once, and a last word being typed as a prefix even when it repeats', () => {
    const docs = [doc('a', '2 in x 4 in bracket'), doc('b', '2 in hinge'), doc('c', '2 inch pipe'), doc('d', 'x ray film'), doc('e', 'hinge pin'), doc('f', 'zorbix widget')];
    const seg = new SegmentBuilder().addAll(docs).build();
    const snap = new IndexSnapshot([seg]);
    const hits = (q: string) => lexicalSearch(snap, analyzeQuery(q), { limit: 10 }).hits.map((h) => [seg.idAt(h.ord), h.score, h.matched]);
    // the same documents, scores and matched-word counts as the words once
    expect(hits('2 in 2 in 2 in hinge ')).toEqual(hits('2 in hinge '));
    expect(hits('x x x x x x x x ')).toEqual(hits('x '));
    // "zorb zorb" with the second still typed: it completes to "zorbix", the finished word does not
    expect(hits('zorb zorb').map(([id]) => id)).toEqual(['f']);
    expect(hits('zorb zorb ')).toEqual([]);
  });

  it('completes the last word while it is typed, and not once it is finished', () => {
    const docs = [doc('a', 'samsung galaxy'), doc('b', 'samsonite bag'), doc('c', 'sam adams')];
    // "sams" could be the plural of "sam": that reading ranks below the completions
    expect(search(docs, 'sams').slice(0, 2).sort()).toEqual(['a', 'b']);
    expect(search(docs, 'sam ')).toEqual(['c']);
    expect(search(docs, 'galaxy sam', { requireAll: true })).toEqual(['a']);
  });

  it('tolerates typos but ranks exact matches first', () => {
    const docs = [doc('exact', 'wireless charger'), doc('typo', 'wireles charger'), doc('other', 'wired charger')];
    expect(search(docs, 'wireless charger ')[0]).toBe('exact');
    expect(search(docs, 'wirelss charger ')).toContain('exact');
    expect(search(docs, 'wireless charger ', { fuzzy: false, requireAll: true })).toEqual(['exact']);
    expect(search(docs, 'wireless charger ', { fuzzy: false }).at(-1)).toBe('other');
  });

  it('takes a number as typed: one digit off is another size, not a typo', () => {
    const docs = [doc('a', 'shower door 71-1/2 in'), doc('b', 'heater 12500 btu'), doc('c', 'shower door clear')];
    expect(search(docs, 'shower door 70-1/2 ', { requireAll: true })).toEqual([]);
    expect(search(docs, 'heater 12000 btu ', { requireAll: true })).toEqual([]);
    // words with letters still get typo neighbours
    expect(search(docs, 'showr door ', { requireAll: true }).sort()).toEqual(['a', 'c']);
  });

  it('caps the weight of rare completions at the typed word', () => {
    const docs = [
      ...Array.from({ length: 30 }, (_, i) => doc(`p${i}`, `iphone 7 case model ${i}`)),
      doc('rare', 'iphone 7/6s armband'),
    ];
    const top = search(docs, 'iphone 7');
    expect(top[0]).not.toBe('rare');
  });

  it('rewards words in order and next to each other', () => {
    const docs = [doc('far', 'galaxy phone by samsung'), doc('near', 'samsung galaxy phone')];
    expect(search(docs, 'samsung galaxy ')).toEqual(['near', 'far']);
  });

  it('matches singular and plural, compounds and units', () => {
    const docs = [doc('a', 'Cordless Drills Kit'), doc('b', 'Samsung 65" QLED TV'), doc('c', 'RTX 4090 graphics card'), doc('d', 'T-Shirt cotton')];
    expect(search(docs, 'drill ')).toEqual(['a']);
    expect(search(docs, 'samsung 65 inch ')).toEqual(['b']);
    expect(search(docs, '65in ')).toEqual(['b']);
    expect(search(docs, 'rtx4090 ')).toEqual(['c']);
    expect(search(docs, 'tshirt ')).toEqual(['d']);
    expect(search(docs, 't shirts ')).toEqual(['d']);
  });

  it('reads a finished compound as its parts even when a longer term starts with it', () => {
    const docs = [doc('canvas', 'Canvas Hanging 24 in. x 30 in. Kit'), doc('cabinet', '24x30x12 in. Wall Cabinet')];
    // finished, "24x30" is no term: its parts, as "24 in. x 30 in." says them (and the
    // cabinet's compound holds them too)
    expect(search(docs, '24x30 ', { requireAll: true }).sort()).toEqual(['cabinet', 'canvas']);
    // still typed, it is the start of "24x30x12"
    expect(search(docs, '24x30', { requireAll: true })).toEqual(['cabinet']);
  });

  it('reads an unknown compound as a model number a character off when no document holds its parts together', () => {
    const docs = [
      doc('battery', 'Lithium-Ion Battery for LG Cosmos VN250 Phones'),
      doc('pack', 'PowerPack T2600 USB Battery'),
      doc('card', 'RTX 4090 graphics card'),
      doc('other', 'RTX4080 graphics card'),
      doc('quartz', 'ForzaQuartz Seamless Countertop'),
    ];
    // "vn" and "260..." are in no document together: the compound's own typo walk finds VN250
    expect(search(docs, 'vn260 ')[0]).toBe('battery');
    expect(search(docs, 'vn260', { requireAll: true })).toEqual(['battery']);
    expect(search(docs, 'lg vn260 ', { requireAll: true })).toEqual(['battery']);
    // parts found together keep the split: "rtx4090" is RTX 4090, not the RTX4080 one edit away
    expect(search(docs, 'rtx4090 ', { requireAll: true })).toEqual(['card']);
    // a word with one digit is not a model number: "forza4" is no typo of "forzaq..."
    expect(search(docs, 'forza4', { requireAll: true })).toEqual([]);
    // without typo tolerance nothing is read into the compound
    expect(search(docs, 'vn260', { requireAll: true, fuzzy: false })).toEqual([]);
  });

  it('reads a misspelled prefix as the start of every term its correction starts, the common ones first', () => {
    const docs = [
      ...Array.from({ length: 8 }, (_, i) => doc(`drill-${i}`, `Cordless Drill and Driver Kit model ${i} with two batteries and a case`)),
      doc('drilling', 'Drilling Hammer with Side Handle and Depth Stop for Masonry Work'),
      doc('dries', 'Glue Dries White'),
      doc('driscoll', 'Driscoll Wall Light'),
    ];
    // "drils" is one edit from "dril", the prefix of "drill" and "drilling" (a subtree of terms,
    // which the walk reports as its prefix), and from the rarer "dries" and "driscoll"
    const found = search(docs, 'drils', { requireAll: true, limit: 20 });
    expect(found).toContain('drilling');
    expect(found.slice(0, 8).every((id) => id.startsWith('drill'))).toBe(true);
    expect(found.indexOf('dries')).toBeGreaterThan(found.indexOf('drill-0'));
  });

  it('uses shared collection statistics when given', () => {
    const docs = [doc('a', 'alpha beta'), doc('b', 'alpha gamma')];
    const seg = new SegmentBuilder().addAll(docs).build();
    const snap = new IndexSnapshot([seg]);
    const own = lexicalSearch(snap, analyzeQuery('alpha '), { limit: 5 }).hits[0]?.score ?? 0;
    const shared = lexicalSearch(snap, analyzeQuery('alpha '), { limit: 5, stats: { docCount: 1000, avgFieldLength: snap.avgFieldLength, df: { alpha: 2 } } }).hits[0]?.score ?? 0;
    expect(shared).toBeGreaterThan(own); // rarer in the whole index: higher idf
  });

  it('answers over segments of which some lack a word, in every pass, as one segment holding every document does', () => {
    // a refreshed index: a large segment and small ones that lack most words of a query (a pass
    // requiring a word a segment lacks leaves that segment at once; the passes leaving the word
    // out must still search it)
    const big = [doc('a', 'red shoe leather'), doc('b', 'blue shoe canvas'), doc('c', 'red hat wool'), doc('d', 'green scarf'), doc('e', 'red shoe laces')];
    const small1 = [doc('f', 'red boot'), doc('g', 'yellow shoe')];
    const small2 = [doc('h', 'zorbix red gadget')];
    const segs = [big, small1, small2].map((docs) => new SegmentBuilder().addAll(docs).build());
    const whole = new SegmentBuilder().addAll([...big, ...small1, ...small2]).build();
    const split = new IndexSnapshot(segs);
    const one = new IndexSnapshot([whole]);
    const ids = (snap: IndexSnapshot, q: string, options: Partial<LexicalOptions> = {}) =>
      lexicalSearch(snap, analyzeQuery(q), { limit: 10, ...options }).hits.map((h) => [snap.segments[h.segment]!.idAt(h.ord), Math.round(h.score * 1e6), h.matched]);
    for (const q of ['red shoe ', 'red shoe', 'red sh', 'shoe zorbix ', 'zorbix gadget red ', 'red boot ', 'yellow canvas ', 'zor re']) {
      for (const requireAll of [false, true]) {
        const got = ids(split, q, { requireAll });
        expect(got, `${q} requireAll=${requireAll}`).toEqual(ids(one, q, { requireAll }));
      }
    }
    // the documents of the small segments are found with every word, and with one left out
    expect(ids(split, 'red boot ', { requireAll: true }).map((h) => h[0])).toEqual(['f']);
    expect(ids(split, 'shoe zorbix ').map((h) => h[0])).toContain('h');
    expect(ids(split, 'shoe zorbix ').map((h) => h[0])).toContain('g');
  });

  it('skips deleted documents', () => {
    const seg = new SegmentBuilder().addAll([doc('a', 'lamp'), doc('b', 'lamp shade')]).build();
    seg.delete(0);
    const hits = lexicalSearch(new IndexSnapshot([seg]), analyzeQuery('lamp '), { limit: 5 }).hits;
    expect(hits.map((h) => seg.idAt(h.ord))).toEqual(['b']);
  });

  it('scores from memoized posting impacts exactly as computed afresh, per snapshot', () => {
    // 300 documents: long enough lists to be memoized; the second segment changes the average
    // title length, so the first segment's impacts differ between the two snapshots
    const seg1 = new SegmentBuilder().addAll(Array.from({ length: 300 }, (_, i) => doc(`a${i}`, `lamp shade ${'x'.repeat(1 + (i % 7))} ${i % 3 === 0 ? 'lamp' : 'brass'}`))).build();
    const seg2 = new SegmentBuilder().addAll(Array.from({ length: 50 }, (_, i) => doc(`b${i}`, `lamp ${Array.from({ length: 12 }, (_, j) => `word${j}`).join(' ')} ${i}`))).build();
    const fresh = (snap: IndexSnapshot, query: string) => {
      // no memo: impacts computed for this query
      pruning.memos = false;
      try {
        return lexicalSearch(snap, analyzeQuery(query), { limit: 20 }).hits;
      } finally {
        pruning.memos = true;
      }
    };
    for (const snap of [new IndexSnapshot([seg1]), new IndexSnapshot([seg1, seg2])]) {
      for (const query of ['lamp ', 'lam', 'lamp sha', 'shade brass ']) {
        const first = lexicalSearch(snap, analyzeQuery(query), { limit: 20 }).hits;
        const again = lexicalSearch(snap, analyzeQuery(query), { limit: 20 }).hits;
        expect(first.length, query).toBeGreaterThan(0);
        expect(again, query).toEqual(first);
        expect(first, query).toEqual(fresh(snap, query));
      }
    }
  });

  it('keeps a segment\'s norms, and the memos keyed by them, over writes that leave the gridded averages, with the answers of no memo', () => {
    const rnd = random(7);
    const vocab = Array.from({ length: 40 }, () => randomWord(rnd, 'abcdef', 2, 6));
    const pick = () => vocab[Math.floor(vocab.length * Math.pow(rnd(), 2))] as string;
    const title = (k: number) => Array.from({ length: k }, pick).join(' ');
    const big = new SegmentBuilder().addAll(Array.from({ length: 2000 }, (_, i) => doc(`a${i}`, title(3 + (i % 6)), { desc: i % 2 ? title(8) : '' }))).build();
    const trickle = new SegmentBuilder().addAll([doc('w1', title(5))]).build();
    const flood = new SegmentBuilder().addAll(Array.from({ length: 1500 }, (_, i) => doc(`f${i}`, title(20)))).build();
    const first = new IndexSnapshot([big]);
    const afterWrite = new IndexSnapshot([big, trickle]);
    expect(afterWrite.avgFieldLength).not.toEqual(first.avgFieldLength);
    // one document more: the same norms object for the large segment (its memos stay)
    expect(afterWrite.fieldNorms(big, [1, 1, 1, 1, 1], [0.75, 0.75, 0.75, 0.75, 0.75])).toBe(first.fieldNorms(big, [1, 1, 1, 1, 1], [0.75, 0.75, 0.75, 0.75, 0.75]));
    // titles four times as long: other norms
    const afterFlood = new IndexSnapshot([big, flood]);
    expect(afterFlood.fieldNorms(big, [1, 1, 1, 1, 1], [0.75, 0.75, 0.75, 0.75, 0.75])).not.toBe(first.fieldNorms(big, [1, 1, 1, 1, 1], [0.75, 0.75, 0.75, 0.75, 0.75]));
    const queries = Array.from({ length: 30 }, () => [pick().slice(0, 2), `${pick()} `, `${pick()} ${pick().slice(0, 2)}`, `${pick()} ${pick()} ${pick()} `]).flat();
    const answer = (snap: IndexSnapshot, q: string, memos: boolean) => {
      pruning.memos = memos;
      try {
        return lexicalSearch(snap, analyzeQuery(q), { limit: 10 }).hits.map((h) => `${h.segment}:${h.ord}:${h.score}`);
      } finally {
        pruning.memos = true;
      }
    };
    // memos filled by the first snapshot, used by the next ones (deletes made meanwhile), to the last bit
    for (const q of queries) answer(first, q, true);
    for (let ord = 0; ord < 2000; ord += 5) big.delete(ord);
    for (const snap of [afterWrite, new IndexSnapshot([big, trickle]), afterFlood]) {
      for (const q of queries) expect(answer(snap, q, true), q).toEqual(answer(snap, q, false));
    }
  });

  it('puts average lengths on a grid within 0.4 % of them', () => {
    const rnd = random(3);
    for (let i = 0; i < 2000; i++) {
      const avg = 1 + rnd() * 300;
      const g = gridAverage(avg);
      expect(Math.abs(g - avg) / avg).toBeLessThanOrEqual(1 / 256);
      expect(gridAverage(g)).toBe(g);
    }
  });

  it('resumes a query after its memoized head with the same answers, leaving out documents deleted since', () => {
    const titles = ['lamp shade brass', 'lamp shade linen', 'lamp base brass', 'desk lamp shade', 'floor lamp', 'shade sail', 'brass lamp shade large'];
    const seg = new SegmentBuilder().addAll(Array.from({ length: 400 }, (_, i) => doc(`d${i}`, `${titles[i % titles.length]} ${i % 5 === 0 ? 'modern' : 'classic'}`))).build();
    const snap = new IndexSnapshot([seg]);
    const ids = (hits: { ord: number; score: number }[]) => hits.map((h) => `${seg.idAt(h.ord)}:${h.score}`);
    // a new snapshot of the same segment has its own norms, hence no memoized head
    const fresh = (query: string, limit: number) => ids(lexicalSearch(new IndexSnapshot([seg]), analyzeQuery(query), { limit }).hits);
    const typed = ['lamp shade b', 'lamp shade br', 'lamp shade bra', 'lamp shade brass ', 'lamp shade zz', 'lamp shade brass m', 'lamp shade brass mo'];
    for (const query of typed) for (const limit of [5, 50]) expect(ids(lexicalSearch(snap, analyzeQuery(query), { limit }).hits), query).toEqual(fresh(query, limit));
    // a last word more common than the head ("l": lamp, large, linen) resumes the head "shade
    // brass" (over a hundred of the 400 documents) through its bitmap rather than a copy
    const resumes = headStats.lazyResumes;
    for (const query of ['shade brass l', 'shade brass la', 'shade brass l']) for (const limit of [5, 50]) expect(ids(lexicalSearch(snap, analyzeQuery(query), { limit }).hits), query).toEqual(fresh(query, limit));
    expect(headStats.lazyResumes).toBeGreaterThan(resumes);
    // deleted after the head "lamp shade brass" was memoized: left out when the query resumes from it
    const victim = lexicalSearch(snap, analyzeQuery('lamp shade brass m'), { limit: 1 }).hits[0]!;
    seg.delete(victim.ord);
    // "zq" matches nothing: the answer is the head's documents, straight from the memo; "shade
    // brass la" resumes the large head through its bitmap, which still holds the deleted document
    for (const query of ['lamp shade brass mod', 'lamp shade brass zq', 'shade brass la', 'shade brass l']) {
      const after = lexicalSearch(snap, analyzeQuery(query), { limit: 50 }).hits;
      expect(after.length, query).toBeGreaterThan(0);
      expect(after.map((h) => h.ord), query).not.toContain(victim.ord);
      expect(ids(after), query).toEqual(fresh(query, 50));
    }
  });

  it.each([
    ['as tuned', { ...pruning }],
    ['on small data too', { oneWordMinPostings: 0 }],
  ])('prunes one-word passes and the scoring of documents to exactly the answers of a full scan (random corpora and queries, %s)', (_, tuning) => {
    const tuned = { ...pruning };
    Object.assign(pruning, tuning);
    try {
      prunedEqualsFullScan();
    } finally {
      Object.assign(pruning, tuned);
    }
  });
});

/**
 * Reference: no memo (and so no one-word walk) and no skipping in the final pass (each query
 * scores every posting it reads and every document it finds). The pruned answers must match
 * it to the last bit, hits and scores, first time and memoized, with filters and deletes.
 */
function prunedEqualsFullScan(): void {
  for (const seed of [1, 2, 3]) {
    const rnd = random(seed);
    // a small alphabet makes shared prefixes; a skewed pick makes long lists (memoized, and some
    // above the loose pass's share) next to rare words
    const vocab = Array.from({ length: 60 }, () => randomWord(rnd, 'abcdefg', 2, 7));
    const pick = (): string => vocab[Math.floor(vocab.length * Math.pow(rnd(), 2.2))] as string;
    const phrase = (lo: number, hi: number): string => Array.from({ length: lo + Math.floor(rnd() * (hi - lo + 1)) }, pick).join(' ');
    const make = (prefix: string, count: number): SuggestDocument[] =>
      Array.from({ length: count }, (_, i) =>
        doc(`${prefix}${i}`, phrase(2, 8), { desc: rnd() < 0.5 ? phrase(3, 12) : '', manufacturer: rnd() < 0.3 ? pick() : '', raw: { price: Math.floor(rnd() * 100), popularity: Math.floor(rnd() * 5000) } }),
      );
    const segs = [new SegmentBuilder().addAll(make('a', 1200)).build(), new SegmentBuilder().addAll(make('b', 500)).build()];
    for (let ord = 0; ord < 1200; ord += 7) segs[0]!.delete(ord);
    const typo = (w: string): string => (w.length > 4 ? w.slice(0, 2) + w.slice(3) : w);
    const queries: string[] = [];
    for (let i = 0; i < 40; i++) {
      const w = pick();
      queries.push(w.slice(0, 1 + Math.floor(rnd() * w.length)), `${w} `, `${typo(w)} `);
      queries.push(`${pick()} ${pick().slice(0, 2)}`, `${pick()} ${pick()} `, `${phrase(1, 1)} zzq ${pick()} `);
      queries.push(`${phrase(4, 9)} ${pick().slice(0, 1 + Math.floor(rnd() * 3))}`, `${phrase(5, 10)} ${typo(pick())} `);
    }
    const snap = new IndexSnapshot(segs);
    const stats = { docCount: snap.docCount, avgFieldLength: snap.avgFieldLength, df: {} };
    const filters = { clauses: [{ kind: 'range' as const, field: 'price', gte: 20, lt: 60 }] };
    const key = (hits: { segment: number; ord: number; score: number; matched: number; typos: number }[]) => hits.map((h) => `${h.segment}:${h.ord}:${h.score}:${h.matched}:${h.typos}`);
    let nonEmpty = 0;
    const resumes = headStats.lazyResumes;
    for (const query of queries) {
      for (const limit of [3, 10, 50]) {
        for (const filter of [null, filters]) {
          for (const requireAll of [false, true]) {
            const options = { limit, filters: filter, requireAll };
            Object.assign(pruning, { skipUnreachable: false, memos: false });
            const reference = key(lexicalSearch(snap, analyzeQuery(query), options).hits);
            Object.assign(pruning, { skipUnreachable: true, memos: true });
            if (reference.length > 0) nonEmpty++;
            const label = `seed ${seed} "${query}" limit ${limit}${filter ? ' filtered' : ''}${requireAll ? ' all' : ''}`;
            expect(key(lexicalSearch(snap, analyzeQuery(query), options).hits), label).toEqual(reference);
            expect(key(lexicalSearch(snap, analyzeQuery(query), options).hits), `${label} again`).toEqual(reference);
            // shared statistics equal to the snapshot's own: the same answer, memos and walk included
            expect(key(lexicalSearch(snap, analyzeQuery(query), { ...options, stats }).hits), `${label} shared statistics`).toEqual(reference);
          }
        }
      }
    }
    expect(nonEmpty).toBeGreaterThan(queries.length * 6);
    // large heads were resumed through their bitmaps, and matched the reference
    expect(headStats.lazyResumes).toBeGreaterThan(resumes);
  }
}

describe('lexicalSearch with dropOnly', () => {
  it('finds exactly the documents with every word but one, against a scan of every document (random corpora and queries)', () => {
    for (const seed of [4, 5, 6]) {
      const rnd = random(seed);
      const vocab = [...new Set(Array.from({ length: 40 }, () => randomWord(rnd, 'abcdefg', 3, 6)))];
      const pick = (): string => vocab[Math.floor(vocab.length * Math.pow(rnd(), 1.6))] as string;
      const docs = Array.from({ length: 700 }, (_, i) => doc(`d${i}`, Array.from({ length: 2 + Math.floor(rnd() * 6) }, pick).join(' ')));
      const seg = new SegmentBuilder().addAll(docs).build();
      for (let ord = 0; ord < docs.length; ord += 11) seg.delete(ord);
      const snap = new IndexSnapshot([seg]);
      let nonEmpty = 0;
      for (let i = 0; i < 60; i++) {
        const words = [...new Set(Array.from({ length: 2 + Math.floor(rnd() * 4) }, pick))];
        if (words.length < 2) continue;
        // whole words, no typos: a document matches a word when its title has it
        const found = lexicalSearch(snap, analyzeQuery(`${words.join(' ')} `), { limit: 5_000, dropOnly: true, fuzzy: false }).hits.map((h) => seg.idAt(h.ord));
        const reference = docs
          .filter((d, ord) => seg.isLive(ord) && words.filter((w) => d.title.split(' ').includes(w)).length >= words.length - 1)
          .map((d) => d.id);
        expect(new Set(found).size, words.join(' ')).toBe(found.length);
        expect([...found].sort(), `seed ${seed} "${words.join(' ')}"`).toEqual([...reference].sort());
        if (reference.length > 0) nonEmpty++;
      }
      expect(nonEmpty).toBeGreaterThan(20);
    }
  });
});

describe('lexicalSearch keystroke by keystroke', () => {
  it('answers each keystroke of a last word as without memos (the pass without the last word is memoized)', () => {
    const rnd = random(21);
    const vocab = [...new Set(Array.from({ length: 50 }, () => randomWord(rnd, 'abcdefgh', 3, 8)))];
    const pick = (): string => vocab[Math.floor(vocab.length * Math.pow(rnd(), 1.8))] as string;
    const docs = Array.from({ length: 900 }, (_, i) => doc(`d${i}`, Array.from({ length: 2 + Math.floor(rnd() * 6) }, pick).join(' '), { desc: rnd() < 0.4 ? `${pick()} ${pick()}` : '' }));
    const segs = [new SegmentBuilder().addAll(docs.slice(0, 700)).build(), new SegmentBuilder().addAll(docs.slice(700)).build()];
    for (let ord = 0; ord < 700; ord += 9) segs[0]!.delete(ord);
    const typed = new IndexSnapshot(segs);
    const key = (hits: { segment: number; ord: number; score: number; matched: number }[]) => hits.map((h) => `${h.segment}:${h.ord}:${h.score}:${h.matched}`);
    let dropped = 0;
    for (let i = 0; i < 25; i++) {
      const head = Array.from({ length: 1 + Math.floor(rnd() * 3) }, pick).join(' ');
      const last = `${pick()}${pick()}`.slice(0, 8);
      for (let k = 1; k <= last.length; k++) {
        const query = `${head} ${last.slice(0, k)}`;
        for (const options of [{ limit: 5 }, { limit: 30, dropOnly: true }, { limit: 30 }]) {
          // the reference reads everything again: no memo
          pruning.memos = false;
          const fresh = key(lexicalSearch(typed, analyzeQuery(query), options).hits);
          pruning.memos = true;
          const answer = key(lexicalSearch(typed, analyzeQuery(query), options).hits);
          expect(answer, `"${query}" ${JSON.stringify(options)}`).toEqual(fresh);
          if (answer.some((h) => h.endsWith(`:${head.split(' ').length}`))) dropped++;
        }
      }
    }
    // answers held documents missing the last word
    expect(dropped).toBeGreaterThan(50);
  });
});

describe('lexicalSearch scratch memory, shared by every snapshot of the thread', () => {
  const rnd = random(11);
  const vocab = Array.from({ length: 30 }, () => randomWord(rnd, 'abcdefg', 2, 6));
  const pick = () => vocab[Math.floor(vocab.length * Math.pow(rnd(), 2))] as string;
  const docs = Array.from({ length: 800 }, (_, i) => doc(`d${i}`, Array.from({ length: 3 + (i % 5) }, pick).join(' '), { desc: i % 3 ? Array.from({ length: 6 }, pick).join(' ') : '' }));
  const queries = Array.from({ length: 40 }, () => [`${pick()} `, `${pick()} ${pick().slice(0, 2)}`, `${pick()} ${pick()} ${pick()}`, pick().slice(0, 3)]).flat();
  const answer = (snap: IndexSnapshot, q: string, options: Partial<LexicalOptions> = {}) => lexicalSearch(snap, analyzeQuery(q), { limit: 10, ...options }).hits.map((h) => `${h.segment}:${h.ord}:${h.score}`);

  it('gives every snapshot the answers it gives alone, queried in turn with others of other sizes', () => {
    const big = new IndexSnapshot([new SegmentBuilder().addAll(docs).build()]);
    const small = new IndexSnapshot([new SegmentBuilder().addAll(docs.slice(0, 90)).build(), new SegmentBuilder().addAll(docs.slice(90, 120)).build()]);
    const alone = (snap: IndexSnapshot) => queries.map((q) => answer(snap, q));
    const [bigAlone, smallAlone] = [alone(big), alone(small)];
    queries.forEach((q, i) => {
      expect(answer(small, q), q).toEqual(smallAlone[i]);
      expect(answer(big, q), q).toEqual(bigAlone[i]);
      expect(answer(big, q, { requireAll: true }).length).toBeLessThanOrEqual(10);
    });
  });

  it('leaves nothing behind from a query that failed midway', () => {
    const a = new IndexSnapshot([new SegmentBuilder().addAll(docs).build()]);
    const b = new IndexSnapshot([new SegmentBuilder().addAll(docs).build()]);
    const expected = queries.map((q) => answer(b, q));
    for (const q of queries) {
      let calls = 0;
      // a merchandising factor that fails after a few documents: scores are in the scratch arrays by then
      const failing = () => (ord: number) => {
        if (++calls > 3) throw new Error('factor failed');
        return ord % 2 ? 1 : 0.5;
      };
      try {
        answer(a, q, { docFactor: failing });
      } catch (err) {
        expect((err as Error).message).toBe('factor failed');
      }
    }
    expect(queries.map((q) => answer(b, q))).toEqual(expected);
  });
});
