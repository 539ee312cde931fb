import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { IndexSnapshot } from '../index-snapshot.js';
import { SegmentBuilder } from '../segment-builder.js';
import { SpellCorrector } from '../spell-corrector.js';

const titles = [
  ...Array(20).fill('Samsung Galaxy Phone'),
  ...Array(15).fill('Apple iPhone Case'),
  ...Array(10).fill('Little Giant Ladder'),
  ...Array(10).fill('Bathroom Vanity Mirror'),
  ...Array(8).fill('Kitchen Faucet Chrome'),
  ...Array(30).fill('Interior Paint White'),
  'Fluorescent Light Bulbs',
  'Flourescent Tube', // a typo inside a title
  ...Array(40).fill('Fluorescent Tube'),
  ...Array(5).fill('Model G135 Faucet'),
  ...Array(5).fill('TV Stand'),
  ...Array(5).fill('Pipe Wrench'),
  'Wire Spool ES',
  'Toile Curtain', // a word that is also the start of a common one
  ...Array(12).fill('Toilet Seat'),
  ...Array(3).fill('Tiled Tray'),
  ...Array(60).fill('Ceiling Lighting Fixture'),
  ...Array(40).fill('Lightning Cable'),
  'Lightening Decal', // a typo inside a title
];

function corrector(): SpellCorrector {
  const docs: SuggestDocument[] = titles.map((t, i) => ({ id: String(i), title: t, desc: '', manufacturer: '', raw: {} }));
  return new SpellCorrector(new IndexSnapshot([new SegmentBuilder().addAll(docs).build()]), 'any');
}

