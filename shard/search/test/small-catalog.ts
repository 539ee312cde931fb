// A synthetic catalogue for the search host's tests: eight brands by eight kinds of product with
// model numbers, so that prefixes, two-word queries and typos all find several documents.
import type { SuggestDocument } from '../../../node/runtime/document.js';

const BRANDS = ['Samsung', 'Sony', 'Dewalt', 'Makita', 'Bosch', 'Apple', 'Philips', 'Panasonic'];
const THINGS = ['Drill Driver', 'Impact Wrench', 'OLED TV', 'Soundbar', 'Headphones', 'Circular Saw', 'Blender', 'Toaster Oven'];

/** `n` documents `d0`..`d{n-1}`. */
export function smallCatalog(n: number): SuggestDocument[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `d${i}`,
    title: `${BRANDS[i % BRANDS.length]} ${THINGS[(i >> 3) % THINGS.length]} ${100 + (i % 97)}`,
    desc: '',
    manufacturer: BRANDS[i % BRANDS.length]!,
    raw: { price: i % 500 },
  }));
}
