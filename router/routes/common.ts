// Pieces every route module uses: path parameter schemas, the tenant of a tenant-scoped request,
// and the handler of a capability that is not built yet.
import { Type } from '@sinclair/typebox';
import { fail } from '../../node/runtime/errors.js';
import type { Req } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { DocIdParam, Id, IndexIdParam } from '../schemas.js';
import type { TenantContext } from '../tenant-context.js';

export const IndexParams = Type.Object({ index_id: IndexIdParam });
export const DocParams = Type.Object({ index_id: IndexIdParam, doc_id: DocIdParam });
export const JobParams = Type.Object({ job_id: Id('Job id.') });
export const TenantParams = Type.Object({ tenant_id: Id('Tenant id.') });

/** The tenant of a tenant-scoped route (the pipeline always sets it there). */
export function tenantOf(req: Req): TenantContext {
  if (!req.tenant) return fail('internal', { ref: 'route is not tenant-scoped' });
  return req.tenant;
}

export const nowIso = (): string => new Date().toISOString();

/**
 * Handler of a route whose capability comes later: after the usual checks, and after checking the
 * named index exists (so a typo still gets its 404), answers 501 naming what is missing.
 */
export function pending(deps: RouterDeps, feature: string) {
  return async (req: Req): Promise<never> => {
    const index = (req.params as { index_id?: unknown }).index_id;
    if (typeof index === 'string' && req.tenant) await deps.data.resolve(req.tenant.id, index);
    return fail('not_implemented', { feature });
  };
}
