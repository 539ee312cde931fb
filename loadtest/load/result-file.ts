// Where a load script's result goes: `out` when given, else a time-stamped file of its kind under
// loadtest/results/; and the entry every such script runs through, which prints a failure and
// exits non-zero.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Writes `result`, with the machine's CPU count and load average and the time, as JSON; returns the file. */
export function writeResult(kind: string, out: string | undefined, result: Record<string, unknown>): string {
  const file = out ?? path.join('loadtest', 'results', `${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify({ kind, ...result, machine: { cpus: os.cpus().length, loadavg: os.loadavg() }, finished_at: new Date().toISOString() }, null, 2)}\n`);
  return file;
}

export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
