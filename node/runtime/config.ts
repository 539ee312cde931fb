// Process configuration: environment variables (ARCHITECTURE.md fixes their names) over an
// optional JSON file named by SUGGEST_CONFIG, over the defaults below.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export type PlanName = 'free' | 'pro' | 'enterprise';

export interface PlanLimits {
  max_indexes: number;
  max_documents_per_index: number;
  max_documents_total: number;
  upload_limit_bytes: number;
  features: { personalization: boolean; merchandising: boolean; integrations: boolean };
}

export type Role = 'router' | 'shard' | 'coordinator';

export interface Config {
  /** roles this process runs; the single node runs all three */
  roles: Role[];
  /** the first placement waits until this many shard nodes have joined */
  minShardNodes: number;
  host: string;
  port: number;
  /**
   * Share the HTTP port with other router processes on the host (SO_REUSEPORT, the kernel spreads
   * connections): one router per core behind one port. Off by default, so that a second node
   * started on a port already taken fails instead of silently taking half its connections.
   */
  reusePort: boolean;
  dataDir: string;
  adminKey: string | undefined;
  etcd: string[];
  /** virtual partitions per cluster */
  partitions: number;
  /** copies of each partition (primary + followers); writes are acknowledged once all in-sync copies have them */
  replicationFactor: number;
  /** partition moves (copy, catch-up, ownership switch) in flight at once, cluster-wide */
  maxConcurrentMoves: number;
  /** largest accepted JSON body, bytes */
  maxJsonBody: number;
  /** default upload limit when neither tenant nor plan sets one */
  defaultUploadLimit: number;
  presignedOverBytes: number;
  cloudRequiredOverBytes: number;
  /** documents at or below this run inline; above, as a background job */
  backgroundJobThreshold: number;
  /**
   * how often a shard node publishes buffered writes to its search engines (a query also indexes
   * the writes before it first, so this bounds how stale a cached answer's engine can lag, and how
   * often fresh segments are built)
   */
  refreshIntervalMs: number;
  /** routers send part queries to every live replica in turn, followers included (else the primary only) */
  replicaReads: boolean;
  /** a queued job untouched this long, or a processing one without progress, counts as stuck */
  jobStuckAfterMs: number;
  /** TTL of the coordinator lease a running job holds (kept alive; lapses this long after a crash) */
  jobLeaseTtlSeconds: number;
  /** times a job may be started before a stuck job is failed instead of requeued */
  jobMaxAttempts: number;
  /** documents per write batch of an ingestion job (one progress update per batch) */
  jobBatchSize: number;
  /** pause between batches of a job (failure-point hook for tests; 0 in production) */
  jobBatchDelayMs: number;
  /** largest single record of an uploaded file, bytes; a larger one fails alone */
  maxRecordBytes: number;
  /** how long POST .../documents waits for running ingestion jobs of its index before 503 */
  documentsWaitForJobsMs: number;
  /** comment line sent on idle server-sent event streams */
  sseHeartbeatMs: number;
  /** lifetime of a presigned upload URL */
  presignTtlSeconds: number;
  /** lifetime of an export download link */
  exportTtlSeconds: number;
  /** blobs (uploaded and exported files) older than this are removed by the shard node */
  blobRetentionMs: number;
  /** HMAC key of presigned URLs and export links; when unset, one is generated and kept in the coordinator */
  signingSecret: string | undefined;
  plans: Record<PlanName, PlanLimits>;
  /** engagement events per second per API key and router (token bucket refill) */
  eventsPerSecond: number;
  /** engagement events a key may send at once before the rate applies (token bucket size) */
  eventsBurst: number;
  grpcPort: number;
  /**
   * Port of the operations endpoint (GET /metrics, /healthz, /readyz) of a process without the
   * router role (a shard node has no HTTP API to carry them); 0 picks a free port, null (unset)
   * serves none. A router's are on its API port.
   */
  metricsPort: number | null;
  nodeId: string | undefined;
  /** membership lease TTL: a node is declared dead this long after it stops renewing; long enough
   *  that a busy event loop (a large engine build on a loaded machine) does not lose the lease */
  memberTtlSeconds: number;
  /** estimated memory of the search engines' lookup memos over all indexes of a shard node, MB */
  memoBudgetMb: number;
  /**
   * estimated memory of a router's response caches (rendered typeahead and autocomplete answers:
   * three quarters; predict answers: a quarter), MB; 0 caches nothing
   */
  responseCacheMb: number;
  /** a shard node unloads an index part's engine nobody queried for this long, seconds (0: never) */
  engineIdleSeconds: number;
  /** a cluster router sends its queries to each shard node on one gRPC stream (false: a unary call each) */
  queryStreams: boolean;
  /** how long a proxy-mode tenant's search is given to its connected search API, ms (then 502) */
  proxyTimeoutMs: number;
  /**
   * forward proxy-mode searches to loopback, private, link-local and metadata addresses too; off in
   * production, where a tenant's URL must not reach the deployment's own network
   */
  proxyAllowPrivate: boolean;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** threads for segment builds, merges and first loads (SUGGEST_SEGMENT_THREADS; 0: on the event loop) */
  segmentThreads: number;
  /** threads answering autocomplete (SUGGEST_QUERY_THREADS; 0: on the event loop; null: one per core besides the event loop's, at least 2) */
  queryThreads: number | null;
  /** typeahead on the query threads too (SUGGEST_TYPEAHEAD_THREADS) */
  typeaheadOnThreads: boolean;
  /** ANN graphs built on the segment pool's graph thread (SUGGEST_GRAPH_THREAD; 0: in slices on the event loop) */
  graphsOnPool: boolean;
  /** how long a query waits for documents written before it that are still being indexed, ms (SUGGEST_FRESH_WAIT_MS) */
  freshWaitMs: number;
  /** how long a query waits for its index part's engine to load before it is answered without it, ms (SUGGEST_LOAD_WAIT_MS) */
  loadWaitMs: number;
  /** a new large index filled through the document routes is loaded once its writes pause this long, ms (SUGGEST_WARM_AFTER_WRITES_MS; 0: at its first query) */
  warmAfterWritesMs: number;
  /** engines in memory at the last stop are read back after a start (SUGGEST_RESTORE_ENGINES) */
  restoreEngines: boolean;
}

