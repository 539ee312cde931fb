// The published contract: valid YAML and JSON of the same OpenAPI 3.1 document, every
// registered route present with its parameters, the error bodies and statuses the routes can
// answer, and every catalogue code a handler raises documented on that route.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import YAML from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERRORS, type ErrorCode } from '../../node/runtime/errors.js';
import { Metrics } from '../../node/runtime/metrics.js';
import { CompiledRoute } from '../compiled-route.js';
import { documentedErrors } from '../openapi.js';
import type { RouterDeps } from '../router-deps.js';
import { ROUTE_MODULES } from '../routes/all-routes.js';
import { startRouter, type TestRouter } from './harness.js';

type Operation = { operationId: string; parameters?: { name: string; in: string }[]; responses: Record<string, { 'x-error-codes'?: string[]; content?: Record<string, { schema?: unknown }> }>; security?: unknown[] };
type Doc = { openapi: string; info: { version: string }; paths: Record<string, Record<string, Operation>>; components: { securitySchemes: Record<string, { name: string; in: string }>; schemas: Record<string, unknown> } };

const routesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'routes');

/** Every route, compiled, with the module that declares it (handlers are never called). */
function compiledByModule(): { module: string; route: CompiledRoute }[] {
  const metrics = new Metrics({ defaultMetrics: false });
  const deps = { contract: () => ({ json: '', yaml: '' }) } as unknown as RouterDeps;
  return Object.entries(ROUTE_MODULES).flatMap(([module, make]) => make(deps).map((route) => ({ module, route: new CompiledRoute(route, metrics) })));
}

