// The router role: builds the HTTP edge (routes, auth, caches, data plane) over a coordinator and
// a shard directory. `node/main.ts` wires it; tests start it on port 0.
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Config } from '../node/runtime/config.js';
import type { NodeId } from '../node/runtime/ids.js';
import { createLogger } from '../node/runtime/log.js';
import { metrics } from '../node/runtime/metrics.js';
import type { ShardDirectory } from '../node/runtime/shard-api.js';
import { Auth } from './auth.js';
import { SearchService } from './search-service.js';
import { SearchProxy } from './search-proxy.js';
import { PredictService } from './predict-service.js';
import { DataPlane } from './data-plane.js';
import { DocumentLimits } from './document-limits.js';
import { HttpServer } from './http-server.js';
import { JobService } from './job-service.js';
import { Signer } from './signing.js';
import { MetaHub } from './sse.js';
import { renderContract } from './openapi.js';
import { FrontCache } from './front-cache.js';
import { RequestPipeline } from './request-pipeline.js';
import type { Contract, RouterDeps } from './router-deps.js';
import { allRoutes } from './routes/all-routes.js';

export interface RouterApp {
  /** Starts accepting connections; returns the bound port (useful with port 0). */
  /** `reusePort`: share the port with other processes (SO_REUSEPORT); default exclusive */
  listen(host: string, port: number, opts?: { reusePort?: boolean }): Promise<number>;
  /** Stops listening, drops open connections and the coordinator watches. */
  close(): Promise<void>;
  /** What GET /readyz answers, for an operations endpoint beside the API (node/runtime/ops-server.ts). */
  readiness(): { ready: boolean; reason: string | null; epoch: number | null; partitions: number | null; writes_waiting: number; coordination: 'ok' | 'unreachable' };
}

export async function createRouterApp(deps: { config: Config; coordinator: Coordinator; shards: ShardDirectory; nodeId: NodeId }): Promise<RouterApp> {
  const { config, coordinator, shards, nodeId } = deps;
  const log = createLogger({ role: 'router', node: nodeId });
  const data = new DataPlane(coordinator, shards, log, { replicaReads: config.replicaReads });
  const auth = new Auth(coordinator, config, metrics);
  const limits = new DocumentLimits(coordinator, data);
  // the response caches' memory: three quarters for search answers, a quarter for predictions
  const cacheBytes = config.responseCacheMb * 1024 * 1024;
  const front = new FrontCache(auth, data, metrics);
  const proxy = new SearchProxy({ timeoutMs: config.proxyTimeoutMs, allowPrivate: config.proxyAllowPrivate }, metrics);
  const search = new SearchService(data, shards, metrics, Math.floor(cacheBytes * 0.75), front, proxy);
  const predict = new PredictService(data, shards, metrics, Math.floor(cacheBytes * 0.25));
  const signer = await Signer.create(config, coordinator);
  const jobs = new JobService(coordinator, data, shards, signer, config, log);
  const events = new MetaHub();
  const pipeline = new RequestPipeline(auth, front);
  const server = new HttpServer({ maxJsonBody: config.maxJsonBody, metrics, log }, pipeline.dispatch, pipeline.fast);

  let contract: Contract | null = null;
  const routerDeps: RouterDeps = {
    config,
    coordinator,
    data,
    auth,
    limits,
    search,
    predict,
    metrics,
    log,
    nodeId,
    contract: () => (contract ??= renderContract(server.routes())),
    jobs,
    signer,
    events,
  };
  for (const route of allRoutes(routerDeps)) server.add(route);
  // Rendered now so a route that cannot be documented fails the start, not the first request.
  routerDeps.contract();

  const unwatch = await coordinator.watchMeta((e) => {
    auth.onMetaEvent(e);
    data.onMetaEvent(e);
    jobs.onMetaEvent(e);
    events.publish(e);
  });
  await data.start();

  let closed = false;
  return {
    listen: (host, port, opts) => server.listen(host, port, opts),
    readiness() {
      const r = data.readiness();
      return { ready: r.ready, reason: r.reason, epoch: r.epoch, partitions: r.partitions, writes_waiting: r.writesWaiting, coordination: coordinator.health().reachable ? 'ok' : 'unreachable' };
    },
    async close() {
      if (closed) return;
      closed = true;
      server.close();
      unwatch();
      data.stop();
    },
  };
}
