import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { MessageChannel } from 'node:worker_threads';
import { SuggestEngine, type SharedEngineState } from '../engine.js';
import { SegmentBuilder } from '../segment-builder.js';
import { ENGINE_FORMAT_VERSION, INTERIM_READABLE_VERSION, OLDEST_READABLE_VERSION } from '../engine-format.js';
import { validateFilters } from '../filters.js';
import { loadBestBuy } from './helpers.js';

const small: SuggestDocument[] = [
  { id: '1', title: 'Samsung Galaxy S7 32GB Black', desc: 'A phone', manufacturer: 'Samsung', raw: { category: 'Phones', price: 699, popularity: 900, url: 'https://x/1', image: 'https://x/1.jpg', currency: 'usd' } },
  { id: '2', title: 'Samsung Galaxy S7 Edge 64GB', desc: 'A bigger phone', manufacturer: 'Samsung', raw: { category: 'Phones', price: 799, popularity: 500 } },
  { id: '3', title: 'Apple iPhone 7 128GB', desc: 'Another phone', manufacturer: 'Apple', raw: { category: 'Phones', price: 749, popularity: 1000 } },
  { id: '4', title: 'OtterBox Defender Case for Samsung Galaxy S7', desc: 'Rugged case', manufacturer: 'OtterBox', raw: { category: 'Cases', price: 49.99 } },
  { id: '5', title: 'OtterBox Symmetry Case for iPhone 7', desc: 'Slim case', manufacturer: 'OtterBox', raw: { category: 'Cases', price: 39.99 } },
];

const ids = (r: { suggestions: { id: string }[] }): string[] => r.suggestions.map((s) => s.id);

