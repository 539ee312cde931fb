// Display fields are computed on their own (brand, categories, description only) for speed: they
// must be the display fields of the document's full field mapping, on real documents and on
// feeds with unusual keys.
import { describe, expect, it } from 'vitest';
import type { SuggestDocument } from '../../../node/runtime/document.js';
import { displayFields, docFields } from '../doc-fields.js';
import { loadBestBuy } from './helpers.js';

const odd: SuggestDocument[] = [
  { id: 'a', title: 'Kettle', desc: 'x '.repeat(400), manufacturer: '', raw: { Brand: 'Acme', 'Sub-Category': ['Kitchen', 'kitchen', 'Tea'], 'Image URL': 'http://i/1.png', price: '1,299.00', currency: 'usd' } },
  { id: 'b', title: 'Drill', desc: '', manufacturer: 'Bosch', raw: { category: 'y'.repeat(130), department: 'Tools', brand: 'Other', link: ['http://p/2'] } },
  { id: 'c', title: 'Bare', desc: '', manufacturer: '', raw: {} },
];

describe('displayFields', () => {
  it('equals the display of the full field mapping on every Best Buy document and on unusual feeds', () => {
    for (const doc of [...loadBestBuy(), ...odd]) expect(displayFields(doc)).toEqual(displayFields(doc, docFields(doc)));
  });

  it('reads brand, categories and the description the way the full mapping does', () => {
    expect(displayFields(odd[0]!)).toMatchObject({ subtitle: 'Kitchen', concepts: ['Acme', 'Kitchen', 'Tea'], image: 'http://i/1.png', price: 1299, currency: 'USD' });
    expect(displayFields(odd[0]!).description.length).toBeLessThanOrEqual(301);
    expect(displayFields(odd[1]!)).toMatchObject({ subtitle: 'Tools', concepts: ['Bosch', 'Tools'], url: 'http://p/2' });
  });

  it('shows text with the HTML entities feeds carry escaped decoded (every renderer reads it from here)', () => {
    const d = displayFields({ id: 'x', title: 'Builder&#39;s Choice Door', desc: 'Fir &amp; pine', manufacturer: 'B&amp;D', raw: { category: 'Doors &amp; Windows' } });
    expect(d).toMatchObject({ title: "Builder's Choice Door", subtitle: 'Doors & Windows', description: 'Fir & pine' });
  });

  it('finds each display field by key as written, by rank, before any other spelling of a key, and skips empty values', () => {
    const show = (raw: SuggestDocument['raw'], manufacturer = '') => displayFields({ id: 'x', title: 'T', desc: '', manufacturer, raw });
    expect(show({ 'Image URL': 'a', image: 'b' }).image).toBe('b');
    expect(show({ image_url: 'x', image: 'y' }).image).toBe('y');
    expect(show({ image: '', 'Image-Link': 'z' }).image).toBe('z');
    expect(show({ PRICE: '5', 'Sale Price': '3' }).price).toBe(5);
    expect(show({ msrp: 9, price: null, sale_price: '7.50' }).price).toBe(7.5);
    expect(show({ 'Brand Name': 'Q', Category: 'C' })).toMatchObject({ concepts: ['Q', 'C'], subtitle: 'C' });
    expect(show({ brand: 'B', 'Product Type': ['P', 'p'] }, 'M')).toMatchObject({ concepts: ['M', 'P'], subtitle: 'P' });
    expect(show({ Currency: 'eur', currency_code: 'usd' }).currency).toBe('USD');
  });
});
