// What a router's query to a shard node costs in transport: a unary `Query` call against a
// message on the node's `QueryStream`, side by side in one run. A child process serves the shard
// gRPC service twice, on two ports, over a ShardApi that answers every query at once with a fixed
// result of the size of a typeahead part's answer: once with QueryStream, once without it (its
// callers fall back to unary calls, as they do with an older build). This process sends the same
// queries, `--concurrency` at a time, through the router's own client (GrpcClientPool) to each in
// alternating rounds, and reports wall time and the CPU of both processes per query: the engine
// costs nothing here, so the figures are the transport's alone.
//
//   node dist/loadtest/grpc-query-transport.js [--queries 20000] [--concurrency 32] [--rounds 3] [--out FILE]
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pack } from 'msgpackr';
import { GrpcClientPool } from '../node/runtime/grpc-client-pool.js';
import { GrpcServer } from '../node/runtime/grpc-server.js';
import { NodeId } from '../node/runtime/ids.js';
import type { ShardApi } from '../node/runtime/shard-api.js';
import { shardGrpcService } from '../shard/shard-grpc-service.js';
import { processCpuSeconds } from './load/process-cpu.js';
import { runMain, writeResult } from './load/result-file.js';
import { cliArgs } from './load/cli.js';

const { values } = cliArgs({
  options: {
    serve: { type: 'boolean', default: false },
    queries: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
    out: { type: 'string' },
  },
});

/** About what one part sends back for a typeahead of ten suggestions. */
const RESULT = pack({ normalized_query: 'samsung gal', corrected_query: null, suggestions: Array.from({ length: 10 }, (_, i) => ({ id: `bb-${i}`, type: 'product', title: `Samsung Galaxy S${20 + i} 128GB Unlocked Smartphone`, score: 1 - i / 10 })) });

/** The child: both services over a ShardApi that answers queries at once; prints their addresses. */
async function serve(): Promise<void> {
  const never = new Promise<never>(() => undefined);
  const api: ShardApi = {
    query: () => Promise.resolve({ result: RESULT }),
    upsert: () => never,
    getDocument: () => never,
    deleteDocument: () => never,
    listDocuments: () => never,
    dropIndex: () => never,
    indexStats: () => never,
    partitionStats: () => never,
    recordEvents: () => never,
    putBlob: () => never,
    getBlob: () => ({ [Symbol.asyncIterator]: () => ({ next: () => never }) }),
    deleteBlob: () => never,
    startJob: () => never,
    cancelJob: () => never,
  };
  const stream = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(api) });
  const withoutStream = shardGrpcService(api) as unknown as Record<string, unknown>;
  delete withoutStream.queryStream;
  const unary = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: withoutStream as never });
  process.stdout.write(`${JSON.stringify({ stream: stream.address, unary: unary.address })}\n`);
  process.once('SIGTERM', () => process.exit(0));
}

interface Measured {
  wall_us_per_query: number;
  client_cpu_us_per_query: number;
  server_cpu_us_per_query: number | null;
}

async function main(): Promise<void> {
  const queries = Number(values.queries);
  const concurrency = Number(values.concurrency);
  const rounds = Number(values.rounds);
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--serve'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const first = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the server process exited (${code})`)));
    });
    const addresses = JSON.parse(first) as Record<'stream' | 'unary', string>;
    const pools = { stream: new GrpcClientPool({ resolve: () => addresses.stream }), unary: new GrpcClientPool({ resolve: () => addresses.unary }) };
    const node = NodeId('shard');
    const request = { ref: { tenantId: 't', physicalIndexId: 'p', part: 0, parts: 1, partition: 0, epoch: 0 }, kind: 'typeahead', payload: pack({ query: 'samsung gal', limit: 10 }) };
    const run = async (mode: 'stream' | 'unary', n: number): Promise<Measured> => {
      const shard = pools[mode].client(node);
      let sent = 0;
      const worker = async () => {
        while (sent < n) {
          sent++;
          await shard.query(request);
        }
      };
      const server0 = processCpuSeconds(child.pid);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await Promise.all(Array.from({ length: concurrency }, worker));
      const wall = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const server1 = processCpuSeconds(child.pid);
      return {
        wall_us_per_query: (wall * 1000) / n,
        client_cpu_us_per_query: (cpu.user + cpu.system) / n,
        server_cpu_us_per_query: server0 !== null && server1 !== null ? ((server1 - server0) * 1e6) / n : null,
      };
    };
    // warm both paths (connections, streams, JIT)
    await run('stream', 2_000);
    await run('unary', 2_000);
    const results: Record<'stream' | 'unary', Measured[]> = { stream: [], unary: [] };
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? (['unary', 'stream'] as const) : (['stream', 'unary'] as const)) {
        const m = await run(mode, queries);
        results[mode].push(m);
        process.stderr.write(`[grpc-query-transport] round ${r + 1} ${mode}: ${m.wall_us_per_query.toFixed(1)} µs wall, client CPU ${m.client_cpu_us_per_query.toFixed(1)} µs, server CPU ${m.server_cpu_us_per_query?.toFixed(1) ?? 'n/a'} µs per query\n`);
      }
    }
    const mean = (ms: Measured[], k: keyof Measured) => ms.reduce((a, m) => a + (m[k] ?? Number.NaN), 0) / ms.length;
    const summary = Object.fromEntries((['unary', 'stream'] as const).map((mode) => [mode, { wall_us_per_query: mean(results[mode], 'wall_us_per_query'), client_cpu_us_per_query: mean(results[mode], 'client_cpu_us_per_query'), server_cpu_us_per_query: mean(results[mode], 'server_cpu_us_per_query') }]));
    const file = writeResult('grpc-query-transport', values.out, { queries, concurrency, rounds, result_bytes: RESULT.length, rounds_measured: results, summary });
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\nwrote ${file}\n`);
    pools.stream.close();
    pools.unary.close();
  } finally {
    child.kill('SIGTERM');
  }
}

runMain(values.serve ? serve : main);