const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;

const MB = 1024 * 1024;
export const DEFAULT_EVENTS_PER_SECOND = 200;
export const DEFAULT_EVENTS_BURST = 1_000;

export const DEFAULT_PLANS: Record<PlanName, PlanLimits> = {
  free: {
    max_indexes: 3,
    max_documents_per_index: 10_000,
    max_documents_total: 20_000,
    upload_limit_bytes: 10 * MB,
    features: { personalization: false, merchandising: false, integrations: false },
  },
  pro: {
    max_indexes: 25,
    max_documents_per_index: 1_000_000,
    max_documents_total: 5_000_000,
    upload_limit_bytes: 50 * MB,
    features: { personalization: true, merchandising: true, integrations: true },
  },
  enterprise: {
    max_indexes: 1_000,
    max_documents_per_index: 100_000_000,
    max_documents_total: 1_000_000_000,
    upload_limit_bytes: 1024 * MB,
    features: { personalization: true, merchandising: true, integrations: true },
  },
};

/** 1 or 0 (true or false) in environment variable `name`, `fallback` when it is unset or empty. */
function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw new Error(`${name} must be 1 or 0, got '${v}'`);
}

/** The number in environment variable `name`, `fallback` when it is unset or empty. */
function num<F extends number | null>(env: NodeJS.ProcessEnv, name: string, fallback: F): number | F {
  const v = env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`${name}: expected a number, got '${v}'`);
  return n;
}

function isPort(v: unknown): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535;
}

function port(env: NodeJS.ProcessEnv, name: string): number {
  const n = num(env, name, 0);
  if (!isPort(n)) throw new Error(`${name}: expected a port (0 to 65535), got '${env[name]}'`);
  return n;
}

