// Before the alias swap, a promotion brings the new physical index's engines into memory on
// every replica that will answer its queries, and waits for them within a bound. Without it, the
// first queries after the swap wait for each part's engine to be built from its stored documents
// (about 8 s for 58k documents) while every request to the index queues behind it. An ingestion
// job starts the same loads when it succeeds, so a promotion after a job mostly finds them done.
import type { PhysicalIndexRecord } from '../coordinator/coordinator.js';
import type { TenantId } from '../node/runtime/ids.js';
import type { DataPlane, ReplicaWarmState } from './data-plane.js';

/** How often the replicas are asked again while their engines load (each answer is immediate). */
const POLL_MS = 100;

export interface WarmUpReport {
  /** every replica asked has its engine in memory */
  ready: boolean;
  waited_ms: number;
  replicas: number;
  replicas_ready: number;
  /** the replicas not ready when the wait ended */
  pending: ReplicaWarmState[];
}

/**
 * Asks every replica of every part to load its engine, then again every POLL_MS while any is
 * loading, for `timeoutMs` at most (0: asked once, not waited for).
 */
export async function warmUp(data: DataPlane, tenant: TenantId, physical: PhysicalIndexRecord, timeoutMs: number): Promise<WarmUpReport> {
  const started = performance.now();
  for (;;) {
    const states = await data.warm(tenant, physical);
    const pending = states.filter((s) => s.state !== 'ready');
    const waited = performance.now() - started;
    // a replica that could not be asked is reported, not waited for: the swap does not hang on a node that is down
    if (!pending.some((s) => s.state === 'loading') || waited + POLL_MS > timeoutMs) {
      return { ready: pending.length === 0, waited_ms: Math.round(waited), replicas: states.length, replicas_ready: states.length - pending.length, pending };
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
