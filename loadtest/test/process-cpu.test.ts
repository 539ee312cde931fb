import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { mainThreadCpuSeconds, processCpuSeconds, processResidentMb } from '../load/process-cpu.js';

const onLinux = process.platform === 'linux';

/**
 * Keeps the calling thread busy until the process has used `ms` more of CPU (by its own count,
 * not /proc's): the other threads idle, that is this thread's, however loaded the machine is.
 */
function spin(ms: number): void {
  const start = process.cpuUsage();
  let x = 0;
  for (;;) {
    for (let i = 0; i < 10_000; i++) x += Math.sqrt(x + 1);
    const used = process.cpuUsage(start);
    if (used.user + used.system >= ms * 1000) break;
  }
  if (x < 0) throw new Error('unreachable');
}

describe.runIf(onLinux)('process CPU from /proc', () => {
  it('counts work on the main thread in both the process and the main-thread figures', () => {
    const p0 = processCpuSeconds(process.pid)!;
    const m0 = mainThreadCpuSeconds(process.pid)!;
    spin(400);
    // read inside the process's readings, so that the main thread's interval lies within its own
    const m1 = mainThreadCpuSeconds(process.pid)!;
    const p1 = processCpuSeconds(process.pid)!;
    // 400 ms of CPU, nearly all of it on this thread
    expect(m1 - m0).toBeGreaterThanOrEqual(0.2);
    // both count 1/100 s ticks: compared as whole ticks, not as differences of floats. The kernel
    // scales a thread's and the whole process's times to their runtime separately (cputime_adjust),
    // each rounded to a tick, so the process may show one tick less than its busiest thread
    // (39 against 40, seen once in a loaded test run)
    const ticks = (seconds: number) => Math.round(seconds * 100);
    expect(ticks(p1 - p0)).toBeGreaterThanOrEqual(ticks(m1 - m0) - 1);
  });

  it('counts the work of a worker thread in the process figure only', async () => {
    const p0 = processCpuSeconds(process.pid)!;
    const m0 = mainThreadCpuSeconds(process.pid)!;
    const worker = new Worker(
      // 600 ms of the process's CPU, counted as spin() does: the main thread only waits meanwhile
      `const start = process.cpuUsage(); let x = 0; for (;;) { for (let i = 0; i < 10000; i++) x += Math.sqrt(x + 1); const u = process.cpuUsage(start); if (u.user + u.system >= 600000) break; } require('node:worker_threads').parentPort.postMessage(x);`,
      { eval: true },
    );
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    const p1 = processCpuSeconds(process.pid)!;
    const m1 = mainThreadCpuSeconds(process.pid)!;
    expect(p1 - p0).toBeGreaterThanOrEqual(0.3);
    // the main thread only waited (starting the worker costs it a little)
    expect(m1 - m0).toBeLessThan((p1 - p0) / 2);
  });

  it('reports nothing for a process that is not there', () => {
    // pid_max is at most 2^22 on Linux: this one cannot exist
    expect(processCpuSeconds(2 ** 23)).toBeNull();
    expect(mainThreadCpuSeconds(2 ** 23)).toBeNull();
    expect(processResidentMb(2 ** 23)).toBeNull();
    expect(mainThreadCpuSeconds(undefined)).toBeNull();
  });

  it('reads the resident memory of this process', () => {
    const mb = processResidentMb(process.pid)!;
    expect(mb).toBeGreaterThan(10);
    expect(mb).toBeLessThan(64 * 1024);
  });
});
