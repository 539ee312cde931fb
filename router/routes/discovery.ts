// The published contract and the discovery documents. /openapi.yaml and
// /.well-known/openapi.json serve the OpenAPI document generated from the route table; the
// Agentic Resource Discovery documents (gateway, agent manifest, catalogs, identity) and the
// compatibility documents come with the ARD capability (501 until then). No key needed.
import { Type } from '@sinclair/typebox';
import { fail } from '../../node/runtime/errors.js';
import { Reply, defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';

const tags = ['discovery'];
const MISSING = 'Agentic Resource Discovery documents (capability catalogs)';

export function discoveryRoutes(deps: RouterDeps): Route[] {
  const doc = (path: string, operationId: string, summary: string, contentType = 'application/json'): Route =>
    defineRoute({
      method: 'GET',
      path,
      operationId,
      summary,
      tags,
      access: 'none',
      response: { description: summary, contentType },
      errors: ['not_implemented'],
      notImplemented: MISSING,
    });

  return [
    defineRoute({
      method: 'GET',
      path: '/openapi.yaml',
      operationId: 'getOpenApiYaml',
      summary: 'The OpenAPI 3.1 contract of this service (YAML)',
      tags,
      access: 'none',
      response: { description: 'OpenAPI document.', contentType: 'application/yaml' },
      handler: () => Reply.text(deps.contract().yaml, 'application/yaml'),
    }),
    defineRoute({
      method: 'GET',
      path: '/.well-known/openapi.json',
      operationId: 'getOpenApiJson',
      summary: 'The OpenAPI 3.1 contract of this service (JSON, same content as /openapi.yaml)',
      tags,
      access: 'none',
      response: { description: 'OpenAPI document.', contentType: 'application/json' },
      handler: () => Reply.text(deps.contract().json, 'application/json'),
    }),
    doc('/.well-known/okg.json', 'getGatewayDocument', 'Gateway document: capabilities, endpoint map, supported types, authentication modes'),
    doc('/.well-known/agent.json', 'getAgentManifest', 'Agent manifest: operations, search schema, preferred retrieval order'),
    doc('/.well-known/ai-catalog.json', 'getGatewayCatalog', 'Gateway-level catalog of published capability entries'),
    doc('/.well-known/did.json', 'getDidDocument', 'Publisher identity (did:web) used by catalogs'),
    doc('/.well-known/ai-plugin.json', 'getPluginManifest', 'Compatibility manifest'),
    doc('/llms.txt', 'getLlmsTxt', 'Compatibility text document', 'text/plain'),
    defineRoute({
      method: 'GET',
      path: '/catalogs/{domain}/ai-catalog.json',
      operationId: 'getDomainCatalog',
      summary: "One domain's configured capabilities and content revision",
      tags,
      access: 'none',
      params: Type.Object({ domain: Type.String({ format: 'hostname', maxLength: 253, description: 'Domain name of the merchant.' }) }),
      response: { description: 'The domain catalog.', contentType: 'application/json' },
      errors: ['not_implemented'],
      handler: () => fail('not_implemented', { feature: MISSING }),
    }),
  ];
}
