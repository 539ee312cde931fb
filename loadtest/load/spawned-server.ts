// Starts a baseline server as a child process of its own (so it never shares an event loop with
// the load generator) and waits for the JSON line announcing its port.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { REPO_ROOT } from '../data/data-files.js';

export const BASELINES = ['bare-uws', 'fastify-flexsearch'] as const;
export type BaselineName = (typeof BASELINES)[number];

export interface SpawnedServer {
  name: string;
  url: string;
  pid: number;
  ready: Record<string, unknown>;
  stop(): Promise<void>;
}

export function parseBaselineName(name: string): BaselineName {
  if (!(BASELINES as readonly string[]).includes(name)) throw new Error(`unknown baseline "${name}" (known: ${BASELINES.join(', ')})`);
  return name as BaselineName;
}

/**
 * A baseline as run-load names it: `NAME`, `bare-uws@MICROS` (see bare-uws-server.ts `--work-us`)
 * or `bare-uws@MICROSxTHREADS` (the same work on that many event loops sharing the port).
 */
export interface BaselineSpec {
  name: BaselineName;
  /** how the reports name it */
  label: string;
  /** arguments of its script beyond the common ones */
  args: string[];
}

export function parseBaselineSpec(spec: string): BaselineSpec {
  const at = spec.indexOf('@');
  if (at < 0) return { name: parseBaselineName(spec), label: spec, args: [] };
  const name = parseBaselineName(spec.slice(0, at));
  const m = /^(\d+(?:\.\d+)?)(?:x([1-9]\d?))?$/.exec(spec.slice(at + 1));
  if (name !== 'bare-uws' || m === null) throw new Error(`"${spec}": only bare-uws takes @MICROSECONDS of work per request, optionally xTHREADS (e.g. bare-uws@20, bare-uws@20x2)`);
  const threads = m[2] === undefined ? [] : ['--threads', m[2]];
  return { name, label: spec, args: ['--work-us', m[1]!, ...threads] };
}

/** Compiled script of a baseline (baselines always run compiled, also under vitest). */
export function baselineScript(name: BaselineName): string {
  return path.join(REPO_ROOT, 'dist', 'loadtest', 'baselines', `${name}-server.js`);
}

export async function spawnBaseline(name: BaselineName, args: string[] = [], timeoutMs = 120_000): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [baselineScript(name), '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => {
    stderr.push(l);
    if (stderr.length > 50) stderr.shift();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not announce its port within ${timeoutMs} ms:\n${stderr.join('\n')}`));
    }, timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${stderr.join('\n')}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const msg = JSON.parse(line) as Record<string, unknown>;
        if (msg['msg'] === 'ready' && typeof msg['port'] === 'number') {
          clearTimeout(timer);
          resolve(msg);
        }
      } catch {
        // not our line
      }
    });
  });
  return {
    name,
    url: `http://127.0.0.1:${ready['port'] as number}`,
    pid: child.pid!,
    ready,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(force);
    },
  };
}
