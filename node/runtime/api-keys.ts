// API key secrets: generation, hashing and comparison. Keys are 256-bit random secrets shown
// once; only their sha256 (hex) is stored (KeyRecord.hash), so a leaked metadata store does not
// leak working credentials. sha256 without a salt is enough here because the secrets carry full
// entropy: there is nothing to brute-force that a salt would slow down.
import { createHash, randomBytes } from 'node:crypto';

// Same values as the coordinator's KeyKind; spelled out here because node/runtime imports no role.
export type ApiKeyKind = 'public' | 'private' | 'admin';

const SECRET_PREFIX = 'sk_live_';

/** Longest header value worth hashing; anything longer cannot be one of our keys. */
export const MAX_API_KEY_LENGTH = 256;

export interface GeneratedApiKey {
  /** the secret, to hand to the caller once */
  secret: string;
  /** sha256 hex of the secret, to store */
  hash: string;
}

/** A new key secret `sk_live_<kind>_<base64url of 32 random bytes>` and its stored hash. */
export function generateApiKey(kind: ApiKeyKind): GeneratedApiKey {
  const secret = `${SECRET_PREFIX}${kind}_${randomBytes(32).toString('base64url')}`;
  return { secret, hash: hashApiKey(secret) };
}

/** sha256 hex of a secret: the lookup key of `Coordinator.getKeyByHash`. */
export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * Constant-time equality of two sha256 hex digests: every character is looked at whatever the
 * first difference. Over the strings themselves, not buffers decoded from them: it runs on every
 * request, and two buffers per request were garbage the cached path did not need.
 */
export function sameKeyHash(a: string, b: string): boolean {
  if (a.length !== 64 || b.length !== 64) return false;
  let diff = 0;
  for (let i = 0; i < 64; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** A public, non-secret identifier for a key record (`key_` + 16 hex digits). */
export function generateKeyId(): string {
  return `key_${randomBytes(8).toString('hex')}`;
}

/** The API of this module under one name, for callers that prefer a namespace. */
export const ApiKeys = { generate: generateApiKey, hash: hashApiKey, sameHash: sameKeyHash, newId: generateKeyId };
