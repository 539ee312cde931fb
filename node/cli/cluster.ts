// `npm run cluster`: a local cluster on loopback for development and tests: etcd, 3 shard nodes
// and 2 routers, each a real process. Commands on stdin, one per line:
//   add-shard   start one more shard node; placement moves replicas to it (bounded moves)
//   status      the admin cluster view: nodes, partitions per node, moves in progress
//   help        this list
// Ctrl-C (or end of input with SUGGEST_CLUSTER_EXIT_ON_EOF=1) stops every process and etcd.
// The launcher is the shard nodes' supervisor: one that exits on its own (a shard node exits when
// its membership lease expired, e.g. after etcd stalled) is started again on its data.
import path from 'node:path';
import { createInterface } from 'node:readline';
import { mkdirSync, rmSync } from 'node:fs';
import { startLocalCluster } from '../runtime/process-harness.js';
import { loadConfig } from '../runtime/config.js';
import { generateApiKey } from '../runtime/api-keys.js';

const config = loadConfig();
const baseDir = path.join(config.dataDir, 'cluster');
rmSync(baseDir, { recursive: true, force: true });
mkdirSync(baseDir, { recursive: true });
const adminKey = config.adminKey ?? generateApiKey('admin').secret;

const shards = Number(process.env.SUGGEST_CLUSTER_SHARDS ?? 3);
const routers = Number(process.env.SUGGEST_CLUSTER_ROUTERS ?? 2);
console.log(`starting etcd, ${shards} shard nodes and ${routers} routers under ${baseDir} ...`);
const cluster = await startLocalCluster({ shards, routers, adminKey, baseDir, echo: process.env.SUGGEST_CLUSTER_ECHO === '1' });

console.log(JSON.stringify({
  msg: 'cluster ready',
  routers: cluster.routerUrls,
  shards: cluster.shards.map((s) => ({ node_id: s.info.node_id, grpc: s.info.grpc, metrics: s.info.metrics })),
  etcd: cluster.etcd.endpoints,
  admin_key: adminKey,
}, null, 2));
console.log('Create a tenant and keys with the admin key (see README). Commands: add-shard, status, help. Ctrl-C stops the cluster.');

/** Starts shard node `i` again whenever it exits while the cluster runs. */
function supervise(i: number): void {
  const child = cluster.shards[i]!.child;
  child.once('exit', (code, signal) => {
    if (stopping || cluster.shards[i]!.child !== child) return;
    console.log(JSON.stringify({ msg: 'shard node exited; starting it again', node_id: `shard-${i + 1}`, code, signal }));
    const again = async (delayMs: number): Promise<void> => {
      await new Promise((r) => setTimeout(r, delayMs));
      if (stopping) return;
      try {
        await cluster.restartShard(i);
        supervise(i);
        console.log(JSON.stringify({ msg: 'shard node started again', node_id: `shard-${i + 1}` }));
      } catch (err) {
        console.log(`shard-${i + 1} did not start: ${(err as Error).message.split('\n')[0]}; retrying`);
        await again(Math.min(delayMs * 2, 10_000));
      }
    };
    void again(500);
  });
}
cluster.shards.forEach((_, i) => supervise(i));

interface ClusterView {
  epoch: number | null;
  settled: boolean;
  replication_factor: number;
  nodes: { node_id: string; live: boolean; primaries: number; replicas: number; moving_in: number; document_count: number | null; metrics_address: string | null }[];
  moves: { partition: number; from: string | null; to: string; running_ms: number }[];
}

async function status(): Promise<void> {
  const res = await fetch(`${cluster.routerUrls[0]}/v1/admin/cluster`, { headers: { 'x-api-key': adminKey } });
  if (res.status !== 200) {
    console.log(`status: ${res.status} ${await res.text()}`);
    return;
  }
  const v = (await res.json()) as ClusterView;
  console.log(`epoch ${v.epoch}, replication factor ${v.replication_factor}, ${v.settled ? 'settled' : 'NOT settled'}, ${v.moves.length} move(s) in progress`);
  for (const n of v.nodes) {
    console.log(`  ${n.node_id.padEnd(12)} ${n.live ? 'live' : 'DOWN'}  primaries ${String(n.primaries).padStart(3)}  replicas ${String(n.replicas).padStart(3)}  incoming ${n.moving_in}  documents ${n.document_count ?? '?'}${n.metrics_address ? `  metrics http://${n.metrics_address}/metrics` : ''}`);
  }
  for (const m of v.moves) console.log(`  move: partition ${m.partition} ${m.from ?? '?'} -> ${m.to} (${m.running_ms} ms)`);
}

const commands: Record<string, () => Promise<void>> = {
  'add-shard': async () => {
    const s = await cluster.addShard();
    supervise(cluster.shards.length - 1);
    console.log(JSON.stringify({ msg: 'shard node added', node_id: s.info.node_id, grpc: s.info.grpc, metrics: s.info.metrics }));
  },
  status,
  help: async () => console.log('commands: add-shard, status, help'),
};

let queue = Promise.resolve();
const input = createInterface({ input: process.stdin });
input.on('line', (line) => {
  const cmd = line.trim();
  if (!cmd) return;
  const run = commands[cmd];
  queue = queue.then(async () => {
    if (!run) return console.log(`unknown command '${cmd}'; commands: ${Object.keys(commands).join(', ')}`);
    try {
      await run();
    } catch (err) {
      console.log(`${cmd} failed: ${(err as Error).message}`);
    }
  });
});
input.on('close', () => {
  if (process.env.SUGGEST_CLUSTER_EXIT_ON_EOF === '1') void queue.then(() => stop());
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  console.log('stopping cluster ...');
  await cluster.stop();
  console.log('stopped');
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
