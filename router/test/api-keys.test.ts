// Key secrets: format, entropy, stored hash, constant-time comparison.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateApiKey, generateKeyId, hashApiKey, sameKeyHash } from '../../node/runtime/api-keys.js';

describe('api keys', () => {
  it('generates sk_live_<kind>_<43 base64url chars> secrets with their sha256 hex hash', () => {
    for (const kind of ['public', 'private', 'admin'] as const) {
      const { secret, hash } = generateApiKey(kind);
      expect(secret).toMatch(new RegExp(`^sk_live_${kind}_[A-Za-z0-9_-]{43}$`));
      expect(hash).toBe(createHash('sha256').update(secret).digest('hex'));
      expect(hashApiKey(secret)).toBe(hash);
    }
  });
  it('never repeats a secret or an id', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => generateApiKey('private').secret));
    expect(secrets.size).toBe(1000);
    const ids = new Set(Array.from({ length: 1000 }, () => generateKeyId()));
    expect(ids.size).toBe(1000);
  });
  it('compares hashes exactly', () => {
    const h = hashApiKey('a');
    expect(sameKeyHash(h, hashApiKey('a'))).toBe(true);
    expect(sameKeyHash(h, hashApiKey('b'))).toBe(false);
    expect(sameKeyHash(h, 'short')).toBe(false);
    // a difference in the first or the last character alone
    const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === '0' ? '1' : '0') + s.slice(i + 1);
    expect(sameKeyHash(h, flip(h, 0))).toBe(false);
    expect(sameKeyHash(h, flip(h, 63))).toBe(false);
  });
});
