// The data plane's cache of physical index records under the coordinator's watch: a record
// marked for deletion or deleted elsewhere replaces the cached one at once, a mark is never
// lifted by an event older than it, and a read that raced a watch event does not overwrite it.
import { describe, expect, it } from 'vitest';
import type { Coordinator, PhysicalIndexRecord } from '../../coordinator/coordinator.js';
import { IndexId, PhysicalIndexId, TenantId } from '../../node/runtime/ids.js';
import { createLogger } from '../../node/runtime/log.js';
import type { ShardDirectory } from '../../node/runtime/shard-api.js';
import { DataPlane } from '../data-plane.js';

const tenant = TenantId('t');
const ready: PhysicalIndexRecord = { tenant_id: tenant, physical_index_id: PhysicalIndexId('p'), index_id: IndexId('i'), parts: 1, created_at: '' };
const marked: PhysicalIndexRecord = { ...ready, status: 'deleting' };
const event = (record: PhysicalIndexRecord | null) => ({ type: 'physical' as const, tenant_id: tenant, physical_index_id: ready.physical_index_id, record });

/** A data plane over a coordinator whose physical-record reads answer `stored`, held until `release()` when `hold` is set. */
function setup(stored: () => PhysicalIndexRecord | undefined) {
  let reads = 0;
  let hold: Promise<void> | null = null;
  let release = () => undefined as void;
  const coordinator = {
    getPhysicalIndex: async () => {
      reads++;
      const value = stored();
      if (hold) await hold;
      return value;
    },
  } as unknown as Coordinator;
  const data = new DataPlane(coordinator, { client: () => ({}) } as unknown as ShardDirectory, createLogger());
  return {
    data,
    reads: () => reads,
    holdReads() {
      hold = new Promise<void>((resolve) => (release = resolve));
    },
    release: () => release(),
  };
}

describe('DataPlane physical index cache', () => {
  it('takes marks and deletions from the watch instead of keeping the cached record', async () => {
    const s = setup(() => ready);
    expect(await s.data.physical(tenant, 'p')).toEqual(ready);
    s.data.onMetaEvent(event(marked));
    expect(await s.data.physical(tenant, 'p')).toEqual(marked);
    s.data.onMetaEvent(event(null));
    expect(await s.data.physical(tenant, 'p')).toBeNull();
    expect(s.reads()).toBe(1);
  });

  it('never lifts a mark on an older event, but takes a record written again after a deletion', async () => {
    const s = setup(() => ready);
    s.data.rememberPhysical(marked);
    // the allocation's own event, delivered late
    s.data.onMetaEvent(event(ready));
    expect((await s.data.physical(tenant, 'p'))?.status).toBe('deleting');
    s.data.onMetaEvent(event(null));
    s.data.onMetaEvent(event(ready));
    expect(await s.data.physical(tenant, 'p')).toEqual(ready);
  });

  it('does not cache a read that a watch event overtook', async () => {
    const s = setup(() => ready);
    s.holdReads();
    const read = s.data.physical(tenant, 'p');
    s.data.onMetaEvent(event(null));
    s.release();
    expect(await read).toEqual(ready);
    expect(await s.data.physical(tenant, 'p')).toBeNull();
  });
});
