// Starts a real router for tests: the embedded coordinator and a real ShardNode in a temp data
// dir, this node primary of every partition, the app listening on port 0. Also a small raw-socket
// client for what fetch will not send (raw `..`, the QUERY method, half-sent bodies).
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Coordinator, KeyKind, Lease } from '../../coordinator/coordinator.js';
import { createCoordinator } from '../../coordinator/create-coordinator.js';
import { generateApiKey, generateKeyId } from '../../node/runtime/api-keys.js';
import { loadConfig, type Config } from '../../node/runtime/config.js';
import { KeyId, NodeId, TenantId } from '../../node/runtime/ids.js';
import { setLogLevel } from '../../node/runtime/log.js';
import type { ShardDirectory } from '../../node/runtime/shard-api.js';
import { QueryPool } from '../../shard/search/query-pool.js';
import { SearchHost } from '../../shard/search/search-host.js';
import { ShardNode } from '../../shard/shard-node.js';
import { createRouterApp, type RouterApp } from '../router-app.js';

export interface TestRouter {
  url: string;
  port: number;
  config: Config;
  coordinator: Coordinator;
  shard: ShardNode;
  adminKey: string;
  /** creates a tenant with a public and a private key */
  tenant(id: string, plan?: 'free' | 'pro' | 'enterprise'): Promise<{ id: string; pub: string; priv: string }>;
  key(kind: KeyKind, tenant: string | null): Promise<string>;
  call<T = unknown>(method: string, p: string, opts?: { key?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> }): Promise<{ status: number; body: T; headers: Headers }>;
  close(): Promise<void>;
}

/**
 * `search`: attach the search engine to the shard node and give the router the change feed of the
 * single-node mode (so its response cache is on), as `node/main.ts` does; `queryThreads` answers
 * autocomplete on a query pool of that many threads, as a node does by default.
 */
export async function startRouter(overrides: Partial<Config> = {}, opts: { search?: boolean; queryThreads?: number } = {}): Promise<TestRouter> {
  setLogLevel('error');
  const dataDir = await mkdtemp(path.join(tmpdir(), 'router-test-'));
  const config: Config = { ...loadConfig({}), dataDir, partitions: 4, ...overrides };
  const nodeId = NodeId('test-node');
  const coordinator = await createCoordinator(config);
  const shard: ShardNode = new ShardNode({
    nodeId,
    dataDir,
    partitions: config.partitions,
    jobs: {
      coordinator,
      directory: { client: () => shard },
      settings: { batchSize: config.jobBatchSize, batchDelayMs: config.jobBatchDelayMs, maxRecordChars: config.maxRecordBytes, exportTtlSeconds: config.exportTtlSeconds },
      leaseTtlSeconds: config.jobLeaseTtlSeconds,
      maxAttempts: config.jobMaxAttempts,
      scanIntervalMs: 0,
      blobRetentionMs: config.blobRetentionMs,
    },
  });
  const table = ShardNode.soloPlacement(nodeId, config.partitions);
  shard.setPlacement(table);
  await coordinator.putPlacement(table, 0);
  const lease: Lease = await coordinator.register({ node_id: nodeId, roles: ['router', 'shard', 'coordinator'], grpc_address: null, http_address: null, started_at: new Date().toISOString() }, 30);
  let shards: ShardDirectory = { client: () => shard };
  let queryPool: QueryPool | null = null;
  if (opts.search) {
    queryPool = opts.queryThreads ? new QueryPool({ threads: opts.queryThreads, graphDir: path.join(dataDir, 'query-graphs') }) : null;
    const search = new SearchHost({ dataDir, queryPool });
    shard.setQueryHandler(search);
    shard.onChange(search.onChange);
    shards = { client: () => shard, subscribeChanges: (listener) => shard.onChange((e) => listener(e.ref.tenantId, e.ref.physicalIndexId)) };
  }
  const app: RouterApp = await createRouterApp({ config, coordinator, shards, nodeId });
  const port = await app.listen('127.0.0.1', 0);
  const url = `http://127.0.0.1:${port}`;

  const key = async (kind: KeyKind, tenant: string | null) => {
    const { secret, hash } = generateApiKey(kind);
    await coordinator.putKey({ id: KeyId(generateKeyId()), kind, name: `${kind} test key`, tenant_id: tenant === null ? null : TenantId(tenant), hash, created_at: new Date().toISOString() });
    return secret;
  };
  const adminKey = await key('admin', null);

  const call: TestRouter['call'] = async (method, p, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key !== undefined) headers['x-api-key'] = opts.key;
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    // new Uint8Array(buffer) copies into a fresh ArrayBuffer, which is what fetch's types want
    if (opts.raw !== undefined) body = typeof opts.raw === 'string' ? opts.raw : (new Uint8Array(opts.raw) as Uint8Array<ArrayBuffer>);
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(url + p, { method, headers, body });
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    return { status: res.status, body: (type.includes('json') && text ? JSON.parse(text) : text) as never, headers: res.headers };
  };

  return {
    url,
    port,
    config,
    coordinator,
    shard,
    adminKey,
    key,
    call,
    async tenant(id, plan = 'pro') {
      await coordinator.createTenant({ tenant_id: TenantId(id), name: id, plan, mode: 'hosted', upload_limit_bytes: null, limits: {}, search_api: null, created_at: new Date().toISOString() });
      return { id, pub: await key('public', id), priv: await key('private', id) };
    },
    async close() {
      await app.close();
      await lease.revoke().catch(() => undefined);
      await shard.close();
      await queryPool?.close();
      await coordinator.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface RawResponse {
  /** everything the server sent before closing or the timeout */
  text: string;
  status: number | null;
  closed: boolean;
}

/** Writes raw bytes on a fresh connection and collects the answer. */
export function rawRequest(port: number, data: string | Buffer, opts: { waitMs?: number; destroyAfterWrite?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let closed = false;
    const finish = () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolve({ text, status: m ? Number(m[1]) : null, closed });
    };
    socket.on('connect', () => {
      socket.write(data);
      if (opts.destroyAfterWrite) {
        socket.destroy();
        closed = true;
        finish();
      }
    });
    socket.on('data', (c) => {
      text += c.toString('utf8');
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
    });
    if (!opts.destroyAfterWrite) {
      setTimeout(() => {
        socket.destroy();
        finish();
      }, opts.waitMs ?? 300);
    }
  });
}
