// Regression guard for durability: an acknowledged write must survive SIGKILL of the writer.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionStore } from '../partition-store.js';
import { tempDir } from './helpers.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const register = path.join(here, 'fixtures', 'ts-register.mjs');
const writer = path.join(here, 'fixtures', 'crash-writer.ts');

describe('PartitionStore durability', () => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => cleanup?.());

  it('keeps every acknowledged write after the writer is SIGKILLed right after an ack', async () => {
    const { dir, remove } = await tempDir('shard-crash-');
    cleanup = remove;
    const child = spawn(process.execPath, ['--import', register, writer, dir, '5'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const acked = new Set<number>();
    const deleted = new Set<string>();
    // deletes issued but not acknowledged when the kill landed: either outcome is correct
    const inFlight = new Set<string>();
    let killedAt = -1;
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    const lines = createInterface({ input: child.stdout });
    const drained = new Promise<void>((resolve) => lines.once('close', () => resolve()));
    lines.on('line', (line) => {
      const [kind, value] = line.split(' ');
      if (kind === 'ack') {
        acked.add(Number(value));
        // kill on the 40th ack while the writer is already busy with the next batch
        if (acked.size === 40 && killedAt < 0) {
          killedAt = Number(value);
          child.kill('SIGKILL');
        }
      } else if (kind === 'deleting' && value) inFlight.add(value);
      else if (kind === 'del' && value) {
        inFlight.delete(value);
        deleted.add(value);
      }
    });
    const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const signal = await exited;
    clearTimeout(guard);
    // acks already in the pipe when the kill landed are acknowledgements too
    await drained;
    expect(signal, `writer exited on its own:\n${stderr}`).toBe('SIGKILL');
    expect(killedAt).toBeGreaterThanOrEqual(39);

    const store = await PartitionStore.open(dir, 5);
    try {
      const ref = { tenantId: 'crash', physicalIndexId: 'idx', part: 0, parts: 1 };
      const present = new Set<string>();
      for await (const batch of store.scan(ref)) for (const d of batch) present.add(d.id);
      for (const b of acked) {
        for (let i = 0; i < 20; i++) {
          const id = `b${b}-d${i}`;
          if (!deleted.has(id) && !inFlight.has(id)) expect(present.has(id), `acknowledged document ${id} is missing`).toBe(true);
        }
      }
      for (const id of deleted) expect(present.has(id), `acknowledged delete of ${id} was lost`).toBe(false);
      // the counters were written in the same batches as the documents, so they agree
      expect(store.stats(ref).documentCount).toBe(present.size);
      expect(store.totals().documentCount).toBe(present.size);
      // and no half batch exists: every batch is all there or not at all
      const perBatch = new Map<string, number>();
      for (const id of present) {
        const b = id.split('-')[0]!;
        perBatch.set(b, (perBatch.get(b) ?? 0) + 1);
      }
      for (const [b, n] of perBatch) {
        const deletedHere = [...deleted, ...[...inFlight].filter((id) => !present.has(id))].filter((id) => id.startsWith(`${b}-`)).length;
        expect(n + deletedHere, `batch ${b} is partial`).toBe(20);
      }
    } finally {
      await store.close();
    }
  });
});
