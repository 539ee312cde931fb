// Vector retrieval over an index snapshot: the k live documents (passing the filters) whose
// vectors are most similar to the query vector, searched segment by segment with each segment's
// graph of the requested library when it is complete (exact scan otherwise), then merged.
import { compileFilters, type FilterSpec } from './filters.js';
import type { IndexSnapshot } from './index-snapshot.js';
import type { Segment } from './segment.js';
import type { VectorGraphs } from './vector-graphs.js';
import { TopK, type VectorBackend } from './vector-index.js';

export interface VectorSearchOptions {
  k: number;
  backend: VectorBackend;
  filters?: FilterSpec | null;
  /** scan every segment exactly (the reference of benchmark=true) */
  exact?: boolean;
  /** only segments written by this embedder are searched */
  embedder: string;
  /** graph candidate list (default: the graph's own) */
  ef?: number;
}

export interface VectorHit {
  segment: number;
  ord: number;
  /** cosine similarity */
  score: number;
}

export interface VectorSearchResult {
  hits: VectorHit[];
  /** documents searched through a complete graph / by exact scan */
  ann_documents: number;
  exact_documents: number;
}

export function vectorSearch(snapshot: IndexSnapshot, graphs: VectorGraphs, query: Float32Array, options: VectorSearchOptions): VectorSearchResult {
  // one TopK over all segments; a segment's ordinal and index are packed into one number
  const top = new TopK(options.k);
  const segOf: number[] = [];
  let ann = 0;
  let exact = 0;
  snapshot.segments.forEach((seg, segIndex) => {
    if (seg.liveCount === 0 || !searchable(seg, options.embedder, query.length)) return;
    const { index, method } = options.exact ? { index: graphs.exactFor(seg), method: 'exact' as const } : graphs.indexFor(seg, options.backend);
    if (method === 'ann') ann += seg.docCount;
    else exact += seg.docCount;
    const pred = options.filters ? compileFilters(options.filters, seg) : null;
    const tomb = seg.deletedCount > 0 ? seg.tombstones : null;
    const accept = pred === null && tomb === null ? undefined : (ord: number) => (tomb === null || tomb[ord] === 0) && (pred === null || pred(ord));
    const r = index.search(query, options.k, accept, options.ef);
    for (let i = 0; i < r.ords.length; i++) {
      const score = r.scores[i] as number;
      if (score <= top.floor) break;
      const key = segOf.length;
      segOf.push(segIndex, r.ords[i] as number);
      top.push(key, score);
    }
  });
  const hits = top.ords.map((key, i) => ({ segment: segOf[key] as number, ord: segOf[key + 1] as number, score: top.scores[i] as number }));
  return { hits, ann_documents: ann, exact_documents: exact };
}

/** Whether a segment has vectors a query vector of this size and embedder can be compared with. */
export function searchable(seg: Segment, embedder: string, dims: number): boolean {
  return seg.meta.vectorDims === dims && seg.meta.embedder === embedder;
}
