// Starts real service processes (single node, or etcd + shard nodes + routers) on loopback
// port 0 for tests, the local cluster launcher and load tests. Each child announces its bound
// addresses in a `ready` log line, which is how the harness learns the ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startEtcd, type EtcdProcess } from './etcd-process.js';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Compiled entry point: this file lives in dist/node/runtime/ or node/runtime/ (tests run TS). */
export const MAIN_JS = path.resolve(here, '../../', here.includes(`${path.sep}dist${path.sep}`) ? '' : 'dist', 'node/main.js');

export interface ReadyInfo {
  node_id: string;
  roles: string[];
  http: string | null;
  grpc: string | null;
  /** the operations endpoint (SUGGEST_METRICS_PORT): /metrics, /healthz, /readyz on Node's HTTP server */
  metrics: string | null;
}

export interface ServiceProcess {
  readonly name: string;
  readonly env: Record<string, string>;
  info: ReadyInfo;
  child: ChildProcess;
  /** recent output lines, for failure messages */
  output: string[];
  /** SIGKILL and wait for exit */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit */
  stop(): Promise<void>;
}

export interface StartOptions {
  name: string;
  env: Record<string, string>;
  timeoutMs?: number;
  /** echo child output to this process's stderr */
  echo?: boolean;
}

export async function startServiceProcess(opts: StartOptions): Promise<ServiceProcess> {
  // SUGGEST_HARNESS_LOG_LEVEL: the started processes' log level (info), e.g. debug with --echo
  const env = { ...process.env, SUGGEST_PORT: '0', SUGGEST_GRPC_PORT: '0', SUGGEST_LOG_LEVEL: process.env.SUGGEST_HARNESS_LOG_LEVEL ?? 'info', ...opts.env };
  // SUGGEST_HARNESS_NODE_ARGS: flags for the started processes only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  // to profile a node under a load run (Node refuses --cpu-prof in NODE_OPTIONS)
  const nodeArgs = (process.env.SUGGEST_HARNESS_NODE_ARGS ?? '').split(/\s+/).filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, MAIN_JS], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const remember = (line: string) => {
    output.push(line);
    if (output.length > 200) output.shift();
    if (opts.echo) process.stderr.write(`[${opts.name}] ${line}\n`);
  };
  createInterface({ input: child.stderr! }).on('line', remember);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const info = await new Promise<ReadyInfo>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${opts.name} did not become ready:\n${output.join('\n')}`)), opts.timeoutMs ?? 30_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${opts.name} exited (${code ?? signal}) before ready:\n${output.join('\n')}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      remember(line);
      if (!line.includes('"ready"')) return;
      try {
        const parsed = JSON.parse(line) as { msg?: string } & ReadyInfo;
        if (parsed.msg === 'ready') {
          clearTimeout(timer);
          resolve({ node_id: parsed.node_id, roles: parsed.roles, http: parsed.http, grpc: parsed.grpc, metrics: parsed.metrics ?? null });
        }
      } catch {
        // not a log line of ours
      }
    });
  });

  const signalAndWait = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    await exited;
  };
  return {
    name: opts.name,
    env: opts.env,
    info,
    child,
    output,
    kill: () => signalAndWait('SIGKILL'),
    stop: () => signalAndWait('SIGTERM'),
  };
}

export interface SingleNode {
  baseUrl: string;
  adminKey: string;
  dataDir: string;
  process: ServiceProcess;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The environment of a node whose first queries wait for the whole load of an engine (read back or
 * built) rather than SUGGEST_LOAD_WAIT_MS (2 s, then an answer without it): for the tools that
 * time that load through those queries.
 */
export const WHOLE_LOAD_WAIT_ENV = { SUGGEST_LOAD_WAIT_MS: '600000' } as const;

export const TEST_ADMIN_KEY = 'sk_test_admin_0123456789abcdef0123456789abcdef';

export async function startSingleNode(opts: { echo?: boolean; env?: Record<string, string> } = {}): Promise<SingleNode> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'suggest-single-'));
  const env = { SUGGEST_DATA_DIR: dataDir, SUGGEST_ADMIN_KEY: TEST_ADMIN_KEY, ...opts.env };
  const start = () => startServiceProcess({ name: 'single', env, echo: opts.echo ?? false });
  let first: ServiceProcess;
  try {
    first = await start();
  } catch (err) {
    // a node that could not start leaves no data directory behind
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const node: SingleNode = {
    baseUrl: '',
    adminKey: TEST_ADMIN_KEY,
    dataDir,
    process: first,
    async restart() {
      await node.process.stop();
      node.process = await start();
      node.baseUrl = `http://${node.process.info.http}`;
    },
    async stop() {
      await node.process.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  node.baseUrl = `http://${node.process.info.http}`;
  return node;
}

