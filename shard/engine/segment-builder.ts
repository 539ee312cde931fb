// Turns a batch of documents into an immutable Segment: tokenizes every field once, builds the
// term dictionary, postings (document, per-field term frequencies, first title position), field
// lengths, the stored documents, the filter columns and the typeahead tables, and lays them all
// out as typed arrays in one shared arena. This is the only place documents are tokenized for
// search; segments are merged by rebuilding from their stored documents.
import { encodeDocument, type RawValue, type SuggestDocument } from '../../node/runtime/document.js';
import { tokenize, type Token } from '../../node/runtime/text/tokenize.js';
import { FIELD, FIELD_COUNT, docFields, type DocFields } from './doc-fields.js';
import { canonicalValue, numberValue } from './filters.js';
import { StringPool } from './growable.js';
import { PrefixIndex, sortedOrder } from './prefix-index.js';
import { Segment, type ColumnMeta, type SegmentMeta, docWeightOf, TF_BITS, TF_MAX, ALT_ONLY, PART_ONLY, NO_POSITION, TERM_PRIMARY, TERM_SUGGESTIVE } from './segment.js';
import { SuggestionIndex } from './suggestion-index.js';
import { SuggestionMiner, type MinerOptions } from './suggestion-miner.js';
import { ArenaBuilder } from './typed-arena.js';

/** Words of a description that are indexed: enough to describe a product, bounded cost. */
const MAX_DESC_WORDS = 160;
/** Longer string values are not kept in filter columns (they are texts, not values). */
const MAX_STRING_VALUE_CHARS = 256;

export interface SegmentBuildOptions extends MinerOptions {}

interface LocalPosting {
  tf: number;
  pos: number;
  primary: boolean;
  alt: boolean;
}

export class SegmentBuilder {
  private readonly docs: SuggestDocument[] = [];

  constructor(private readonly options: SegmentBuildOptions = {}) {}

  add(doc: SuggestDocument): this {
    this.docs.push(doc);
    return this;
  }

  addAll(docs: Iterable<SuggestDocument>): this {
    for (const d of docs) this.docs.push(d);
    return this;
  }

  get size(): number {
    return this.docs.length;
  }