describe('OpenAPI document', () => {
  let r: TestRouter;
  let yamlDoc: Doc;
  let jsonDoc: Doc;

  beforeAll(async () => {
    r = await startRouter();
    const y = await r.call<string>('GET', '/openapi.yaml');
    expect(y.status).toBe(200);
    expect(y.headers.get('content-type')).toBe('application/yaml');
    yamlDoc = YAML.parse(y.body) as Doc;
    const j = await r.call<Doc>('GET', '/.well-known/openapi.json');
    expect(j.status).toBe(200);
    jsonDoc = j.body;
  });
  afterAll(async () => {
    await r?.close();
  });

  it('is OpenAPI 3.1, version 0.1.0, the same in YAML and JSON', () => {
    expect(yamlDoc.openapi).toBe('3.1.0');
    expect(yamlDoc.info.version).toBe('0.1.0');
    expect(jsonDoc).toEqual(yamlDoc);
    expect(yamlDoc.components.securitySchemes.ApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
  });

  it('documents every registered route with its parameters', () => {
    const all = compiledByModule();
    expect(all.length).toBeGreaterThan(60);
    for (const { route } of all) {
      const s = route.spec;
      const item = yamlDoc.paths[s.path];
      expect(item, s.path).toBeDefined();
      const op = s.method === 'QUERY' ? item!['x-query'] : item![s.method.toLowerCase()];
      expect(op, `${s.method} ${s.path}`).toBeDefined();
      expect(op!.operationId).toBe(s.operationId);
      const params = new Set((op!.parameters ?? []).map((p) => `${p.in}:${p.name}`));
      for (const name of Object.keys(s.params?.properties ?? {})) expect(params.has(`path:${name}`), `${s.path} path ${name}`).toBe(true);
      for (const name of Object.keys(route.querySchema?.properties ?? {})) expect(params.has(`query:${name}`), `${s.path} query ${name}`).toBe(true);
      if (s.tenant) expect(params.has('header:X-Tenant-Id') && params.has('query:tenant_id'), `${s.path} tenant params`).toBe(true);
      if (s.access === 'none') expect(op!.security).toEqual([]);
      if (s.method === 'QUERY') expect(item!.post?.parameters?.some((p) => p.name === 'X-HTTP-Method-Override')).toBe(true);
    }
    const ids = all.map((x) => x.route.spec.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('covers every route of the specification', () => {
    const spec = [
      'GET /v1/autocomplete', 'QUERY /v1/autocomplete', 'GET /v1/typeahead', 'QUERY /v1/typeahead', 'POST /v1/predict',
      'GET /v1/indexes', 'POST /v1/indexes', 'GET /v1/indexes/stream', 'GET /v1/indexes/{index_id}/stats',
      'POST /v1/indexes/{index_id}/allocate-physical-id', 'POST /v1/indexes/{index_id}/promote', 'DELETE /v1/indexes/{index_id}',
      'GET /v1/indexes/{index_id}/schema', 'PUT /v1/indexes/{index_id}/schema', 'GET /v1/indexes/{index_id}/merchandising',
      'PUT /v1/indexes/{index_id}/merchandising', 'GET /v1/indexes/{index_id}/tasks', 'GET /v1/indexes/{index_id}/export',
      'GET /v1/indexes/file-size-limit', 'POST /v1/indexes/{index_id}/documents', 'GET /v1/indexes/{index_id}/documents',
      'GET /v1/indexes/{index_id}/documents/{doc_id}', 'PATCH /v1/indexes/{index_id}/documents/{doc_id}',
      'DELETE /v1/indexes/{index_id}/documents/{doc_id}', 'POST /v1/indexes/{index_id}/upload',
      'POST /v1/indexes/{index_id}/import/merchant-shopping', 'POST /v1/indexes/{index_id}/ingest/cloud-complete',
      'POST /v1/indexes/{index_id}/ingest/start', 'GET /v1/ingestion-jobs', 'GET /v1/ingestion-jobs/{job_id}',
      'DELETE /v1/ingestion-jobs/{job_id}', 'GET /v1/ingestion-jobs/{job_id}/stream', 'POST /v1/ingestion-jobs/{job_id}/requeue',
      'POST /v1/indexes/{index_id}/export/start', 'GET /v1/export-jobs', 'GET /v1/export-jobs/{job_id}', 'DELETE /v1/export-jobs/{job_id}',
      'GET /v1/export-jobs/{job_id}/stream', 'GET /v1/export-jobs/{job_id}/download', 'POST /v1/export-jobs/{job_id}/requeue',
      'GET /v1/exports/{filename}', 'GET /v1/integrations', 'POST /v1/integrations', 'GET /v1/integrations/{integration_id}',
      'PATCH /v1/integrations/{integration_id}', 'DELETE /v1/integrations/{integration_id}', 'POST /v1/integrations/{integration_id}/sync',
      'GET /v1/integrations/{integration_id}/sync-jobs', 'GET /.well-known/okg.json', 'GET /.well-known/agent.json',
      'GET /.well-known/ai-catalog.json', 'GET /catalogs/{domain}/ai-catalog.json', 'GET /.well-known/did.json',
      'GET /.well-known/openapi.json', 'GET /openapi.yaml', 'POST /ard/v1/search', 'POST /ard/v1/explore', 'GET /oks/{domain}/search',
      'POST /v1/events/click', 'GET /healthz', 'GET /readyz', 'GET /metrics',
      'POST /v1/admin/tenants', 'GET /v1/admin/tenants', 'GET /v1/admin/tenants/{tenant_id}', 'PATCH /v1/admin/tenants/{tenant_id}',
      'POST /v1/admin/tenants/{tenant_id}/keys', 'GET /v1/admin/tenants/{tenant_id}/keys', 'DELETE /v1/admin/tenants/{tenant_id}/keys/{key_id}',
    ];
    const registered = new Set(compiledByModule().map(({ route }) => `${route.spec.method} ${route.spec.path}`));
    for (const s of spec) expect(registered.has(s), s).toBe(true);
  });

  it('documents the error statuses with the shared bodies', () => {
    const op = yamlDoc.paths['/v1/indexes/{index_id}/documents']!.post!;
    for (const status of ['401', '403', '404', '409', '413', '415', '422', '429', '503']) expect(op.responses[status], status).toBeDefined();
    expect(op.responses['422']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/ValidationError' });
    expect(op.responses['409']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(op.responses['409']!['x-error-codes']).toContain('document_limit');
    expect(yamlDoc.paths['/v1/indexes']!.post!.responses['403']!['x-error-codes']).toContain('plan_index_limit');
    expect(yamlDoc.paths['/v1/integrations']!.get!.responses['501']).toBeDefined();
    expect(yamlDoc.paths['/v1/indexes/{index_id}/upload']!.post!.responses['413']!['x-error-codes']).toContain('payload_too_large');
    expect(yamlDoc.paths['/v1/typeahead']!['x-query']!.responses['400']!['x-error-codes']).toContain('invalid_query_content');
    for (const name of ['Index', 'Document', 'DocumentList', 'IngestResponse', 'Tenant', 'KeyCreated', 'Job', 'StartIngestion', 'FileSizeLimit', 'Error', 'ValidationError']) {
      expect(yamlDoc.components.schemas[name], name).toBeDefined();
    }
    const dangling = JSON.stringify(yamlDoc).match(/#\/components\/schemas\/[A-Za-z]+/g) ?? [];
    for (const ref of dangling) expect(yamlDoc.components.schemas[ref.split('/').pop()!], ref).toBeDefined();
  });

  it('documents, on each route, every catalogue code its handler raises', () => {
    const sources = new Map<string, string>();
    for (const { module, route } of compiledByModule()) {
      const documented = new Set(documentedErrors(route));
      const handlerSource = route.spec.handler?.toString() ?? '';
      const raised = new Set<ErrorCode>();
      for (const m of handlerSource.matchAll(/fail\('(\w+)'/g)) raised.add(m[1] as ErrorCode);
      // shared helpers called from the handler
      if (/\bresolve\(/.test(handlerSource) && route.spec.params?.properties.index_id) raised.add('index_not_found');
      if (/answer\(/.test(handlerSource)) raised.add('index_not_found');
      if (/limits\.check\(/.test(handlerSource)) raised.add('document_limit');
      if (/auth\.tenant\(/.test(handlerSource)) raised.add('tenant_not_found');
      if (/requireFeature\(/.test(handlerSource)) raised.add('plan_required');
      if (/assertWritable\(/.test(handlerSource)) raised.add('conflict');
      if (/data\.(stats|getDocument|deleteDocument|upsertPart|listPart|drop|documentCount)\(|\bview\(/.test(handlerSource)) raised.add('unavailable');
      for (const code of raised) {
        expect(code in ERRORS, `${code} is a catalogue code`).toBe(true);
        expect(documented.has(code), `${route.spec.method} ${route.spec.path} raises ${code} but does not document it`).toBe(true);
      }
      // every code raised anywhere in a route module is documented on at least one of its routes
      if (!sources.has(module)) sources.set(module, readFileSync(path.join(routesDir, `${module}.ts`), 'utf8'));
    }
    for (const [module, source] of sources) {
      const documented = new Set(compiledByModule().filter((x) => x.module === module).flatMap((x) => documentedErrors(x.route)));
      for (const m of source.matchAll(/fail\('(\w+)'/g)) {
        if (m[1] === 'internal') continue;
        expect(documented.has(m[1] as ErrorCode), `routes/${module}.ts raises ${m[1]} but none of its routes documents it`).toBe(true);
      }
    }
  });
});
