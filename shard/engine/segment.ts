// An immutable segment: a batch of documents indexed into typed arrays that live in one shared
// arena (term dictionary, postings, field lengths, priors, stored documents, filter columns,
// typeahead tables), plus the only mutable part, the tombstones of deleted documents and the
// weight they took from each suggestion. Readers on other threads can wrap the same memory.
import { decodeDocument, type SuggestDocument } from '../../node/runtime/document.js';
import { FIELD_COUNT } from './doc-fields.js';
import { Utf8Reader } from './string-pool.js';
import { PrefixIndex, compareKey } from './prefix-index.js';
import { PrefixTopLists } from './prefix-top-lists.js';
import { SuggestionIndex } from './suggestion-index.js';
import { SUG } from './suggestion-miner.js';
import { Arena, allocateShared, type ArenaLayout } from './arena.js';

/** Per-field term frequencies are packed in one u32: 6 bits per field, 5 fields. */
export const TF_BITS = 6;
export const TF_MAX = 63;
/** Set in a posting when the term occurs in the document only as an equivalent spelling. */
export const ALT_ONLY = 1 << 30;
/** Set when it occurs only as a piece of a compound word ("case" of "Case-Mate"). */
export const PART_ONLY = 2 ** 31;
/** Title position of a posting whose term is not in the title. */
export const NO_POSITION = 0xffff;
/** term mask bits above the five field bits */
export const TERM_PRIMARY = 1 << 5;
/** the term is a word of some title, brand or category: a candidate for typeahead correction */
export const TERM_SUGGESTIVE = 1 << 6;

/** Term prefix ranges larger than this have their TERM_TOP_K most frequent words stored. */
export const TERM_TOP_THRESHOLD = 256;
export const TERM_TOP_K = 48;

/** How much a document counts toward the suggestions it supports (popular ones count more). */
export function docWeightOf(quality: number): number {
  return 1 + 2 * quality;
}

export interface ColumnMeta {
  name: string;
  prefix: string;
  numeric: boolean;
  strings: boolean;
}

export interface SegmentMeta {
  docCount: number;
  termCount: number;
  postingCount: number;
  fieldLengthSums: number[];
  columns: ColumnMeta[];
  /** dimensions of the document vectors (`vec.f32`, docCount x vectorDims), 0 when none */
  vectorDims: number;
  /** the embedder that wrote them (a segment is only searched with query vectors of the same one) */
  embedder: string;
}

export interface Column {
  name: string;
  /** first numeric value per document, NaN when none */
  numbers: Float64Array | null;
  /** canonical string values: dictionary + per-document value ids (CSR) */
  dict: PrefixIndex | null;
  valueOffsets: Uint32Array | null;
  values: Uint32Array | null;
}

export interface SegmentMutableState {
  tombstones: Uint8Array;
  deletedWeights: Float32Array;
  /** [deleted document count], shared so that readers on other threads see deletes */
  counters: Int32Array;
}

/** A segment as plain data for `postMessage`: shared buffers travel without copying. */
export interface SharedSegment {
  meta: SegmentMeta;
  layout: ArenaLayout;
  buffer: SharedArrayBuffer | ArrayBuffer;
  state: SegmentMutableState;
}

export class Segment {
  readonly docCount: number;
  readonly terms: PrefixIndex;
  readonly termDf: Uint32Array;
  readonly termMask: Uint8Array;
  readonly termWeight: Float32Array;
  /** most frequent words (by document frequency) of every large prefix range of `terms` */
  readonly termTop: PrefixTopLists;
  readonly postOffsets: Uint32Array;
  readonly postDocs: Uint32Array;
  readonly postTf: Uint32Array;
  readonly postPos: Uint16Array;
  readonly fieldLen: Uint16Array;
  readonly quality: Float32Array;
  readonly suggestions: SuggestionIndex;
  /** one L2-normalized vector per document (row = ordinal), empty when vectorDims is 0 */
  readonly vectors: Float32Array;
  readonly tombstones: Uint8Array;
  readonly deletedWeights: Float32Array;
  private readonly idOffsets: Uint32Array;
  private readonly idChars: Uint16Array;
  private readonly idOrder: Uint32Array;
  private readonly titles: Utf8Reader;
  private readonly storeOffsets: Uint32Array;
  private readonly storeBytes: Uint8Array;
  private readonly columns = new Map<string, Column>();
  private readonly counters: Int32Array;

  constructor(
    readonly arena: Arena,
    readonly meta: SegmentMeta,
    state?: SegmentMutableState,
  ) {
    this.docCount = meta.docCount;
    this.idOffsets = arena.u32('doc.id.offsets');
    this.idChars = arena.u16('doc.id.chars');
    this.idOrder = arena.u32('doc.id.order');
    this.titles = new Utf8Reader(arena.u32('doc.title.offsets'), arena.u8('doc.title.bytes'));
    this.storeOffsets = arena.u32('doc.store.offsets');
    this.storeBytes = arena.u8('doc.store.bytes');
    this.fieldLen = arena.u16('doc.fieldLen');
    this.quality = arena.f32('doc.quality');
    this.terms = new PrefixIndex({ offsets: arena.u32('term.offsets'), chars: arena.u16('term.chars') });
    this.termDf = arena.u32('term.df');
    this.termMask = arena.u8('term.mask');
    this.termWeight = arena.f32('term.weight');
    this.termTop = PrefixTopLists.read(arena, 'term.top.');
    this.postOffsets = arena.u32('post.offsets');
    this.postDocs = arena.u32('post.docs');
    this.postTf = arena.u32('post.tf');
    this.postPos = arena.u16('post.pos');
    this.suggestions = new SuggestionIndex(arena, 'sug.');
    this.vectors = meta.vectorDims > 0 ? arena.f32('vec.f32') : new Float32Array(0);
    for (const c of meta.columns) {
      const p = c.prefix;
      this.columns.set(c.name, {
        name: c.name,
        numbers: c.numeric ? arena.f64(`${p}num`) : null,
        dict: c.strings ? new PrefixIndex({ offsets: arena.u32(`${p}dict.offsets`), chars: arena.u16(`${p}dict.chars`) }) : null,
        valueOffsets: c.strings ? arena.u32(`${p}vals.offsets`) : null,
        values: c.strings ? arena.u32(`${p}vals`) : null,
      });
    }
    this.tombstones = state?.tombstones ?? new Uint8Array(allocateShared(this.docCount));
    this.deletedWeights = state?.deletedWeights ?? new Float32Array(allocateShared(this.suggestions.size * 4));
    this.counters = state?.counters ?? new Int32Array(allocateShared(4));
  }

