// Per-stage timings of one query (`profile=true`): each lap charges the time since the previous
// lap to a stage, so the stages add up to the engine's whole time for the query.

/** What a part reports under `debug.profile.parts[].engine`: milliseconds per stage, and in all. */
export interface EngineProfile {
  stages: Record<string, number>;
  engine_ms: number;
  /** where it ran: `event loop` or `query thread N` (added by the shard) */
  thread?: string;
  /** waited for a query thread */
  queue_ms?: number;
  /** the rest of the hand-off to the query thread and back */
  handoff_ms?: number;
  /** the query thread was sent the part's view first */
  view_sent?: boolean;
  /** waited for documents written before the query to become searchable */
  fresh_wait_ms?: number;
}

export class StageClock {
  private readonly started = performance.now();
  private last = this.started;
  private readonly stages: Record<string, number> = {};

  /** Charges the time since the last lap (or the start) to `stage`. */
  lap(stage: string): void {
    const now = performance.now();
    this.stages[stage] = (this.stages[stage] ?? 0) + (now - this.last);
    this.last = now;
  }

  report(): EngineProfile {
    const stages: Record<string, number> = {};
    for (const [name, ms] of Object.entries(this.stages)) stages[name] = roundMs(ms);
    return { stages, engine_ms: roundMs(this.last - this.started) };
  }
}

/** Milliseconds to the microsecond, as profiles report them. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
