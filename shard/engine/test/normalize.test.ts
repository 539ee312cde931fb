// Tests for node/runtime/text/normalize.ts (kept with the engine tests, its main user).
import { describe, expect, it } from 'vitest';
import { normalize } from '../../../node/runtime/text/normalize.js';

describe('normalize', () => {
  it.each([
    ['Crème Brûlée', 'creme brulee'],
    ['ＡＢＣ１２３', 'abc123'],
    ['Straße', 'strasse'],
    ['İstanbul', 'istanbul'],
    ['ΣΊΣΥΦΟΣ', 'σισυφοσ'],
    ['Insignia™ TV', 'insignia tv'],
    ['Briggs &amp; Stratton', 'briggs & stratton'],
    ['  many   spaces\there\n', 'many spaces here'],
    ['Men’s “Best” — Shoes', 'men\'s "best" - shoes'],
    ['ﬁle ½ ㎏', 'file 1/2 kg'],
    ['Łódź Ørsted Æble', 'lodz orsted aeble'],
  ])('%s -> %s', (input, expected) => {
    expect(normalize(input)).toBe(expected);
  });

  it('keeps non-Latin scripts intact', () => {
    expect(normalize('東京タワー')).toBe('東京タワー');
    expect(normalize('नमस्ते दुनिया')).toBe('नमस्ते दुनिया');
    expect(normalize('ガギグ')).toBe('ガギグ'); // dakuten are letters, not accents
    expect(normalize('مرحبا')).toBe('مرحبا');
    expect(normalize('한국어')).toBe('한국어');
  });

  it('removes invisible format characters instead of splitting the word they sit in', () => {
    expect(normalize('Sam\u00adsung TV')).toBe('samsung tv'); // soft hyphen
    expect(normalize('Sam&shy;sung and Sam&#173;sung')).toBe('samsung and samsung');
    expect(normalize('sam\u200bsung')).toBe('samsung'); // zero-width space pasted from a page
    expect(normalize('sam\u2060sung \ufeffgalaxy')).toBe('samsung galaxy'); // word joiner, byte-order mark
    expect(normalize('\u202bمرحبا\u202c')).toBe('مرحبا'); // bidirectional embedding
    // the non-joiner between the parts of a Persian word stays for the tokenizer (one, between letters)
    expect(normalize('می\u200cخواهم')).toBe('می\u200cخواهم');
    expect(normalize('می\u200c\u200cخواهم')).toBe('می\u200cخواهم');
    expect(normalize('می\u200c خواهم \u200cکتاب\u200c')).toBe('می خواهم کتاب');
    expect(normalize('क्\u200dष')).toBe('क्ष');
    expect(normalize('\u200b\u200d')).toBe('');
    // what is left of visible spacing is unchanged
    expect(normalize('sam\u00a0sung\u2003tv')).toBe('sam sung tv');
  });

  it('folds the Arabic-script letters typed in several forms, and drops vowel marks and the tatweel', () => {
    // Arabic kaf and yeh as their Persian forms; alef maksura as yeh; teh marbuta as heh
    expect(normalize('كتاب')).toBe(normalize('کتاب'));
    expect(normalize('علي')).toBe('علی');
    expect(normalize('مستشفى')).toBe('مستشفی');
    expect(normalize('مدرسة')).toBe('مدرسه');
    // an alef with hamza or madda as the bare alef
    expect(normalize('أحمد إسلام آب')).toBe('احمد اسلام اب');
    // vowel marks and the tatweel (a stretch of the line) are not letters
    expect(normalize('كِتَابٌ')).toBe('کتاب');
    expect(normalize('ــكتاب')).toBe('کتاب');
  });

  it('drops Hebrew vowel points but keeps the dots that make shin and sin', () => {
    expect(normalize('שָׁלוֹם')).toBe(normalize('שׁלום'));
    expect(normalize('סֵפֶר')).toBe('ספר');
    expect(normalize('שׂ')).not.toBe(normalize('שׁ'));
  });

  it('reads the decimal digits of every script as ASCII digits', () => {
    expect(normalize('٧٩٩')).toBe('799'); // Arabic-Indic
    expect(normalize('۱۲۳۴')).toBe('1234'); // Persian
    expect(normalize('हिन्दी १२३')).toBe('हिन्दी 123'); // Devanagari
    expect(normalize('๒๕๖๗')).toBe('2567'); // Thai
    expect(normalize('᪐᪕ ၀၉')).toBe('05 09'); // Tai Tham (a run of twenty), Myanmar
    expect(normalize('٠١٢٣٤٥٦٧٨٩')).toBe('0123456789');
  });

  it('is idempotent', () => {
    for (const s of ['Crème', 'ＡＢＣ', 'Straße', '55" TV', 'at&t', '東京', 'a\u200b b', 'sam\u00adsung', 'می\u200c\u200c خواهم\u200c', 'كِتابة ٧']) expect(normalize(normalize(s))).toBe(normalize(s));
  });
});
