// BehaviorModel: what one index part has learned from its engagement events (clicks,
// add-to-cart, purchases). Kept in memory beside the part's SuggestEngine, rebuilt from the
// part's event log when the engine loads, and fed every new event after that. Aggregates:
//
//  - document popularity: type weight (click 1, add_to_cart 3, purchase 5) with exponential time
//    decay (half-life 30 days), one contribution per (session or user, document, type);
//  - query -> document: which documents people chose after typing which query (the same decay);
//  - user -> document and user -> concept (brand, category) affinity, for personalization;
//  - query -> concept: the brands and categories a query leads to (graph ranking);
//  - mined queries: each normalized query with its display form and how many distinct sessions
//    (or users, or events when neither is sent) typed it, the source of typeahead completions.
//
// Together the maps are a graph over queries, documents and concepts (query -> doc, query ->
// concept, doc -> concept, user -> doc / concept); `neighbors` reads it for ranking and predict.
//
// Decay without rescans: every weight is stored multiplied by 2^((ts - EPOCH) / HALF_LIFE) and
// read back multiplied by 2^(-(now - EPOCH) / HALF_LIFE), so adding an event is O(1) and a read
// sees every weight decayed to `now`. The exponent stays far from double overflow until 2100+.
import type { EngagementEvent, EngagementType } from '../../node/runtime/engagement-event.js';
import { analyzeQuery } from '../../node/runtime/text/analyze-query.js';

export const TYPE_WEIGHT: Record<EngagementType, number> = { click: 1, add_to_cart: 3, purchase: 5 };
export const HALF_LIFE_MS = 30 * 24 * 3_600_000;
const EPOCH_MS = Date.UTC(2024, 0, 1);
/** longest normalized query kept for mining and query -> document counts */
export const MAX_QUERY_CHARS = 100;
/** distinct (session, document, type) keys remembered for de-duplication, per part */
const MAX_SEEN_KEYS = 2_000_000;
/**
 * Distinct queries tracked per part (mining, query -> document, query -> concept). Past it, a
 * new query still counts for document popularity and users but is not learned as a query: a
 * stream of random queries cannot grow memory without bound.
 */
export const MAX_QUERIES = 200_000;

/** A concept key: `brand:<lower-case brand>` or `category:<lower-case category>`. */
export type ConceptKey = string;

export interface MinedQuery {
  key: string;
  display: string;
  /** distinct sessions (or users, or events) that typed it */
  count: number;
}

export interface BehaviorStats {
  events: number;
  documents: number;
  queries: number;
  users: number;
  concepts: number;
}

/** Normalized key of a query: its words joined by single spaces ('' when it has none). */
export function queryKey(query: string): string {
  if (query.length === 0) return '';
  const key = analyzeQuery(query, 32).words.map((w) => w.term).join(' ');
  return key.length > MAX_QUERY_CHARS ? '' : key;
}

/** Concept keys of a document's brand and categories. */
export function conceptKeys(brand: string, categories: readonly string[]): ConceptKey[] {
  const out = new Set<ConceptKey>();
  const b = brand.trim().toLowerCase();
  if (b) out.add(`brand:${b}`);
  for (const c of categories) {
    const k = c.trim().toLowerCase();
    if (k) out.add(`category:${k}`);
  }
  return [...out];
}

const add = <K>(m: Map<K, number>, k: K, w: number) => m.set(k, (m.get(k) ?? 0) + w);
function addNested<K, J>(m: Map<K, Map<J, number>>, k: K, j: J, w: number): void {
  let inner = m.get(k);
  if (!inner) m.set(k, (inner = new Map()));
  add(inner, j, w);
}

