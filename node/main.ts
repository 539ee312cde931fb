// Process entry: wires the roles this process runs (router, shard, coordinator) around one
// Coordinator. With no SUGGEST_ETCD it is the single node: every role in one process, the
// embedded coordination backend and the in-process shard transport. With SUGGEST_ETCD it joins
// a cluster: shard nodes serve gRPC, routers reach them through a client pool that follows
// membership, and a coordinator leader keeps the placement table.
import './runtime/threadpool.js';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadConfig, type Config } from './runtime/config.js';
import { log, setLogLevel } from './runtime/log.js';
import { NodeId } from './runtime/ids.js';
import type { ShardDirectory } from './runtime/shard-api.js';
import type { Lease, MemberRecord, Unsubscribe } from '../coordinator/coordinator.js';
import { createCoordinator } from '../coordinator/create-coordinator.js';
import { PlacementLeader } from '../coordinator/placement.js';
import { ShardNode } from '../shard/shard-node.js';
import { SearchHost } from '../shard/search/search-host.js';
import { restoreEngines } from '../shard/search/restore-engines.js';
import { SegmentPool } from '../shard/search/segment-pool.js';
import { memoBudget, type MemoBudgetStats } from '../shard/engine/memo.js';
import { QueryPool } from '../shard/search/query-pool.js';
import { metrics } from './runtime/metrics.js';
import { startOpsServer } from './runtime/ops-server.js';
import { shardGrpcService } from '../shard/shard-grpc-service.js';
import { GrpcHandoffPeers, partitionHandoffGrpcService } from '../shard/partition-handoff-grpc.js';
import { startGrpcServer, type GrpcServerHandle } from './runtime/grpc-server.js';
import { GrpcClientPool } from './runtime/grpc-client-pool.js';
import { createRouterApp } from '../router/router-app.js';
import { bootstrap } from './bootstrap.js';

const config = configOrExit();
setLogLevel(config.logLevel);
mkdirSync(config.dataDir, { recursive: true });
const clustered = config.etcd.length > 0;

/** The settings, or a one-line message naming what is wrong and exit status 2 (no stack trace to read through). */
function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    process.stderr.write(`configuration error: ${(err as Error).message}\n`);
    process.exit(2);
  }
}

/** A node keeps its identity across restarts: placement is sticky to node ids. */
function nodeIdFor(dataDir: string): NodeId {
  if (config.nodeId) return NodeId(config.nodeId);
  const file = path.join(dataDir, 'node-id');
  if (existsSync(file)) return NodeId(readFileSync(file, 'utf8').trim());
  const id = `node-${randomUUID().slice(0, 8)}`;
  writeFileSync(file, id + '\n');
  return NodeId(id);
}

const nodeId = nodeIdFor(config.dataDir);
const roles = config.roles;
const closers: (() => Promise<void> | void)[] = [];
const logger = log.child({ node_id: nodeId });

