import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { mainThreadCpuSeconds, processCpuSeconds, processResidentMb } from '../load/process-cpu.js';

const onLinux = process.platform === 'linux';

/** Keeps the calling thread busy for `ms` of wall time. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  let x = 0;
  while (performance.now() < end) x += Math.sqrt(x + 1);
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
    // 400 ms of wall time busy: at least half of it is CPU even on a loaded machine
    expect(m1 - m0).toBeGreaterThanOrEqual(0.2);
    // both count 1/100 s ticks: compared as whole ticks, not as differences of floats
    const ticks = (seconds: number) => Math.round(seconds * 100);
    expect(ticks(p1 - p0)).toBeGreaterThanOrEqual(ticks(m1 - m0));
  });

  it('counts the work of a worker thread in the process figure only', async () => {
    const p0 = processCpuSeconds(process.pid)!;
    const m0 = mainThreadCpuSeconds(process.pid)!;
    const worker = new Worker(
      `const end = performance.now() + 600; let x = 0; while (performance.now() < end) x += Math.sqrt(x + 1); require('node:worker_threads').parentPort.postMessage(x);`,
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
