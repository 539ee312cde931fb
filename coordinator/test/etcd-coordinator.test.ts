// The coordinator contract over a real etcd (started on loopback by etcd-process.ts), plus what
// only etcd has to prove: watches and leases ride out an etcd restart.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type EtcdProcess } from '../../node/runtime/etcd-process.js';
import { TenantId } from '../../node/runtime/ids.js';
import { setLogLevel } from '../../node/runtime/log.js';
import type { MetaEvent } from '../coordinator.js';
import { EtcdBackend } from '../etcd-backend.js';
import { MetadataCoordinator } from '../metadata-coordinator.js';
import { coordinatorContract, memberRec, tenantRec, waitFor, type ContractHarness } from './coordinator-contract.js';

setLogLevel('error');

let etcd: EtcdProcess;
beforeAll(async () => {
  etcd = await startEtcd();
});
afterAll(async () => {
  await etcd?.stop();
});

/** Clients of one fresh key prefix, so tests sharing the etcd never see each other's keys. */
function etcdHarness(): Promise<ContractHarness> {
  const prefix = `/suggest-test-${randomBytes(6).toString('hex')}/`;
  const clients: MetadataCoordinator[] = [];
  return Promise.resolve({
    async connect() {
      const backend = await EtcdBackend.connect({ endpoints: etcd.endpoints, prefix, electionTtlSeconds: 2 });
      const c = new MetadataCoordinator(backend);
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) await c.close();
    },
  });
}

coordinatorContract('etcd', etcdHarness);

describe('etcd restarts', () => {
  it('a watch resumes and a lease survives when etcd restarts', async () => {
    const h = await etcdHarness();
    try {
      const c = await h.connect();
      const events: MetaEvent[] = [];
      await c.watchMeta((e) => events.push(e));
      const members: string[][] = [];
      await c.watchMembers((ms) => members.push(ms.map((m) => m.node_id)));
      const lease = await c.register(memberRec('shard-1', ['shard']), 5);
      await waitFor('the member', () => members.at(-1)?.join() === 'shard-1');
      await c.createTenant(tenantRec('before'));
      await waitFor('the first event', () => events.length === 1);

      await etcd.restart();
      // the client reconnects on its own; writes may fail until it has
      await waitFor(
        'a write after the restart',
        async () => {
          try {
            await c.createTenant(tenantRec('after'));
            return true;
          } catch {
            return false;
          }
        },
        15_000,
      );
      await waitFor('the watch to deliver the post-restart event', () => events.some((e) => e.type === 'tenant' && e.tenant_id === TenantId('after')), 15_000);
      expect(events.filter((e) => e.type === 'tenant').map((e) => e.tenant_id)).toEqual(['before', 'after']);
      // the keepalive resumed in time: the member is still registered
      expect((await c.listMembers()).map((m) => m.node_id)).toEqual(['shard-1']);
      let lost = false;
      void lease.lost.then(() => (lost = true));
      expect(lost).toBe(false);
    } finally {
      await h.close();
    }
  });

  it('answers as soon as etcd is back after a run of failed calls, with no pause of its own', async () => {
    const backend = await EtcdBackend.connect({ endpoints: etcd.endpoints, prefix: `/suggest-test-${randomBytes(6).toString('hex')}/` });
    try {
      await backend.put('k', 1);
      await etcd.kill();
      // calls to an etcd that is down fail, each after the client's own retries
      for (let i = 0; i < 4; i++) await expect(backend.get('k')).rejects.toMatchObject({ code: 'unavailable' });
      await etcd.restart();
      // etcd answers again: the next calls do too. The client's default circuit breaker, open
      // after three failures in a row, refused every call for five seconds more: a shard node's
      // placement watch and lease keepalives stalled that long after etcd was back.
      const started = Date.now();
      await waitFor(
        'a read after the restart',
        async () => {
          try {
            return (await backend.get('k'))?.value === 1;
          } catch {
            return false;
          }
        },
        15_000,
      );
      expect(Date.now() - started).toBeLessThan(2_500);
    } finally {
      await backend.close();
    }
  });
});