async function main(): Promise<void> {
  const coordinator = await createCoordinator(config);
  closers.unshift(() => coordinator.close());

  // In a cluster, routers and shard nodes (whose jobs write into parts on other nodes) reach
  // shard nodes over gRPC; one pool per process follows membership.
  let pool: GrpcClientPool | undefined;
  let handoffPeers: GrpcHandoffPeers | undefined;
  if (clustered) {
    const addresses = new Map<string, string>();
    const p = new GrpcClientPool({ resolve: (id) => addresses.get(id), queryStreams: config.queryStreams });
    const refresh = (members: MemberRecord[]) => {
      addresses.clear();
      for (const m of members) if (m.grpc_address) addresses.set(m.node_id, m.grpc_address);
      // a router's change feed follows every shard node (used only once a cache subscribes)
      const shards = new Map<string, string>();
      for (const m of members) if (m.grpc_address && m.roles.includes('shard')) shards.set(m.node_id, m.grpc_address);
      p.setShardMembers(shards);
    };
    refresh(await coordinator.listMembers());
    closers.unshift(await coordinator.watchMembers(refresh));
    closers.unshift(() => p.close());
    pool = p;
    const peers = new GrpcHandoffPeers({ resolve: (id) => addresses.get(id) });
    closers.unshift(() => peers.close());
    handoffPeers = peers;
  }

  let shardNode: ShardNode | undefined;
  /** reads back, in the background, the engines that were in memory at the last stop */
  let restoreLastRun: (() => void) | null = null;
  let grpc: GrpcServerHandle | undefined;
  if (roles.includes('shard')) {
    const remote = pool;
    shardNode = new ShardNode({
      nodeId,
      dataDir: config.dataDir,
      partitions: config.partitions,
      jobs: {
        coordinator,
        directory: { client: (id) => (id === nodeId || !remote ? shardNode! : remote.client(id)) },
        settings: { batchSize: config.jobBatchSize, batchDelayMs: config.jobBatchDelayMs, maxRecordChars: config.maxRecordBytes, exportTtlSeconds: config.exportTtlSeconds, warmFollowers: config.replicaReads },
        leaseTtlSeconds: config.jobLeaseTtlSeconds,
        maxAttempts: config.jobMaxAttempts,
        scanIntervalMs: Math.max(5_000, Math.floor(config.jobStuckAfterMs / 2)),
        blobRetentionMs: config.blobRetentionMs,
      },
      // clusters replicate writes to followers and move partitions between nodes
      ...(handoffPeers ? { handoff: { coordinator, peers: handoffPeers } } : {}),
    });
    // segment builds, merges and first loads run here, off the event loop (closed after the node);
    // SUGGEST_SEGMENT_THREADS=0 builds everything on the event loop instead
    const segmentPool = config.segmentThreads > 0 ? new SegmentPool({ threads: config.segmentThreads, graphDir: path.join(config.dataDir, 'engine', 'graph-builds'), log: logger }) : null;
    if (segmentPool) closers.unshift(() => segmentPool.close());
    closers.unshift(() => shardNode!.close());
    // autocomplete is answered here, beside the event loop, over the same segment memory
    // (SUGGEST_QUERY_THREADS; 0 answers it on the event loop). A hand-off costs about 100 µs of
    // CPU per query, which the second core repays even on a 2-core machine (hybrid on 100k
    // documents +21 % throughput, lexical autocomplete even), and typeahead no longer queues
    // behind autocomplete (p99 beside saturating hybrid 6.4 ms against 27.8 on the event loop:
    // BENCHMARKS.md): by default one thread per core besides the event loop's, at least 2. The
    // memo budget is shared out evenly between the event loop (typeahead, predict) and the threads.
    const queryThreads = config.queryThreads ?? Math.max(2, availableParallelism() - 1);
    const memoBudgetBytes = config.memoBudgetMb * 1024 * 1024;
    const threadMemoBytes = Math.floor(memoBudgetBytes / (queryThreads + 1));
    const queryPool =
      queryThreads > 0
        ? new QueryPool({ threads: queryThreads, graphDir: path.join(config.dataDir, 'engine', 'query-graphs'), memoBudgetBytes: threadMemoBytes, log: logger })
        : null;
    if (queryPool) closers.unshift(() => queryPool.close());
    // the waits (SUGGEST_FRESH_WAIT_MS, SUGGEST_LOAD_WAIT_MS), the graph thread and the warm-up
    // after writes are described with their settings in runtime/config.ts
    const search = new SearchHost({
      dataDir: config.dataDir,
      log: logger,
      pool: segmentPool,
      queryPool,
      // SUGGEST_TYPEAHEAD_THREADS=1: typeahead on the query threads too. Off by default: on 2 cores
      // the hand-offs cost more than the event loop saves (cached keystrokes 0.51x bare uWS, p99
      // 8.0 ms, against 0.72x, 4.8 ms on the event loop: BENCHMARKS.md); for machines whose event
      // loop, not their cores, is what typeahead waits for.
      typeaheadOnThreads: config.typeaheadOnThreads,
      graphsOnPool: config.graphsOnPool,
      engineIdleMs: config.engineIdleSeconds * 1000,
      // SUGGEST_WARM_AFTER_WRITES_MS: a new large index filled through the document routes is
      // loaded once its writes pause this long (default 3000; 0: at its first query)
      warmAfterWritesMs: config.warmAfterWritesMs,
      loadWaitMs: config.loadWaitMs,
      refresh: { intervalMs: config.refreshIntervalMs, freshWaitMs: config.freshWaitMs },
    });
    registerIndexingMetrics(search);
    // the engines in memory at the last stop, read back once the node has its placement
    // (SUGGEST_RESTORE_ENGINES=0: none, each waits for its first query)
    const lastRun = search.lastRunParts();
    let restoring = 0;
    metrics.sampled('gauge', [['suggest_engines_restoring', 'Index parts whose engines, in memory at the last stop, are still to be read back after this start (SUGGEST_RESTORE_ENGINES).', () => restoring]]);
    if (config.restoreEngines && lastRun.length > 0) {
      const node = shardNode;
      restoring = lastRun.length;
      restoreLastRun = () =>
        void restoreEngines(node, lastRun, logger, (left) => (restoring = left)).then(
          (report) => logger.info('engines read back after the start', { ...report, parts: lastRun.length }),
          (err: unknown) => logger.warn('reading engines back after the start failed', { err }),
        );
    }
    registerPartitionMetrics(shardNode, search);
    memoBudget.setLimit(queryPool ? memoBudgetBytes - queryThreads * threadMemoBytes : memoBudgetBytes);
    registerMemoMetrics(() => (queryPool ? sumMemoStats(memoBudget.stats(), queryPool.memoStatistics()) : memoBudget.stats()));
    registerQueryPoolMetrics(queryPool);
    registerGraphBuildMetrics(segmentPool);
    shardNode.setQueryHandler(search);
    shardNode.onChange(search.onChange);
    const initial = await coordinator.getPlacement();
    if (initial) shardNode.setPlacement(initial);
    const unwatch: Unsubscribe = await coordinator.watchPlacement((t) => shardNode!.setPlacement(t));
    closers.unshift(unwatch);
    if (clustered) {
      // routers' change feeds (WatchChanges) end first on shutdown: they would only wait out the grace period
      const stopping = new AbortController();
      grpc = await startGrpcServer({
        host: config.host,
        port: config.grpcPort,
        shard: shardGrpcService(shardNode, logger, { changes: shardNode, nodeId, stopping: stopping.signal }),
        services: shardNode.handoff ? [partitionHandoffGrpcService(shardNode.handoff, logger)] : [],
      });
      closers.unshift(() => {
        stopping.abort();
        return grpc!.close();
      });
    }
  }

  const member: MemberRecord = {
    node_id: nodeId,
    roles,
    grpc_address: grpc ? `${config.host}:${grpc.port}` : null,
    http_address: null,
    started_at: new Date().toISOString(),
  };

  let directory: ShardDirectory | undefined;
  if (roles.includes('router')) {
    if (shardNode && !clustered) {
      const local = shardNode;
      directory = {
        client: () => local,
        subscribeChanges: (listener) => local.onChange((e) => listener(e.ref.tenantId, e.ref.physicalIndexId)),
      };
    } else if (pool) {
      directory = pool;
    }
  }

  // Registration comes after the gRPC server is up, so a member in etcd is always reachable.
  let httpPort: number | null = null;
  let routerApp: Awaited<ReturnType<typeof createRouterApp>> | null = null;
  if (roles.includes('router') && directory) {
    const app = await createRouterApp({ config, coordinator, shards: directory, nodeId });
    routerApp = app;
    httpPort = await app.listen(config.host, config.port, { reusePort: config.reusePort });
    closers.unshift(() => app.close());
    member.http_address = `${config.host}:${httpPort}`;
  }
  // A process without an HTTP API (a shard node) serves its metrics and health on a port of their
  // own. A router may too: the API's server speaks HTTP/1.1 only (router/http-server.ts), and
  // health checkers that send HTTP/1.0 (HAProxy's httpchk by default) get no answer there.
  let registered = false;
  if (config.metricsPort !== null) {
    const app = routerApp;
    const ops = await startOpsServer({
      host: config.host,
      port: config.metricsPort,
      metrics,
      ready: () => {
        const base = { node_id: nodeId, roles, coordination: coordinator.health().reachable ? 'ok' : 'unreachable' };
        if (!registered || stopping) return { ready: false, ...base };
        return app === null ? { ready: true, ...base } : { ...base, ...app.readiness() };
      },
    });
    closers.unshift(() => ops.close());
    member.metrics_address = `${config.host}:${ops.port}`;
  }
  let membership: Lease = await coordinator.register(member, config.memberTtlSeconds);
  registered = true;
  closers.unshift(() => membership.revoke());

  if (roles.includes('coordinator')) {
    const leader = new PlacementLeader({
      coordinator,
      nodeId,
      partitions: config.partitions,
      replicationFactor: config.replicationFactor,
      maxConcurrentMoves: config.maxConcurrentMoves,
      minShardNodes: config.minShardNodes,
      log: logger,
    });
    await leader.start();
    closers.unshift(() => leader.stop());
  }
  // after registration and placement: resume jobs a crash left behind, sweep old job files
  shardNode?.jobs?.startBackground();
  restoreLastRun?.();

  if (roles.includes('router')) {
    const boot = await bootstrap(coordinator, config);
    if (boot.credentials) {
      logger.info('first boot: credentials created', { file: path.join(config.dataDir, 'credentials.json') });
      process.stderr.write(
        `\nFirst boot. These keys are shown once and saved to ${path.join(config.dataDir, 'credentials.json')} (mode 0600):\n` +
          `  admin key:   ${boot.credentials.admin_key}\n  tenant:      ${boot.credentials.tenant_id}\n` +
          `  public key:  ${boot.credentials.public_key}\n  private key: ${boot.credentials.private_key}\n\n`,
      );
    }
  }

  // The membership lease lapses when etcd did not hear from this process for a TTL (etcd paused
  // or cut off longer than that, or this process stalled). A shard node then exits so that a
  // supervisor restarts it: its partitions may have moved meanwhile, and a fresh start takes up
  // the placement as it now is. A process without partitions (a router) registers again and
  // keeps serving: nothing it holds went stale, and routers exiting with the shard nodes would
  // turn an etcd hiccup into a whole-cluster restart.
  const onLost = (held: Lease): void => {
    void held.lost.then(async () => {
      if (stopping) return;
      if (shardNode) {
        logger.error('membership lease lost; exiting so a supervisor restarts this node');
        void shutdown(1, 'membership lease lost');
        return;
      }
      logger.warn('membership lease lost; registering again');
      for (let delayMs = 200; !stopping; delayMs = Math.min(delayMs * 2, 5_000)) {
        try {
          membership = await coordinator.register(member, config.memberTtlSeconds);
          logger.info('registered again', { node_id: nodeId });
          onLost(membership);
          return;
        } catch (err) {
          logger.warn('registering again failed; retrying', { err, retry_in_ms: delayMs });
          await new Promise((r) => setTimeout(r, delayMs));
        }
      }
    });
  };
  onLost(membership);

  metrics.sampled('gauge', [['suggest_coordination_reachable', "1 while this process's calls reach the coordination store (etcd in a cluster), 0 from a call that could not until one that does.", () => (coordinator.health().reachable ? 1 : 0)]]);
  metrics.sampled('counter', [['suggest_coordination_unreachable_calls_total', 'Calls to the coordination store (etcd) that failed because it was out of reach (answered 503 to clients).', () => coordinator.health().unreachableCalls]]);

  logger.info('ready', {
    roles,
    mode: clustered ? 'cluster' : 'single',
    http: httpPort === null ? null : `${config.host}:${httpPort}`,
    grpc: grpc ? `${config.host}:${grpc.port}` : null,
    metrics: member.metrics_address ?? null,
    partitions: config.partitions,
    data_dir: config.dataDir,
  });
}

