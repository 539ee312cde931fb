// Authentication and tenancy for every request: the x-api-key secret is hashed (sha256) and
// looked up by hash through a small cache kept fresh by the coordinator's key events; the key
// kind decides which routes it may call; the tenant comes from the key, or for admin keys from
// tenant_id / X-Tenant-Id. A cache hit costs three Map lookups (the sha256 of a secret seen before is memoized), no await.
//
// Kinds: public -> search routes only (access 'public'); private -> its own tenant, read and
// write; admin -> every tenant, requeue, tenant and key administration.
import type { Coordinator, KeyRecord, MetaEvent } from '../coordinator/coordinator.js';
import { MAX_API_KEY_LENGTH, hashApiKey, sameKeyHash } from '../node/runtime/api-keys.js';
import type { Config } from '../node/runtime/config.js';
import { ERRORS, fail, format, invalid } from '../node/runtime/errors.js';
import { TenantId } from '../node/runtime/ids.js';
import type { Metrics } from '../node/runtime/metrics.js';
import type { Access } from './route.js';
import { tenantContext, type TenantContext } from './tenant-context.js';
import { TtlCache } from './ttl-cache.js';

const POSITIVE_TTL_MS = 60_000;
// Unknown keys and tenants are remembered briefly so a flood of bad keys cannot hammer the
// coordinator; a key created meanwhile arrives as a watch event and replaces the entry at once.
const NEGATIVE_TTL_MS = 5_000;
const MAX_ENTRIES = 100_000;

/** Where a tenant was named, for the 422 location when two names disagree. */
export interface TenantCandidates {
  query: string | undefined;
  header: string | undefined;
  body: string | undefined;
}

export class Auth {
  private readonly keys = new TtlCache<string, KeyRecord | null>(MAX_ENTRIES, POSITIVE_TTL_MS);
  private readonly tenants = new TtlCache<string, TenantContext | null>(MAX_ENTRIES, POSITIVE_TTL_MS);
  private readonly keyLoads = new Map<string, Promise<KeyRecord | null>>();
  private readonly hashes = new Map<string, string>();
  private readonly tenantLoads = new Map<string, Promise<TenantContext | null>>();
  // Bumped by every key or tenant event: a lookup that raced an event is not cached.
  private generation = 0;
  private readonly hits;
  private readonly misses;

  constructor(
    private readonly coordinator: Coordinator,
    private readonly config: Config,
    metrics: Metrics,
  ) {
    ({ hit: this.hits, miss: this.misses } = metrics.cacheLookupsOf('api_key'));
  }

  onMetaEvent(e: MetaEvent): void {
    if (e.type === 'key') {
      this.generation++;
      this.keys.delete(e.hash);
    } else if (e.type === 'tenant') {
      this.generation++;
      this.tenants.delete(e.tenant_id);
    }
  }

  /** The key record of `secret`; 401 when missing or unknown. Synchronous on a cache hit. */
  authenticate(secret: string): KeyRecord | Promise<KeyRecord> {
    if (secret === '') fail('missing_api_key');
    if (secret.length > MAX_API_KEY_LENGTH) fail('unknown_api_key');
    let hash = this.hashes.get(secret);
    if (hash === undefined) {
      hash = hashApiKey(secret);
      // Bounded memo of secret -> sha256: the digest dominated the cost of a cached request.
      if (this.hashes.size >= MAX_ENTRIES) this.hashes.clear();
      this.hashes.set(secret, hash);
    }
    const hit = this.keys.get(hash);
    if (hit !== undefined) {
      this.hits.inc();
      return verified(hit.value, hash);
    }
    this.misses.inc();
    return this.loadKey(hash).then((rec) => verified(rec, hash));
  }

  /** 403 `forbidden_key_kind` unless the key's kind may call a route of `access`. */
  checkAccess(key: KeyRecord, access: Access): void {
    if (access === 'admin' && key.kind !== 'admin') fail('forbidden_key_kind', { kind: key.kind, needed: 'an admin key' });
    if (access === 'private' && key.kind === 'public') fail('forbidden_key_kind', { kind: 'public', needed: 'a private or admin key' });
  }

  /** The tenant a request acts for. */
  tenantFor(key: KeyRecord, named: TenantCandidates): TenantContext | Promise<TenantContext> {
    const requested = pickTenant(named);
    let id: string;
    if (key.kind === 'admin') {
      if (requested === undefined) {
        invalid(['query', 'tenant_id'], 'An admin key acts for every tenant: name one with the tenant_id query parameter or the X-Tenant-Id header.', 'missing');
      }
      id = requested;
    } else {
      const own = key.tenant_id;
      if (own === null) fail('forbidden_tenant', { own: '(none)', requested: requested ?? '(none)' });
      if (requested !== undefined && requested !== own) fail('forbidden_tenant', { own, requested });
      id = own;
    }
    return this.tenant(id);
  }

  /** A tenant by id; 404 `tenant_not_found` when it does not exist. Synchronous on a cache hit. */
  tenant(id: string): TenantContext | Promise<TenantContext> {
    const hit = this.tenants.get(id);
    if (hit !== undefined) return found(hit.value, id);
    return this.loadTenant(id).then((t) => found(t, id));
  }

  /** Drops a cached tenant so the next request reads it fresh (after an update on this router). */
  forgetTenant(id: string): void {
    this.generation++;
    this.tenants.delete(id);
  }

  private loadKey(hash: string): Promise<KeyRecord | null> {
    let p = this.keyLoads.get(hash);
    if (p) return p;
    const gen = this.generation;
    p = this.coordinator
      .getKeyByHash(hash)
      .then((rec) => {
        const value = rec ?? null;
        if (gen === this.generation) this.keys.set(hash, value, value ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
        return value;
      })
      .finally(() => this.keyLoads.delete(hash));
    this.keyLoads.set(hash, p);
    return p;
  }

  private loadTenant(id: string): Promise<TenantContext | null> {
    let p = this.tenantLoads.get(id);
    if (p) return p;
    const gen = this.generation;
    p = this.coordinator
      .getTenant(TenantId(id))
      .then((rec) => {
        const value = rec ? tenantContext(this.config, rec) : null;
        if (gen === this.generation) this.tenants.set(id, value, value ? POSITIVE_TTL_MS : NEGATIVE_TTL_MS);
        return value;
      })
      .finally(() => this.tenantLoads.delete(id));
    this.tenantLoads.set(id, p);
    return p;
  }
}

function verified(rec: KeyRecord | null, hash: string): KeyRecord {
  // The map lookup already matched the hash; the constant-time comparison keeps the final
  // decision independent of where two digests first differ.
  if (rec === null || !sameKeyHash(rec.hash, hash)) fail('unknown_api_key');
  return rec;
}

function found(t: TenantContext | null, id: string): TenantContext {
  if (t === null) fail('tenant_not_found', { tenant: id });
  return t;
}

function pickTenant(n: TenantCandidates): string | undefined {
  let value: string | undefined;
  let from: 'query' | 'header' | 'body' | undefined;
  for (const [where, v] of [
    ['query', n.query],
    ['header', n.header],
    ['body', n.body],
  ] as const) {
    if (v === undefined || v === '') continue;
    if (value !== undefined && v !== value) {
      const loc = where === 'header' ? ['header', 'X-Tenant-Id'] : [where, 'tenant_id'];
      invalid(loc, `${format(ERRORS.tenant_mismatch.message, {})} (${from} names '${value}', ${where} names '${v}')`, 'tenant_mismatch');
    }
    value = v;
    from = where;
  }
  return value;
}
