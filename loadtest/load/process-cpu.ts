// CPU time a server process spent (user + system), read from /proc: what each answer cost the
// server, a figure that holds up better than throughput when other work shares the cores (a
// busy machine slows a server down but barely changes the CPU each request needs). Also the
// share of it its main thread (a Node server's event loop) spent, which tells an event loop
// that limits throughput from threads that do, and the process's resident memory. Linux only;
// elsewhere all report nothing.
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on every Linux ABI Node runs on

/** Seconds of CPU the process has used so far (all its threads, ended ones too), or null when /proc cannot tell. */
export function processCpuSeconds(pid: number | undefined): number | null {
  return pid === undefined ? null : statCpuSeconds(`/proc/${pid}/stat`);
}

/**
 * Seconds of CPU the process's main thread has used so far (in Node, the event loop: HTTP,
 * routing and whatever the server answers on it; worker threads and the collector's helpers
 * not counted), or null when /proc cannot tell.
 */
export function mainThreadCpuSeconds(pid: number | undefined): number | null {
  return pid === undefined ? null : statCpuSeconds(`/proc/${pid}/task/${pid}/stat`);
}

function statCpuSeconds(file: string): number | null {
  try {
    const stat = readFileSync(file, 'utf8');
    // the command name (field 2) may hold spaces: fields are counted after its closing parenthesis
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
    return (utime + stime) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/** The process's resident memory in MB, or null when /proc cannot tell. */
export function processResidentMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}