  build(): Segment {
    const docs = this.docs;
    const n = docs.length;
    const termIds = new Map<string, number>();
    const termStrings: string[] = [];
    const termDf: number[] = [];
    const termMask: number[] = [];
    const termWeight: number[] = [];
    const pTerm: number[] = [];
    const pDoc: number[] = [];
    const pTf: number[] = [];
    const pPos: number[] = [];
    const fieldLen = new Uint16Array(n * FIELD_COUNT);
    const fieldSums = new Array<number>(FIELD_COUNT).fill(0);
    const quality = new Float32Array(n);
    const ids = new StringPool();
    const titles = new StringPool();
    const storeOffsets = new Uint32Array(n + 1);
    const storeChunks: Uint8Array[] = [];
    let storeBytes = 0;
    const miner = new SuggestionMiner(this.options);
    const columns = new ColumnCollector(n);
    const local = new Map<string, LocalPosting>();

    for (let d = 0; d < n; d++) {
      const doc = docs[d] as SuggestDocument;
      const fields = docFields(doc);
      ids.push(doc.id);
      titles.push(fields.title);
      const bytes = encodeDocument(doc);
      storeChunks.push(bytes);
      storeBytes += bytes.length;
      storeOffsets[d + 1] = storeBytes;
      quality[d] = fields.quality;
      const w = docWeightOf(fields.quality);
      columns.add(d, doc, fields);

      local.clear();
      const streams = fieldStreams(fields);
      for (let f = 0; f < FIELD_COUNT; f++) {
        const tokens = streams[f] as Token[];
        let words = 0;
        for (const t of tokens) {
          if (f === FIELD.desc && t.pos >= MAX_DESC_WORDS) break;
          let lp = local.get(t.term);
          if (lp === undefined) {
            lp = { tf: 0, pos: NO_POSITION, primary: false, alt: false };
            local.set(t.term, lp);
          }
          const shift = f * TF_BITS;
          if (((lp.tf >>> shift) & TF_MAX) < TF_MAX) lp.tf += 1 << shift;
          if (t.kind === 'word') {
            lp.primary = true;
            words++;
          } else if (t.kind === 'alt') lp.alt = true;
          if (f === FIELD.title && lp.pos === NO_POSITION) lp.pos = Math.min(t.pos, NO_POSITION - 1);
        }
        const len = Math.min(words, 65535);
        fieldLen[d * FIELD_COUNT + f] = len;
        fieldSums[f] = (fieldSums[f] as number) + len;
      }
      for (const [term, lp] of local) {
        let id = termIds.get(term);
        if (id === undefined) {
          id = termStrings.length;
          termIds.set(term, id);
          termStrings.push(term);
          termDf.push(0);
          termMask.push(0);
          termWeight.push(0);
        }
        termDf[id] = (termDf[id] as number) + 1;
        let mask = termMask[id] as number;
        for (let f = 0; f < FIELD_COUNT; f++) if ((lp.tf >>> (f * TF_BITS)) & TF_MAX) mask |= 1 << f;
        if (lp.primary) mask |= TERM_PRIMARY;
        // terms people would type to find this product: words of its title, brand, categories
        const suggestive = lp.primary && (lp.tf & ((1 << (3 * TF_BITS)) - 1)) !== 0;
        if (suggestive) {
          mask |= TERM_SUGGESTIVE;
          termWeight[id] = (termWeight[id] as number) + w;
        }
        termMask[id] = mask;
        pTerm.push(id);
        pDoc.push(d);
        pTf.push(lp.primary ? lp.tf : lp.alt ? lp.tf + ALT_ONLY : lp.tf + PART_ONLY);
        pPos.push(lp.pos);
      }
      miner.addDocument(d, fields, w);
    }

    // Terms sorted by code unit; postings grouped by term with a counting sort (documents
    // were visited in order, so every posting list comes out sorted by document).
    const order = sortedOrder(termStrings);
    const rank = new Uint32Array(order.length);
    order.forEach((old, i) => (rank[old] = i));
    const terms = PrefixIndex.fromSorted(Array.from(order, (i) => termStrings[i] as string));
    const V = order.length;
    const df = new Uint32Array(V);
    const mask = new Uint8Array(V);
    const weight = new Float32Array(V);
    for (let old = 0; old < V; old++) {
      const r = rank[old] as number;
      df[r] = termDf[old] as number;
      mask[r] = termMask[old] as number;
      weight[r] = termWeight[old] as number;
    }
    const postOffsets = new Uint32Array(V + 1);
    for (let t = 0; t < V; t++) postOffsets[t + 1] = (postOffsets[t] as number) + (df[t] as number);
    const P = pTerm.length;
    const postDocs = new Uint32Array(P);
    const postTf = new Uint32Array(P);
    const postPos = new Uint16Array(P);
    const fill = postOffsets.slice(0, V);
    for (let i = 0; i < P; i++) {
      const t = rank[pTerm[i] as number] as number;
      const at = fill[t] as number;
      fill[t] = at + 1;
      postDocs[at] = pDoc[i] as number;
      postTf[at] = pTf[i] as number;
      postPos[at] = pPos[i] as number;
    }

    // document ids sorted for id -> ordinal lookup
    const idStrings = docs.map((d) => d.id);
    const idOrder = sortedOrder(idStrings);

    const store = new Uint8Array(storeBytes);
    let at = 0;
    for (const c of storeChunks) {
      store.set(c, at);
      at += c.length;
    }

    const builder = new ArenaBuilder();
    builder
      .add('doc.id.offsets', ids.offsetArray())
      .add('doc.id.chars', ids.charArray())
      .add('doc.id.order', idOrder)
      .add('doc.title.offsets', titles.offsetArray())
      .add('doc.title.chars', titles.charArray())
      .add('doc.store.offsets', storeOffsets)
      .add('doc.store.bytes', store)
      .add('doc.fieldLen', fieldLen)
      .add('doc.quality', quality)
      .add('term.offsets', terms.offsets)
      .add('term.chars', terms.chars)
      .add('term.df', df)
      .add('term.mask', mask)
      .add('term.weight', weight)
      .add('post.offsets', postOffsets)
      .add('post.docs', postDocs)
      .add('post.tf', postTf)
      .add('post.pos', postPos);
    const columnMeta = columns.write(builder);
    SuggestionIndex.build(miner.finish(), builder, 'sug.');
    const meta: SegmentMeta = { docCount: n, termCount: V, postingCount: P, fieldLengthSums: fieldSums, columns: columnMeta };
    return new Segment(builder.build(), meta);
  }
}

