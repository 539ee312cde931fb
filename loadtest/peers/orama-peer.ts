// Orama with its documented typo tolerance, `tolerance: 1` (one Levenshtein edit per term), and
// `threshold: 0` (only documents that match every term of the query; Orama's default, 1, also
// returns documents matching any single term, and its BM25 then ranks one-term prefix matches
// such as "Bracketron" above two-term exact ones). Every term matches as a prefix by default
// (`exact: false`). The alternatives measured on the Home Depot set are in loadtest/README.md.
import { create, insertMultiple, search, type AnyOrama } from '@orama/orama';
import { packageVersion } from './package-version.js';
import type { PeerEngine, TitledDocument } from './peer-engine.js';

const VERSION = packageVersion('@orama/orama');
const SCHEMA = { id: 'string', title: 'string' } as const;

export class OramaPeer implements PeerEngine {
  readonly name = 'orama';
  readonly config: Record<string, unknown>;
  private readonly db: AnyOrama;

  constructor(
    private readonly tolerance = 1,
    private readonly threshold = 0,
  ) {
    this.config = { version: VERSION, schema: SCHEMA, search: { properties: ['title'], tolerance, threshold } };
    this.db = create({ schema: SCHEMA });
  }

  async add(docs: readonly TitledDocument[]): Promise<void> {
    await insertMultiple(this.db, docs.map((d) => ({ id: d.id, title: d.title })), 1000);
  }

  async search(text: string, limit: number): Promise<string[]> {
    const res = await search(this.db, { term: text, properties: ['title'], limit, tolerance: this.tolerance, threshold: this.threshold });
    return res.hits.map((h) => h.id);
  }
}