/** The settings object of the JSON file named by SUGGEST_CONFIG; an unreadable file, bad JSON or anything but an object stops the start. */
function settingsFile(file: string): Partial<Config> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`SUGGEST_CONFIG: cannot read '${file}': ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`SUGGEST_CONFIG: '${file}' is not JSON: ${(err as Error).message}`, { cause: err });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`SUGGEST_CONFIG: '${file}' must hold a JSON object of settings`);
  return parsed as Partial<Config>;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let file: Partial<Config> = {};
  if (env.SUGGEST_CONFIG) file = settingsFile(env.SUGGEST_CONFIG);
  const etcd = (env.SUGGEST_ETCD ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const base: Config = {
    roles: ['router', 'shard', 'coordinator'],
    minShardNodes: 1,
    host: '127.0.0.1',
    port: 8080,
    reusePort: false,
    dataDir: './data',
    adminKey: undefined,
    etcd: [],
    partitions: etcd.length > 0 ? 64 : 8,
    replicationFactor: 1,
    maxConcurrentMoves: 2,
    maxJsonBody: 8 * MB,
    defaultUploadLimit: 10 * MB,
    presignedOverBytes: 20 * MB,
    cloudRequiredOverBytes: 50 * MB,
    backgroundJobThreshold: 1_000,
    refreshIntervalMs: 20,
    replicaReads: true,
    jobStuckAfterMs: 60_000,
    jobLeaseTtlSeconds: 5,
    jobMaxAttempts: 3,
    jobBatchSize: 500,
    jobBatchDelayMs: 0,
    maxRecordBytes: 1 * MB,
    documentsWaitForJobsMs: 120_000,
    sseHeartbeatMs: 15_000,
    presignTtlSeconds: 3_600,
    exportTtlSeconds: 86_400,
    blobRetentionMs: 7 * 24 * 3_600_000,
    signingSecret: undefined,
    plans: DEFAULT_PLANS,
    eventsPerSecond: DEFAULT_EVENTS_PER_SECOND,
    eventsBurst: DEFAULT_EVENTS_BURST,
    grpcPort: 0,
    metricsPort: null,
    nodeId: undefined,
    memberTtlSeconds: 10,
    memoBudgetMb: 256,
    responseCacheMb: 128,
    engineIdleSeconds: 1800,
    queryStreams: true,
    proxyTimeoutMs: 2_000,
    proxyAllowPrivate: false,
    logLevel: 'info',
    segmentThreads: 2,
    queryThreads: null,
    typeaheadOnThreads: false,
    graphsOnPool: true,
    freshWaitMs: 250,
    loadWaitMs: 2_000,
    warmAfterWritesMs: 3_000,
    restoreEngines: true,
    ...file,
  };
  const roles = (env.SUGGEST_ROLES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const r of roles) if (r !== 'router' && r !== 'shard' && r !== 'coordinator') throw new Error(`unknown role '${r}' in SUGGEST_ROLES`);
  // read by the search engine itself (shard/engine/vector-index.ts); checked here so a typo stops the start
  const backend = env.SUGGEST_VECTOR_BACKEND;
  if (backend !== undefined && backend !== 'hnswlib' && backend !== 'usearch') throw new Error(`SUGGEST_VECTOR_BACKEND must be 'hnswlib' or 'usearch', got '${backend}'`);
  const config: Config = {
    ...base,
    roles: roles.length > 0 ? (roles as Role[]) : base.roles,
    minShardNodes: num(env, 'SUGGEST_MIN_SHARD_NODES', base.minShardNodes),
    host: env.SUGGEST_HOST ?? base.host,
    port: num(env, 'SUGGEST_PORT', base.port),
    reusePort: flag(env, 'SUGGEST_REUSE_PORT', base.reusePort),
    dataDir: path.resolve(env.SUGGEST_DATA_DIR ?? base.dataDir),
    adminKey: env.SUGGEST_ADMIN_KEY || base.adminKey,
    etcd: etcd.length > 0 ? etcd : base.etcd,
    partitions: num(env, 'SUGGEST_PARTITIONS', base.partitions),
    replicationFactor: num(env, 'SUGGEST_REPLICATION_FACTOR', base.replicationFactor),
    maxConcurrentMoves: num(env, 'SUGGEST_MAX_CONCURRENT_MOVES', base.maxConcurrentMoves),
    memberTtlSeconds: num(env, 'SUGGEST_MEMBER_TTL_SECONDS', base.memberTtlSeconds),
    memoBudgetMb: num(env, 'SUGGEST_MEMO_BUDGET_MB', base.memoBudgetMb),
    responseCacheMb: num(env, 'SUGGEST_RESPONSE_CACHE_MB', base.responseCacheMb),
    engineIdleSeconds: num(env, 'SUGGEST_ENGINE_IDLE_SECONDS', base.engineIdleSeconds),
    refreshIntervalMs: num(env, 'SUGGEST_REFRESH_INTERVAL_MS', base.refreshIntervalMs),
    queryStreams: flag(env, 'SUGGEST_QUERY_STREAMS', base.queryStreams),
    replicaReads: flag(env, 'SUGGEST_REPLICA_READS', base.replicaReads),
    grpcPort: num(env, 'SUGGEST_GRPC_PORT', base.grpcPort),
    metricsPort: env.SUGGEST_METRICS_PORT === undefined || env.SUGGEST_METRICS_PORT === '' ? base.metricsPort : port(env, 'SUGGEST_METRICS_PORT'),
    nodeId: env.SUGGEST_NODE_ID || base.nodeId,
    logLevel: (env.SUGGEST_LOG_LEVEL || base.logLevel) as Config['logLevel'],
    backgroundJobThreshold: num(env, 'SUGGEST_BACKGROUND_JOB_THRESHOLD', base.backgroundJobThreshold),
    jobBatchSize: num(env, 'SUGGEST_JOB_BATCH_SIZE', base.jobBatchSize),
    jobBatchDelayMs: num(env, 'SUGGEST_JOB_BATCH_DELAY_MS', base.jobBatchDelayMs),
    jobLeaseTtlSeconds: num(env, 'SUGGEST_JOB_LEASE_TTL_SECONDS', base.jobLeaseTtlSeconds),
    jobStuckAfterMs: num(env, 'SUGGEST_JOB_STUCK_AFTER_MS', base.jobStuckAfterMs),
    sseHeartbeatMs: num(env, 'SUGGEST_SSE_HEARTBEAT_MS', base.sseHeartbeatMs),
    signingSecret: env.SUGGEST_SIGNING_SECRET || base.signingSecret,
    eventsPerSecond: num(env, 'SUGGEST_EVENTS_PER_SECOND', base.eventsPerSecond),
    eventsBurst: num(env, 'SUGGEST_EVENTS_BURST', base.eventsBurst),
    proxyTimeoutMs: num(env, 'SUGGEST_PROXY_TIMEOUT_MS', base.proxyTimeoutMs),
    proxyAllowPrivate: flag(env, 'SUGGEST_PROXY_ALLOW_PRIVATE', base.proxyAllowPrivate),
    segmentThreads: num(env, 'SUGGEST_SEGMENT_THREADS', base.segmentThreads),
    queryThreads: num(env, 'SUGGEST_QUERY_THREADS', base.queryThreads),
    typeaheadOnThreads: flag(env, 'SUGGEST_TYPEAHEAD_THREADS', base.typeaheadOnThreads),
    graphsOnPool: flag(env, 'SUGGEST_GRAPH_THREAD', base.graphsOnPool),
    freshWaitMs: num(env, 'SUGGEST_FRESH_WAIT_MS', base.freshWaitMs),
    loadWaitMs: num(env, 'SUGGEST_LOAD_WAIT_MS', base.loadWaitMs),
    warmAfterWritesMs: num(env, 'SUGGEST_WARM_AFTER_WRITES_MS', base.warmAfterWritesMs),
    restoreEngines: flag(env, 'SUGGEST_RESTORE_ENGINES', base.restoreEngines),
  };
  // Every value is checked as the process will use it, from the environment or SUGGEST_CONFIG's
  // file alike: a bad one stops the start rather than running on a default nobody chose.
  const check = (fields: [keyof Config, string][], ok: (v: unknown) => boolean, what: string): void => {
    for (const [field, name] of fields) if (!ok(config[field])) throw new Error(`${name} must be ${what}, got '${String(config[field])}'`);
  };
  const isNumber = (v: unknown): v is number => typeof v === 'number';
  // placement settings among them: a bad value would stall moves or fail over on every hiccup
  check(
    [
      ['replicationFactor', 'SUGGEST_REPLICATION_FACTOR'],
      ['maxConcurrentMoves', 'SUGGEST_MAX_CONCURRENT_MOVES'],
      ['memberTtlSeconds', 'SUGGEST_MEMBER_TTL_SECONDS'],
      ['memoBudgetMb', 'SUGGEST_MEMO_BUDGET_MB'],
      ['partitions', 'SUGGEST_PARTITIONS'],
      ['minShardNodes', 'SUGGEST_MIN_SHARD_NODES'],
      ['jobBatchSize', 'SUGGEST_JOB_BATCH_SIZE'],
      ['jobLeaseTtlSeconds', 'SUGGEST_JOB_LEASE_TTL_SECONDS'],
      ['jobStuckAfterMs', 'SUGGEST_JOB_STUCK_AFTER_MS'],
      ['sseHeartbeatMs', 'SUGGEST_SSE_HEARTBEAT_MS'],
      ['eventsBurst', 'SUGGEST_EVENTS_BURST'],
    ],
    (v) => isNumber(v) && Number.isInteger(v) && v >= 1,
    'a whole number of at least 1',
  );
  // counts and waits where 0 means none (no thread, no wait)
  check(
    [
      ['segmentThreads', 'SUGGEST_SEGMENT_THREADS'],
      ['freshWaitMs', 'SUGGEST_FRESH_WAIT_MS'],
      ['loadWaitMs', 'SUGGEST_LOAD_WAIT_MS'],
      ['warmAfterWritesMs', 'SUGGEST_WARM_AFTER_WRITES_MS'],
      ['jobBatchDelayMs', 'SUGGEST_JOB_BATCH_DELAY_MS'],
      ['backgroundJobThreshold', 'SUGGEST_BACKGROUND_JOB_THRESHOLD'],
      ...(config.queryThreads === null ? [] : ([['queryThreads', 'SUGGEST_QUERY_THREADS']] as [keyof Config, string][])),
    ],
    (v) => isNumber(v) && Number.isSafeInteger(v) && v >= 0,
    'a whole number of at least 0',
  );
  check(
    [
      ['port', 'SUGGEST_PORT'],
      ['grpcPort', 'SUGGEST_GRPC_PORT'],
    ],
    isPort,
    'a port (0 to 65535)',
  );
  check(
    [
      ['responseCacheMb', 'SUGGEST_RESPONSE_CACHE_MB'],
      ['engineIdleSeconds', 'SUGGEST_ENGINE_IDLE_SECONDS'],
    ],
    (v) => isNumber(v) && Number.isFinite(v) && v >= 0,
    'a number, 0 or more',
  );
  check([['eventsPerSecond', 'SUGGEST_EVENTS_PER_SECOND']], (v) => isNumber(v) && Number.isFinite(v) && v > 0, 'a number above 0');
  check([['logLevel', 'SUGGEST_LOG_LEVEL']], (v) => (LOG_LEVELS as readonly unknown[]).includes(v), `one of ${LOG_LEVELS.join(', ')}`);
  check(
    [
      ['reusePort', 'SUGGEST_REUSE_PORT'],
      ['replicaReads', 'SUGGEST_REPLICA_READS'],
      ['queryStreams', 'SUGGEST_QUERY_STREAMS'],
      ['proxyAllowPrivate', 'SUGGEST_PROXY_ALLOW_PRIVATE'],
      ['typeaheadOnThreads', 'SUGGEST_TYPEAHEAD_THREADS'],
      ['graphsOnPool', 'SUGGEST_GRAPH_THREAD'],
      ['restoreEngines', 'SUGGEST_RESTORE_ENGINES'],
    ],
    (v) => typeof v === 'boolean',
    'true or false',
  );
  if (!Number.isInteger(config.proxyTimeoutMs) || config.proxyTimeoutMs < 1) throw new Error(`SUGGEST_PROXY_TIMEOUT_MS must be a whole number of milliseconds of at least 1, got '${String(config.proxyTimeoutMs)}'`);
  const refresh = config.refreshIntervalMs;
  if (!Number.isInteger(refresh) || refresh < 1 || refresh > 1000) throw new Error(`SUGGEST_REFRESH_INTERVAL_MS must be a whole number of milliseconds from 1 to 1000, got '${String(refresh)}'`);
  return config;
}
