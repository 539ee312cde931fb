// Pools closed while their threads still load: a process that stops a moment after its start (a
// node refused its port) closes its query and segment pools at once. A worker thread terminated
// inside Node's loading of its modules (require() of an ES module, a native addon's start) fails a
// Node assertion and aborts the whole process with SIGABRT instead of its exit status, so the
// pools wait for their threads' loads before they terminate them. Run in a child process, since
// the failure is the death of the process.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN_JS } from '../../../node/runtime/process-harness.js';

const dist = path.dirname(path.dirname(MAIN_JS));
const graphs = mkdtempSync(path.join(tmpdir(), 'suggest-pool-close-'));
afterAll(() => rmSync(graphs, { recursive: true, force: true }));

/**
 * Times a query thread's load (to its first answer), then creates both pools `rounds`
 * times and closes them at a random point from a third of that load time to a third past its
 * end, where the loads are cut short; exits with 7.
 */
const script = (rounds: number) => `
const { QueryPool } = await import(${JSON.stringify(pathToFileURL(path.join(dist, 'shard/search/query-pool.js')).href)});
const { SegmentPool } = await import(${JSON.stringify(pathToFileURL(path.join(dist, 'shard/search/segment-pool.js')).href)});
const queryPool = () => new QueryPool({ threads: 2, graphDir: ${JSON.stringify(path.join(graphs, 'query'))} });
const { Piscina } = await import('piscina');
const started = performance.now();
const timed = new Piscina({ filename: ${JSON.stringify(path.join(dist, 'shard/search/query-worker.js'))}, minThreads: 1, maxThreads: 1 });
await timed.run({ kind: 'typeahead', key: '', version: -1, stamp: -1, request: {} });
const loadMs = performance.now() - started;
await timed.destroy();
for (let i = 0; i < ${rounds}; i++) {
  const query = queryPool();
  const segments = new SegmentPool({ threads: 2, graphDir: ${JSON.stringify(path.join(graphs, 'segments'))} });
  await new Promise((resolve) => setTimeout(resolve, loadMs * (0.33 + Math.random())));
  await Promise.all([query.close(), segments.close()]);
}
process.exit(7);
`;

describe('pools closed during their threads load', () => {
  it('let the process exit with its own status, never abort it', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script(25)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
    expect({ code, signal, stderr: stderr.includes('FATAL') || stderr.includes('Assertion failed') ? stderr : '' }).toEqual({ code: 7, signal: null, stderr: '' });
  }, 120_000);
});
