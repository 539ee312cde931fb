// Response bodies in the service's suggest contract (ARCHITECTURE.md "Contract decisions"), so
// a baseline's bytes on the wire match what the service sends for the same request.
import type { SuggestDocument } from '../../node/runtime/document.js';

export interface TypeaheadSuggestion {
  id: string;
  type: string;
  title: string;
  score: number;
}

export interface AutocompleteSuggestion extends TypeaheadSuggestion {
  subtitle: string | null;
  description: string | null;
  url: string | null;
  image: string | null;
  price: number | null;
  currency: string | null;
  metadata: { concepts: string[] };
}

export interface SuggestBody<S = TypeaheadSuggestion> {
  query: string;
  original_query: string;
  normalized_query: string;
  corrected_query: string | null;
  mode: string;
  index: string;
  took_ms: number;
  suggestions: S[];
  debug: null;
}

export function suggestBody<S>(query: string, index: string, mode: string, suggestions: S[], tookMs: number): SuggestBody<S> {
  const normalized = query.normalize('NFKC').toLowerCase().trim();
  return { query, original_query: query, normalized_query: normalized, corrected_query: null, mode, index, took_ms: tookMs, suggestions, debug: null };
}

export function typeaheadSuggestion(doc: SuggestDocument, score: number): TypeaheadSuggestion {
  return { id: doc.id, type: 'product', title: doc.title, score };
}

export function autocompleteSuggestion(doc: SuggestDocument, score: number): AutocompleteSuggestion {
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
  const price = doc.raw['price'];
  return {
    ...typeaheadSuggestion(doc, score),
    subtitle: str(doc.manufacturer),
    description: str(doc.desc),
    url: null,
    image: str(doc.raw['image']),
    price: typeof price === 'number' ? price : null,
    currency: typeof price === 'number' ? 'USD' : null,
    metadata: { concepts: typeof doc.raw['category'] === 'string' ? [doc.raw['category']] : [] },
  };
}

/** One line of JSON on stdout announcing the bound port; the driver waits for it. */
export function announceReady(server: string, port: number, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ msg: 'ready', server, port, pid: process.pid, ...extra })}\n`);
}