let stopping = false;
async function shutdown(code: number, why: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  const started = Date.now();
  logger.info('stopping', { reason: why });
  const timer = setTimeout(() => {
    logger.error('stop took over 10 s; exiting without finishing it', { reason: why });
    process.exit(code || 1);
  }, 10_000);
  timer.unref();
  for (const close of closers) {
    try {
      await close();
    } catch (err) {
      logger.warn('error during shutdown', { err });
    }
  }
  logger.info('stopped', { reason: why, took_ms: Date.now() - started, exit_code: code });
  process.exit(code);
}

process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));
process.on('SIGINT', () => void shutdown(0, 'SIGINT'));
process.on('unhandledRejection', (err) => logger.error('unhandled rejection', { err }));
process.on('uncaughtException', (err) => {
  logger.error('uncaught exception', { err });
  void shutdown(1, 'uncaught exception');
});

main().catch((err: unknown) => {
  logger.error('failed to start', { err });
  void shutdown(1, 'failed to start');
});

/** The query threads on this process's registry (threads 0 when autocomplete runs on the event loop). */
function registerQueryPoolMetrics(pool: QueryPool | null): void {
  const stats = () => pool?.statistics() ?? { queued: 0, completed: 0, viewsSent: 0, refused: 0, utilization: 0, rebalanced: 0 };
  metrics.sampled('gauge', [
    ['suggest_query_pool_threads', 'Threads answering autocomplete beside the event loop (SUGGEST_QUERY_THREADS).', () => pool?.threads ?? 0],
    ['suggest_query_pool_queue_size', 'Autocomplete queries waiting for a query thread.', () => stats().queued],
    ['suggest_query_pool_utilization', "Share of the query threads' time spent answering (0 to 1, since start).", () => stats().utilization],
  ]);
  metrics.labelledGauge(
    'suggest_query_pool_graph_bytes',
    'ANN graphs held by the query threads, summed over them, by library: each thread reads its own copy of an hnswlib graph (the default), and maps a usearch graph from one shared file.',
    ['backend'],
    () => Object.entries(pool?.graphStatistics() ?? { hnswlib: 0, usearch: 0 }).map(([backend, bytes]) => [{ backend }, bytes] as const),
  );
  metrics.sampled('counter', [
    ['suggest_query_pool_tasks_total', 'Tasks the query threads ran (a view sent again counts twice).', () => stats().completed],
    ['suggest_query_pool_views_sent_total', "Queries sent again with their index part's segments, to a thread that lacked that version.", () => stats().viewsSent],
    ['suggest_query_pool_refused_total', 'Autocomplete queries refused with 503 because every query thread was busy and the queue full.', () => stats().refused],
    ['suggest_query_pool_rebalanced_total', 'Autocomplete queries answered on another query thread than the one their first letters go to (theirs was busy).', () => stats().rebalanced],
  ]);
}

