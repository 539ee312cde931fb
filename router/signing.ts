// HMAC signatures of the links the service hands out without an API key on them: presigned
// upload URLs and export download links. Every router of a deployment must verify what any
// other signed, so the key is shared: `signingSecret` from the configuration, or else a random
// key created once and kept in the coordinator.
//
// Where it is kept: the Coordinator interface has no settings record, so the key lives in the
// schema of a logical index of the reserved tenant `~system`. That tenant id cannot be named by
// any request (tenant ids are `[A-Za-z0-9_-]`), and index creation is create-if-absent, so two
// routers booting together agree on one key.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Coordinator, IndexRecord, PhysicalIndexRecord } from '../coordinator/coordinator.js';
import type { Config } from '../node/runtime/config.js';
import { SuggestError } from '../node/runtime/errors.js';
import { IndexId, PhysicalIndexId, TenantId } from '../node/runtime/ids.js';

const SYSTEM_TENANT = TenantId('~system');
const SECRET_RECORD = IndexId('signing-secret');
const SIG_CHARS = 43; // 256 bits in base64url

export class Signer {
  private constructor(private readonly key: Buffer) {}

  static async create(config: Config, coordinator: Coordinator): Promise<Signer> {
    if (config.signingSecret) return new Signer(Buffer.from(config.signingSecret, 'utf8'));
    const existing = await coordinator.getIndex(SYSTEM_TENANT, SECRET_RECORD);
    const stored = existing?.schema.secret;
    if (typeof stored === 'string') return new Signer(Buffer.from(stored, 'hex'));
    const secret = randomBytes(32).toString('hex');
    const now = new Date().toISOString();
    const rec: IndexRecord = {
      tenant_id: SYSTEM_TENANT,
      index_id: SECRET_RECORD,
      name: 'HMAC key of presigned upload URLs and export links (not an index)',
      physical_index_id: PhysicalIndexId('~none'),
      status: 'ready',
      created_at: now,
      updated_at: now,
      schema: { secret },
      merchandising: {},
    };
    const physical: PhysicalIndexRecord = { tenant_id: SYSTEM_TENANT, physical_index_id: PhysicalIndexId('~none'), index_id: SECRET_RECORD, parts: 1, created_at: now };
    try {
      await coordinator.createIndex(rec, physical);
      return new Signer(Buffer.from(secret, 'hex'));
    } catch (err) {
      if (!(err instanceof SuggestError && err.code === 'index_exists')) throw err;
      // another router created it first: use theirs
      const theirs = (await coordinator.getIndex(SYSTEM_TENANT, SECRET_RECORD))?.schema.secret;
      if (typeof theirs !== 'string') throw err;
      return new Signer(Buffer.from(theirs, 'hex'));
    }
  }

  /** A signer over a given key (tests). */
  static of(key: string): Signer {
    return new Signer(Buffer.from(key, 'utf8'));
  }

  /** base64url HMAC-SHA256 of the purpose and the parts (NUL-separated: no part can shift into another). */
  sign(purpose: string, parts: readonly string[]): string {
    return createHmac('sha256', this.key).update(purpose).update('\0').update(parts.join('\0')).digest('base64url');
  }

  /** Constant-time check of a signature made by `sign`. */
  verify(purpose: string, parts: readonly string[], signature: string): boolean {
    if (signature.length !== SIG_CHARS) return false;
    const expected = Buffer.from(this.sign(purpose, parts), 'utf8');
    const given = Buffer.from(signature, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
