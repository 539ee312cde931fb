// FlexSearch set up for search-as-you-type as its README describes it: the "forward" tokenizer
// (every word indexed by each of its prefixes) and `suggest: true` at query time, so a result
// is still returned when one word of the query matches nothing (without it one unknown word
// empties the whole result). Encoder: the library default (case and accent folding, letter
// deduplication). Measured on the Home Depot set (see loadtest/README.md), the phonetic
// LatinBalance / LatinAdvanced encoders and `context: true` do not score better.
import { Index } from 'flexsearch';
import { packageVersion } from './package-version.js';
import type { PeerEngine, TitledDocument } from './peer-engine.js';

const VERSION = packageVersion('flexsearch');

export class FlexSearchPeer implements PeerEngine {
  readonly name = 'flexsearch';
  readonly config: Record<string, unknown>;
  private readonly index: Index;
  /** FlexSearch keeps numeric ids cheapest; position -> our id */
  private readonly ids: string[] = [];

  /** `cacheSize` > 0 turns on FlexSearch's own query cache (used by `searchPositions(.., true)`) */
  constructor(private readonly cacheSize = 0) {
    this.config = { version: VERSION, tokenize: 'forward', encoder: 'default', search: { suggest: true }, cache: cacheSize };
    this.index = new Index({ tokenize: 'forward', ...(cacheSize > 0 ? { cache: cacheSize } : {}) });
  }

  async add(docs: readonly TitledDocument[]): Promise<void> {
    for (const doc of docs) {
      this.index.add(this.ids.length, doc.title);
      this.ids.push(doc.id);
    }
  }

  /** positions of the matches, best first (synchronous: the HTTP baseline calls it per request) */
  searchPositions(text: string, limit: number, cached = false): number[] {
    const opts = { limit, suggest: true };
    return (cached && this.cacheSize > 0 ? this.index.searchCache(text, opts) : this.index.search(text, opts)) as number[];
  }

  async search(text: string, limit: number): Promise<string[]> {
    return this.searchPositions(text, limit).map((p) => this.ids[p]!);
  }
}
