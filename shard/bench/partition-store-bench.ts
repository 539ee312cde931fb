// Write and read cost of one partition. Run:
//   node --import ./shard/test/fixtures/ts-register.mjs shard/bench/partition-store-bench.ts [dir]
// Synced batches are bounded by the disk's fsync latency, so batch size and the number of
// indexes writing at once (RocksDB group-commits concurrent batches into one WAL sync) decide
// ingestion throughput far more than anything done in JavaScript.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { encodeDocument } from '../../node/runtime/document.js';
import { PartitionStore } from '../partition-store.js';

const dir = process.argv[2] ?? (await mkdtemp(path.join(os.tmpdir(), 'shard-bench-')));
const store = await PartitionStore.open(dir, 0);
let seq = 0;
const batch = (n: number) =>
  Array.from({ length: n }, () => {
    const id = `d${seq++}`;
    const body = encodeDocument({ id, title: `Product ${id}`, desc: 'A reasonably sized description '.repeat(6), manufacturer: 'Acme', raw: { price: 19.99, category: 'tv' } });
    return { id, body };
  });
const ref = (i: number) => ({ tenantId: 'bench', physicalIndexId: `idx${i}`, part: 0, parts: 1 });

async function measure(name: string, ops: number, docsPerOp: number, fn: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < Math.min(20, ops); i++) await fn();
  const t0 = performance.now();
  for (let i = 0; i < ops; i++) await fn();
  const ms = performance.now() - t0;
  const perOp = ms / ops;
  console.log(`${name.padEnd(52)} ${perOp.toFixed(3).padStart(9)} ms/op ${Math.round((ops * docsPerOp * 1000) / ms).toString().padStart(9)} docs/s`);
}

await store.upsert(ref(0), batch(20_000));
await measure('upsert 1 doc (synced)', 300, 1, () => store.upsert(ref(0), batch(1)));
await measure('upsert 500 docs (synced)', 60, 500, () => store.upsert(ref(0), batch(500)));
await measure('replace 500 existing docs (synced)', 60, 500, () => {
  const start = (Math.random() * 19_000) | 0;
  return store.upsert(ref(0), Array.from({ length: 500 }, (_, i) => ({ id: `d${start + i}`, body: Buffer.from('x'.repeat(300)) })));
});
await measure('8 indexes x upsert 1 doc at once (group commit)', 200, 8, () => Promise.all(Array.from({ length: 8 }, (_, i) => store.upsert(ref(i + 1), batch(1)))));
await measure('get 1 doc', 20_000, 1, () => store.get(ref(0), `d${(Math.random() * 20_000) | 0}`));
await measure('list page of 50 at offset 0', 2_000, 50, () => store.list(ref(0), { offset: 0, limit: 50 }));
await measure('list page of 50 at offset 10000', 200, 50, () => store.list(ref(0), { offset: 10_000, limit: 50 }));
await store.close();
if (!process.argv[2]) await rm(dir, { recursive: true, force: true });
