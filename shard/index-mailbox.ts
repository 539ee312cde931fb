// Per-index serial queues. The specification requires that requests changing one index are
// processed in order for that index; the shard node puts every write of an index part into
// that part's lane, and a lane runs one task at a time in arrival order. Different lanes run
// concurrently, so one busy index never holds up another. A lane exists only while it has
// work, so memory follows the number of indexes being written, not the number that exist.
import { suggestError } from '../node/runtime/errors.js';

interface Job {
  task: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

interface Lane {
  jobs: (Job | undefined)[];
  head: number;
}

export interface IndexMailboxOptions {
  /** tasks waiting or running per lane before new ones are refused with `unavailable` */
  maxDepth?: number;
}

export class IndexMailbox {
  private readonly lanes = new Map<string, Lane>();
  private readonly maxDepth: number;
  private idleWaiters: (() => void)[] = [];

  constructor(options: IndexMailboxOptions = {}) {
    this.maxDepth = options.maxDepth ?? 10_000;
  }

  /**
   * Runs `task` after every task queued earlier under the same key has settled. The task's
   * failure rejects only its own promise; the lane goes on with the next task.
   */
  run<T>(key: string, task: () => T | Promise<T>): Promise<T> {
    let lane = this.lanes.get(key);
    if (lane && lane.jobs.length - lane.head >= this.maxDepth) {
      const reason = `Index part ${key} already has ${this.maxDepth} writes waiting`;
      return Promise.reject(suggestError('unavailable', { reason }));
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = { task, resolve: resolve as (v: unknown) => void, reject };
      if (lane) {
        lane.jobs.push(job);
        return;
      }
      lane = { jobs: [job], head: 0 };
      this.lanes.set(key, lane);
      void this.pump(key, lane);
    });
  }

  /** Tasks waiting or running under `key`. */
  depth(key: string): number {
    const lane = this.lanes.get(key);
    return lane ? lane.jobs.length - lane.head : 0;
  }

  /** Lanes that currently have work. */
  get activeLanes(): number {
    return this.lanes.size;
  }

  /** Resolves once every lane is empty (used to drain writes before closing). */
  idle(): Promise<void> {
    if (this.lanes.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async pump(key: string, lane: Lane): Promise<void> {
    while (lane.head < lane.jobs.length) {
      // the running job stays at the head until it settles, so depth() counts it
      const job = lane.jobs[lane.head]!;
      try {
        job.resolve(await job.task());
      } catch (err) {
        job.reject(err);
      }
      lane.jobs[lane.head++] = undefined;
      // reclaim the consumed front of a long-lived lane without shifting on every task
      if (lane.head >= 1024 && lane.head * 2 >= lane.jobs.length) {
        lane.jobs.splice(0, lane.head);
        lane.head = 0;
      }
    }
    this.lanes.delete(key);
    if (this.lanes.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}
