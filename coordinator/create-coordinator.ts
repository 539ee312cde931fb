// Picks the coordination backend for this process: etcd when endpoints are configured (a
// cluster), otherwise the embedded store under `${dataDir}/meta` (the single node).
import path from 'node:path';
import type { Config } from '../node/runtime/config.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import { EmbeddedBackend } from './embedded-backend.js';
import { EtcdBackend } from './etcd-backend.js';
import { MetadataCoordinator } from './metadata-coordinator.js';

export interface CreateCoordinatorOptions {
  /** etcd key prefix; default `/suggest/` */
  etcdPrefix?: string;
  /** how long to wait for etcd at startup; default 10 s */
  connectTimeoutMs?: number;
  /** how long a dead coordinator leader keeps the role; default 5 s */
  electionTtlSeconds?: number;
  log?: Logger;
}

export async function createCoordinator(config: Config, opts: CreateCoordinatorOptions = {}): Promise<MetadataCoordinator> {
  const log = opts.log ?? rootLog;
  if (config.etcd.length > 0) {
    const backend = await EtcdBackend.connect({
      endpoints: config.etcd,
      ...(opts.etcdPrefix !== undefined ? { prefix: opts.etcdPrefix } : {}),
      ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
      ...(opts.electionTtlSeconds !== undefined ? { electionTtlSeconds: opts.electionTtlSeconds } : {}),
      log: log.child({ component: 'etcd-backend' }),
    });
    return new MetadataCoordinator(backend, { log: log.child({ component: 'coordinator' }) });
  }
  const backend = await EmbeddedBackend.open(path.join(config.dataDir, 'meta'), { log: log.child({ component: 'embedded-backend' }) });
  return new MetadataCoordinator(backend, { log: log.child({ component: 'coordinator' }) });
}
