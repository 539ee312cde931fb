// Rows -> documents: the usual column names, numbers from CSV text, ids (given, hashed, invalid),
// undecodable bytes, prototype keys, and the shopping-feed mapping with its prices.
import { describe, expect, it } from 'vitest';
import { mapDocumentRecord, mapShoppingRow, parseMoney } from '../document-mapper.js';

describe('documents mapping', () => {
  it('maps the usual names and keeps the rest in raw, numbers from CSV text', () => {
    const m = mapDocumentRecord({ index: '7', product: ' Tea ', brand: 'Leaf', description: 'Green', price: '12.50', zip: '00123', note: '', big: '12345678901234567890' }, true);
    expect(m.doc).toEqual({ id: '7', title: 'Tea', desc: 'Green', manufacturer: 'Leaf', raw: { price: 12.5, zip: '00123', big: '12345678901234567890' } });
  });

  it('keeps the fields of the specification out of raw even when empty, and merges an explicit raw', () => {
    const m = mapDocumentRecord({ id: 'a', title: '', desc: '', manufacturer: '', name: 'Alias', color: 'red', raw: { color: 'blue', n: 1 } }, false);
    expect(m.doc).toEqual({ id: 'a', title: 'Alias', desc: '', manufacturer: '', raw: { color: 'blue', n: 1 } });
  });

  it('hashes the content when there is no id, the same way every time', () => {
    const a = mapDocumentRecord({ name: 'x', price: 1 }, false);
    const b = mapDocumentRecord({ name: 'x', price: 1 }, false);
    expect(a.doc!.id).toMatch(/^h-[0-9a-f]{20}$/);
    expect(a.doc!.id).toBe(b.doc!.id);
  });

  it('refuses an id given as null or empty, instead of generating one', () => {
    expect(mapDocumentRecord({ id: null, title: 'x' }, false)).toMatchObject({ id: null, error: 'The id is null; give the record an id, or leave the field out to have one made from its content.' });
    expect(mapDocumentRecord({ id: '', title: 'x' }, false).error).toMatch(/^The id is empty;/);
    expect(mapDocumentRecord({ sku: null }, false).error).toMatch(/^The sku is null;/);
    // a CSV row of an id column whose cell is empty
    expect(mapDocumentRecord({ id: '  ', title: 'x' }, true).error).toMatch(/^The id is empty;/);
    // another id field with a value still names the document
    expect(mapDocumentRecord({ id: null, sku: 'S1' }, false).doc?.id).toBe('S1');
  });

  it('refuses bad ids, non-text titles and undecodable text, per row', () => {
    expect(mapDocumentRecord({ id: { x: 1 } }, false).error).toMatch(/id must be a string/);
    expect(mapDocumentRecord({ id: 'a\u0001b' }, false).error).toMatch(/control character/);
    expect(mapDocumentRecord({ id: 'x'.repeat(600) }, false).error).toMatch(/longer than 512/);
    expect(mapDocumentRecord({ id: 'a', title: ['x'] }, false).error).toMatch(/title must be text/);
    expect(mapDocumentRecord({ id: 'a', title: 'caf\ufffd' }, false).error).toMatch(/not valid in the file encoding/);
    // JSON can spell a lone surrogate; stored as UTF-8 it would read U+FFFD and could collide
    expect(mapDocumentRecord(JSON.parse('{"id": "a\\ud800"}') as Record<string, unknown>, false).error).toMatch(/lone UTF-16 surrogate/);
    expect(mapDocumentRecord({ id: 'smile-\u{1F600}' }, false).doc?.id).toBe('smile-\u{1F600}');
  });

  it('refuses a record with more attributes than a document may have, loose fields and raw counted together', () => {
    const wide = (n: number, prefix: string) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));
    expect(mapDocumentRecord({ id: 'a', ...wide(1000, 'k') }, false).doc).toBeDefined();
    expect(mapDocumentRecord({ id: 'a', ...wide(600, 'k'), raw: wide(401, 'r') }, false).error).toMatch(/1001 attributes; a document may have at most 1000/);
    expect(mapDocumentRecord({ id: 'a', raw: wide(70_000, 'r') }, false)).toMatchObject({ id: 'a', error: expect.stringMatching(/70000 attributes/) });
    expect(mapShoppingRow({ id: 'f', ...Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`c${i}`, 'v'])) }).error).toMatch(/at most 1000/);
  });

  it('keeps a __proto__ column as a plain key', () => {
    const rec = JSON.parse('{"id":"p","__proto__":{"polluted":true}}') as Record<string, unknown>;
    const m = mapDocumentRecord(rec, false);
    expect(Object.keys(m.doc!.raw)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('shopping-feed mapping', () => {
  it('parses prices in the usual notations', () => {
    expect(parseMoney('19.99 USD')).toEqual({ amount: 19.99, currency: 'USD' });
    expect(parseMoney('USD 19.99')).toEqual({ amount: 19.99, currency: 'USD' });
    expect(parseMoney('19,99 EUR')).toEqual({ amount: 19.99, currency: 'EUR' });
    expect(parseMoney('1.299,00 eur')).toEqual({ amount: 1299, currency: 'EUR' });
    expect(parseMoney('1,299.00 USD')).toEqual({ amount: 1299, currency: 'USD' });
    expect(parseMoney('12')).toEqual({ amount: 12, currency: null });
    expect(parseMoney('free')).toBeNull();
  });

  it('keeps prices it cannot read as the text of the feed, and never a number that is not finite', () => {
    for (const text of ['abc XYZ', '-5 USD', '1e309 USD', `${'9'.repeat(400)} USD`, `${'9'.repeat(400)}`]) expect(parseMoney(text), text).toBeNull();
    const m = mapShoppingRow({ id: 'P1', price: '1e309 USD', sale_price: `${'9'.repeat(400)}.00 USD`, shipping_weight: '-5 USD' });
    expect(m.doc!.raw).toEqual({ price: '1e309 USD', sale_price: `${'9'.repeat(400)}.00 USD`, shipping_weight: '-5 USD' });
    for (const v of Object.values(m.doc!.raw)) if (typeof v === 'number') expect(Number.isFinite(v)).toBe(true);
  });

  it('maps the feed columns and needs an id', () => {
    const m = mapShoppingRow({ id: 'S1', title: 'Kettle', description: 'Hot', brand: 'K', link: 'https://x', image_link: 'https://x/i.jpg', price: '9.90 GBP', mpn: '0012', custom_label_3: 'sale', product_type: 'Home > Kitchen' });
    expect(m.doc).toEqual({ id: 'S1', title: 'Kettle', desc: 'Hot', manufacturer: 'K', raw: { url: 'https://x', image: 'https://x/i.jpg', price: 9.9, currency: 'GBP', category: 'Home > Kitchen', mpn: '0012', custom_label_3: 'sale', product_type: 'Home > Kitchen' } });
    expect(mapShoppingRow({ title: 'no id' }).error).toMatch(/no id/);
  });
});