  get deletedCount(): number {
    return this.counters[0] as number;
  }

  get liveCount(): number {
    return this.docCount - (this.counters[0] as number);
  }

  idAt(ord: number): string {
    let s = '';
    const end = this.idOffsets[ord + 1] as number;
    for (let i = this.idOffsets[ord] as number; i < end; i++) s += String.fromCharCode(this.idChars[i] as number);
    return s;
  }

  /** Ordinal of a document id (live or deleted), or -1. */
  ordinalOf(id: string): number {
    let lo = 0;
    let hi = this.docCount;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const ord = this.idOrder[mid] as number;
      if (compareKey(this.idChars, this.idOffsets[ord] as number, this.idOffsets[ord + 1] as number, id, false) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= this.docCount) return -1;
    const ord = this.idOrder[lo] as number;
    return compareKey(this.idChars, this.idOffsets[ord] as number, this.idOffsets[ord + 1] as number, id, false) === 0 ? ord : -1;
  }

  isLive(ord: number): boolean {
    return this.tombstones[ord] === 0;
  }

  document(ord: number): SuggestDocument {
    const doc = decodeDocument(this.storeBytes.subarray(this.storeOffsets[ord] as number, this.storeOffsets[ord + 1] as number));
    doc.title = this.titles.get(ord);
    return doc;
  }

  /** The title of a document, without decoding the stored document. */
  title(ord: number): string {
    return this.titles.get(ord);
  }

  /** Display text of a suggestion; a product's is its document's title. */
  suggestionText(sug: number): string {
    const sugs = this.suggestions;
    if (sugs.types[sug] === SUG.product) return this.title(sugs.bestDocs[sug] as number).trim();
    return sugs.display(sug);
  }

  /** The document's vector (a view into the arena; empty when the segment has none). */
  vector(ord: number): Float32Array {
    const d = this.meta.vectorDims;
    return this.vectors.subarray(ord * d, ord * d + d);
  }

  fieldLength(ord: number, field: number): number {
    return this.fieldLen[ord * FIELD_COUNT + field] as number;
  }

  /** Marks a document deleted and takes its weight out of the suggestions it supports. */
  delete(ord: number): boolean {
    if (this.tombstones[ord] !== 0) return false;
    this.tombstones[ord] = 1;
    this.counters[0] = (this.counters[0] as number) + 1;
    const w = docWeightOf(this.quality[ord] as number);
    const sugs = this.suggestions;
    for (let i = sugs.docOffsets[ord] as number; i < (sugs.docOffsets[ord + 1] as number); i++) {
      const s = sugs.docSuggestions[i] as number;
      this.deletedWeights[s] = (this.deletedWeights[s] as number) + w;
    }
    return true;
  }

  /** Live stored documents, in ordinal order. */
  *liveDocuments(): IterableIterator<SuggestDocument> {
    for (let d = 0; d < this.docCount; d++) if (this.tombstones[d] === 0) yield this.document(d);
  }

  column(name: string): Column | null {
    return this.columns.get(name) ?? null;
  }

  /** Deleted-weight array to pass to typeahead lookups (null when nothing was deleted). */
  get deletedSuggestionWeights(): Float32Array | null {
    return this.counters[0] === 0 ? null : this.deletedWeights;
  }

  /** This segment as data another thread can wrap (`Segment.fromShared`) over the same memory. */
  toShared(): SharedSegment {
    return { meta: this.meta, layout: this.arena.layout, buffer: this.arena.buffer, state: this.state() };
  }

  static fromShared(s: SharedSegment): Segment {
    return new Segment(new Arena(s.buffer, s.layout), s.meta, s.state);
  }

  state(): SegmentMutableState {
    return { tombstones: this.tombstones, deletedWeights: this.deletedWeights, counters: this.counters };
  }

  /** Bytes by structure (the arena plus the mutable arrays). */
  /** Bytes of the segment's memory: its arena and the mutable arrays beside it. */
  get memoryBytes(): number {
    return this.arena.layout.byteLength + this.mutableBytes;
  }

  /** Bytes of the arrays beside the arena that deletes write (tombstones, deleted weights, counters). */
  private get mutableBytes(): number {
    return this.tombstones.byteLength + this.deletedWeights.byteLength + this.counters.byteLength;
  }

  bytes(): Record<string, number> {
    const a = this.arena;
    return {
      terms: a.bytesOf('term.'),
      postings: a.bytesOf('post.'),
      docs: a.bytesOf('doc.id.') + a.bytesOf('doc.title.') + a.bytesOf('doc.fieldLen') + a.bytesOf('doc.quality'),
      store: a.bytesOf('doc.store.'),
      columns: a.bytesOf('col.'),
      suggestions: a.bytesOf('sug.'),
      vectors: a.bytesOf('vec.'),
      mutable: this.mutableBytes,
    };
  }
}
