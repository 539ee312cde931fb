// The service as a relevance engine, over HTTP like any client: autocomplete (product
// suggestions, in any of its modes; `fts_only` unless told) or typeahead (suggestions mined from the documents, which may be product
// titles or other completions).
//
// Mapping an answer back to products: a suggestion whose id is a product id stands for that
// product; otherwise, when its title equals a product title (case and spacing folded), it
// stands for every product with that title; otherwise it cannot be judged (counted in
// `unjudged_positions`) and is never relevant.
import type { RankedPosition } from './metrics.js';
import type { TitledDocument } from '../peers/peer-engine.js';
import { ServiceError } from '../load/provision-service.js';

export type ServiceRoute = 'autocomplete' | 'typeahead';

export const foldTitle = (t: string) => t.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();

export interface SuggestionMatchCounts {
  positions: number;
  by_id: number;
  by_title: number;
  unjudged_positions: number;
}

export class ServiceEngine {
  readonly counts: SuggestionMatchCounts = { positions: 0, by_id: 0, by_title: 0, unjudged_positions: 0 };
  private readonly ids: Set<string>;
  private readonly byTitle = new Map<string, string[]>();

  constructor(
    readonly name: string,
    private readonly baseUrl: string,
    private readonly key: string,
    private readonly index: string,
    private readonly route: ServiceRoute,
    documents: readonly TitledDocument[],
    private readonly mode = 'fts_only',
  ) {
    this.ids = new Set(documents.map((d) => d.id));
    for (const d of documents) {
      const t = foldTitle(d.title);
      const list = this.byTitle.get(t);
      if (list) list.push(d.id);
      else this.byTitle.set(t, [d.id]);
    }
  }

  get config(): Record<string, unknown> {
    return { route: `/v1/${this.route}`, params: this.route === 'autocomplete' ? { mode: this.mode } : {}, base_url: this.baseUrl, index: this.index };
  }

  /**
   * Waits until the index's ANN graphs are complete (the vector modes answer by exact scan until
   * then, which is slower but not what a warm service returns).
   */
  async waitForVectorGraphs(timeoutMs = 600_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const params = new URLSearchParams({ query: 'a b', index: this.index, mode: 'vector_only', debug: 'true' });
      const res = await fetch(`${this.baseUrl}/v1/autocomplete?${params}`, { headers: { 'x-api-key': this.key } });
      const body = (await res.json()) as { debug?: { vector?: { graph?: { ready?: boolean } } } };
      if (body.debug?.vector?.graph?.ready === true) return;
      if (Date.now() > deadline) throw new Error('the vector graphs were not built in time');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  async search(text: string, limit: number): Promise<RankedPosition[]> {
    const params = new URLSearchParams({ query: text, index: this.index, limit: String(limit) });
    if (this.route === 'autocomplete') params.set('mode', this.mode);
    const path = `/v1/${this.route}?${params}`;
    const res = await fetch(this.baseUrl + path, { headers: { 'x-api-key': this.key } });
    const body = await res.text();
    if (res.status !== 200) throw new ServiceError(`GET ${path}`, res.status, body);
    const suggestions = (JSON.parse(body) as { suggestions: { id: string; title: string }[] }).suggestions;
    return suggestions.map((s) => this.positionOf(s));
  }

  positionOf(s: { id: string; title: string }): RankedPosition {
    this.counts.positions++;
    if (this.ids.has(s.id)) {
      this.counts.by_id++;
      return s.id;
    }
    const same = this.byTitle.get(foldTitle(s.title));
    if (same) {
      this.counts.by_title++;
      return same;
    }
    this.counts.unjudged_positions++;
    return [];
  }
}