export interface LocalCluster {
  etcd: EtcdProcess;
  shards: ServiceProcess[];
  routers: ServiceProcess[];
  routerUrls: string[];
  adminKey: string;
  baseDir: string;
  /** restart a (killed or stopped) shard node with the same identity and data */
  restartShard(i: number): Promise<void>;
  /** start one more shard node (`shard-{n+1}`) into the running cluster; placement then moves partitions to it */
  addShard(): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  shards?: number;
  routers?: number;
  partitions?: number;
  echo?: boolean;
  adminKey?: string;
  baseDir?: string;
  env?: Record<string, string>;
}

/** etcd + N shard nodes + M routers on loopback, each a real process. */
export async function startLocalCluster(opts: ClusterOptions = {}): Promise<LocalCluster> {
  const baseDir = opts.baseDir ?? mkdtempSync(path.join(os.tmpdir(), 'suggest-cluster-'));
  const etcd = await startEtcd();
  const adminKey = opts.adminKey ?? TEST_ADMIN_KEY;
  const common = {
    SUGGEST_ETCD: etcd.endpoints.join(','),
    SUGGEST_ADMIN_KEY: adminKey,
    SUGGEST_PARTITIONS: String(opts.partitions ?? 64),
    // the first placement waits for every shard node of the launch, so partitions spread evenly
    SUGGEST_MIN_SHARD_NODES: String(opts.shards ?? 3),
    ...opts.env,
  };
  // Every process of this cluster shares one machine: query threads only for the cores left
  // once each shard node and router has its event loop (none on 2 cores: 3 shard nodes with 2
  // threads each answered lexical autocomplete at 338 req/s against 724 without, BENCHMARKS.md)
  const sharedThreads = String(Math.max(0, Math.floor((os.availableParallelism() - (opts.shards ?? 3) - (opts.routers ?? 2)) / (opts.shards ?? 3))));
  const shardEnv = (i: number) => ({
    SUGGEST_QUERY_THREADS: process.env.SUGGEST_QUERY_THREADS ?? sharedThreads,
    ...common,
    SUGGEST_ROLES: 'shard,coordinator',
    SUGGEST_NODE_ID: `shard-${i + 1}`,
    // their metrics and health, on a free port each (ready line, member record)
    SUGGEST_METRICS_PORT: '0',
    SUGGEST_DATA_DIR: path.join(baseDir, `shard-${i + 1}`),
  });
  const shardCount = opts.shards ?? 3;
  const shards = await Promise.all(
    Array.from({ length: shardCount }, (_, i) => startServiceProcess({ name: `shard-${i + 1}`, env: shardEnv(i), echo: opts.echo ?? false })),
  );
  const routers = await Promise.all(
    Array.from({ length: opts.routers ?? 2 }, (_, i) =>
      startServiceProcess({
        name: `router-${i + 1}`,
        env: { ...common, SUGGEST_ROLES: 'router', SUGGEST_NODE_ID: `router-${i + 1}`, SUGGEST_DATA_DIR: path.join(baseDir, `router-${i + 1}`)},
        echo: opts.echo ?? false,
      }),
    ),
  );
  const cluster: LocalCluster = {
    etcd,
    shards,
    routers,
    routerUrls: routers.map((r) => `http://${r.info.http}`),
    adminKey,
    baseDir,
    async restartShard(i) {
      await shards[i]!.stop();
      shards[i] = await startServiceProcess({ name: `shard-${i + 1}`, env: shardEnv(i), echo: opts.echo ?? false });
    },
    async addShard() {
      const i = shards.length;
      const started = await startServiceProcess({ name: `shard-${i + 1}`, env: shardEnv(i), echo: opts.echo ?? false });
      shards.push(started);
      return started;
    },
    async stop() {
      await Promise.all(routers.map((r) => r.stop()));
      await Promise.all(shards.map((s) => s.stop()));
      await etcd.stop();
      if (!opts.baseDir) rmSync(baseDir, { recursive: true, force: true });
    },
  };
  return cluster;
}
