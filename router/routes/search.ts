// Query surfaces: typeahead and autocomplete (GET and QUERY) answered by the search service
// (scatter-gather over the index's parts, or the tenant's connected search API in proxy mode),
// and predict (router/predict-service.ts).
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { invalid, validationError } from '../../node/runtime/errors.js';
import { nonFiniteAt, scanJson } from '../../node/runtime/json-scan.js';
import { BEYOND_DOUBLE, nonFiniteNumber } from '../json-body.js';
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
import type { SearchApi } from '../search-proxy.js';
import { requireFeature, type TenantContext } from '../tenant-context.js';
import { tenantOf } from './common.js';

const tags = ['search'];
const filtersCheck = TypeCompiler.Compile(Filters);
const RANGE_OPS = new Set(['gte', 'gt', 'lte', 'lt']);

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
    'Adds `debug.profile` (even without debug=true; never cached): `resolve_ms`, `scatter_gather_ms`, `merge_ms`, `total_ms`, and per index part its round trip `ms` with the part\'s own breakdown: `thread` (`event loop` or `query thread N`), `queue_ms` (waiting for a query thread), `handoff_ms` (the rest of the trip to the thread and back), `fresh_wait_ms` (waiting for documents written just before to become searchable), `engine_ms`, and `stages`: milliseconds per engine stage (snapshot, analyze, correct, lexical_expand, lexical_strict, lexical_drop, lexical_loose, lexical, lexical_corrected, lexical_regrouped, synonyms, embed, fuse, vector, rerank, debug, render, pins; typeahead: analyze, tables, spelling, rank, fallback), which add up to `engine_ms`.',
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
  if (!filtersCheck.Check(value)) {
    // a bound of 1e309 parses to Infinity: said as the engine says a bound that is not a number
    const infinite = scanJson(value, Infinity).nonFinite ? nonFiniteAt(value) : null;
    if (infinite !== null) {
      const op = infinite[infinite.length - 1];
      const what = typeof op === 'string' && RANGE_OPS.has(op) ? `${op} needs a finite number` : 'Filter values must be finite numbers';
      nonFiniteNumber(['query', 'filters', ...infinite], `${what}; this one is ${BEYOND_DOUBLE}.`);
    }
    throw validationError(issuesOf(filtersCheck, value, ['query', 'filters']));
  }
  return value;
}

/** The connected search API when the tenant is in proxy mode (null: none set), else undefined: one field read on the hot path. */
const proxyOf = (t: TenantContext): SearchApi | null | undefined => (t.record.mode === 'proxy' ? t.record.search_api : undefined);

const bypassed = (flag: boolean, header: string | undefined) => flag || (header !== undefined && header !== '' && header !== '0' && header.toLowerCase() !== 'false');

