// Where a pool's worker script is: the compiled sibling of this file in `dist/`, or, when this
// runs from source (tests through vitest), the same file under `dist/` (built by `npm test` first).
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The compiled worker `name` (e.g. 'segment-worker.js') of this folder. */
export function workerFile(name: string): string {
  const here = fileURLToPath(import.meta.url);
  const sibling = path.join(path.dirname(here), name);
  if (here.endsWith('.js') && existsSync(sibling)) return sibling;
  const repo = path.resolve(path.dirname(here), '../..');
  return path.join(repo, 'dist', 'shard', 'search', name);
}

/**
 * How long a closing pool waits for its threads to finish loading their modules. Piscina loads a
 * task file with require(), which on Node 20.19+ loads an ES module in place; a thread terminated
 * inside that load fails a Node assertion and aborts the whole process (SIGABRT instead of its
 * exit status). A load takes a fraction of a second, a few seconds on a saturated machine; the
 * process's shutdown gives up after 10 s.
 */
export const THREAD_LOAD_WAIT_MS = 8_000;
