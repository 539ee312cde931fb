// Plan document limits (per index and per account) checked before a write reaches a shard, so a
// refused batch leaves nothing behind. The quick check counts every incoming document as new;
// only near a limit are the ids looked up to tell replacements (free) from additions. The shard
// enforces the per-part cap it is given (UpsertRequest.max_documents) as the last word.
import type { Coordinator } from '../coordinator/coordinator.js';
import type { SuggestDocument } from '../node/runtime/document.js';
import { fail } from '../node/runtime/errors.js';
import type { TenantId } from '../node/runtime/ids.js';
import type { DataPlane, ResolvedIndex } from './data-plane.js';
import type { TenantContext } from './tenant-context.js';
import { TtlCache } from './ttl-cache.js';

// The account total costs one stats call per part of every index of the tenant; it is cached
// briefly and adjusted by this router's own writes.
const ACCOUNT_TTL_MS = 2_000;
const LOOKUP_CONCURRENCY = 64;

export class DocumentLimits {
  private readonly accounts = new TtlCache<string, number>(10_000, ACCOUNT_TTL_MS);

  constructor(
    private readonly coordinator: Coordinator,
    private readonly data: DataPlane,
  ) {}

  /** Documents stored by the tenant across every physical index of every index. */
  async accountCount(tenant: TenantId): Promise<number> {
    const hit = this.accounts.get(tenant);
    if (hit !== undefined) return hit.value;
    const indexes = await this.coordinator.listIndexes(tenant);
    const counts = await Promise.all(
      indexes.map(async (ix) => {
        const physicals = await this.coordinator.listPhysicalIndexes(tenant, ix.index_id);
        const n = await Promise.all(physicals.map((p) => this.data.documentCount(tenant, p)));
        return n.reduce((a, b) => a + b, 0);
      }),
    );
    const total = counts.reduce((a, b) => a + b, 0);
    this.accounts.set(tenant, total);
    return total;
  }

  adjust(tenant: TenantId, delta: number): void {
    const hit = this.accounts.get(tenant);
    if (hit !== undefined) this.accounts.set(tenant, Math.max(0, hit.value + delta));
  }

  forget(tenant: TenantId): void {
    this.accounts.delete(tenant);
  }

  /**
   * 409 `document_limit` when writing `groups` (documents by part) would pass a limit; otherwise
   * the cap to send with each part's upsert.
   */
  async check(t: TenantContext, target: ResolvedIndex, groups: Map<number, SuggestDocument[]>): Promise<Map<number, number>> {
    const perIndex = t.limits.max_documents_per_index;
    const perAccount = t.limits.max_documents_total;
    const [parts, account] = await Promise.all([this.data.stats(t.id, target.physical), this.accountCount(t.id)]);
    const indexCount = parts.reduce((n, p) => n + p.document_count, 0);
    let adding = 0;
    for (const docs of groups.values()) adding += docs.length;
    if (indexCount + adding > perIndex || account + adding > perAccount) {
      adding = await this.countNew(t.id, target, groups);
      if (indexCount + adding > perIndex) {
        fail('document_limit', { scope: 'Index', limit: perIndex, count: indexCount, adding });
      }
      if (account + adding > perAccount) {
        fail('document_limit', { scope: 'Account', limit: perAccount, count: account, adding });
      }
    }
    const room = Math.min(perIndex - indexCount, perAccount - account);
    const caps = new Map<number, number>();
    for (const p of parts) caps.set(p.part, Math.max(1, p.document_count + Math.max(0, room)));
    return caps;
  }

  /** How many of the documents are not stored yet. */
  private async countNew(tenant: TenantId, target: ResolvedIndex, groups: Map<number, SuggestDocument[]>): Promise<number> {
    const ids: string[] = [];
    for (const docs of groups.values()) for (const d of docs) ids.push(d.id);
    let fresh = 0;
    for (let i = 0; i < ids.length; i += LOOKUP_CONCURRENCY) {
      const found = await Promise.all(ids.slice(i, i + LOOKUP_CONCURRENCY).map((id) => this.data.getDocument(tenant, target.physical, id)));
      for (const f of found) if (f === null) fresh++;
    }
    return fresh;
  }
}
