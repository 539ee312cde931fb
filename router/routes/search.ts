// Query surfaces: typeahead and autocomplete (GET and QUERY) answered by the search service
// (scatter-gather over the index's parts), and predict (router/predict-service.ts).
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { invalid, validationError } from '../../node/runtime/errors.js';
import { issuesOf } from '../request-validator.js';
import { defineRoute, type Req, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import type { SearchKind, SearchParams } from '../search-service.js';
import {
  AutocompleteResponse,
  Filters,
  PredictRequest,
  PredictResponse,
  QueryMethodBody,
  SearchIndex,
  SearchLimit,
  SearchMode,
  SearchText,
  TypeaheadResponse,
  VectorBackend,
} from '../schemas.js';
import { requireFeature } from '../tenant-context.js';
import { tenantOf } from './common.js';

const tags = ['search'];
const filtersCheck = TypeCompiler.Compile(Filters);

const Flag = (description: string) => Type.Boolean({ default: false, description });
const BypassHeader = Type.Object({ 'X-Bypass-Cache': Type.Optional(Type.String({ maxLength: 16, description: 'Any value skips cached responses.' })) });

const TypeaheadQuery = Type.Object({
  query: SearchText,
  index: SearchIndex,
  limit: SearchLimit,
  bypass_cache: Flag('Fetch fresh results.'),
  profile: Flag('Adds `debug.profile`: per-stage timings of the request and of each index part (never cached).'),
});

const AutocompleteQuery = Type.Object({
  query: SearchText,
  index: SearchIndex,
  limit: SearchLimit,
  mode: Type.Optional(SearchMode),
  debug: Flag('Adds the debug object.'),
  profile: Flag(
    'Adds `debug.profile` (even without debug=true; never cached): `resolve_ms`, `scatter_gather_ms`, `merge_ms`, `total_ms`, and per index part its round trip `ms` with the part\'s own breakdown: `thread` (`event loop` or `query thread N`), `queue_ms` (waiting for a query thread), `handoff_ms` (the rest of the trip to the thread and back), `fresh_wait_ms` (waiting for documents written just before to become searchable), `engine_ms`, and `stages`: milliseconds per engine stage (snapshot, analyze, correct, lexical_expand, lexical_strict, lexical_drop, lexical_loose, lexical, lexical_corrected, synonyms, embed, fuse, vector, rerank, debug, render, pins; typeahead: analyze, tables, spelling, rank, fallback), which add up to `engine_ms`.',
  ),
  bypass_cache: Flag('Fetch fresh results.'),
  filters: Type.Optional(Type.String({ maxLength: 4096, description: 'JSON object: field -> array of exact values, or a range object with gte, gt, lte, lt.' })),
  user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Personalization; paid plans only.' })),
  vector_backend: Type.Optional(VectorBackend),
  benchmark: Flag(
    'Runs the vector retrieval with both libraries (and an exact scan as reference) and reports `debug.vector.benchmark`: per library its time, whether its graphs answered, recall@k against the exact scan, and the overlap@k of the two. Implies a debug object; never cached.',
  ),
});

/** Parses the `filters` query parameter (a JSON string) and checks its shape. */
export function parseFilters(raw: string | undefined): Static<typeof Filters> | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return invalid(['query', 'filters'], 'filters must be a JSON object.', 'json_invalid');
  }
  if (!filtersCheck.Check(value)) throw validationError(issuesOf(filtersCheck, value, ['query', 'filters']));
  return value;
}

const bypassed = (flag: boolean, header: string | undefined) => flag || (header !== undefined && header !== '' && header !== '0' && header.toLowerCase() !== 'false');

function typeaheadParams(req: Req<unknown, Static<typeof TypeaheadQuery>, Static<typeof BypassHeader>>): SearchParams {
  return {
    kind: 'typeahead',
    tenant: tenantOf(req).id,
    index: req.query.index,
    query: req.query.query,
    limit: req.query.limit,
    profile: req.query.profile,
    bypassCache: bypassed(req.query.bypass_cache, req.headers['X-Bypass-Cache']),
  };
}

/** Autocomplete parameters; raises the 422 of bad filters and the 403 of a plan without personalization. */
function autocompleteParams(req: Req<unknown, Static<typeof AutocompleteQuery>, Static<typeof BypassHeader>>): SearchParams {
  const filters = parseFilters(req.query.filters);
  if (req.query.user_id !== undefined) requireFeature(tenantOf(req), 'personalization');
  return {
    kind: 'autocomplete',
    tenant: tenantOf(req).id,
    index: req.query.index,
    query: req.query.query,
    limit: req.query.limit,
    mode: req.query.mode,
    filters,
    debug: req.query.debug,
    profile: req.query.profile,
    bypassCache: bypassed(req.query.bypass_cache, req.headers['X-Bypass-Cache']),
    userId: req.query.user_id,
    vectorBackend: req.query.vector_backend,
    benchmark: req.query.benchmark,
  };
}

/** What every search route says of freshness (shard/search/engine-refresher.ts `settle`). */
const FRESHNESS =
  ' Freshness: an answer includes every document written before the request, except during a bulk load: a query waits at most SUGGEST_FRESH_WAIT_MS (250 ms) for documents still being indexed, then answers from those already searchable (`documents_indexing` in GET /v1/indexes/{index_id}/stats counts the rest); such answers are never cached.';