function typeaheadParams(req: Req<unknown, Static<typeof TypeaheadQuery>, Static<typeof BypassHeader>>): SearchParams {
  const tenant = tenantOf(req);
  return {
    kind: 'typeahead',
    tenant: tenant.id,
    proxy: proxyOf(tenant),
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
  const tenant = tenantOf(req);
  if (req.query.user_id !== undefined) requireFeature(tenant, 'personalization');
  return {
    kind: 'autocomplete',
    tenant: tenant.id,
    proxy: proxyOf(tenant),
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
  ' Freshness: an answer includes every document written before the request, except during a bulk load: a query waits at most SUGGEST_FRESH_WAIT_MS (250 ms) for documents still being indexed, then answers from those already searchable (`documents_indexing` in GET /v1/indexes/{index_id}/stats counts the rest); and while an index part\'s search engine is first loaded (a large index just filled, seconds), a query waits at most SUGGEST_LOAD_WAIT_MS (2,000 ms) for it, then answers without that part\'s documents. Such answers carry `documents_indexing` and are never cached.';

/** What typeahead and autocomplete say of proxy mode (search-proxy.ts). */
const PROXY =
  ' Proxy mode: for a tenant whose mode is `proxy`, the request is forwarded to its connected search API (`search_api` of PATCH /v1/admin/tenants/{tenant_id}) and the index is not read: ' +
  '`GET {search_api.url}` with the URL\'s own query parameters kept and `q` (the query), `limit` and `index` (as asked, `default` when omitted) set; headers: the configured `headers`, `Authorization: Bearer {api_key}` when an api_key is set, `Accept: application/json`. ' +
  'Synonyms, merchandising, personalization, graph ranking and spell correction are not applied (`corrected_query` is null, `normalized_query` is the query as sent). ' +
  'The answer must be 2xx JSON: an array of results, or an object with the first array under `results`, `hits`, `items`, `products`, `documents`, `data` or `suggestions` (also one level down, as Elasticsearch\'s `hits.hits`). ' +
  'The whole exchange has SUGGEST_PROXY_TIMEOUT_MS (2,000 ms); redirects are not followed; the body is read up to 2 MB. ' +
  'Hosts resolving to loopback, private, link-local, unique-local, unspecified or cloud metadata addresses are refused unless the service runs with SUGGEST_PROXY_ALLOW_PRIVATE=1. ' +
  'Any failure (unreachable, timeout, refused address, redirect, non-2xx status, not JSON, no result list, too large) answers 502 `upstream_unavailable` naming what went wrong, never the URL or the api_key. ' +
  'Proxied answers are never cached by this service (`bypass_cache` changes nothing): each request is forwarded; `suggest_proxy_requests_total{kind, outcome}` at /metrics counts them.';

export function searchRoutes(deps: RouterDeps): Route[] {
  const queryMethod = (kind: SearchKind, path: string, operationId: string, summary: string, response: typeof TypeaheadResponse) =>
    defineRoute({
      method: 'QUERY',
      path,
      operationId,
      summary,
      description:
        'Safe, idempotent variant with a JSON body (application/json only: 415 otherwise; 400 `invalid_query_content` when the body is not a JSON object). ' +
        'Clients or proxies that cannot send the QUERY method may send POST with `X-HTTP-Method-Override: QUERY`. ' +
        'A tenant in proxy mode is answered by its connected search API, as the GET route describes.',
      tags,
      access: 'public',
      tenant: true,
      body: QueryMethodBody,
      response: { description: 'Suggestions.', schema: response },
      errors: ['index_not_found', 'unavailable', 'upstream_unavailable'],
      handler: (req) => {
        const tenant = tenantOf(req);
        return deps.search.search({ kind, tenant: tenant.id, proxy: proxyOf(tenant), index: req.body.index ?? 'default', query: req.body.query, limit: req.body.limit ?? 10 });
      },
    });

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/typeahead',
      operationId: 'typeahead',
      summary: 'Prefix suggestions for search-as-you-type',
      description:
        'Completions mined from the index (`query` phrases of titles, `brand`, `category`, `attribute` values) of the typed words, the last one a prefix, typo-tolerant, then `product` suggestions: the products with every word (of the spelling\'s reading when it splits a glued word or joins a split one, "doorknob" -> "door knob", and none has every word as typed); when there are none, or only one or two, those with every word but one (words such as "for" or "with" left out first; a last word of one or two letters left out), and when none has that, the words before the last, each left out in turn, scored below anything with every word; while the last word has one or two letters, a short list goes on with the products of the words before it. A mixed number is one word, typed "1-1/2" or "1 1/2", and the same size as its decimal ("2-1/2" ~ "2.5"); numbers are matched as typed, without typo tolerance.' +
        ' Merchandising hide rules apply to its product suggestions; pins, boosts, buries and synonyms apply to autocomplete only.' +
        FRESHNESS +
        PROXY +
        ' Typeahead in proxy mode: a result that is a plain string, or an object with `suggestion`, `query` or `text`, becomes a query completion `{id: "q:<lower-case text>", type: "query"}`; any other object with a title becomes `{id, type: "product", title}`; deduplicated without case, at most `limit`, score 1/rank; `mode` stays `typeahead`.',
      tags,
      access: 'public',
      tenant: true,
      query: TypeaheadQuery,
      headers: BypassHeader,
      response: { description: 'Suggestions (`{id, type, title, score}`).', schema: TypeaheadResponse },
      errors: ['index_not_found', 'unavailable', 'upstream_unavailable'],
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
        FRESHNESS +
        PROXY +
        ' Autocomplete in proxy mode: `mode` is `proxy`; each result object becomes `{id, type: "product", title, subtitle, description, url, image, price, currency, score, metadata: {concepts}}` in the API\'s order (score 1/rank), ' +
        'with fields read by name without case (those of a nested `_source` or `document` object too): id from id, _id, objectID, sku, product_id; title from title, name, product_name, label; subtitle from subtitle, category, brand; description from description, desc, summary (300 characters); ' +
        'url, image, price and currency by the raw-attribute names of hosted documents (url, link, product_url...; image, image_url, thumbnail...; price, sale_price...; currency, currency_code); results without a title are skipped. ' +
        '`mode`, `filters`, `user_id`, `vector_backend`, `debug`, `profile` and `benchmark` are checked as usual but not applied (`debug` is null).',
      tags,
      access: 'public',
      tenant: true,
      query: AutocompleteQuery,
      headers: BypassHeader,
      response: { description: 'Suggestions.', schema: AutocompleteResponse },
      errors: ['index_not_found', 'plan_required', 'unavailable', 'upstream_unavailable'],
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
