// Tenant and key administration (admin keys only): create, list, read and update tenants (plan,
// mode, upload limit, limit overrides, connected search API); create, list and revoke keys.
// A key's secret is returned once, at creation; only its hash is stored.
import { Type } from '@sinclair/typebox';
import type { LimitOverrides, TenantRecord } from '../../coordinator/coordinator.js';
import { generateApiKey, generateKeyId } from '../../node/runtime/api-keys.js';
import { fail, invalid } from '../../node/runtime/errors.js';
import { KeyId, TenantId } from '../../node/runtime/ids.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { Id, KeyCreate, KeyCreated, KeyView, LimitsPatch, TenantCreate, TenantPatch, TenantView } from '../schemas.js';
import { tenantContext } from '../tenant-context.js';
import { keyView, tenantView } from '../views.js';
import { TenantParams, nowIso } from './common.js';
import type { Static } from '@sinclair/typebox';

const tags = ['administration'];
type LimitsInput = Static<typeof LimitsPatch>;

/** Limit overrides after applying `patch` (null removes an override). upload_limit_bytes is kept apart. */
function mergeLimits(current: LimitOverrides, patch: LimitsInput | undefined): LimitOverrides {
  const out: LimitOverrides = { ...current };
  delete out.upload_limit_bytes;
  if (!patch) return out;
  for (const k of ['max_indexes', 'max_documents_per_index', 'max_documents_total'] as const) {
    const v = patch[k];
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = v;
  }
  return out;
}

/** The upload override from `upload_limit_bytes` and/or `limits.upload_limit_bytes`; undefined = unchanged. */
function uploadOverride(top: number | null | undefined, inLimits: number | null | undefined): number | null | undefined {
  if (top !== undefined && inLimits !== undefined && top !== inLimits) {
    invalid(['body', 'limits', 'upload_limit_bytes'], 'upload_limit_bytes and limits.upload_limit_bytes disagree; send one of them.', 'value_error');
  }
  return top !== undefined ? top : inLimits;
}

function checkMode(rec: TenantRecord): void {
  if (rec.mode === 'proxy' && !rec.search_api) invalid(['body', 'search_api'], 'Proxy mode forwards to a connected search API: set search_api with its url.', 'missing');
}

