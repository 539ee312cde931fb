// The tenant a request acts for, with its plan resolved: plan limits from the configuration
// merged with the tenant's own overrides. Built once per tenant record and cached by auth.ts,
// so a request never re-merges limits.
import type { TenantRecord } from '../coordinator/coordinator.js';
import type { Config, PlanLimits } from '../node/runtime/config.js';
import { fail } from '../node/runtime/errors.js';
import type { PlanFeature } from './route.js';

export interface EffectiveLimits {
  max_indexes: number;
  max_documents_per_index: number;
  max_documents_total: number;
  upload_limit_bytes: number;
}

export type UploadLimitSource = 'tenant' | 'plan' | 'default';

export interface TenantContext {
  id: TenantRecord['tenant_id'];
  record: TenantRecord;
  limits: EffectiveLimits;
  uploadLimitSource: UploadLimitSource;
  features: PlanLimits['features'];
}

const NO_FEATURES: PlanLimits['features'] = { personalization: false, merchandising: false, integrations: false };

/** Plan values merged with tenant overrides; upload limit: tenant override, else plan, else default. */
export function tenantContext(config: Config, record: TenantRecord): TenantContext {
  const plan: Partial<PlanLimits> = config.plans[record.plan] ?? {};
  const o = record.limits ?? {};
  const tenantUpload = record.upload_limit_bytes ?? o.upload_limit_bytes ?? null;
  const planUpload = plan.upload_limit_bytes && plan.upload_limit_bytes > 0 ? plan.upload_limit_bytes : null;
  const uploadLimitSource: UploadLimitSource = tenantUpload !== null ? 'tenant' : planUpload !== null ? 'plan' : 'default';
  return {
    id: record.tenant_id,
    record,
    limits: {
      max_indexes: o.max_indexes ?? plan.max_indexes ?? 0,
      max_documents_per_index: o.max_documents_per_index ?? plan.max_documents_per_index ?? 0,
      max_documents_total: o.max_documents_total ?? plan.max_documents_total ?? 0,
      upload_limit_bytes: tenantUpload ?? planUpload ?? config.defaultUploadLimit,
    },
    uploadLimitSource,
    features: plan.features ?? NO_FEATURES,
  };
}

const FEATURE_LABEL: Record<PlanFeature, string> = {
  personalization: 'Personalization (user_id)',
  merchandising: 'Updating merchandising',
  integrations: 'Integrations',
};

/** 403 `plan_required` unless the tenant's plan includes `feature`. */
export function requireFeature(t: TenantContext, feature: PlanFeature): void {
  if (!t.features[feature]) fail('plan_required', { feature: FEATURE_LABEL[feature], tenant: t.id, plan: t.record.plan });
}
