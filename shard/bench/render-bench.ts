// Micro-benchmark of rendering a document for an answer (what every uncached autocomplete does
// for each document it has not rendered before): decoding it from its stored bytes, then its
// display fields, against the full field mapping a segment build computes.
//
//   npx tsc && node dist/shard/bench/render-bench.js [--data DIR] [--rounds 7]
//
// DIR holds the files described in SOURCES.md (default: $SUGGEST_DATA_SETS or /work/shared/data).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { decodeDocument, encodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { displayFields, docFields } from '../engine/doc-fields.js';

const { values } = parseArgs({ options: { data: { type: 'string' }, rounds: { type: 'string', default: '7' } } });
const dir = values.data ?? process.env.SUGGEST_DATA_SETS ?? '/work/shared/data';
const records = JSON.parse(readFileSync(`${dir}/bestbuy_products_3291.json`, 'utf8')) as Record<string, unknown>[];
const docs: SuggestDocument[] = records.map((r, i) => ({
  id: `bb${i}`,
  title: String(r.name ?? ''),
  desc: String(r.description ?? ''),
  manufacturer: String(r.brand ?? ''),
  raw: { categories: r.categories as string[], price: r.price as number, image: r.image as string, popularity: r.popularity as number },
}));
const stored = docs.map(encodeDocument);

const rounds = Number(values.rounds);
const times = { decode: [] as number[], display: [] as number[], mapping: [] as number[] };
let sink = 0;
const perDoc = (run: () => void): number => {
  const t = performance.now();
  run();
  return ((performance.now() - t) * 1000) / stored.length;
};
for (let r = 0; r < rounds; r++) {
  times.decode.push(perDoc(() => stored.forEach((b) => (sink += decodeDocument(b).title.length))));
  times.display.push(perDoc(() => stored.forEach((b) => (sink += displayFields(decodeDocument(b)).subtitle.length))));
  times.mapping.push(perDoc(() => stored.forEach((b) => (sink += docFields(decodeDocument(b)).attrs.length))));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(`${stored.length} Best Buy documents, µs per document, median of ${rounds} rounds (${sink > 0 ? 'checked' : 'empty'})`);
console.log(`decode                     ${median(times.decode).toFixed(2)}`);
console.log(`decode + display fields    ${median(times.display).toFixed(2)}`);
console.log(`decode + full field mapping ${median(times.mapping).toFixed(2)}`);
