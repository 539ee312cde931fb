// Turns a batch of documents into an immutable Segment: tokenizes every field once, builds the
// term dictionary, postings (document, per-field term frequencies, first title position), field
// lengths, the stored documents, the filter columns and the typeahead tables, and lays them all
// out as typed arrays in one shared arena. This is the only place documents are tokenized for
// search; segments are merged by rebuilding from their stored documents.
import { encodeDocument, type RawValue, type SuggestDocument } from '../../node/runtime/document.js';
import { forEachToken, type TokenSink } from '../../node/runtime/text/tokenize.js';
import { FIELD, FIELD_COUNT, docFields, type DocFields } from './doc-fields.js';
import { canonicalValue, numberValue } from './filters.js';
import { StringPool, Utf8Pool } from './string-pool.js';
import { PrefixIndex, sortedOrder } from './prefix-index.js';
import { PrefixTopLists } from './prefix-top-lists.js';
import { Segment, type ColumnMeta, type SegmentMeta, docWeightOf, TF_BITS, TF_MAX, ALT_ONLY, PART_ONLY, NO_POSITION, TERM_PRIMARY, TERM_SUGGESTIVE, TERM_TOP_THRESHOLD, TERM_TOP_K } from './segment.js';
import { SuggestionIndex } from './suggestion-index.js';
import { SuggestionMiner, type MinerOptions } from './suggestion-miner.js';
import { ArenaBuilder } from './arena.js';
import { HashedNgramEmbedder, type Embedder } from './embedder.js';

/** Words of a description that are indexed: enough to describe a product, bounded cost. */
const MAX_DESC_WORDS = 160;
/** Longer string values are not kept in filter columns (they are texts, not values). */
const MAX_STRING_VALUE_CHARS = 256;

export interface SegmentBuildOptions extends MinerOptions {
  /** embeds the documents' vectors (default: the built-in hashed n-gram embedder); null: no vectors */
  embedder?: Embedder | null;
}

