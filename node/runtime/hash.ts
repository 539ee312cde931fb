// Stable hashing shared by routers and shards: placement must agree across processes.
import { createHash } from 'node:crypto';

export const FNV_OFFSET = 0x811c9dc5;
export const FNV_PRIME = 0x01000193;

/** 32-bit FNV-1a over UTF-8: fast, stable, used for document -> part. */
export function fnv1a(s: string): number {
  let h = FNV_OFFSET;
  const bytes = Buffer.from(s, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i]!;
    h = Math.imul(h, FNV_PRIME);
  }
  return h >>> 0;
}

/**
 * 32-bit FNV-1a over UTF-16 code units, continuing from `h` (FNV_OFFSET: a fresh hash). Stable,
 * and cheaper than `fnv1a` (no UTF-8 copy), but not equal to it beyond ASCII: for hashes of the
 * engine's own (feature hashing of the embedder, phrase keys of the miner, query lanes).
 */
export function fnv1aUnits(s: string, h = FNV_OFFSET): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), FNV_PRIME);
  return h >>> 0;
}

/** 64-bit score for rendezvous hashing; sha256 keeps the distribution even across node ids. */
export function score64(a: string, b: string): bigint {
  return createHash('sha256').update(a).update('\0').update(b).digest().readBigUInt64BE(0);
}

/** Partition of part `part` of index (tenant, physical): hash(tenant, physical, i) mod P. */
export function partitionOf(tenant: string, physical: string, part: number, partitions: number): number {
  return fnv1a(`${tenant}\0${physical}\0${part}`) % partitions;
}

/** Part of a document within an index of `parts` parts: hash(doc_id) mod parts. */
export function partOf(docId: string, parts: number): number {
  return parts <= 1 ? 0 : fnv1a(docId) % parts;
}
