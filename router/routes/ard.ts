// Agentic Resource Discovery search (capability catalogs only, never merchant inventory) and the
// per-domain inventory search gateway. Validated now; 501 until the ARD capability lands.
import { Type } from '@sinclair/typebox';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';

const tags = ['discovery'];
const Domain = Type.Object({ domain: Type.String({ format: 'hostname', maxLength: 253, description: 'Domain name of the merchant.' }) });

export function ardRoutes(_deps: RouterDeps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/ard/v1/search',
      operationId: 'ardSearch',
      summary: 'Ranked capability-catalog entries for a discovery query',
      tags,
      access: 'none',
      body: Type.Object({
        query: Type.String({ minLength: 1, maxLength: 512 }),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
        filters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
      response: { description: 'Ranked catalog entries.', schema: Type.Object({ results: Type.Array(Type.Record(Type.String(), Type.Unknown())) }) },
      errors: ['not_implemented'],
      notImplemented: 'Agentic Resource Discovery search (capability catalogs)',
    }),
    defineRoute({
      method: 'POST',
      path: '/ard/v1/explore',
      operationId: 'ardExplore',
      summary: 'Facets over the published capability catalog (capabilities, publishers, media types)',
      tags,
      access: 'none',
      body: Type.Object({ facets: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 16 })) }),
      response: { description: 'Facet counts.', schema: Type.Object({ facets: Type.Record(Type.String(), Type.Unknown()) }) },
      errors: ['not_implemented'],
      notImplemented: 'Agentic Resource Discovery explore (capability catalogs)',
    }),
    defineRoute({
      method: 'GET',
      path: '/oks/{domain}/search',
      operationId: 'domainSearch',
      summary: "Search of a domain's published inventory",
      tags,
      access: 'none',
      params: Domain,
      query: Type.Object({ query: Type.String({ minLength: 1, maxLength: 512 }), limit: Type.Integer({ minimum: 1, maximum: 50, default: 10 }) }),
      response: { description: 'Results.', contentType: 'application/json' },
      errors: ['not_implemented'],
      notImplemented: 'Domain inventory search gateway',
    }),
  ];
}
