// Tests for node/runtime/text/tokenize.ts and analyze-query.ts.
import { describe, expect, it } from 'vitest';
import { analyzeQuery, withMixedNumberPrefix } from '../../../node/runtime/text/analyze-query.js';
import { singular, tokenize, words, type Token } from '../../../node/runtime/text/tokenize.js';

const terms = (s: string, kind?: Token['kind']): string[] => tokenize(s).filter((t) => !kind || t.kind === kind).map((t) => t.term);

describe('tokenize', () => {
  it('keeps numbers with units and splits them where it helps', () => {
    expect(terms('65in TV')).toEqual(['65in', '65', 'in', 'tv']);
    expect(terms('rtx4090')).toEqual(['rtx4090', 'rtx', '4090']);
    expect(terms('1tb ssd', 'word')).toEqual(['1tb', 'ssd']);
    expect(terms('36inches')).toContain('36in');
  });

  it('joins hyphenated words and keeps their parts', () => {
    expect(terms('i-phone')).toEqual(['iphone', 'i', 'phone']);
    expect(terms('wi-fi', 'word')).toEqual(['wifi']);
    expect(terms('self-propelled mower', 'part')).toEqual(['self', 'propelled']);
    expect(terms('AT&T')).toEqual(['att', 'at', 't']);
    // ranges of numbers stay two numbers
    expect(terms('10-20', 'word')).toEqual(['10', '20']);
    // a pictograph is a word of its own, written apart or not
    expect(terms('Pizza 🍕 party', 'word')).toEqual(['pizza', '🍕', 'party']);
    expect(terms('pizza🍕☕', 'word')).toEqual(['pizza', '🍕', '☕']);
    expect(terms('東京🍣', 'word')).toEqual(['東京', '🍣']);
    // the zero-width non-joiner inside a Persian or Indic word joins as a hyphen does
    expect(terms('می\u200cخواهم')).toEqual(['میخواهم', 'می', 'خواهم']);
    expect(terms('क्\u200cष का', 'word')).toEqual(['क्ष', 'का']);
    expect(terms('می\u200c خواهم', 'word')).toEqual(['می', 'خواهم']);
  });

  it('handles fractions, decimals and thousands', () => {
    expect(terms('1/2 in. x 10 ft. pvc', 'word')).toEqual(['1/2', 'in', 'x', '10', 'ft', 'pvc']);
    expect(terms('54.6 inch', 'word')).toEqual(['54.6', 'inch']);
    expect(terms('1,000 watts', 'word')).toEqual(['1000', 'watts']);
    expect(terms('2.5in')).toEqual(['2.5in', '2.5', 'in']);
  });

  it('reads a mixed number as one word, hyphenated or spaced, with its whole number and fraction as parts', () => {
    expect(tokenize('1-1/2 in. PVC').map((t) => `${t.term}:${t.pos}:${t.kind}`)).toEqual(['1-1/2:0:word', '1:0:part', '1/2:0:part', '1.5:0:alt', 'in:1:word', '1-1/2in:1:alt', 'pvc:2:word']);
    expect(tokenize('1 1/2 in. PVC')).toEqual(tokenize('1-1/2 in. PVC'));
    expect(terms('2 x 4 1/2 ft', 'word')).toEqual(['2', 'x', '4-1/2', 'ft']);
    // glued to a unit: the mixed number and the unit are the parts
    expect(terms('1-1/2" pipe')).toEqual(['1-1/2in', '1-1/2', 'in', 'pipe']);
    // not mixed numbers: a range, an improper fraction, a decimal before a fraction, a model number
    expect(terms('10-20', 'word')).toEqual(['10', '20']);
    expect(terms('1 3/2 cup', 'word')).toEqual(['1', '3/2', 'cup']);
    expect(terms('2.5 1/2', 'word')).toEqual(['2.5', '1/2']);
    expect(terms('x4 1/2', 'word')).toEqual(['x4', '1/2']);
    expect(analyzeQuery('1 1/2 pvc coupling').normalized).toBe('1-1/2 pvc coupling');
    // halves, quarters and eighths of a mixed number and a decimal are the same size
    expect(terms('2 1/2 gal', 'alt')).toEqual(['2.5', '2-1/2gal']);
    expect(terms('2.5 gal', 'alt')).toEqual(['2-1/2', '2.5gal']);
    expect(terms('10.75 in', 'alt')).toContain('10-3/4');
    expect(terms('1-3/8')).toContain('1.375');
    // thirds, a fraction below one, a decimal of no eighths: no other spelling
    expect(terms('1-1/3', 'alt')).toEqual([]);
    expect(terms('0.5', 'alt')).toEqual([]);
    expect(terms('2.4', 'alt')).toEqual([]);
  });

  it('reads quote marks after numbers as inches and feet', () => {
    expect(terms('Samsung 55" Class', 'word')).toEqual(['samsung', '55in', 'class']);
    expect(terms("6' ladder", 'word')).toEqual(['6ft', 'ladder']);
    // typed in a query, a foot mark may be a shift-less inch mark: both readings
    expect(terms("6' ladder", 'alt')).toEqual([]);
    expect(analyzeQuery("36' wide door").words[0]).toEqual({ term: '36ft', alternatives: ['36in'], parts: ['36', 'ft'] });
    expect(analyzeQuery("1/2' plywood").words[0]?.alternatives).toEqual(['1/2in']);
    expect(analyzeQuery('36" door').words[0]?.alternatives).toEqual([]);
  });

  it('drops apostrophes', () => {
    expect(terms("Men's Shoes", 'word')).toEqual(['mens', 'shoes']);
    expect(terms("80's music", 'word')).toEqual(['80s', 'music']);
    expect(terms("don't", 'word')).toEqual(['dont']);
  });

  it('adds canonical units after numbers only', () => {
    expect(terms('36 inches')).toContain('in');
    expect(terms('5 gallon bucket')).toContain('gal');
    expect(terms('made in usa')).not.toContain('inch');
    expect(terms('inches')).toEqual(['inches', 'inch']); // no number before: no unit, only the singular
    // the number and the unit joined, as they are often typed: "5kg" finds "5 Kg"
    expect(terms('Atta 5 Kg', 'alt')).toEqual(['5kg']);
    expect(terms('36 inches', 'alt')).toEqual(['in', '36in', 'inch']);
    expect(terms('1/2 in. pipe', 'alt')).toEqual(['1/2in']);
    expect(terms('1,000 Watts', 'alt')).toEqual(['w', '1000w', 'watt']);
    expect(terms('2 in 1 charger', 'alt')).toEqual(['2in']);
    expect(terms('size 5 shoes', 'alt')).toEqual(['shoe']);
  });

  it('adds singular forms as alternatives', () => {
    expect(terms('batteries', 'alt')).toEqual(['battery']);
    expect(terms('drills', 'alt')).toEqual(['drill']);
    expect(terms('boxes', 'alt')).toEqual(['box']);
    expect(terms('glass', 'alt')).toEqual([]);
    expect(terms('t-shirts', 'alt')).toEqual(['tshirt']);
    expect(singular('headphones')).toBeNull();
    expect(singular('series')).toBeNull();
  });

  it('splits CJK runs into overlapping bigrams and keeps other scripts whole', () => {
    expect(terms('東京タワー')).toEqual(['東京', '京タ', 'タワ', 'ワー']);
    expect(terms('iPhone用ケース', 'word')).toEqual(['iphone', '用ケ', 'ケー', 'ース']);
    expect(terms('中')).toEqual(['中']);
    expect(terms('नमस्ते दुनिया')).toEqual(['नमस्ते', 'दुनिया']);
    expect(terms('한국 노트북')).toEqual(['한국', '노트', '트북']);
  });

  it('numbers positions by word and gives variants their word position', () => {
    const toks = tokenize('red i-phone case');
    expect(toks.map((t) => [t.term, t.pos])).toEqual([
      ['red', 0],
      ['iphone', 1],
      ['i', 1],
      ['phone', 1],
      ['case', 2],
    ]);
  });

  it('survives hostile input', () => {
    expect(tokenize('')).toEqual([]);
    expect(tokenize('!!! --- ///')).toEqual([]);
    expect(tokenize('constructor __proto__ toString').map((t) => t.term)).toContain('constructor');
    const long = 'a'.repeat(1000);
    expect(tokenize(long)[0]?.term.length).toBe(64);
    expect(() => tokenize('\u0000\ud800 emoji 😀 zero\u200bwidth')).not.toThrow();
  });

  it('words() gives the display stream only', () => {
    expect(words('Samsung - Galaxy S7 (32GB)')).toEqual(['samsung', 'galaxy', 's7', '32gb']);
  });
});

