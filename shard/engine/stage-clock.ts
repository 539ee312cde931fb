// Per-stage timings of one query (`profile=true`): each lap charges the time since the previous
// lap to a stage, so the stages add up to the engine's whole time for the query.

/** What a part adds to its entry in `debug.profile.parts`: milliseconds per stage, and in all. */
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
  /** waited for the part's engine to load (read back or built from the stored documents) */
  load_wait_ms?: number;
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
    for (const [name, ms] of Object.entries(this.stages)) stages[name] = round3(ms);
    return { stages, engine_ms: round3(this.last - this.started) };
  }
}

/** To three decimals: milliseconds to the microsecond, as profiles and debug timings report them. */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