/**
 * What each partition this node has open holds (documents and index parts, from the stores'
 * counters) and what its loaded engines hold (segments, their memory and ANN graphs), labelled
 * by partition: at most the cluster's virtual partitions, so the series stay few. Also the jobs
 * running here and those finished since start.
 */
function registerPartitionMetrics(shard: ShardNode, search: SearchHost): void {
  const partitions = () => shard.openPartitionTotals();
  metrics.labelledGauge('suggest_partition_documents', 'Documents stored in each partition this node has open (every index part placed there).', ['partition'], () =>
    partitions().map((p) => [{ partition: String(p.partition) }, p.documentCount] as const),
  );
  metrics.labelledGauge('suggest_partition_index_parts', 'Index parts stored in each partition this node has open.', ['partition'], () =>
    partitions().map((p) => [{ partition: String(p.partition) }, p.indexCount] as const),
  );
  const engines = () => [...search.engineMemory()];
  metrics.labelledGauge('suggest_engine_segments', 'Segments of the search engines loaded for each partition (a merge folds them into one).', ['partition'], () =>
    engines().map(([partition, m]) => [{ partition: String(partition) }, m.segments] as const),
  );
  metrics.labelledGauge('suggest_engine_memory_bytes', "Memory of the search engines loaded for each partition: segments (shared with the query threads) and ANN graphs (the owner's copy).", ['partition', 'kind'], () =>
    engines().flatMap(([partition, m]) => [
      [{ partition: String(partition), kind: 'segments' }, m.segmentBytes] as const,
      [{ partition: String(partition), kind: 'graphs' }, m.graphBytes] as const,
    ]),
  );
  const jobs = shard.jobs;
  metrics.sampled('gauge', [['suggest_jobs_running', 'Ingestion and export jobs running on this node now (under a job lease).', () => jobs?.active ?? 0]]);
  metrics.labelledCounter('suggest_jobs_finished_total', 'Jobs this node has brought to a terminal status, by status.', ['status'], () =>
    jobs === null ? [] : Object.entries(jobs.finished).map(([status, n]) => [{ status }, n] as const),
  );
}