describe('SuggestEngine', () => {
  it('upserts, replaces and removes documents', () => {
    const e = new SuggestEngine();
    expect(e.upsert(small)).toEqual({ upserted: 5, created: 5 });
    expect(e.documentCount).toBe(5);
    expect(e.upsert([{ ...small[0]!, title: 'Samsung Galaxy S8 64GB' }])).toEqual({ upserted: 1, created: 0 });
    expect(e.documentCount).toBe(5);
    expect(e.get('1')?.title).toBe('Samsung Galaxy S8 64GB');
    expect(ids(e.autocomplete({ query: 'galaxy s8' }))[0]).toBe('1');
    expect(ids(e.autocomplete({ query: 'galaxy s7 32gb' }))[0]).not.toBe('1');
    expect(e.remove(['2', 'nope'])).toBe(1);
    expect(e.get('2')).toBeNull();
    expect(ids(e.autocomplete({ query: 'edge' }))).toEqual([]);
    expect(e.typeahead({ query: 'samsung galaxy s7 e' }).suggestions.map((s) => s.title)).not.toContain('Samsung Galaxy S7 Edge 64GB');
    expect(e.documentCount).toBe(4);
  });

  it('finds a number and its unit typed joined when titles write them apart, though the index knows the joined form', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'a', title: 'Multigrain Atta 5 Kg Pouch', desc: '', manufacturer: 'Aashirvaad', raw: {} },
      { id: 'b', title: 'Chakki Atta, 10 kgs', desc: '', manufacturer: 'Pillsbury', raw: {} },
      // "5kg" is a term of the index: the query word is not split into "5" and "kg"
      { id: 'c', title: 'Idli Rice 5kg', desc: '', manufacturer: 'BB Royal', raw: {} },
    ]);
    expect(ids(e.autocomplete({ query: 'atta 5kg' }))[0]).toBe('a');
    expect(ids(e.typeahead({ query: 'atta 5kg' }))).toContain('a');
    expect(ids(e.autocomplete({ query: 'atta 10kg' }))[0]).toBe('b');
    expect(ids(e.autocomplete({ query: 'rice 5 kg' }))[0]).toBe('c');
    // a foot mark typed for inches: "32'" finds a 32 in. door though the index knows "32ft"
    e.upsert([
      { id: 'door', title: 'Storm Door 32 in. x 80 in. White', desc: '', manufacturer: 'Larson', raw: {} },
      { id: 'ladder', title: "32' Extension Ladder", desc: '', manufacturer: 'Werner', raw: {} },
    ]);
    expect(ids(e.autocomplete({ query: "32' storm door" }))[0]).toBe('door');
    expect(ids(e.typeahead({ query: "32' storm door" }))).toContain('door');
    expect(ids(e.autocomplete({ query: "32' ladder" }))[0]).toBe('ladder');
  });

  it('tells a size from a mixed number that ends with it, and reads "1 1/2" as "1-1/2"', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'half1', title: 'DIG 1/2 in. PVC x 0.700 Compression Coupling (25-Pack)', desc: '', manufacturer: 'DIG', raw: {} },
      { id: 'half2', title: 'Carlon 1/2 in. PVC Standard Fitting Coupling (Case of 185)', desc: '', manufacturer: 'Carlon', raw: {} },
      { id: 'mixed1', title: '1-1/2 in. PVC DWV Coupling', desc: '', manufacturer: 'Charlotte', raw: {} },
      { id: 'mixed2', title: '1 1/2 in. PVC DWV Repair Coupling', desc: '', manufacturer: 'NIBCO', raw: {} },
      { id: 'mixed3', title: '1-1/2 in. PVC Sediment Filter', desc: '', manufacturer: 'Everbilt', raw: {} },
      { id: 'two', title: '2 in. x 1-1/4 in. PVC Reducing Coupling', desc: '', manufacturer: 'Charlotte', raw: {} },
    ]);
    const products = (r: { suggestions: { id: string }[] }) => r.suggestions.map((s) => s.id).filter((id) => id.startsWith('half') || id.startsWith('mixed') || id === 'two');
    expect(products(e.autocomplete({ query: '1/2 in pvc coupling' })).slice(0, 2).sort()).toEqual(['half1', 'half2']);
    for (const q of ['1-1/2 in pvc coupling', '1 1/2 pvc coupling', '1 1/2" pvc coupling']) {
      expect(products(e.autocomplete({ query: q })).slice(0, 2).sort()).toEqual(['mixed1', 'mixed2']);
    }
    // typed keystroke by keystroke, the mixed number is read as one from its first digits
    for (const q of ['1 1', '1-1', '1 1/', 'pvc 1 1']) {
      const found = e.typeahead({ query: q }).suggestions.map((s) => s.title);
      expect(found.length).toBeGreaterThan(0);
      for (const t of found) expect(t).toMatch(/(^|\s)1[- ]1\//);
    }
    // a phrase of titles that write it both ways is one suggestion
    const phrases = e.typeahead({ query: '1-1/2 in pvc' }).suggestions.filter((s) => s.type === 'query').map((s) => s.title.toLowerCase());
    expect(phrases.filter((t) => /^1[- ]1\/2 in\.? pvc$/.test(t))).toHaveLength(1);
  });

  it('finds a word written with an invisible soft hyphen or zero-width space, typed without it', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'shy', title: 'Sam\u00adsung Galaxy Buds', desc: '', manufacturer: 'Sam&shy;sung', raw: {} },
      { id: 'zwsp', title: 'Dew\u200balt Cordless Drill', desc: '', manufacturer: 'DeWalt', raw: {} },
      { id: 'other', title: 'Sam Sung Rice Bowl', desc: '', manufacturer: 'Acme', raw: {} },
    ]);
    const ids = (r: { suggestions: { id: string; type: string }[] }) => r.suggestions.filter((s) => s.type === 'product').map((s) => s.id);
    expect(ids(e.autocomplete({ query: 'samsung galaxy' }))[0]).toBe('shy');
    expect(ids(e.typeahead({ query: 'samsung gal' }))).toEqual(['shy']);
    expect(ids(e.autocomplete({ query: 'dewalt drill' }))[0]).toBe('zwsp');
    // a query pasted with the invisible character reads as the word too
    expect(e.typeahead({ query: 'sam\u200bsung ga' }).normalized_query).toBe('samsung ga');
    // and the two-word "sam sung" is not the brand
    expect(ids(e.autocomplete({ query: 'sam sung rice' }))[0]).toBe('other');
    // the non-joiner between the parts of a Persian word is where people type a space, or nothing
    e.upsert([
      { id: 'fa', title: 'کتاب می\u200cخواهم', desc: '', manufacturer: 'Acme', raw: {} },
      { id: 'hi', title: 'क्\u200cष परीक्षा', desc: '', manufacturer: 'Acme', raw: {} },
    ]);
    expect(ids(e.typeahead({ query: 'کتاب می خ' }))).toEqual(['fa']);
    expect(ids(e.autocomplete({ query: 'می خواهم' }))[0]).toBe('fa');
    expect(ids(e.typeahead({ query: 'میخوا' }))).toEqual(['fa']);
    expect(ids(e.autocomplete({ query: 'میخواهم' }))[0]).toBe('fa');
    expect(ids(e.autocomplete({ query: 'می\u200cخواهم' }))[0]).toBe('fa');
    // Arabic and Persian forms of the same letters, and digits of either script
    e.upsert([{ id: 'ar', title: 'كتاب عربي ٧٩٩', desc: '', manufacturer: 'Acme', raw: {} }]);
    expect(ids(e.autocomplete({ query: 'کتاب عربی' }))[0]).toBe('ar');
    expect(ids(e.typeahead({ query: 'کتاب عر' }))).toContain('ar');
    expect(ids(e.autocomplete({ query: 'کتاب 799' }))[0]).toBe('ar');
    expect(ids(e.autocomplete({ query: 'کتاب ۷۹۹' }))[0]).toBe('ar');
    // a pictograph is a word: found alone and beside other words
    e.upsert([{ id: 'pz', title: 'Party Pizza 🍕 Platter', desc: '', manufacturer: 'Acme', raw: {} }]);
    expect(ids(e.typeahead({ query: '🍕' }))).toEqual(['pz']);
    expect(ids(e.autocomplete({ query: 'pizza 🍕' }))[0]).toBe('pz');
    // in an Indic word it only chooses how the letters are drawn: the word is the same without it
    expect(ids(e.autocomplete({ query: 'क्ष' }))[0]).toBe('hi');
  });

  it('lists the phrases of a plural typed in the singular, and leads with the best spelling reading', () => {
    const e = new SuggestEngine({ minSupport: 1 });
    const hammers = Array.from({ length: 10 }, (_, i) => ({ id: `h${i}`, title: `${i < 6 ? 'Claw' : 'Rotary'} Hammer ${16 + i}`, desc: '', manufacturer: '', raw: { category: 'Hammer' } }));
    const american = Array.from({ length: 30 }, (_, i) => ({ id: `a${i}`, title: `American Standard Toilet ${i}`, desc: '', manufacturer: 'American Standard', raw: { category: 'American' } }));
    const set = { id: 's', title: 'Hammer-Set Concrete Anchors', desc: '', manufacturer: '', raw: {} };
    e.upsert([...hammers, ...american, set]);
    const phrases = (query: string): string[] => e.typeahead({ query }).suggestions.filter((s) => s.type !== 'product').map((s) => s.title.toLowerCase());
    // "hammers" starts no phrase but "Hammer-Set...": the phrases naming a hammer are listed first
    const listed = phrases('hammers');
    expect(listed).toEqual(expect.arrayContaining(['hammer', 'claw hammer', 'rotary hammer']));
    expect(listed[0]).toBe('hammer');
    expect(e.typeahead({ query: 'hammers' }).corrected_query).toBeNull();
    // "hamer": "hammer" is the best reading (a first letter added is the less likely typo), and its
    // phrases come before those of "amer...", three times as popular
    const r = e.typeahead({ query: 'hamer' });
    expect(r.corrected_query).toBe('hammer');
    expect(r.suggestions[0]?.title.toLowerCase()).toBe('hammer');
    expect(r.suggestions.findIndex((s) => s.title.toLowerCase().startsWith('american'))).toBeGreaterThan(0);
  });

  it('lists the phrases and products of two words typed as one, or of one typed as two, when the index knows that form', () => {
    const e = new SuggestEngine({ minSupport: 1 });
    const dishwashers = Array.from({ length: 6 }, (_, i) => ({ id: `d${i}`, title: `Built-In Dishwasher ${i}`, desc: '', manufacturer: '', raw: { category: 'Dishwasher' } }));
    const mowers = Array.from({ length: 6 }, (_, i) => ({ id: `m${i}`, title: `Gas Lawn Mower ${i}`, desc: '', manufacturer: '', raw: { category: 'Lawn Mower' } }));
    const oil = { id: 'oil', title: 'Lawnmower Oil', desc: '', manufacturer: '', raw: {} };
    const soap = { id: 'soap', title: 'Soap Dish', desc: '', manufacturer: '', raw: {} };
    const washer = { id: 'washer', title: 'Pressure Washer', desc: '', manufacturer: '', raw: {} };
    e.upsert([...dishwashers, ...mowers, oil, soap, washer]);
    const phrases = (query: string): string[] => e.typeahead({ query }).suggestions.filter((s) => s.type !== 'product').map((s) => s.title.toLowerCase());
    expect(phrases('dish washer')).toContain('dishwasher');
    expect(phrases('dish wash')).toContain('dishwasher');
    // "lawnmower" is a word of one title, "lawn mower" of six
    expect(phrases('lawnmower')).toContain('lawn mower');
    // the products of the regrouped words when none has the words as typed
    const products = e.typeahead({ query: 'dish washer' }).suggestions.filter((s) => s.type === 'product').map((s) => s.id);
    expect(products.some((id) => id.startsWith('d'))).toBe(true);
    // a size or model number is not regrouped
    expect(phrases('lawn 21')).not.toContain('lawn mower');
    // autocomplete: the documents of the regrouped reading compete with those of the words as typed
    const found = (query: string): string[] => ids(e.autocomplete({ query, limit: 5 }));
    expect(found('dish washer')[0]).toMatch(/^d\d$/);
    expect(found('lawnmower').filter((id) => id.startsWith('m')).length).toBeGreaterThanOrEqual(3);
    expect(found('lawnmower')).toContain('oil');
  });

  it('corrects a word autocomplete knows only from a rare typo in a title', () => {
    const e = new SuggestEngine();
    const tubes = Array.from({ length: 40 }, (_, i) => ({ id: `t${i}`, title: `Fluorescent Light Tube ${i}`, desc: '', manufacturer: '', raw: {} }));
    e.upsert([...tubes, { id: 'typo', title: 'Florescent Orange Marking Paint', desc: '', manufacturer: '', raw: {} }, { id: 'lamp', title: 'Desk Light Lamp', desc: '', manufacturer: '', raw: {} }]);
    const r = e.autocomplete({ query: 'florescent light', limit: 5 });
    expect(r.corrected_query).toBe('fluorescent light');
    expect(r.suggestions.map((s) => s.id).filter((id) => id.startsWith('t')).length).toBeGreaterThanOrEqual(4);
    // a word the index knows well is meant as typed
    expect(e.autocomplete({ query: 'fluorescent light' }).corrected_query).toBeNull();
  });

  it('lists the products of glued words split in typeahead when none has every word as typed', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'k1', title: 'Brinks Push Pull Rotate Door Knob in Satin Nickel', desc: '', manufacturer: 'Brinks', raw: {} },
      { id: 'k2', title: 'Prime-Line Brass Bi-Fold Door Knobs (2-Pack)', desc: '', manufacturer: 'Prime-Line', raw: {} },
      { id: 'p1', title: 'Interior Paint in Satin White', desc: '', manufacturer: 'Behr', raw: {} },
      { id: 'p2', title: 'Push Broom with Steel Handle', desc: '', manufacturer: 'Quickie', raw: {} },
    ]);
    const products = (query: string) => e.typeahead({ query }).suggestions.filter((s) => s.type === 'product').map((s) => s.id);
    const r = e.typeahead({ query: 'doorknob push' });
    expect(r.suggestions[0]?.id).toBe('k1');
    expect(r.corrected_query).toBe('door knob push');
    // typed as it should be, the same product first
    expect(products('door knob push')[0]).toBe('k1');
    // a reading as typed that finds products keeps them ("push" has its own products)
    expect(products('push broo')[0]).toBe('p2');
    expect(e.typeahead({ query: 'push broo' }).corrected_query).toBeNull();
  });

  it('goes on with the products of every word but one after a typeahead list of one or two', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'both', title: 'Tresanti Granite Countertop for the Kitchen', desc: '', manufacturer: 'Tresanti', raw: {} },
      { id: 'c1', title: 'Butcher Block Countertop in Oak', desc: '', manufacturer: 'Hardwoods', raw: {} },
      { id: 'c2', title: 'Laminate Countertop in Ash', desc: '', manufacturer: 'Hampton', raw: {} },
      { id: 'c3', title: 'Quartz Countertop in White', desc: '', manufacturer: 'Hampton', raw: {} },
      { id: 'k1', title: 'Kitchen Faucet in Chrome', desc: '', manufacturer: 'Delta', raw: {} },
      { id: 'm1', title: 'Microwave Oven in White', desc: '', manufacturer: 'GE', raw: {} },
    ]);
    const products = (query: string) => e.typeahead({ query }).suggestions.filter((s) => s.type === 'product');
    const found = products('kitchen countertop');
    // the product with both words first, then those with one of them
    expect(found[0]?.id).toBe('both');
    expect(found.map((s) => s.id).slice(1).sort()).toEqual(['c1', 'c2', 'c3', 'k1']);
    for (const s of found.slice(1)) expect(s.score).toBeLessThan(found[0]?.score as number);
    // a list of three is left as it is ("in" alone finds the faucet and the microwave)
    expect(products('countertop in ').map((s) => s.id).sort()).toEqual(['c1', 'c2', 'c3']);
    // while the last word has a letter or two, not with every word but one: with the words before it
    expect(products('kitchen co').map((s) => s.id)).toEqual(['both', 'k1']);
    // products sharing a title are shown, and counted, once
    e.upsert(['x1', 'x2', 'x3'].map((id) => ({ id, title: 'Marble Vanity Top with Sink', desc: '', manufacturer: 'Stone', raw: {} })));
    e.upsert([{ id: 'v1', title: 'Oak Vanity with Mirror', desc: '', manufacturer: 'Wood', raw: {} }]);
    const tops = products('marble vanity');
    expect(tops.filter((s) => s.title === 'Marble Vanity Top with Sink')).toHaveLength(1);
    expect(tops.map((s) => s.id)).toContain('v1');
  });

  it('goes on with the products of the words before a short last word when the list is short', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'sprayer', title: 'ECHO 4 Gal. Back Pack Sprayer', desc: '', manufacturer: 'ECHO', raw: {} },
      { id: 'bag', title: 'Hiking Back Pack with Frame', desc: '', manufacturer: 'Trail', raw: {} },
      { id: 'saw', title: 'Acme Circular Saw', desc: '', manufacturer: 'Acme', raw: {} },
    ]);
    const products = (query: string) => e.typeahead({ query }).suggestions.filter((s) => s.type === 'product');
    // the product with every word first, then those of "back pack", the keystroke before
    const found = products('back pack s');
    expect(found.map((s) => s.id)).toEqual(['sprayer', 'bag']);
    expect(found[1]?.score).toBeLessThan(found[0]?.score as number);
  });

  it('leaves out joining words, then the last word, when no product has every word in typeahead', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'k1', title: 'Amerock 1-1/2 in. White Cabinet Knob', desc: '', manufacturer: 'Amerock', raw: {} },
      { id: 'k2', title: 'Laurey 1-1/4 in. Chrome Cabinet Knob', desc: '', manufacturer: 'Laurey', raw: {} },
      { id: 's1', title: 'Delta Knob for Pivoting Shower Door in Chrome', desc: '', manufacturer: 'Delta', raw: {} },
      { id: 'p1', title: 'Deck Paint, Cedar', desc: '', manufacturer: 'Behr', raw: {} },
    ]);
    // no title has "knobs", "for" and "cabinet": without "for", the cabinet knobs
    expect(ids(e.typeahead({ query: 'knobs for cabine' })).filter((id) => id.startsWith('k') || id.startsWith('s')).sort()).toEqual(['k1', 'k2']);
    // no title has "cabinet" and "drawer": the products of "cabinet"
    expect(ids(e.typeahead({ query: 'cabinet drawe' })).sort()).toEqual(['k1', 'k2']);
    // a joining word that is the whole rest of the query leaves nothing made up
    expect(ids(e.typeahead({ query: 'for zzzz' }))).toEqual([]);
    // the same words again after a write: its product is there (the memo is the snapshot's)
    e.upsert([{ id: 'k3', title: 'Cabinet Pull', desc: '', manufacturer: 'Liberty', raw: {} }]);
    e.refresh();
    expect(ids(e.typeahead({ query: 'cabinet drawe' })).sort()).toEqual(['k1', 'k2', 'k3']);
  });

  it('lists the products with every word but one in typeahead when no product has every word, or every word before the last', () => {
    const e = new SuggestEngine();
    e.upsert([
      { id: 'w1', title: 'LG Electronics 4.9 cu. ft. Top Load Washer in White', desc: '', manufacturer: 'LG', raw: {} },
      { id: 'w2', title: 'LG Electronics 5.0 cu. ft. Top Load Washer in Graphite Steel', desc: '', manufacturer: 'LG', raw: {} },
      { id: 'f1', title: 'Samsung Front Load Washer in White', desc: '', manufacturer: 'Samsung', raw: {} },
      { id: 'm1', title: 'Scotts Top Soil Loader Bag', desc: '', manufacturer: 'Scotts', raw: {} },
    ]);
    const products = (query: string) => ids(e.typeahead({ query })).filter((id) => !id.startsWith('q:') && !id.startsWith('c:') && !id.startsWith('b:'));
    // no title says "loader" beside "washer": the washers without it (and no product with only one word)
    expect(products('lg top loader washer ste').sort()).toEqual(['w2']);
    expect(products('lg top loader washer ').sort()).toEqual(['w1', 'w2']);
    // a last word of a letter or two is left out: the keystroke before's products, not every "s..."
    expect(products('lg top loader washer s').sort()).toEqual(['w1', 'w2']);
    expect(products('lg top loader washer st').sort()).toEqual(['w1', 'w2']);
    // past MAX_DROP_WORDS words, only the words before the last
    expect(products('lg electronics top load washer in white grey').sort()).toEqual(['w1']);
    // no title has every word but one: the words before the last, each left out in turn
    // (the keystroke before's products), not an empty list
    expect(products('samsung top load washer pedestal').sort()).toEqual(['f1', 'w1', 'w2']);
    // the same after a last word of a letter or two, left out first
    expect(products('samsung top load washer pedestal fo').sort()).toEqual(['f1', 'w1', 'w2']);
    // a foot mark typed for inches keeps its reading as inches when a word is left out
    const doors = new SuggestEngine();
    doors.upsert([
      { id: 'd1', title: 'Frameport 36 in. x 80 in. Louver Pine Bi-fold Door', desc: '', manufacturer: 'Frameport', raw: {} },
      { id: 'd2', title: 'Frameport 30 in. x 80 in. Louver Pine Bi-fold Door', desc: '', manufacturer: 'Frameport', raw: {} },
    ]);
    expect(ids(doors.typeahead({ query: "36' wide bifold doors" })).filter((id) => id.startsWith('d'))).toEqual(['d1']);
  });

  it('ranks products found with words left out below those with every word that another part found', () => {
    // two parts of one index answer alone and their lists merge by score: one part has a product
    // with every word, the other only products without "for"
    const withEvery = new SuggestEngine();
    withEvery.upsert([{ id: 'every', title: 'Knobs for Kitchen Cabinets', desc: '', manufacturer: 'Liberty', raw: {} }]);
    const without = new SuggestEngine();
    without.upsert([
      { id: 'k1', title: 'Amerock 1-1/2 in. White Cabinet Knob', desc: '', manufacturer: 'Amerock', raw: { popularity: 900 } },
      { id: 'k2', title: 'Laurey 1-1/4 in. Chrome Cabinet Knob', desc: '', manufacturer: 'Laurey', raw: { popularity: 800 } },
    ]);
    const merged = [withEvery, without]
      .flatMap((e) => e.typeahead({ query: 'knobs for cabine' }).suggestions)
      .filter((s) => s.type === 'product')
      .sort((a, b) => b.score - a.score);
    expect(merged.map((s) => s.id)[0]).toBe('every');
    expect(merged.map((s) => s.id).sort()).toEqual(['every', 'k1', 'k2']);
  });

  it('fills typeahead with distinct product titles when many products share one, and shows titles without HTML entities', () => {
    const e = new SuggestEngine();
    // eight sizes of one door under one title (the best scores), then four other doors
    const same = Array.from({ length: 8 }, (_, i) => ({ id: `k${i}`, title: 'Krosswood Doors Interior Doors', desc: '', manufacturer: 'Krosswood', raw: { width: 24 + 2 * i } }));
    const others = ['Builder&#39;s Choice Interior Door', 'Masonite Interior Door Slab', 'JELD-WEN Interior Door', 'Steves Interior Door'].map((title, i) => ({ id: `d${i}`, title, desc: 'Fir &amp; pine', manufacturer: 'Various', raw: {} }));
    e.upsert([...same, ...others]);
    const listed = e.typeahead({ query: 'interior doors', limit: 5 }).suggestions;
    const products = listed.filter((s) => s.type === 'product');
    expect(new Set(products.map((s) => s.title)).size).toBe(products.length);
    // the list is full: one line for the eight doors of one title, the others after it (beside
    // the phrase "Interior Door", the plural's singular)
    expect(listed).toHaveLength(5);
    expect(products.length).toBeGreaterThanOrEqual(3);
    expect(products.map((s) => s.title)).toContain("Builder's Choice Interior Door");
    const ac = e.autocomplete({ query: 'builders choice interior door' }).suggestions[0];
    expect(ac).toMatchObject({ id: 'd0', title: "Builder's Choice Interior Door", description: 'Fir & pine' });
  });

  it('maps display fields into autocomplete suggestions', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const r = e.autocomplete({ query: 'galaxy s7 black' });
    expect(r.mode).toBe('fts_only');
    expect(r.suggestions[0]).toMatchObject({
      id: '1',
      type: 'product',
      title: 'Samsung Galaxy S7 32GB Black',
      subtitle: 'Phones',
      description: 'A phone',
      url: 'https://x/1',
      image: 'https://x/1.jpg',
      price: 699,
      currency: 'USD',
      metadata: { concepts: ['Samsung', 'Phones'], matched_words: 3, typos: 0 },
    });
  });

  it('reports the effective mode; fts_rerank re-ranks the lexical candidates', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    expect(e.autocomplete({ query: 'case' }).mode).toBe('fts_only');
    expect(e.autocomplete({ query: 'case', mode: 'vector_only' }).mode).toBe('vector_only');
    expect(e.autocomplete({ query: 'case', mode: 'hybrid' }).mode).toBe('hybrid');
    const r = e.autocomplete({ query: 'otterbox case iphone', mode: 'fts_rerank' });
    expect(r.mode).toBe('fts_rerank');
    expect(r.suggestions[0]?.id).toBe('5');
    expect(new Set(ids(r))).toEqual(new Set(ids(e.autocomplete({ query: 'otterbox case iphone' }))));
  });

  it('applies filters', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const f = validateFilters({ category: ['cases'], price: { lt: 45 } });
    expect(ids(e.autocomplete({ query: 'otterbox', filters: f.filters }))).toEqual(['5']);
    expect(ids(e.autocomplete({ query: 'samsung', filters: validateFilters({ manufacturer: ['samsung'] }).filters }))).toEqual(['1', '2']);
  });

  it('answers empty queries and empty indexes with no suggestions', () => {
    const e = new SuggestEngine();
    expect(e.typeahead({ query: 'sam' }).suggestions).toEqual([]);
    expect(e.autocomplete({ query: 'sam' }).suggestions).toEqual([]);
    e.upsert(small);
    expect(e.typeahead({ query: '  ?! ' })).toEqual({ normalized_query: '', corrected_query: null, suggestions: [] });
    expect(e.autocomplete({ query: 'zzzzqqq' }).suggestions).toEqual([]);
  });

  it('clamps limits to 1..50', () => {
    const e = new SuggestEngine();
    e.upsert(loadBestBuy().slice(0, 400));
    expect(e.typeahead({ query: 'c', limit: 500 }).suggestions.length).toBe(50);
    expect(e.typeahead({ query: 'c', limit: 0 }).suggestions.length).toBe(1);
    expect(e.autocomplete({ query: 'case', limit: 3 }).suggestions.length).toBe(3);
  });

  it('keeps results stable across segments, merges and compaction', () => {
    const docs = loadBestBuy().slice(0, 600);
    const one = new SuggestEngine();
    one.upsert(docs);
    one.refresh();
    const many = new SuggestEngine({ maxPending: 100 });
    for (let i = 0; i < docs.length; i += 50) many.upsert(docs.slice(i, i + 50));
    many.refresh();
    const st = many.stats();
    expect(st.documents).toBe(600);
    expect(st.segments).toBeGreaterThan(1);
    expect(st.segments).toBeLessThanOrEqual(8);
    // lexical scores use whole-index statistics, so rankings agree
    for (const q of ['samsung galaxy', 'case for iphone', 'otterbox defender', 'wireles charger']) {
      expect(ids(many.autocomplete({ query: q }))).toEqual(ids(one.autocomplete({ query: q })));
    }
    // brand support adds up over segments (segments without the brand count it as a phrase)
    const brandScore = (e: SuggestEngine): number => e.typeahead({ query: 'samsung' }).suggestions.find((s) => s.type === 'brand')?.score ?? 0;
    expect(Math.abs(brandScore(many) / brandScore(one) - 1)).toBeLessThan(0.1);

    // deleting most of the index compacts the segments
    many.remove(docs.slice(0, 450).map((d) => d.id));
    expect(many.stats().documents).toBe(150);
    expect(many.stats().deleted).toBeLessThan(150);
    for (const d of docs.slice(0, 450)) expect(many.get(d.id)).toBeNull();
  });

  it('cuts typeahead through tied scores by key, in one segment and over several', () => {
    // twelve products whose completions score exactly alike: the first by key make the cut (by
    // suggestion id while a word is typed into one segment, by key otherwise)
    const names = ['kappa', 'delta', 'alpha', 'gamma', 'omega', 'beta', 'sigma', 'zeta', 'theta', 'iota', 'lambda', 'epsilon'];
    const docs = names.map((n, i) => ({ id: `d${i}`, title: `Widget ${n} lamp`, desc: '', manufacturer: '', raw: {} }));
    const first = ['widget alpha lamp', 'widget beta lamp', 'widget delta lamp', 'widget epsilon lamp'];
    const one = new SuggestEngine();
    one.upsert(docs);
    one.refresh();
    const many = new SuggestEngine({ maxPending: 3 });
    for (let i = 0; i < docs.length; i += 3) many.upsert(docs.slice(i, i + 3));
    many.refresh();
    expect(one.stats().segments).toBe(1);
    expect(many.stats().segments).toBeGreaterThan(1);
    for (const e of [one, many]) {
      for (const q of ['wid', 'widget ']) {
        const products = e.typeahead({ query: q, limit: 5 }).suggestions.filter((s) => s.type === 'product');
        expect(new Set(products.map((s) => s.score)).size).toBe(1);
        expect(products.map((s) => s.title.toLowerCase())).toEqual(first.slice(0, products.length));
        expect(products.length).toBeGreaterThanOrEqual(4);
      }
    }
  });

  it('adds spare phrase suggestions beyond the limit, without filling more with products', () => {
    const e = new SuggestEngine();
    e.upsert(loadBestBuy().slice(0, 600));
    e.refresh();
    let widened = 0;
    for (const query of ['sam', 'case', 'iphone c', 'otterbox def', 'zzzq', 'samsung galaxy s7 edge 32gb blk']) {
      const shown = e.typeahead({ query, limit: 5 }).suggestions;
      const more = e.typeahead({ query, limit: 5, spare: 5 }).suggestions;
      // the answer as it was, then only what the tables add
      expect(more.slice(0, shown.length), query).toEqual(shown);
      expect(more.length).toBeLessThanOrEqual(10);
      // nothing fills a short answer beyond what the products give it
      if (shown.length < 5) expect(more, query).toEqual(shown);
      // and the product fallback runs only when the answer itself is short
      const fellBack = (spare: number) => 'fallback' in (e.typeahead({ query, limit: 5, spare, profile: true }).profile?.stages ?? {});
      expect(fellBack(5), query).toBe(fellBack(0));
      if (more.length > shown.length) widened++;
    }
    expect(widened).toBeGreaterThanOrEqual(2);
    expect(e.typeahead({ query: 'sam', limit: 5, spare: 500 }).suggestions.length).toBeLessThanOrEqual(55);
  });

  it('lets the caller run merges elsewhere and replays writes made meanwhile', () => {
    const docs = loadBestBuy().slice(0, 300);
    const e = new SuggestEngine({ autoMerge: false });
    e.upsert(docs.slice(0, 100));
    e.refresh();
    e.upsert(docs.slice(100, 300));
    e.refresh();
    expect(e.stats().segments).toBe(2);
    const plan = e.planMerge();
    expect(plan?.segments.length).toBe(2);
    expect(e.planMerge()).toBeNull(); // those segments are taken
    // writes while the merged segment is being built
    e.remove(['bb5']);
    e.upsert([{ ...docs[7]!, title: 'Renamed Widget Zyxel' }]);
    const merged = new SegmentBuilder().addAll(plan!.documents).build();
    expect(e.commitMerge(plan!, merged)).toBe(true);
    expect(e.stats().segments).toBe(2); // the merged one + the refreshed update
    expect(e.get('bb5')).toBeNull();
    expect(e.get('bb7')?.title).toBe('Renamed Widget Zyxel');
    expect(e.documentCount).toBe(299);
    expect(ids(e.autocomplete({ query: 'zyxel' }))).toEqual(['bb7']);
    expect(e.autocomplete({ query: docs[7]!.title }).suggestions.filter((s) => s.id === 'bb7').length).toBeLessThanOrEqual(1);
    // a plan whose segments are gone is refused
    const stale = e.planMerge();
    if (stale) {
      e.optimize();
      expect(e.commitMerge(stale, null)).toBe(false);
    }
  });

  it('merges a run of segments that piled up in one go, and rebuilds each document O(log n) times as segments arrive', () => {
    const docs = loadBestBuy().slice(0, 1200);
    // twelve segments of 100 that piled up while no merge could run (a busy pool during a bulk load)
    const piled = new SuggestEngine({ autoMerge: false });
    for (let i = 0; i < 12; i++) {
      piled.upsert(docs.slice(i * 100, (i + 1) * 100));
      piled.refresh();
    }
    expect(piled.stats().segments).toBe(12);
    const plan = piled.planMerge();
    expect(plan?.segments.length).toBe(12);
    expect(plan?.documents.length).toBe(1200);
    // segments arriving one at a time, every merge the policy wants committed at once
    const arriving = new SuggestEngine({ autoMerge: false });
    let rebuilt = 0;
    for (let i = 0; i < 12; i++) {
      arriving.upsert(docs.slice(i * 100, (i + 1) * 100));
      arriving.refresh();
      for (let p = arriving.planMerge(); p !== null; p = arriving.planMerge()) {
        rebuilt += p.documents.length;
        expect(arriving.commitMerge(p, new SegmentBuilder().addAll(p.documents).build())).toBe(true);
      }
    }
    expect(arriving.documentCount).toBe(1200);
    expect(rebuilt).toBeLessThanOrEqual(1200 * Math.log2(12));
    expect(arriving.stats().segments).toBeLessThanOrEqual(Math.ceil(Math.log2(12)));
  });

  it('plans a compaction of every segment only when the smaller ones hold the given share and the index is small enough', () => {
    const docs = loadBestBuy().slice(0, 1000);
    const e = new SuggestEngine({ autoMerge: false });
    e.upsert(docs.slice(0, 900));
    e.refresh();
    e.upsert(docs.slice(900, 950));
    e.refresh();
    e.upsert(docs.slice(950));
    e.refresh();
    expect(e.stats().segments).toBe(3);
    // 100 of 1000 documents outside the largest segment: 10 %
    expect(e.planCompaction(0.11)).toBeNull();
    expect(e.planCompaction(0.1, 999)).toBeNull();
    const plan = e.planCompaction(0.1, 1000);
    expect(plan?.segments.length).toBe(3);
    expect(e.planCompaction(0.1)).toBeNull(); // its segments are taken
    expect(e.planMerge()).toBeNull();
    e.remove(['bb3']); // while the merged segment is built
    expect(e.commitMerge(plan!, new SegmentBuilder().addAll(plan!.documents).build())).toBe(true);
    expect(e.stats().segments).toBe(1);
    expect(e.documentCount).toBe(999);
    expect(e.get('bb3')).toBeNull();
    // the same answers as an index built in one piece
    const whole = new SuggestEngine();
    whole.upsert(docs.filter((d) => d.id !== 'bb3'));
    for (const q of ['sams', 'iphone c', 'case f', 'otterbox']) expect(ids(e.typeahead({ query: q }))).toEqual(ids(whole.typeahead({ query: q })));
    expect(e.planCompaction(0)).toBeNull(); // one segment: nothing to do
  });

  it('serializes and loads without changing results', () => {
    const e = new SuggestEngine();
    e.upsert(loadBestBuy().slice(0, 800));
    e.remove(['bb3', 'bb10']);
    const bytes = e.serialize();
    const back = SuggestEngine.deserialize(bytes);
    expect(back.stats()).toEqual(e.stats());
    for (const q of ['sams', 'iphne', 'samsung gal', 'case f']) expect(back.typeahead({ query: q })).toEqual(e.typeahead({ query: q }));
    for (const q of ['otterbox', 'samsung galaxy s7 case']) expect(back.autocomplete({ query: q })).toEqual(e.autocomplete({ query: q }));
    expect(back.get('bb3')).toBeNull();
    expect(back.get('bb4')).toEqual(e.get('bb4'));
    // the loaded engine keeps accepting writes
    back.upsert([{ id: 'new', title: 'Zanzibar Phone Holder', desc: '', manufacturer: 'Zanzibar', raw: {} }]);
    expect(back.typeahead({ query: 'zanz' }).suggestions[0]?.title).toBe('Zanzibar');
  });

  it('reads a snapshot from a file straight into shared memory with the same results, at an offset, and refuses a truncated one', async () => {
    const e = new SuggestEngine();
    e.upsert(loadBestBuy().slice(0, 800));
    e.upsert(loadBestBuy().slice(800, 900)); // two segments
    e.remove(['bb3', 'bb850']);
    const pieces = e.serializePieces();
    const joined = Buffer.concat(pieces);
    expect(joined.equals(Buffer.from(e.serialize()))).toBe(true);
    const dir = mkdtempSync(path.join(tmpdir(), 'snapshot-read-'));
    try {
      const file = path.join(dir, 'snap');
      // 7 bytes in front: the engine's bytes need not start on an aligned offset of the file
      writeFileSync(file, Buffer.concat([Buffer.from('PREFIX!'), joined]));
      const fh = await open(file, 'r');
      let back: SuggestEngine;
      try {
        back = await SuggestEngine.readFrom(fh, 7);
      } finally {
        await fh.close();
      }
      expect(back.stats()).toEqual(e.stats());
      expect(back.currentSegments.every((s) => s.arena.buffer instanceof SharedArrayBuffer && s.tombstones.buffer instanceof SharedArrayBuffer)).toBe(true);
      for (const q of ['sams', 'iphne', 'samsung gal', 'case f']) expect(back.typeahead({ query: q })).toEqual(e.typeahead({ query: q }));
      for (const q of ['otterbox', 'samsung galaxy s7 case']) expect(back.autocomplete({ query: q })).toEqual(e.autocomplete({ query: q }));
      expect(back.get('bb3')).toBeNull();
      expect(back.get('bb850')).toBeNull();
      // deletes made after the pieces were taken are not in them: they are a copy of that moment
      e.remove(['bb4']);
      expect(Buffer.concat(pieces).equals(joined)).toBe(true);
      writeFileSync(file, joined.subarray(0, joined.length - 100));
      const cut = await open(file, 'r');
      try {
        await expect(SuggestEngine.readFrom(cut, 0)).rejects.toThrow(/truncated/);
      } finally {
        await cut.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses foreign, older and newer snapshots', () => {
    expect(() => SuggestEngine.deserialize(new Uint8Array(16))).toThrow(/magic/);
    const bytes = new SuggestEngine().serialize();
    new DataView(bytes.buffer).setUint32(4, ENGINE_FORMAT_VERSION + 1, true);
    expect(() => SuggestEngine.deserialize(bytes)).toThrow(/newer/);
    new DataView(bytes.buffer).setUint32(4, OLDEST_READABLE_VERSION - 1, true);
    expect(() => SuggestEngine.deserialize(bytes)).toThrow(/older.*rebuild/);
  });

  it('reads an older snapshot of the same layout as an interim engine only when asked, and says which format it is', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const bytes = e.serialize();
    expect(SuggestEngine.deserialize(bytes).snapshotFormat).toBe(ENGINE_FORMAT_VERSION);
    new DataView(bytes.buffer).setUint32(4, INTERIM_READABLE_VERSION, true);
    expect(() => SuggestEngine.deserialize(bytes)).toThrow(/older/);
    const interim = SuggestEngine.deserialize(bytes, {}, INTERIM_READABLE_VERSION);
    expect(interim.snapshotFormat).toBe(INTERIM_READABLE_VERSION);
    expect(interim.typeahead({ query: 'otter' })).toEqual(e.typeahead({ query: 'otter' }));
    // an older layout, never
    new DataView(bytes.buffer).setUint32(4, INTERIM_READABLE_VERSION - 1, true);
    expect(() => SuggestEngine.deserialize(bytes, {}, INTERIM_READABLE_VERSION)).toThrow(/older/);
    expect(() => SuggestEngine.deserialize(bytes, {}, 0)).toThrow(/older/);
  });

  it('shares segment memory with a reader', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const shared = e.exportShared();
    expect(shared.segments[0]?.buffer).toBeInstanceOf(SharedArrayBuffer);
    const reader = SuggestEngine.fromShared(shared);
    expect(reader.typeahead({ query: 'otter' })).toEqual(e.typeahead({ query: 'otter' }));
    // a delete by the owner is seen by the reader (tombstones are shared)
    e.remove(['4']);
    expect(ids(reader.autocomplete({ query: 'defender' }))).toEqual([]);
  });

  it('posts its shared state through a message port without copying segment memory', async () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const { port1, port2 } = new MessageChannel();
    const received = new Promise<SharedEngineState>((resolve) => port2.once('message', (m: SharedEngineState) => resolve(m)));
    port1.postMessage(e.exportShared());
    const reader = SuggestEngine.fromShared(await received);
    port1.close();
    expect(ids(reader.autocomplete({ query: 'symmetry' }))).toEqual(['5']);
    e.remove(['5']);
    expect(ids(reader.autocomplete({ query: 'symmetry' }))).toEqual([]);
  });

  it('reports bytes per document', () => {
    const e = new SuggestEngine();
    e.upsert(small);
    const s = e.stats();
    expect(s.format_version).toBe(ENGINE_FORMAT_VERSION);
    expect(s.bytes_per_document).toBeGreaterThan(s.index_bytes_per_document);
    expect(s.bytes.total).toBeGreaterThan(0);
  });
});

describe('memory after an engine is let go', () => {
  it('keeps none of its segments alive through the thread scratch of typeahead', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const held = (() => {
      const e = new SuggestEngine();
      e.upsert(small);
      expect(e.typeahead({ query: 'samsung gal' }).suggestions.length).toBeGreaterThan(0);
      const buffer = new WeakRef(e.view().segments[0]!.arena.buffer);
      e.close();
      return buffer;
    })();
    // deref() keeps its target alive until the current job ends: never collect right after it
    let collected = false;
    for (let i = 0; i < 20 && !collected; i++) {
      gc();
      await new Promise((r) => setTimeout(r, 5));
      collected = held.deref() === undefined;
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(collected).toBe(true);
  });
});
