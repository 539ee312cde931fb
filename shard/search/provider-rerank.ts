// fts_rerank with a real embedding model: when the node has an OpenAI-compatible embeddings
// endpoint (embedding-provider.ts), the lexical candidates (the same pool the built-in rerank
// uses) and the query are embedded by that model and re-scored as the built-in rerank does,
// score = lexical x (1 - w + w * max(0, cosine)). Both sides come from the same model, so no
// document vectors need to be stored for it. When the endpoint fails or is slower than its
// timeout (300 ms by default), the built-in rerank answers and debug.vector says why.
import type { SuggestEngine } from '../engine/engine.js';
import { EmbeddingProviderError, type EmbeddingProvider } from '../engine/embedding-provider.js';
import type { AutocompleteRequest, AutocompleteResult, VectorDebug } from '../engine/types.js';
import { dotRow } from '../engine/vector-index.js';

/** Lexical candidates re-scored, and the weight of similarity (as in the engine's fts_rerank). */
const POOL = 50;
const WEIGHT = 0.3;

/** Title vectors already fetched, so a popular candidate is embedded once (FIFO bounded). */
export class VectorCache {
  private readonly map = new Map<string, Float32Array>();
  constructor(private readonly max = 50_000) {}
  get(text: string): Float32Array | undefined {
    return this.map.get(text);
  }
  set(text: string, v: Float32Array): void {
    if (this.map.size >= this.max) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(text, v);
  }
  get size(): number {
    return this.map.size;
  }
}

export async function rerankWithProvider(engine: SuggestEngine, req: AutocompleteRequest, provider: EmbeddingProvider, cache: VectorCache): Promise<AutocompleteResult> {
  const started = performance.now();
  const limit = req.limit ?? 10;
  const pool = engine.autocomplete({ ...req, mode: 'fts_only', limit: Math.max(POOL, limit), benchmark: false });
  const queryText = pool.corrected_query ?? pool.normalized_query;
  if (pool.suggestions.length === 0 || queryText.trim() === '') return { ...pool, mode: 'fts_rerank', suggestions: [] };
  let qv: Float32Array;
  try {
    const missing = [...new Set(pool.suggestions.map((s) => s.title))].filter((t) => cache.get(t) === undefined);
    const vectors = await provider.embed([queryText, ...missing]);
    qv = vectors[0] as Float32Array;
    missing.forEach((t, i) => cache.set(t, vectors[i + 1] as Float32Array));
  } catch (err) {
    if (!(err instanceof EmbeddingProviderError)) throw err;
    // the built-in embedder answers instead
    const fallback = engine.autocomplete(req);
    if (fallback.debug) fallback.debug.vector.provider = `fallback: ${err.reason}`;
    return fallback;
  }
  const scored = pool.suggestions.map((s) => {
    const dv = cache.get(s.title);
    const cos = dv !== undefined && dv.length === qv.length ? dotRow(dv, 0, qv, qv.length) : 0;
    return { ...s, score: Math.round(s.score * (1 - WEIGHT + WEIGHT * Math.max(0, cos)) * 1e4) / 1e4 };
  });
  scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const out: AutocompleteResult = { ...pool, mode: 'fts_rerank', suggestions: scored.slice(0, limit) };
  if (req.debug === true && pool.debug) {
    const v: VectorDebug = { ...pool.debug.vector, embedder: provider.name, dimensions: qv.length, candidates: pool.suggestions.length, ms: Math.round((performance.now() - started) * 1000) / 1000, provider: 'ok' };
    out.debug = { vector: v };
  } else delete out.debug;
  return out;
}