/** Documents written but not yet searchable, and the answers given without them. */
function registerIndexingMetrics(search: SearchHost): void {
  metrics.sampled('gauge', [
    ['suggest_documents_indexing', 'Documents written to the loaded engines and not searchable yet (buffered or in a segment build).', () => search.documentsIndexing()],
    ['suggest_engines_loaded', 'Index parts whose search engine is in memory (queried within SUGGEST_ENGINE_IDLE_SECONDS, or loading).', () => search.enginesLoaded],
    ['suggest_engine_snapshots_held', 'Unloaded index parts whose snapshot is held through writes (read back, writes applied, at their next query).', () => search.heldSnapshots.parts],
    ['suggest_engine_held_documents', 'Documents written to unloaded index parts since their snapshot, kept in memory beside it.', () => search.heldSnapshots.documents],
  ]);
  metrics.sampled('counter', [
    ['suggest_engine_unloads_total', 'Search engines unloaded after SUGGEST_ENGINE_IDLE_SECONDS without a query (their snapshot written for the next one).', () => search.engineUnloads],
    ['suggest_engine_warm_loads_total', 'Search engine loads started by a warm request (after an ingestion job, before a promotion, or asked for) rather than by a query.', () => search.warmLoads],
    ['suggest_queries_deferred_while_loading_total', "Search queries a follower declined in its turn because its engine of the part was loading (the router then asks the primary).", () => search.queriesDeferred],
    ['suggest_engine_interim_replaced_total', 'Search engines read from a snapshot of an older format after an upgrade, which answered while their part was built again from its stored documents, and then gave way to the new build.', () => search.interimEnginesReplaced],
    ['suggest_answers_during_indexing_total', 'Queries answered from the documents already searchable, after waiting SUGGEST_FRESH_WAIT_MS for documents written before them (a bulk load), or SUGGEST_LOAD_WAIT_MS for their engine to load.', () => search.answersDuringIndexing],
    ['suggest_answers_during_load_total', 'Queries answered from no documents after waiting SUGGEST_LOAD_WAIT_MS for their index part\'s engine to load.', () => search.answersDuringLoad],
  ]);
  metrics.labelledCounter('suggest_engine_builds_total', 'Search engines built from stored documents (a first load with no snapshot to read), by the thread that tokenized them: in place on the event loop (parts of at most 64 documents) or on the segment pool.', ['thread'], () => {
    const b = search.engineBuilds;
    return [
      [{ thread: 'event_loop' }, b.eventLoop],
      [{ thread: 'segment_pool' }, b.pool],
    ] as const;
  });
}