describe('analyzeQuery', () => {
  it('reports the normalized query and whether the last word is finished', () => {
    const q = analyzeQuery('  Samsung  65in ');
    expect(q.normalized).toBe('samsung 65in');
    expect(q.lastWordComplete).toBe(true);
    expect(q.words[1]).toEqual({ term: '65in', alternatives: [], parts: ['65', 'in'] });
    expect(analyzeQuery('iphone').lastWordComplete).toBe(false);
    expect(analyzeQuery('Drills').words[0]?.alternatives).toEqual(['drill']);
    expect(analyzeQuery('?!').words).toEqual([]);
  });

  it('reads the start of a mixed number being typed as one prefix where the index has such words', () => {
    const known = (prefix: string) => ['1-1/2', '1-3/4', '2-3/8'].some((t) => t.startsWith(prefix));
    const typed = (text: string) => withMixedNumberPrefix(analyzeQuery(text), text, known).words.map((w) => w.term);
    expect(typed('pvc 1 1')).toEqual(['pvc', '1-1']);
    expect(typed('1-1/')).toEqual(['1-1/']);
    expect(typed('2 3')).toEqual(['2-3']);
    // the words stay as they are: a finished word, an even numerator, nothing in the index, no number before
    expect(typed('1 1 ')).toEqual(['1', '1']);
    expect(typed('10-2')).toEqual(['10', '2']);
    expect(typed('5 1')).toEqual(['5', '1']);
    expect(typed('x 1')).toEqual(['x', '1']);
    expect(typed('1.5 1')).toEqual(['1.5', '1']);
  });

  it('caps the number of words', () => {
    expect(analyzeQuery('a b c d e f g h i j k l m n o p q r s t').words.length).toBe(16);
  });
});