function fieldStreams(fields: DocFields): Token[][] {
  const streams: Token[][] = [[], [], [], [], []];
  streams[FIELD.title] = tokenize(fields.title);
  streams[FIELD.brand] = tokenize(fields.brand);
  streams[FIELD.category] = multiValue(fields.categories);
  streams[FIELD.attr] = multiValue(fields.attrs);
  streams[FIELD.desc] = fields.desc ? tokenize(fields.desc) : [];
  return streams;
}

/** Values of a multi-valued field, with a position gap so phrases do not run across values. */
function multiValue(values: string[]): Token[] {
  const out: Token[] = [];
  let base = 0;
  for (const v of values) {
    const toks = tokenize(v);
    let max = -1;
    for (const t of toks) {
      out.push({ term: t.term, pos: base + t.pos, kind: t.kind });
      if (t.pos > max) max = t.pos;
    }
    base += max + 2;
  }
  return out;
}

/**
 * Filter columns: for every attribute, canonical string values (multi-valued, dictionary encoded)
 * for exact filters and the first numeric value for ranges.
 */
class ColumnCollector {
  private readonly cols = new Map<string, { strings: Map<number, string[]>; numbers: Float64Array | null }>();

  constructor(private readonly n: number) {}

  add(d: number, doc: SuggestDocument, fields: DocFields): void {
    if (doc.manufacturer) this.put('manufacturer', d, doc.manufacturer);
    if (fields.brand) this.put('brand', d, fields.brand);
    for (const [key, value] of Object.entries(doc.raw ?? {})) this.put(`raw.${key}`, d, value);
  }

  private put(name: string, d: number, value: RawValue): void {
    const values = Array.isArray(value) ? value : [value];
    let col = this.cols.get(name);
    for (const v of values) {
      if (v === null || typeof v === 'object') continue;
      if (col === undefined) {
        col = { strings: new Map(), numbers: null };
        this.cols.set(name, col);
      }
      const canon = canonicalValue(v);
      if (canon !== null && canon.length <= MAX_STRING_VALUE_CHARS) {
        const list = col.strings.get(d);
        if (list === undefined) col.strings.set(d, [canon]);
        else if (!list.includes(canon)) list.push(canon);
      }
      const num = numberValue(v);
      if (num !== null) {
        if (col.numbers === null) col.numbers = new Float64Array(this.n).fill(NaN);
        if (Number.isNaN(col.numbers[d] as number)) col.numbers[d] = num;
      }
    }
  }

  write(builder: ArenaBuilder): ColumnMeta[] {
    const meta: ColumnMeta[] = [];
    let i = 0;
    for (const [name, col] of this.cols) {
      const p = `col.${i}.`;
      const entry: ColumnMeta = { name, prefix: p, numeric: col.numbers !== null, strings: col.strings.size > 0 };
      if (col.numbers) builder.add(`${p}num`, col.numbers);
      if (col.strings.size > 0) {
        const dict = PrefixIndex.build([...col.strings.values()].flat());
        const offsets = new Uint32Array(this.n + 1);
        const vals: number[] = [];
        for (let d = 0; d < this.n; d++) {
          for (const s of col.strings.get(d) ?? []) vals.push(dict.get(s));
          offsets[d + 1] = vals.length;
        }
        builder.add(`${p}dict.offsets`, dict.offsets).add(`${p}dict.chars`, dict.chars).add(`${p}vals.offsets`, offsets).add(`${p}vals`, Uint32Array.from(vals));
      }
      meta.push(entry);
      i++;
    }
    return meta;
  }
}
