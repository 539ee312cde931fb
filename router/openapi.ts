// The OpenAPI 3.1 document, generated from the route table at startup: every operation with its
// parameters, body, 200 response and the catalogue errors it can answer (grouped by status, each
// with the shared error body), the x-api-key security scheme, and named component schemas.
// The QUERY method has no slot in OpenAPI 3.1 path items: it is published as `x-query` plus the
// equivalent POST with `X-HTTP-Method-Override: QUERY`.
import type { TObject, TSchema } from '@sinclair/typebox';
import YAML from 'yaml';
import { ERRORS, type ErrorCode } from '../node/runtime/errors.js';
import type { CompiledRoute } from './compiled-route.js';
import { MAX_REQUEST_HEAD_BYTES } from './http-server.js';
import { MAX_QUERY_STRING } from './query-string.js';
import type { Contract } from './router-deps.js';
import { ErrorBody, NAMED_SCHEMAS, ValidationErrorBody } from './schemas.js';

export const API_VERSION = '0.1.0';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const TAG_DESCRIPTIONS: Record<string, string> = {
  search: 'Typeahead, autocomplete and prediction.',
  indexes: 'Index administration: create, list, delete, stats, schema, merchandising, aliases.',
  documents: 'Documents of an index.',
  ingestion: 'Bulk ingestion: uploads, imports, cloud uploads, ingestion jobs.',
  'ingestion jobs': 'Background ingestion jobs.',
  'export jobs': 'Background export jobs.',
  export: 'Export of an index.',
  integrations: 'Integrations with external systems (paid plans).',
  events: 'Engagement events.',
  discovery: 'The contract and Agentic Resource Discovery documents.',
  administration: 'Tenants and keys (admin keys only).',
  operations: 'Health, readiness and metrics.',
};

/** Every catalogue code a route can answer: the ones of its kind plus the ones it declares. */
export function documentedErrors(route: CompiledRoute): ErrorCode[] {
  const s = route.spec;
  const codes = new Set<ErrorCode>(['validation_failed', 'internal']);
  if (s.access !== 'none') {
    codes.add('missing_api_key');
    codes.add('unknown_api_key');
    codes.add('rate_limited');
  }
  if (s.access === 'private' || s.access === 'admin') codes.add('forbidden_key_kind');
  if (s.tenant) {
    codes.add('forbidden_tenant');
    codes.add('tenant_not_found');
    codes.add('tenant_mismatch');
  }
  if (route.bodyMode !== 'none') {
    codes.add('payload_too_large');
    codes.add('unsupported_media_type');
  }
  if (route.bodyMode === 'query') codes.add('invalid_query_content');
  // a header the route reads whose value is not text (http-server.ts)
  if (s.access !== 'none' || route.bodyMode !== 'none' || Object.keys(route.headerSchema?.properties ?? {}).length > 0) codes.add('bad_request');
  if (s.feature) codes.add('plan_required');
  if (s.notImplemented !== undefined || !s.handler) codes.add('not_implemented');
  for (const c of s.errors ?? []) codes.add(c);
  // a route that reads shard data may meet a partition mid-move
  if (codes.has('unavailable')) codes.add('wrong_owner');
  // keys, tenants and index metadata live in the coordination service: in a cluster, every
  // route behind a key answers 503 while etcd is out of reach
  if (s.access !== 'none') codes.add('unavailable');
  return [...codes];
}

/** Plain JSON Schema of a TypeBox schema; named schemas become `$ref`s into `components`. */
function convert(schema: unknown, components: Record<string, Json>, isRoot = false): Json {
  if (Array.isArray(schema)) return schema.map((s) => convert(s, components));
  if (typeof schema !== 'object' || schema === null) return schema as Json;
  const name = NAMED_SCHEMAS.get(schema as TSchema);
  if (name !== undefined && !isRoot) {
    if (!(name in components)) {
      components[name] = {}; // placeholder first: guards against self-reference
      components[name] = convert(schema, components, true);
    }
    return { $ref: `#/components/schemas/${name}` };
  }
  const out: Record<string, Json> = {};
  for (const k of Object.keys(schema)) out[k] = convert((schema as Record<string, unknown>)[k], components);
  return out;
}

function parameters(where: 'path' | 'query' | 'header', schema: TObject | undefined, components: Record<string, Json>): Json[] {
  if (!schema) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, s]) => {
    const { description, ...rest } = convert(s, components) as Record<string, Json>;
    const p: Record<string, Json> = { name, in: where, required: where === 'path' || required.has(name), schema: rest };
    if (description !== undefined) p.description = description;
    return p;
  });
}