export function adminRoutes(deps: RouterDeps): Route[] {
  const { coordinator, auth, config } = deps;

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/admin/tenants',
      operationId: 'createTenant',
      summary: 'Create a tenant',
      tags,
      access: 'admin',
      body: TenantCreate,
      response: { description: 'The new tenant.', schema: TenantView },
      errors: ['tenant_exists'],
      async handler(req) {
        const b = req.body;
        const upload = uploadOverride(b.upload_limit_bytes, b.limits?.upload_limit_bytes);
        const rec: TenantRecord = {
          tenant_id: TenantId(b.tenant_id),
          name: b.name,
          plan: b.plan ?? 'free',
          mode: b.mode ?? 'hosted',
          upload_limit_bytes: upload ?? null,
          limits: mergeLimits({}, b.limits),
          search_api: b.search_api ?? null,
          created_at: nowIso(),
        };
        checkMode(rec);
        await coordinator.createTenant(rec);
        auth.forgetTenant(rec.tenant_id);
        return tenantView(tenantContext(config, rec));
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/admin/tenants',
      operationId: 'listTenants',
      summary: 'List tenants',
      tags,
      access: 'admin',
      response: { description: 'Every tenant, by id.', schema: Type.Array(TenantView) },
      async handler() {
        const all = await coordinator.listTenants();
        all.sort((a, b) => (a.tenant_id < b.tenant_id ? -1 : a.tenant_id > b.tenant_id ? 1 : 0));
        return all.map((r) => tenantView(tenantContext(config, r)));
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/admin/tenants/{tenant_id}',
      operationId: 'getTenant',
      summary: 'Read a tenant with its effective limits',
      tags,
      access: 'admin',
      params: TenantParams,
      response: { description: 'The tenant.', schema: TenantView },
      errors: ['tenant_not_found'],
      async handler(req) {
        const rec = await coordinator.getTenant(TenantId(req.params.tenant_id));
        if (!rec) return fail('tenant_not_found', { tenant: req.params.tenant_id });
        return tenantView(tenantContext(config, rec));
      },
    }),

    defineRoute({
      method: 'PATCH',
      path: '/v1/admin/tenants/{tenant_id}',
      operationId: 'updateTenant',
      summary: 'Update plan, mode, upload limit, limit overrides or connected search API',
      tags,
      access: 'admin',
      params: TenantParams,
      body: TenantPatch,
      response: { description: 'The tenant after the update.', schema: TenantView },
      errors: ['tenant_not_found'],
      async handler(req) {
        const id = TenantId(req.params.tenant_id);
        const p = req.body;
        if (!(await coordinator.getTenant(id))) return fail('tenant_not_found', { tenant: id });
        const upload = uploadOverride(p.upload_limit_bytes, p.limits?.upload_limit_bytes);
        const rec = await coordinator.updateTenant(id, (r) => {
          const next: TenantRecord = {
            ...r,
            name: p.name ?? r.name,
            plan: p.plan ?? r.plan,
            mode: p.mode ?? r.mode,
            upload_limit_bytes: upload !== undefined ? upload : (r.upload_limit_bytes ?? r.limits?.upload_limit_bytes ?? null),
            limits: mergeLimits(r.limits ?? {}, p.limits),
            search_api: p.search_api !== undefined ? p.search_api : r.search_api,
          };
          checkMode(next);
          return next;
        });
        auth.forgetTenant(id);
        deps.limits.forget(id);
        return tenantView(tenantContext(config, rec));
      },
    }),

    defineRoute({
      method: 'POST',
      path: '/v1/admin/tenants/{tenant_id}/keys',
      operationId: 'createKey',
      summary: 'Create a public or private key for a tenant',
      description: 'The secret (`key`) is in this response only; it cannot be read again.',
      tags,
      access: 'admin',
      params: TenantParams,
      body: KeyCreate,
      response: { description: 'The new key with its secret.', schema: KeyCreated },
      errors: ['tenant_not_found'],
      async handler(req) {
        const tenant = await auth.tenant(req.params.tenant_id);
        const { kind, name } = req.body;
        const { secret, hash } = generateApiKey(kind);
        const rec = { id: KeyId(generateKeyId()), kind, name: name ?? `${kind} key`, tenant_id: tenant.id, hash, created_at: nowIso() };
        await coordinator.putKey(rec);
        return { ...keyView(rec), key: secret };
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/admin/tenants/{tenant_id}/keys',
      operationId: 'listKeys',
      summary: 'List the keys of a tenant (never their secrets)',
      tags,
      access: 'admin',
      params: TenantParams,
      response: { description: 'The keys.', schema: Type.Array(KeyView) },
      errors: ['tenant_not_found'],
      async handler(req) {
        const tenant = await auth.tenant(req.params.tenant_id);
        return (await coordinator.listKeys(tenant.id)).map(keyView);
      },
    }),

    defineRoute({
      method: 'DELETE',
      path: '/v1/admin/tenants/{tenant_id}/keys/{key_id}',
      operationId: 'deleteKey',
      summary: 'Revoke a key',
      tags,
      access: 'admin',
      params: Type.Object({ tenant_id: Id('Tenant id.'), key_id: Id('Key id.') }),
      response: { description: 'The key was revoked.', schema: Type.Object({ id: Type.String(), deleted: Type.Boolean() }) },
      errors: ['tenant_not_found', 'key_not_found'],
      async handler(req) {
        const tenant = await auth.tenant(req.params.tenant_id);
        const keys = await coordinator.listKeys(tenant.id);
        const rec = keys.find((k) => k.id === req.params.key_id);
        if (!rec) return fail('key_not_found', { key: req.params.key_id, tenant: tenant.id });
        await coordinator.deleteKey(rec.id);
        auth.onMetaEvent({ type: 'key', hash: rec.hash, record: null });
        return { id: rec.id as string, deleted: true };
      },
    }),
  ];
}
