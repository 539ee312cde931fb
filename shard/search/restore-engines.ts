// After a start, the engines that were in memory when the process stopped are read back from the
// snapshots written at the stop, one at a time, in the background: the first queries after a
// restart (a rolling restart of a cluster, say) then find their index loaded instead of each
// waiting for its read-back (a third of a second for 58k documents). Only snapshots are read:
// a part without one (a partition this node no longer leads drops them at its first table, or
// writes made them stale) is left to its first query, and so is a part this node no longer
// holds. Each goes through the node's `warm` query, with the node's ownership checks.
import type * as pb from '../../proto/gen/shard.js';
import { SuggestError } from '../../node/runtime/errors.js';
import type { Logger } from '../../node/runtime/log.js';
import type { WarmRequest, WarmState } from '../query-handler.js';
import type { ShardNode } from '../shard-node.js';

/** How often a part being read back is asked again whether it is loaded. */
const POLL_MS = 20;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface RestoreReport {
  restored: number;
  skipped: number;
  failed: number;
  ms: number;
}

/** `progress(left)`: called with the parts left to go before each, and 0 at the end. */
export async function restoreEngines(shard: ShardNode, parts: readonly Omit<pb.IndexRef, 'epoch'>[], log?: Logger, progress?: (left: number) => void): Promise<RestoreReport> {
  const started = performance.now();
  const report: RestoreReport = { restored: 0, skipped: 0, failed: 0, ms: 0 };
  const payload: WarmRequest = { snapshot_only: true };
  for (const [i, part] of parts.entries()) {
    progress?.(parts.length - i);
    const ask = async () => (await shard.queryValue({ ref: { ...part, epoch: shard.placement?.epoch ?? 0 }, kind: 'warm', payload })) as WarmState;
    try {
      let state = await ask();
      while (state.state === 'loading') {
        await sleep(POLL_MS);
        state = await ask();
      }
      if (state.state === 'ready') report.restored++;
      else report.skipped++;
    } catch (err) {
      // the node is stopping: the rest would fail the same way
      if (err instanceof SuggestError && err.code === 'unavailable') break;
      report.failed++;
      log?.debug('an engine was not read back after the start', { index: part.physicalIndexId, part: part.part, err: err instanceof Error ? err.message : String(err) });
    }
  }
  progress?.(0);
  report.ms = Math.round(performance.now() - started);
  return report;
}