function operation(route: CompiledRoute, components: Record<string, Json>, viaPost: boolean): Record<string, Json> {
  const s = route.spec;
  const params = [...parameters('path', s.params, components), ...parameters('query', route.querySchema, components), ...parameters('header', route.headerSchema, components)];
  if (viaPost) params.push({ name: 'X-HTTP-Method-Override', in: 'header', required: true, schema: { type: 'string', enum: ['QUERY'] }, description: 'Routes this POST as the QUERY method.' });
  const notes: string[] = [];
  if (s.beta) notes.push('Beta: the contract may change.');
  if (s.notImplemented !== undefined || !s.handler || s.errors?.includes('not_implemented')) {
    notes.push('Not available in this version: after validation and authorization the route answers 501 `not_implemented`.');
  }
  if (s.description) notes.push(s.description);
  const op: Record<string, Json> = {
    operationId: viaPost ? `${s.operationId}ViaPost` : s.operationId,
    summary: s.summary,
    tags: s.tags,
  };
  if (notes.length > 0) op.description = notes.join('\n\n');
  if (params.length > 0) op.parameters = params;
  if (route.bodyMode === 'multipart') {
    op.requestBody = {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: ['file'],
            properties: {
              file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The file (one part only): CSV with a header row, a JSON array of documents or `{"documents": [...]}`, or JSONL.' },
              format: { type: 'string', enum: ['csv', 'json', 'jsonl'], description: 'Otherwise taken from the file name, else the part content type, else the first character.' },
            },
          },
        },
      },
    };
  } else if (route.bodyMode === 'stream') {
    op.requestBody = { required: true, content: { 'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } };
  } else if (route.bodyMode !== 'none' && s.body) {
    op.requestBody = { required: !route.bodyOptional, content: { 'application/json': { schema: convert(s.body, components) } } };
  }
  const ok = s.response;
  const okContent: Record<string, Json> = {};
  okContent[ok.contentType ?? 'application/json'] = ok.schema ? { schema: convert(ok.schema, components) } : {};
  const responses: Record<string, Json> = { '200': { description: ok.description, content: okContent } };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of documentedErrors(route)) {
    const status = ERRORS[code].http;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const codes = byStatus.get(status)!;
    const body = status === 422 ? ValidationErrorBody : ErrorBody;
    const reserved = status === 429 ? ' Reserved: this version enforces no rate limit.' : '';
    responses[String(status)] = {
      description: `${status === 422 ? 'Invalid parameter or body' : 'Error'} (codes: ${codes.join(', ')}).${reserved}`,
      'x-error-codes': codes,
      content: { 'application/json': { schema: convert(body, components) } },
    };
  }
  op.responses = responses;
  if (s.access === 'none') op.security = [];
  if (s.beta) op['x-beta'] = true;
  return op;
}

/** The OpenAPI document of `routes`. */
export function buildOpenApi(routes: CompiledRoute[]): Record<string, Json> {
  const components: Record<string, Json> = {};
  const paths: Record<string, Record<string, Json>> = {};
  const tags = new Set<string>();
  for (const route of routes) {
    const s = route.spec;
    const item = (paths[s.path] ??= {});
    for (const t of s.tags) tags.add(t);
    if (s.method === 'QUERY') {
      item['x-query'] = operation(route, components, false);
      item.post = operation(route, components, true);
    } else {
      item[s.method.toLowerCase()] = operation(route, components, false);
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Search Suggestion Service',
      version: API_VERSION,
      description:
        'Multi-tenant typeahead, autocomplete and action prediction with ingestion, export and integrations. ' +
        'Every request but the contract, discovery and health routes carries an API key in `x-api-key`. ' +
        'Errors: 422 has `{"detail": [{"loc", "msg", "type"}]}`; every other error `{"detail": "...", "code": "..."}`. ' +
        'An unknown path answers 404 `not_found`, a known path with another method 405 `method_not_allowed` (with an Allow header). ' +
        'Every GET operation also answers HEAD: the same status and headers, Content-Length included when the GET body has one, and no body. ' +
        'A header an operation reads (`x-api-key`, `content-type` where a body is read, its declared headers) whose value is not valid UTF-8 text, or an empty `x-api-key` or `content-type`, answers 400 `bad_request` naming the header. ' +
        '`x-api-key`, `X-Tenant-Id` or another declared header sent more than once answers 422 (`type` `repeated`, `loc` naming the header): the service never picks one of several credentials. ' +
        'Bytes that are not UTF-8 in the path or the query string answer 422 (`type` `url_encoding`), whether sent percent-encoded (`%FF`) or raw. ' +
        'Query parameters an operation does not declare are ignored. ' +
        'Numbers in JSON bodies must be finite: a literal beyond the range of a double (`1e309`) answers 422 (`type` `finite_number`) at its location instead of being stored as null. ' +
        `Request heads: keep the request line and headers within ${MAX_REQUEST_HEAD_BYTES.toLocaleString('en-US')} bytes. The HTTP server takes a larger head only when it arrives in one network read (over loopback, heads of about 64 to 128 KB) and otherwise closes the connection without an answer (no 431): send a long query in the body of the QUERY method rather than in the query string, which is refused over ${MAX_QUERY_STRING.toLocaleString('en-US')} characters (422). ` +
        'Operations under `x-query` use the HTTP QUERY method, which this server receives as POST with `X-HTTP-Method-Override: QUERY` (the `post` operation of the same path): a request line with the QUERY method itself is closed by the HTTP server before the service sees it.',
    },
    tags: [...tags].sort().map((name) => ({ name, description: TAG_DESCRIPTIONS[name] ?? name })),
    security: [{ ApiKey: [] }],
    paths,
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'A public key (search routes only), a private key (its tenant) or an admin key.' } },
      schemas: components,
    },
  };
}

/** The document rendered once in both published forms. */
export function renderContract(routes: CompiledRoute[]): Contract {
  const doc = buildOpenApi(routes);
  return { json: JSON.stringify(doc), yaml: YAML.stringify(doc, { aliasDuplicateObjects: false, lineWidth: 0 }) };
}