/** The segment pool's graph thread on this process's registry (zeros without a pool). */
function registerGraphBuildMetrics(pool: SegmentPool | null): void {
  const stats = () => pool?.graphStatistics() ?? { inProgress: 0, built: 0, failed: 0, seconds: 0 };
  metrics.sampled('gauge', [['suggest_graph_builds_in_progress', 'ANN graph builds waiting for the graph thread or running on it.', () => stats().inProgress]]);
  metrics.sampled('counter', [
    ['suggest_graph_builds_total', 'ANN graphs the graph thread built.', () => stats().built],
    ['suggest_graph_build_failures_total', 'ANN graph builds that failed on the graph thread (then built in slices on the event loop).', () => stats().failed],
    ['suggest_graph_build_seconds_total', 'Wall time of finished ANN graph builds on the graph thread, waiting included.', () => stats().seconds],
  ]);
}

function sumMemoStats(a: MemoBudgetStats, b: MemoBudgetStats): MemoBudgetStats {
  return { bytes: a.bytes + b.bytes, limitBytes: a.limitBytes + b.limitBytes, memos: a.memos + b.memos, evictions: a.evictions + b.evictions };
}

/** The engines' memo budget on this process's registry (scraped at /metrics where a router runs). */
function registerMemoMetrics(stats: () => MemoBudgetStats): void {
  metrics.sampled('gauge', [
    ['suggest_engine_memo_bytes', "Estimated bytes held by the search engines' lookup memos (all indexes of this node).", () => stats().bytes],
    ['suggest_engine_memo_limit_bytes', 'The memo budget (SUGGEST_MEMO_BUDGET_MB).', () => stats().limitBytes],
    ['suggest_engine_memos', 'Lookup memos holding entries (per segment and per index snapshot).', () => stats().memos],
  ]);
  metrics.sampled('counter', [['suggest_engine_memo_evictions_total', 'Memos cleared to stay within the memo budget (least recently written first).', () => stats().evictions]]);
}
