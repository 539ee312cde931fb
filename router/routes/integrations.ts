// Integrations (paid plans) and their sync jobs. Plan gate (403 `plan_required`), validation and
// authorization now; the integration records and sync runner come later (501).
import { Type } from '@sinclair/typebox';
import { defineRoute, type Req, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { Id, IntegrationCreate, IntegrationPatch, IntegrationView, JobView, StartIngestion } from '../schemas.js';
import { pending, tenantOf } from './common.js';

const tags = ['integrations'];
const MISSING = 'Integrations (integration records and the sync runner)';
const Params = Type.Object({ integration_id: Id('Integration id.') });

export function integrationRoutes(deps: RouterDeps): Route[] {
  const later = pending(deps, MISSING);
  // The index may be named in the query or the body rather than the path; an index the tenant does
  // not have is a 404 the caller can fix now, whatever the 501 says about the rest.
  const handler = async (req: Req): Promise<never> => {
    const named = (req.body as { index_id?: unknown } | undefined)?.index_id ?? (req.query as { index_id?: unknown }).index_id;
    if (typeof named === 'string') await deps.data.resolve(tenantOf(req).id, named);
    return later(req);
  };
  const base = { tags, access: 'private', tenant: true, feature: 'integrations', errors: ['not_implemented'], handler } as const;
  return [
    defineRoute({
      ...base,
      method: 'GET',
      path: '/v1/integrations',
      operationId: 'listIntegrations',
      summary: 'List integrations (paid plans)',
      query: Type.Object({ index_id: Type.Optional(Id('Only the integrations of this index.')) }),
      response: { description: 'Integration views.', schema: Type.Array(IntegrationView) },
      errors: ['index_not_found', 'not_implemented'],
    }),
    defineRoute({
      ...base,
      method: 'POST',
      path: '/v1/integrations',
      operationId: 'createIntegration',
      summary: 'Create an integration (paid plans)',
      body: IntegrationCreate,
      response: { description: 'The new integration.', schema: IntegrationView },
      errors: ['index_not_found', 'not_implemented'],
    }),
    defineRoute({
      ...base,
      method: 'GET',
      path: '/v1/integrations/{integration_id}',
      operationId: 'getIntegration',
      summary: 'Read an integration (paid plans)',
      params: Params,
      response: { description: 'The integration.', schema: IntegrationView },
    }),
    defineRoute({
      ...base,
      method: 'PATCH',
      path: '/v1/integrations/{integration_id}',
      operationId: 'updateIntegration',
      summary: 'Update an integration (paid plans)',
      params: Params,
      body: IntegrationPatch,
      response: { description: 'The integration after the update.', schema: IntegrationView },
    }),
    defineRoute({
      ...base,
      method: 'DELETE',
      path: '/v1/integrations/{integration_id}',
      operationId: 'deleteIntegration',
      summary: 'Delete an integration (paid plans)',
      params: Params,
      response: { description: 'The integration was deleted.', schema: Type.Object({ integration_id: Type.String(), deleted: Type.Boolean() }) },
    }),
    defineRoute({
      ...base,
      method: 'POST',
      path: '/v1/integrations/{integration_id}/sync',
      operationId: 'syncIntegration',
      summary: 'Start a sync of an integration (paid plans)',
      params: Params,
      response: { description: 'The sync job that was started.', schema: StartIngestion },
    }),
    defineRoute({
      ...base,
      method: 'GET',
      path: '/v1/integrations/{integration_id}/sync-jobs',
      operationId: 'listSyncJobs',
      summary: 'Sync jobs of an integration (paid plans)',
      params: Params,
      response: { description: 'Sync jobs, newest first.', schema: Type.Array(JobView) },
    }),
  ];
}
