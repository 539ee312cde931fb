// A reasonable peer built from popular parts: Fastify serving GET /v1/typeahead and
// GET /v1/autocomplete over a FlexSearch index of the same catalogue titles the service gets,
// with the same parameters, status codes for bad input (422) and unknown index (404), the same
// response shape, and a check of the `x-api-key` header. Configured as each project documents
// for speed: Fastify with JSON schemas for the query string and the response (compiled
// validation and serialization), logging off; FlexSearch as in peers/flexsearch-peer.ts, with
// its query cache on unless the request asks to bypass caches (as the service's cache does).
//
//   node dist/loadtest/baselines/fastify-flexsearch-server.js [--port 0] [--host 127.0.0.1]
//        [--index products] [--key KEY] [--catalog bestbuy,homedepot]
// prints {"msg":"ready","server":"fastify-flexsearch","port":N,...} on stdout once listening.
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyError } from 'fastify';
import type { SuggestDocument } from '../../node/runtime/document.js';
import { loadCatalogSpec } from '../data/catalog.js';
import { FlexSearchPeer } from '../peers/flexsearch-peer.js';
import { announceReady, autocompleteSuggestion, suggestBody, typeaheadSuggestion } from './suggest-body.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    index: { type: 'string', default: 'products' },
    key: { type: 'string' },
    catalog: { type: 'string', default: 'bestbuy,homedepot' },
    'cache-size': { type: 'string', default: '1000' },
  },
});

const started = performance.now();
const docs: SuggestDocument[] = loadCatalogSpec(values.catalog);
const engine = new FlexSearchPeer(Number(values['cache-size']));
await engine.add(docs);
const indexedMs = performance.now() - started;

const nullable = (type: 'string' | 'number') => ({ type: [type, 'null'] });
const typeaheadItem = {
  type: 'object',
  properties: { id: { type: 'string' }, type: { type: 'string' }, title: { type: 'string' }, score: { type: 'number' } },
};
const autocompleteItem = {
  type: 'object',
  properties: {
    ...typeaheadItem.properties,
    subtitle: nullable('string'),
    description: nullable('string'),
    url: nullable('string'),
    image: nullable('string'),
    price: nullable('number'),
    currency: nullable('string'),
    metadata: { type: 'object', properties: { concepts: { type: 'array', items: { type: 'string' } } } },
  },
};
const responseSchema = (item: object) => ({
  200: {
    type: 'object',
    properties: {
      query: { type: 'string' },
      original_query: { type: 'string' },
      normalized_query: { type: 'string' },
      corrected_query: nullable('string'),
      mode: { type: 'string' },
      index: { type: 'string' },
      took_ms: { type: 'number' },
      suggestions: { type: 'array', items: item },
      debug: { type: 'null' },
    },
  },
});
const commonQuery = {
  query: { type: 'string', minLength: 1, maxLength: 512 },
  index: { type: 'string', default: 'default' },
  limit: { type: 'integer', minimum: 1, maximum: 50, default: 10 },
  bypass_cache: { type: 'boolean', default: false },
};
const MODES = ['fts_only', 'vector_only', 'hybrid', 'fts_rerank'];

interface SearchQuery {
  query: string;
  index: string;
  limit: number;
  bypass_cache: boolean;
  mode?: string;
}

const app = Fastify({ logger: false });

app.addHook('onRequest', async (req, reply) => {
  const key = req.headers['x-api-key'];
  if (typeof key !== 'string' || key === '' || (values.key !== undefined && key !== values.key)) {
    return reply.code(401).send({ detail: 'Send a valid API key in the x-api-key header.', code: 'unauthorized' });
  }
  return undefined;
});

app.setErrorHandler((err: FastifyError, _req, reply) => {
  if (err.validation) {
    const detail = err.validation.map((v) => ({ loc: ['query', v.instancePath.replace(/^\//, '') || String(v.params['missingProperty'] ?? '')], msg: v.message ?? 'invalid', type: v.keyword }));
    return reply.code(422).send({ detail });
  }
  return reply.code(500).send({ detail: 'Internal error.', code: 'internal' });
});

function lookup(q: SearchQuery): { found: SuggestDocument[]; tookMs: number } | undefined {
  if (q.index !== values.index) return undefined;
  const t0 = performance.now();
  const found = engine.searchPositions(q.query, q.limit, !q.bypass_cache).map((p) => docs[p]!);
  return { found, tookMs: performance.now() - t0 };
}

const notFound = (index: string) => ({ detail: `Index "${index}" does not exist.`, code: 'index_not_found' });
const scoreAt = (i: number, n: number) => 1 - i / Math.max(n, 1);

app.get<{ Querystring: SearchQuery }>(
  '/v1/typeahead',
  { schema: { querystring: { type: 'object', required: ['query'], properties: commonQuery }, response: responseSchema(typeaheadItem) } },
  async (req, reply) => {
    const hit = lookup(req.query);
    if (!hit) return reply.code(404).send(notFound(req.query.index));
    return suggestBody(req.query.query, req.query.index, 'typeahead', hit.found.map((d, i) => typeaheadSuggestion(d, scoreAt(i, hit.found.length))), hit.tookMs);
  },
);

app.get<{ Querystring: SearchQuery }>(
  '/v1/autocomplete',
  {
    schema: {
      querystring: { type: 'object', required: ['query'], properties: { ...commonQuery, mode: { type: 'string', enum: MODES } } },
      response: responseSchema(autocompleteItem),
    },
  },
  async (req, reply) => {
    const hit = lookup(req.query);
    if (!hit) return reply.code(404).send(notFound(req.query.index));
    // lexical only: whatever mode is asked, this peer has no vectors
    return suggestBody(req.query.query, req.query.index, 'fts_only', hit.found.map((d, i) => autocompleteSuggestion(d, scoreAt(i, hit.found.length))), hit.tookMs);
  },
);

const address = await app.listen({ host: values.host, port: Number(values.port) });
announceReady('fastify-flexsearch', Number(new URL(address).port), { documents: docs.length, index: values.index, index_build_ms: Math.round(indexedMs) });
const close = () => {
  void app.close().then(() => process.exit(0));
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
