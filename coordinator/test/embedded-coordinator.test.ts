// The coordinator contract over the embedded backend (RocksDB in a temp dir), plus what only
// the embedded store has to prove: its data survives a restart, its leased keys do not.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { IndexId, NodeId, TenantId } from '../../node/runtime/ids.js';
import { setLogLevel } from '../../node/runtime/log.js';
import { EmbeddedBackend } from '../embedded-backend.js';
import { MetadataCoordinator } from '../metadata-coordinator.js';
import { coordinatorContract, indexRec, jobRec, memberRec, physRec, table, tenantRec, type ContractHarness } from './coordinator-contract.js';

setLogLevel('error');

const tempDir = () => mkdtempSync(path.join(os.tmpdir(), 'suggest-meta-'));

async function embeddedHarness(): Promise<ContractHarness> {
  const dir = tempDir();
  const backend = await EmbeddedBackend.open(dir);
  const clients: MetadataCoordinator[] = [];
  return {
    async connect() {
      // in one process every client shares the one store, as router and shard roles do
      const c = new MetadataCoordinator(backend, { ownsBackend: false });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) await c.close();
      await backend.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

coordinatorContract('embedded', embeddedHarness);

describe('embedded store across restarts', () => {
  it('keeps metadata, drops leased keys, keeps revisions increasing', async () => {
    const dir = tempDir();
    try {
      const first = new MetadataCoordinator(await EmbeddedBackend.open(dir));
      await first.createTenant(tenantRec('a'));
      await first.createIndex(indexRec('a', 'x', 'p1'), physRec('a', 'x', 'p1'));
      await first.putJob(jobRec('a', 'j1', 'ingestion', 1));
      await first.putPlacement(table(1, [['shard-1']]), 0);
      const member = await first.register(memberRec('shard-1', ['shard']), 30);
      const jobLease = await first.acquireJobLease(jobRec('a', 'j1', 'ingestion', 1).job_id, NodeId('shard-1'), 30);
      expect(jobLease).not.toBeNull();
      expect(await first.listMembers()).toHaveLength(1);
      const lastRevision = (await first.backend.get('placement'))!.modRevision;
      // released, not revoked: the leased keys stay on disk, as after a crash
      member.release();
      jobLease!.release();
      await first.close();

      const second = new MetadataCoordinator(await EmbeddedBackend.open(dir));
      expect(await second.getTenant(TenantId('a'))).toEqual(tenantRec('a'));
      expect((await second.getIndex(TenantId('a'), IndexId('x')))?.physical_index_id).toBe('p1');
      expect((await second.listJobs(TenantId('a'), null, 50)).map((j) => j.job_id)).toEqual(['j1']);
      expect(await second.getPlacement()).toEqual(table(1, [['shard-1']]));
      expect(await second.listMembers()).toEqual([]);
      expect(await second.jobLeaseHolder(jobRec('a', 'j1', 'ingestion', 1).job_id)).toBeNull();
      expect((await second.listKnownShardNodes()).map((m) => m.node_id)).toEqual(['shard-1']);
      const rev = await second.backend.put('probe', 1);
      expect(rev).toBeGreaterThan(lastRevision);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