describe('SpellCorrector', () => {
  const c = corrector();
  const fix = (q: string, prefix = false): string | null => c.correct(q.split(' '), prefix)?.join(' ') ?? null;

  it('returns null when every word is known', () => {
    expect(fix('samsung galaxy')).toBeNull();
    expect(fix('kitchen faucet')).toBeNull();
  });

  it('takes the plural of a known word as a word, not as a word and a stray ending', () => {
    // "wrenches" is in no title, "wrench" and "es" are: it was read as "wrench es"
    expect(fix('pipe wrenches')).toBeNull();
    expect(fix('pipe wrenches', true)).toBeNull();
    expect(fix('pipe wrenchs')).toBeNull();
  });

  it('fixes unknown words from the vocabulary', () => {
    expect(fix('samsng galaxy')).toBe('samsung galaxy');
    expect(fix('iphnoe case')).toBe('iphone case');
    expect(fix('kitchn faucet')).toBe('kitchen faucet');
  });

  it('prefers the reading that fits the neighbouring words', () => {
    expect(fix('little gaint ladder')).toBe('little giant ladder');
  });

  it('splits glued words and joins split ones', () => {
    expect(fix('samsunggalaxy')).toBe('samsung galaxy');
    expect(fix('bath rom vanity')).toBe('bathroom vanity');
  });

  it('splits a last word still being typed into a known word and the start of another', () => {
    expect(fix('samsunggal', true)).toBe('samsung gal');
    expect(fix('kitchen faucetch', true)).toBe('kitchen faucet ch');
    // not before a word of two letters, nor below five letters typed, nor with digits
    expect(fix('tvsta', true)).toBeNull();
    expect(fix('tv sta', true)).toBeNull();
    expect(fix('samsunggx', true)).not.toBe('samsung gx');
    expect(fix('faucetg1', true)).toBeNull();
  });

  it('tries at most the first three pairs of neighbouring words as one (each is a long typo walk)', () => {
    // unknown words before the split one: its pair is the third tried, then the fifth
    expect(fix('qzx wvy bath rom vanity')).toBe('qzx wvy bathroom vanity');
    expect(fix('qzx wvy kjh pqw bath rom vanity')).toBeNull();
  });

  it('questions only the last six words of a long query (each unknown word costs a typo walk)', () => {
    expect(fix('samsng galxy iphnoe kitchn faucet chrome interior paint white')).toBe('samsng galxy iphnoe kitchen faucet chrome interior paint white');
    const known = ['samsung', 'galaxy', 'phone', 'apple', 'case', 'tube'];
    expect(c.mayChange(['samsng', ...known], false)).toBe(false);
    expect(c.candidates(['samsng', ...known], false, 4).some((r) => r.changed)).toBe(false);
    expect(c.mayChange([...known.slice(1), 'samsng', 'tube'], false)).toBe(true);
    expect(fix([...known.slice(1), 'samsng', 'tube'].join(' '))).toBe([...known.slice(1), 'samsung', 'tube'].join(' '));
  });

  it('questions a rare known word only for a far more frequent one', () => {
    expect(fix('flourescent tube')).toBe('fluorescent tube');
  });

  it('leaves model numbers alone', () => {
    expect(fix('g135 faucet')).toBeNull();
    expect(fix('g136 faucet')).toBeNull();
  });

  it('corrects the last word as a prefix while it is typed', () => {
    expect(fix('samsung galxa', true)).toMatch(/^samsung gala/);
    expect(fix('samsung galx', true)).toBeNull(); // 4 letters: no edit allowed
    expect(fix('samsung gal', true)).toBeNull();
    expect(fix('iphnoe', true)).toBe('iphone');
  });

  it('weighs a corrected prefix that is itself a word by every term it starts', () => {
    // "toiled" is one edit from the prefix "toile" (the rare word "toile" and the common
    // "toilet") and from "tiled": "toile" counted only as its own word lost to "tiled"
    expect(fix('toiled', true)).toBe('toile');
    expect(c.shown(['toile'], ['toiled'], true)).toBe('toilet');
  });

  it('questions a last word still typed that is a rare whole word after another word, not the start of one', () => {
    expect(fix('tube flourescent', true)).toBe('tube fluorescent');
    expect(c.mayChange(['tube', 'flourescent'], true)).toBe(true);
    // the start of the rare word (and of no common one) is taken as typed: more may follow
    expect(fix('tube flouresc', true)).toBeNull();
    expect(c.mayChange(['tube', 'flouresc'], true)).toBe(false);
    // alone, nothing tells a typo inside a title from a rare word ("steak" is no "steam"),
    // typed or finished
    expect(fix('flourescent', true)).toBeNull();
    expect(c.mayChange(['flourescent'], true)).toBe(false);
    expect(fix('flourescent')).toBeNull();
    expect(c.mayChange(['flourescent'], false)).toBe(false);
  });

  it('weighs a last word still typed by the words before it', () => {
    // one edit to "lightning", two to "lighting": the ceiling decides
    expect(fix('ceiling lightening', true)).toBe('ceiling lighting');
    expect(fix('cable lightening', true)).toBe('cable lightning');
  });

  it('shows a corrected last word whole when the whole word is as near to what was typed', () => {
    const shown = (q: string): string | null => {
      const words = q.split(' ');
      const fixed = c.correct(words, true);
      return fixed === null ? null : c.shown(fixed, words, true);
    };
    // searched as the prefix "galax" (one substitution); "galaxy" is one insertion away
    expect(fix('samsung galax', true)).toBeNull();
    expect(fix('samsung galaxx', true)).toBe('samsung galax');
    expect(shown('samsung galaxx')).toBe('samsung galaxy');
    // the whole word is further than the prefix found: the prefix is shown
    expect(fix('samsung gzlax', true)).toBe('samsung galax');
    expect(shown('samsung gzlax')).toBe('samsung galax');
    // a finished word is shown as corrected
    expect(c.shown(['samsung', 'galaxy'], ['samsng', 'galaxy'], false)).toBe('samsung galaxy');
  });

  it('ranks several readings', () => {
    const alts = c.candidates(['samsng', 'galaxy'], false, 3);
    expect(alts[0]?.words).toEqual(['samsung', 'galaxy']);
    expect(alts[0]?.changed).toBe(true);
    expect(alts[0]?.cost).toBeGreaterThan(0);
  });

  it('says a query may change exactly when some reading of it does (known, rare, unknown and glued words, prefixes)', () => {
    // known words, a rare one (the title typo), unknown ones, pieces, glued words and model numbers
    const pool = ['samsung', 'galaxy', 'phone', 'flourescent', 'fluorescent', 'tube', 'g135', 'samsng', 'galxy', 'bath', 'room', 'littlegiant', 'lit', 'gal', 'fl', 'zzz', 'x'];
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (let i = 0; i < 600; i++) {
      // up to nine words: past six, only the last six are questioned
      const words = Array.from({ length: 1 + Math.floor(rnd() * (i < 300 ? 3 : 9)) }, () => pool[Math.floor(rnd() * pool.length)] as string);
      for (const prefix of [false, true]) {
        const changes = c.candidates(words, prefix, 4).some((r) => r.changed);
        // may change when it cannot is only a missed saving; cannot change when it does would lose a correction
        if (changes) expect(c.mayChange(words, prefix), `${words.join(' ')} (prefix ${prefix})`).toBe(true);
      }
    }
    expect(c.mayChange(['samsung', 'galaxy'], false)).toBe(false);
    expect(c.mayChange(['samsung', 'gal'], true)).toBe(false);
    expect(c.mayChange(['samsung', 'galxy'], false)).toBe(true);
    expect(c.mayChange(['flourescent', 'tube'], false)).toBe(true);
  });
});