export function searchRoutes(deps: RouterDeps): Route[] {
  const queryMethod = (kind: SearchKind, path: string, operationId: string, summary: string, response: typeof TypeaheadResponse) =>
    defineRoute({
      method: 'QUERY',
      path,
      operationId,
      summary,
      description:
        'Safe, idempotent variant with a JSON body (application/json only: 415 otherwise; 400 `invalid_query_content` when the body is not a JSON object). ' +
        'Clients or proxies that cannot send the QUERY method may send POST with `X-HTTP-Method-Override: QUERY`.',
      tags,
      access: 'public',
      tenant: true,
      body: QueryMethodBody,
      response: { description: 'Suggestions.', schema: response },
      errors: ['index_not_found', 'unavailable'],
      handler: (req) =>
        deps.search.search({ kind, tenant: tenantOf(req).id, index: req.body.index ?? 'default', query: req.body.query, limit: req.body.limit ?? 10 }),
    });

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/typeahead',
      operationId: 'typeahead',
      summary: 'Prefix suggestions for search-as-you-type',
      description: 'Merchandising hide rules apply to its product suggestions; pins, boosts, buries and synonyms apply to autocomplete only.' + FRESHNESS,
      tags,
      access: 'public',
      tenant: true,
      query: TypeaheadQuery,
      headers: BypassHeader,
      response: { description: 'Suggestions (`{id, type, title, score}`).', schema: TypeaheadResponse },
      errors: ['index_not_found', 'unavailable'],
      handler: (req) => deps.search.search(typeaheadParams(req)),
      fast: (req) => deps.search.searchSync(typeaheadParams(req), req.frontTicket ?? null),
    }),
    queryMethod('typeahead', '/v1/typeahead', 'typeaheadQuery', 'Prefix suggestions (QUERY method)', TypeaheadResponse),

    defineRoute({
      method: 'GET',
      path: '/v1/autocomplete',
      operationId: 'autocomplete',
      summary: 'Ranked suggestions with modes, filters and personalization',
      description:
        'Modes: `fts_only` (lexical, BM25F with typo tolerance; the default when `mode` is omitted: the fastest mode, and on the Home Depot evaluation within 2 points of success@10 of the vector modes in every column, see BENCHMARKS.md), ' +
        '`vector_only` (nearest documents by embedding similarity), `hybrid` (union of lexical and vector candidates, score 0.8·lex/(lex+8) + 0.2·cosine), ' +
        '`fts_rerank` (lexical candidates re-ranked: score × (0.7 + 0.3·cosine)). Embeddings: the built-in hashed character n-gram embedder (256 dimensions, no download); ' +
        'on shard nodes configured with an OpenAI-compatible endpoint (SUGGEST_EMBEDDINGS_URL, _MODEL, _API_KEY, _DIMENSIONS), `fts_rerank` embeds the query and candidates with that model (300 ms timeout, then the built-in embedder; `debug.vector.provider`). ' +
        '`vector_backend`: `hnswlib` (default, unless the node sets `SUGGEST_VECTOR_BACKEND`) or `usearch`; graphs are built in the background after the first vector query on an index and an exact scan answers until they are complete (`debug.vector.method`). ' +
        '`user_id` needs a paid plan (403 `plan_required`). ' +
        'Synonyms of the index schema and merchandising rules apply (see IndexSchema and Merchandising); with `debug=true`, `debug.ranking` shows ' +
        '`{config_version, synonyms: [{from, to, query, hits, kept}], rules: [{id, action, status: applied|disabled|not_started|ended|query_mismatch|not_on_typeahead, hidden?}], pins: [{id, rule, position}]}`.' +
        FRESHNESS,
      tags,
      access: 'public',
      tenant: true,
      query: AutocompleteQuery,
      headers: BypassHeader,
      response: { description: 'Suggestions.', schema: AutocompleteResponse },
      errors: ['index_not_found', 'plan_required', 'unavailable'],
      handler: (req) => deps.search.search(autocompleteParams(req)),
      fast: (req) => deps.search.searchSync(autocompleteParams(req), req.frontTicket ?? null),
    }),
    queryMethod('autocomplete', '/v1/autocomplete', 'autocompleteQuery', 'Ranked suggestions (QUERY method)', AutocompleteResponse),

    defineRoute({
      method: 'POST',
      path: '/v1/predict',
      operationId: 'predict',
      summary: 'Predict the next action (Beta)',
      description:
        'Beta. Required: `query`. Defaults: index `default`, limit 5 alternatives (0 to 20), include.alternatives true, include.supporting_suggestions true, ' +
        "include.debug false, allowed_types = the schema's predict.default_types, else every type. An index whose schema sets predict.enabled to false answers " +
        '409 `predict_disabled`; an index without a predict object predicts with every type. The query is normalized and spell-corrected like typeahead; ' +
        'candidates come from the precomputed suggestion tables (brand -> destination, category -> category, phrases -> intent, products) and from document ' +
        "retrieval (products, or the type a document declares in raw.predict_type), plus the schema's intent_rules. `confidence` is a calibrated probability " +
        '(logistic model fitted on judged queries, the primary prediction recalibrated as the best of its candidates; no alternative above it; see BENCHMARKS.md). `filters` restrict the documents considered; `context` is accepted and reported in debug. ' +
        '`user_id` needs a paid plan (403 `plan_required`).',
      tags,
      beta: true,
      access: 'public',
      tenant: true,
      body: PredictRequest,
      response: { description: 'The primary prediction and alternatives.', schema: PredictResponse },
      errors: ['index_not_found', 'plan_required', 'predict_disabled', 'unavailable'],
      handler(req) {
        if (req.body.user_id !== undefined) requireFeature(tenantOf(req), 'personalization');
        return deps.predict.predict({
          tenant: tenantOf(req).id,
          index: req.body.index ?? 'default',
          query: req.body.query,
          limit: req.body.limit,
          userId: req.body.user_id,
          filters: req.body.filters,
          context: req.body.context,
          allowedTypes: req.body.allowed_types,
          include: req.body.include,
        });
      },
    }),
  ];
}
