// MiniSearch with the options its README gives for search-as-you-type: prefix search and fuzzy
// matching (fuzzy: 0.2 = edit distance up to 20% of the term length), terms combined with OR
// and ranked by its BM25+ score (defaults). Only titles are indexed, so there is no other
// field to weigh a title boost against.
import MiniSearch from 'minisearch';
import { packageVersion } from './package-version.js';
import type { PeerEngine, TitledDocument } from './peer-engine.js';

const VERSION = packageVersion('minisearch');
const SEARCH_OPTIONS = { prefix: true, fuzzy: 0.2 };

export class MiniSearchPeer implements PeerEngine {
  readonly name = 'minisearch';
  readonly config = { version: VERSION, fields: ['title'], searchOptions: SEARCH_OPTIONS };
  private readonly mini = new MiniSearch<TitledDocument>({ fields: ['title'], idField: 'id', searchOptions: SEARCH_OPTIONS });

  async add(docs: readonly TitledDocument[]): Promise<void> {
    this.mini.addAll(docs);
  }

  async search(text: string, limit: number): Promise<string[]> {
    return this.mini
      .search(text)
      .slice(0, limit)
      .map((r) => String(r.id));
  }
}