/** The text a document's vector is computed from: what it is called and what it is. */
export function vectorText(fields: DocFields): string {
  return [fields.title, fields.brand, ...fields.categories].filter((s) => s.length > 0).join(' ');
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
    const titles = new Utf8Pool();
    const storeOffsets = new Uint32Array(n + 1);
    const storeChunks: Uint8Array[] = [];
    let storeBytes = 0;
    const miner = new SuggestionMiner(this.options);
    const columns = new ColumnCollector(n);
    const embedder = this.options.embedder === undefined ? new HashedNgramEmbedder() : this.options.embedder;
    const dims = embedder?.dimensions ?? 0;
    const vectors = new Float32Array(n * dims);
    const vectorTexts: string[] = [];
    // per-term state of the current document, reset lazily by stamping with the document
    const stamp: number[] = [];
    const curTf: number[] = [];
    const curPos: number[] = [];
    const curFlags: number[] = []; // 1: as a word, 2: as an alternative
    const docTerms: number[] = [];

    // the token sink of the current document and field (one closure for the whole build)
    let doc_ = 0;
    let field = 0;
    let shift = 0;
    let words = 0;
    let posBase = 0;
    const sink: TokenSink = (term, tpos, kind) => {
      const pos = posBase + tpos;
      if (field === FIELD.desc && pos >= MAX_DESC_WORDS) return;
      let id = termIds.get(term);
      if (id === undefined) {
        id = termStrings.length;
        termIds.set(term, id);
        termStrings.push(term);
        termDf.push(0);
        termMask.push(0);
        termWeight.push(0);
        stamp.push(-1);
        curTf.push(0);
        curPos.push(0);
        curFlags.push(0);
      }
      if (stamp[id] !== doc_) {
        stamp[id] = doc_;
        curTf[id] = 0;
        curPos[id] = NO_POSITION;
        curFlags[id] = 0;
        docTerms.push(id);
      }
      const tf = curTf[id] as number;
      if (((tf >>> shift) & TF_MAX) < TF_MAX) curTf[id] = tf + (1 << shift);
      if (kind === 'word') {
        curFlags[id] = (curFlags[id] as number) | 1;
        words++;
      } else if (kind === 'alt') curFlags[id] = (curFlags[id] as number) | 2;
      if (field === FIELD.title && curPos[id] === NO_POSITION) curPos[id] = Math.min(pos, NO_POSITION - 1);
    };

    for (let d = 0; d < n; d++) {
      const doc = docs[d] as SuggestDocument;
      const fields = docFields(doc);
      ids.push(doc.id);
      titles.push(doc.title ?? '');
      // the title is kept once, in the title pool; the stored document leaves it out
      const bytes = encodeDocument({ ...doc, title: '' });
      storeChunks.push(bytes);
      storeBytes += bytes.length;
      storeOffsets[d + 1] = storeBytes;
      quality[d] = fields.quality;
      const w = docWeightOf(fields.quality);
      columns.add(d, doc, fields);
      if (embedder) vectorTexts.push(vectorText(fields));

      docTerms.length = 0;
      doc_ = d;
      for (let f = 0; f < FIELD_COUNT; f++) {
        field = f;
        shift = f * TF_BITS;
        words = 0;
        posBase = 0;
        if (f === FIELD.title) forEachToken(fields.title, sink);
        else if (f === FIELD.brand) forEachToken(fields.brand, sink);
        else if (f === FIELD.desc) forEachToken(fields.desc, sink);
        else {
          // multi-valued: a position gap so phrases do not run across values
          for (const v of f === FIELD.category ? fields.categories : fields.attrs) posBase += forEachToken(v, sink) + 1;
        }
        const len = Math.min(words, 65535);
        fieldLen[d * FIELD_COUNT + f] = len;
        fieldSums[f] = (fieldSums[f] as number) + len;
      }
      for (const id of docTerms) {
        const tf = curTf[id] as number;
        const flags = curFlags[id] as number;
        const primary = (flags & 1) !== 0;
        termDf[id] = (termDf[id] as number) + 1;
        let mask = termMask[id] as number;
        for (let f = 0; f < FIELD_COUNT; f++) if ((tf >>> (f * TF_BITS)) & TF_MAX) mask |= 1 << f;
        if (primary) mask |= TERM_PRIMARY;
        // terms people would type to find this product: words of its title, brand, categories
        if (primary && (tf & ((1 << (3 * TF_BITS)) - 1)) !== 0) {
          mask |= TERM_SUGGESTIVE;
          termWeight[id] = (termWeight[id] as number) + w;
        }
        termMask[id] = mask;
        pTerm.push(id);
        pDoc.push(d);
        pTf.push(primary ? tf : flags & 2 ? tf + ALT_ONLY : tf + PART_ONLY);
        pPos.push(curPos[id] as number);
      }
      miner.addDocument(d, fields, w);
    }

    // Document vectors, embedded in batches (an HTTP-backed embedder would want them batched).
    if (embedder) {
      for (let from = 0; from < n; from += 256) {
        const batch = embedder.embed(vectorTexts.slice(from, from + 256));
        batch.forEach((v, i) => vectors.set(v.subarray(0, dims), (from + i) * dims));
      }
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
      .add('doc.title.bytes', titles.byteArray())
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
    // the most frequent completions of every large prefix range (last query word expansion)
    const primaryDf = new Float64Array(V);
    for (let t = 0; t < V; t++) primaryDf[t] = (mask[t] as number) & TERM_PRIMARY ? (df[t] as number) : 0;
    PrefixTopLists.build(V, (i) => terms.commonPrefix(i - 1, i), (i) => i, primaryDf, TERM_TOP_THRESHOLD, TERM_TOP_K).write(builder, 'term.top.');
    const columnMeta = columns.write(builder);
    SuggestionIndex.build(miner.finish(), builder, 'sug.');
    if (dims > 0) builder.add('vec.f32', vectors);
    const meta: SegmentMeta = { docCount: n, termCount: V, postingCount: P, fieldLengthSums: fieldSums, columns: columnMeta, vectorDims: dims, embedder: embedder?.name ?? '' };
    return new Segment(builder.build(), meta);
  }
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
    // each (column, document) pair is put once, so a Set local to this call dedups the values;
    // searching the list instead made a document with 100k distinct tags cost seconds
    const strings = new Set<string>();
    for (const v of values) {
      if (v === null || typeof v === 'object') continue;
      if (col === undefined) {
        col = { strings: new Map(), numbers: null };
        this.cols.set(name, col);
      }
      const canon = canonicalValue(v);
      if (canon !== null && canon.length <= MAX_STRING_VALUE_CHARS) strings.add(canon);
      const num = numberValue(v);
      if (num !== null) {
        if (col.numbers === null) col.numbers = new Float64Array(this.n).fill(NaN);
        if (Number.isNaN(col.numbers[d] as number)) col.numbers[d] = num;
      }
    }
    if (col !== undefined && strings.size > 0) col.strings.set(d, [...strings]);
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
