// Records -> the JSON views of the contract (ARCHITECTURE.md fixes their field names). Secrets
// never leave through a view: keys show no hash, tenants no search API key.
import type { IndexRecord, KeyRecord } from '../coordinator/coordinator.js';
import type { SuggestDocument } from '../node/runtime/document.js';
import type { TenantContext } from './tenant-context.js';

export function indexView(rec: IndexRecord, documentCount: number) {
  return {
    index_id: rec.index_id as string,
    name: rec.name,
    document_count: documentCount,
    status: rec.status,
    physical_index_id: rec.physical_index_id as string,
    created_at: rec.created_at,
  };
}

export function documentView(d: SuggestDocument) {
  return { id: d.id, title: d.title ?? '', desc: d.desc ?? '', manufacturer: d.manufacturer ?? '', raw: d.raw ?? {} };
}

export function tenantView(t: TenantContext) {
  const r = t.record;
  return {
    tenant_id: r.tenant_id as string,
    name: r.name,
    plan: r.plan,
    mode: r.mode,
    upload_limit_bytes: r.upload_limit_bytes ?? r.limits?.upload_limit_bytes ?? null,
    limits: t.limits,
    features: t.features,
    search_api: r.search_api ? { url: r.search_api.url, has_api_key: Boolean(r.search_api.api_key) } : null,
    created_at: r.created_at,
  };
}

export function keyView(k: KeyRecord) {
  return { id: k.id as string, kind: k.kind, name: k.name, tenant_id: k.tenant_id as string | null, created_at: k.created_at };
}