export class BehaviorModel {
  private readonly docPop = new Map<string, number>();
  private readonly queryDoc = new Map<string, Map<string, number>>();
  private readonly queryTotal = new Map<string, number>();
  private readonly queryConcept = new Map<string, Map<ConceptKey, number>>();
  private readonly userDoc = new Map<string, Map<string, number>>();
  private readonly userConcept = new Map<string, Map<ConceptKey, number>>();
  private readonly userTotal = new Map<string, number>();
  private readonly docConcepts = new Map<string, ConceptKey[]>();
  private readonly mined = new Map<string, MinedQuery>();
  private readonly seen = new Set<string>();
  private sortedKeys: string[] | null = null;
  private eventCount = 0;
  /** bumped on every applied event: ranking caches key on it */
  version = 0;

  /**
   * @param conceptsOf the brand and category concepts of a live document (null when the part
   *   does not hold it); asked once per document, the answer is kept
   */
  constructor(
    private readonly conceptsOf: (docId: string) => ConceptKey[] | null,
    private readonly maxQueries = MAX_QUERIES,
  ) {}

  get events(): number {
    return this.eventCount;
  }

  get isEmpty(): boolean {
    return this.eventCount === 0;
  }

  apply(events: Iterable<EngagementEvent>): void {
    for (const e of events) this.applyOne(e);
  }

  private applyOne(e: EngagementEvent): void {
    this.eventCount++;
    this.version++;
    const who = e.session_id || e.user_id;
    const scale = Math.pow(2, (e.ts - EPOCH_MS) / HALF_LIFE_MS);
    const w = TYPE_WEIGHT[e.type] * scale;
    const concepts = this.concepts(e.doc_id);
    // one contribution per visitor, document and type: reloading a page or double clicks add nothing
    const dedupe = who ? `${who}\0${e.doc_id}\0${e.type}` : '';
    const fresh = dedupe === '' || this.remember(dedupe);
    if (fresh) add(this.docPop, e.doc_id, w);

    const qk = queryKey(e.query);
    if (qk && (this.mined.has(qk) || this.mined.size < this.maxQueries)) {
      if (fresh) {
        addNested(this.queryDoc, qk, e.doc_id, w);
        add(this.queryTotal, qk, w);
        for (const c of concepts) addNested(this.queryConcept, qk, c, w);
      }
      const qDedupe = who ? `${who}\0q\0${qk}` : '';
      if (qDedupe === '' || this.remember(qDedupe)) {
        const m = this.mined.get(qk);
        if (m) m.count++;
        else {
          this.mined.set(qk, { key: qk, display: e.query.trim().replace(/\s+/g, ' '), count: 1 });
          this.sortedKeys = null;
        }
      }
    }
    if (e.user_id && fresh) {
      addNested(this.userDoc, e.user_id, e.doc_id, w);
      add(this.userTotal, e.user_id, w);
      for (const c of concepts) addNested(this.userConcept, e.user_id, c, w);
    }
  }

  private remember(key: string): boolean {
    if (this.seen.has(key)) return false;
    if (this.seen.size >= MAX_SEEN_KEYS) this.seen.clear();
    this.seen.add(key);
    return true;
  }

  /** Concepts of a document, from the first time it was seen. */
  concepts(docId: string): ConceptKey[] {
    let c = this.docConcepts.get(docId);
    if (c === undefined) {
      c = this.conceptsOf(docId) ?? [];
      this.docConcepts.set(docId, c);
    }
    return c;
  }

  /** Multiplier that decays a stored weight to `now`. */
  decayAt(now: number): number {
    return Math.pow(2, -(now - EPOCH_MS) / HALF_LIFE_MS);
  }

  /** Decayed popularity of a document at `now` (weighted events). */
  popularity(docId: string, now = Date.now()): number {
    return (this.docPop.get(docId) ?? 0) * this.decayAt(now);
  }

