// `npm run cluster`: a local cluster on loopback for development and tests: etcd, 3 shard nodes
// and 2 routers, each a real process. Ctrl-C stops every process and etcd.
import path from 'node:path';
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
  shards: cluster.shards.map((s) => ({ node_id: s.info.node_id, grpc: s.info.grpc })),
  etcd: cluster.etcd.endpoints,
  admin_key: adminKey,
}, null, 2));
console.log('Create a tenant and keys with the admin key (see README). Ctrl-C stops the cluster.');

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
