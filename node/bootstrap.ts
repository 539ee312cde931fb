// First-boot credentials: an admin key, a `default` tenant and its public and private keys,
// printed once and written to `<data>/credentials.json` (mode 0600). Idempotent: a later boot
// (or a second router racing this one) finds them and does nothing.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Coordinator, KeyKind, KeyRecord } from '../coordinator/coordinator.js';
import type { Config } from './runtime/config.js';
import { generateApiKey, hashApiKey } from './runtime/api-keys.js';
import { KeyId, TenantId } from './runtime/ids.js';
import { SuggestError } from './runtime/errors.js';
import { randomUUID } from 'node:crypto';

const now = () => new Date().toISOString();

function keyRecord(kind: KeyKind, name: string, tenant: TenantId | null, hash: string): KeyRecord {
  return { id: KeyId(`key_${randomUUID().replaceAll('-', '').slice(0, 16)}`), kind, name, tenant_id: tenant, hash, created_at: now() };
}

export interface BootstrapResult {
  created: boolean;
  credentials?: { admin_key: string; tenant_id: string; public_key: string; private_key: string };
}

export async function bootstrap(coordinator: Coordinator, config: Config): Promise<BootstrapResult> {
  // An admin key given by the environment is always honoured (idempotent by its hash).
  if (config.adminKey) {
    const hash = hashApiKey(config.adminKey);
    if (!(await coordinator.getKeyByHash(hash))) await coordinator.putKey(keyRecord('admin', 'environment admin key', null, hash));
  }
  const tenant = TenantId('default');
  if (await coordinator.getTenant(tenant)) return { created: false };
  try {
    await coordinator.createTenant({
      tenant_id: tenant,
      name: 'Default tenant',
      plan: 'pro',
      mode: 'hosted',
      upload_limit_bytes: null,
      limits: {},
      search_api: null,
      created_at: now(),
    });
  } catch (err) {
    if (err instanceof SuggestError && err.code === 'tenant_exists') return { created: false };
    throw err;
  }
  const admin = config.adminKey ? { secret: config.adminKey, hash: hashApiKey(config.adminKey) } : generateApiKey('admin');
  if (!config.adminKey) await coordinator.putKey(keyRecord('admin', 'first-boot admin key', null, admin.hash));
  const pub = generateApiKey('public');
  const priv = generateApiKey('private');
  await coordinator.putKey(keyRecord('public', 'default public key', tenant, pub.hash));
  await coordinator.putKey(keyRecord('private', 'default private key', tenant, priv.hash));
  const credentials = { admin_key: admin.secret, tenant_id: tenant as string, public_key: pub.secret, private_key: priv.secret };
  writeFileSync(path.join(config.dataDir, 'credentials.json'), JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  return { created: true, credentials };
}