  /**
   * Queries that the typed text leads to: the exact query, and known queries that continue it
   * (when the last word is still being typed), at most `max` of them, most typed first.
   */
  relatedQueries(typedKey: string, prefix: boolean, max = 64): string[] {
    if (!typedKey) return [];
    if (!prefix) return this.queryDoc.has(typedKey) ? [typedKey] : [];
    const keys = this.sorted();
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < typedKey) lo = mid + 1;
      else hi = mid;
    }
    const out: string[] = [];
    for (let i = lo; i < keys.length && keys[i]!.startsWith(typedKey); i++) {
      if (this.queryDoc.has(keys[i]!)) out.push(keys[i]!);
      if (out.length >= max * 8) break;
    }
    out.sort((a, b) => (this.mined.get(b)?.count ?? 0) - (this.mined.get(a)?.count ?? 0) || (a < b ? -1 : 1));
    return out.slice(0, max);
  }

  /** Documents chosen after the given queries: decayed weight per document, and the total. */
  queryDocuments(queries: readonly string[], now = Date.now()): { docs: Map<string, number>; total: number } {
    const decay = this.decayAt(now);
    const docs = new Map<string, number>();
    let total = 0;
    for (const q of queries) {
      const m = this.queryDoc.get(q);
      if (!m) continue;
      for (const [d, w] of m) add(docs, d, w * decay);
      total += (this.queryTotal.get(q) ?? 0) * decay;
    }
    return { docs, total };
  }

  /** Concepts the given queries lead to, as shares of their weight (summing to at most 1). */
  queryConcepts(queries: readonly string[]): Map<ConceptKey, number> {
    const out = new Map<ConceptKey, number>();
    let total = 0;
    for (const q of queries) total += this.queryTotal.get(q) ?? 0;
    if (total <= 0) return out;
    for (const q of queries) {
      const m = this.queryConcept.get(q);
      if (m) for (const [c, w] of m) add(out, c, w / total);
    }
    return out;
  }

  /** Whether the user has chosen anything yet. */
  hasUser(userId: string): boolean {
    return this.userDoc.has(userId);
  }

  /** A user's affinity: decayed weight per document, concept shares, and the decayed total. */
  user(userId: string, now = Date.now()): { docs: Map<string, number>; concepts: Map<ConceptKey, number>; total: number } | null {
    const docs = this.userDoc.get(userId);
    if (!docs) return null;
    const decay = this.decayAt(now);
    const total = this.userTotal.get(userId) ?? 0;
    const scaled = new Map<string, number>();
    for (const [d, w] of docs) scaled.set(d, w * decay);
    const concepts = new Map<ConceptKey, number>();
    if (total > 0) for (const [c, w] of this.userConcept.get(userId) ?? []) concepts.set(c, w / total);
    return { docs: scaled, concepts, total: total * decay };
  }

  /** Mined queries that start with `typedKey`, typed by at least `minCount` visitors, most typed first. */
  minedCompletions(typedKey: string, minCount: number, max: number): MinedQuery[] {
    if (!typedKey) return [];
    const keys = this.sorted();
    let lo = 0;
    let hi = keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid]! < typedKey) lo = mid + 1;
      else hi = mid;
    }
    const out: MinedQuery[] = [];
    for (let i = lo; i < keys.length && keys[i]!.startsWith(typedKey); i++) {
      const m = this.mined.get(keys[i]!)!;
      if (m.count >= minCount) out.push(m);
    }
    out.sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : 1));
    return out.slice(0, max);
  }

  /** The graph around a query: documents and concepts it leads to, heaviest first. */
  neighbors(query: string, max = 10, now = Date.now()): { documents: { id: string; weight: number }[]; concepts: { concept: ConceptKey; share: number }[] } {
    const qk = queryKey(query);
    const { docs } = this.queryDocuments(qk ? [qk] : [], now);
    const documents = [...docs].map(([id, weight]) => ({ id, weight })).sort((a, b) => b.weight - a.weight).slice(0, max);
    const concepts = [...this.queryConcepts(qk ? [qk] : [])].map(([concept, share]) => ({ concept, share })).sort((a, b) => b.share - a.share).slice(0, max);
    return { documents, concepts };
  }

  stats(): BehaviorStats {
    return { events: this.eventCount, documents: this.docPop.size, queries: this.mined.size, users: this.userDoc.size, concepts: this.docConcepts.size };
  }

  private sorted(): string[] {
    this.sortedKeys ??= [...this.mined.keys()].sort();
    return this.sortedKeys;
  }
}
