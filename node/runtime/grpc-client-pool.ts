// gRPC clients of shard nodes, one channel (or a few) per node address, shared by every caller
// of the process. A node id is resolved to its address on each lookup, so the pool follows
// membership changes; each RPC becomes a Promise with a deadline, and a failed call comes back
// as the catalogue error the shard raised (`fromGrpcError`), or `unavailable` when the node did
// not answer. Blob transfers are gRPC streams exposed as async iterables, with flow control both
// ways: a slow disk on the shard slows the reader of an upload, a slow HTTP client the download.
// The pool is also the router's change feed (grpc-change-feed.ts): it follows every shard node's
// WatchChanges stream and announces the writes it forwards itself as soon as they are answered.
// Queries, the hot path of a cluster router, travel on one QueryStream per node (QueryMux): a
// message on an open stream costs a fraction of a unary call.
import { credentials, Metadata, status, type ChannelOptions, type Client, type ClientDuplexStream, type ClientWritableStream, type ServiceError } from '@grpc/grpc-js';
import { Counter } from 'prom-client';
import * as pb from '../../proto/gen/shard.js';
import { SuggestError, asSuggestError, errorFromFields, fail, fromGrpcError, suggestError } from './errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from './grpc-server.js';
import { GrpcChangeFeed, type ChangeStreamHandlers, type GrpcChangeFeedOptions } from './grpc-change-feed.js';
import type { NodeId } from './ids.js';
import { HotHistogram, type HotHistogramSeries } from './hot-metrics.js';
import { metrics as processMetrics, perRegistry } from './metrics.js';
import type { ShardApi, ShardDirectory } from './shard-api.js';

export type ShardMethod = keyof ShardApi;

export interface GrpcClientPoolOptions {
  /** the gRPC address (`host:port`) of a node, or undefined when it is not a live member */
  resolve: (node: NodeId) => string | undefined;
  /** deadline of every call, ms (default 5000) */
  deadlineMs?: number;
  /** per-method deadlines, e.g. longer ones for large ingestion batches */
  deadlines?: Partial<Record<ShardMethod, number>>;
  /**
   * HTTP/2 connections per address (default 1). One connection is served by one event loop
   * turn at a time on each side; a router that scatters heavy query traffic can spread it.
   */
  channelsPerAddress?: number;
  maxMessageBytes?: number;
  /** extra grpc-js channel options, applied last */
  channelOptions?: ChannelOptions;
  /**
   * Queries on one QueryStream per channel (default); false sends each as a unary call, the way
   * before streams (SUGGEST_QUERY_STREAMS=0: a way back should a stream misbehave)
   */
  queryStreams?: boolean;
  /** change-feed settings (heartbeat, staleness, backoff; metrics default to the process registry) */
  changeFeed?: Omit<GrpcChangeFeedOptions, 'open'>;
}

const METHODS: readonly ShardMethod[] = [
  'upsert', 'getDocument', 'deleteDocument', 'listDocuments', 'dropIndex', 'indexStats', 'query', 'partitionStats', 'recordEvents',
  'putBlob', 'getBlob', 'deleteBlob', 'startJob', 'cancelJob',
];

/**
 * Deadlines that are not the per-call default: a blob stream lasts as long as the file takes to
 * cross (a large upload over a slow client), and StartJob with `wait` runs a small job to its end.
 */
const LONG_DEADLINES: Partial<Record<ShardMethod, number>> = { putBlob: 60 * 60_000, getBlob: 60 * 60_000, startJob: 5 * 60_000 };

interface UnaryDefinition<Req, Res> {
  readonly path: string;
  readonly requestSerialize: (value: Req) => Buffer;
  readonly responseDeserialize: (value: Buffer) => Res;
}

const S = pb.ShardServiceService;

/** The ShardApi of one address; built once per address, so a call allocates only its own state. */
class RemoteShard implements ShardApi {
  private turn = 0;
  /** one query stream per channel, taken in turn */
  private readonly queries: QueryMux[];
  private queryTurn = 0;

  constructor(
    readonly address: string,
    private readonly clients: readonly Client[],
    private readonly deadlines: Readonly<Record<ShardMethod, number>>,
    /** told of every write call once it has an outcome (see `written`) */
    private readonly onWrite: (ref: pb.IndexRef | undefined) => void,
    private readonly series: QuerySeries,
    streams: boolean,
  ) {
    this.queries = streams ? clients.map((c) => new QueryMux(c, address, series)) : [];
  }

  upsert(req: pb.UpsertRequest): Promise<pb.UpsertResponse> {
    return this.written(req.ref, this.call(S.upsert, this.deadlines.upsert, req));
  }
  getDocument(req: pb.DocumentRequest): Promise<pb.GetDocumentResponse> {
    return this.call(S.getDocument, this.deadlines.getDocument, req);
  }
  deleteDocument(req: pb.DocumentRequest): Promise<pb.DeleteDocumentResponse> {
    return this.written(req.ref, this.call(S.deleteDocument, this.deadlines.deleteDocument, req));
  }
  listDocuments(req: pb.ListDocumentsRequest): Promise<pb.ListDocumentsResponse> {
    return this.call(S.listDocuments, this.deadlines.listDocuments, req);
  }
  dropIndex(req: pb.DropIndexRequest): Promise<pb.DropIndexResponse> {
    return this.written(req.ref, this.call(S.dropIndex, this.deadlines.dropIndex, req));
  }
  indexStats(req: pb.IndexStatsRequest): Promise<pb.IndexStatsResponse> {
    return this.call(S.indexStats, this.deadlines.indexStats, req);
  }
  query(req: pb.QueryRequest): Promise<pb.QueryResponse> {
    const started = performance.now();
    let answer: Promise<pb.QueryResponse>;
    const mux = this.queries.length === 0 ? null : this.queries.length === 1 ? this.queries[0]! : this.queries[this.queryTurn++ % this.queries.length]!;
    if (mux === null || mux.unsupported) answer = this.unaryQuery(req);
    // a node of an older build answers QueryStream UNIMPLEMENTED: its queries go unary from then on
    else answer = mux.ask(req, this.deadlines.query).catch((err: unknown) => (err === USE_UNARY ? this.unaryQuery(req) : Promise.reject(err)));
    return answer.then(
      (res) => {
        this.series.queriesOk.observe((performance.now() - started) / 1000);
        return res;
      },
      (err: unknown) => {
        // a failed call counts under its catalogue code (a bounded set)
        this.series.calls.labels('query', asSuggestError(err).code).observe((performance.now() - started) / 1000);
        throw err;
      },
    );
  }

  private unaryQuery(req: pb.QueryRequest): Promise<pb.QueryResponse> {
    this.series.unary.inc();
    return this.call(S.query, this.deadlines.query, req, false);
  }
  partitionStats(req: pb.PartitionStatsRequest): Promise<pb.PartitionStatsResponse> {
    return this.call(S.partitionStats, this.deadlines.partitionStats, req);
  }
  recordEvents(req: pb.RecordEventsRequest): Promise<pb.RecordEventsResponse> {
    return this.written(req.ref, this.call(S.recordEvents, this.deadlines.recordEvents, req));
  }
  deleteBlob(req: pb.BlobRequest): Promise<pb.DeleteBlobResponse> {
    return this.call(S.deleteBlob, this.deadlines.deleteBlob, req);
  }
  startJob(req: pb.JobRequest): Promise<pb.JobResponse> {
    return this.call(S.startJob, this.deadlines.startJob, req);
  }
  cancelJob(req: pb.JobRequest): Promise<pb.JobResponse> {
    return this.call(S.cancelJob, this.deadlines.cancelJob, req);
  }

  /** Client stream: chunks are written as the source yields them, waiting for HTTP/2 flow control. */
  putBlob(chunks: AsyncIterable<pb.BlobChunk>): Promise<pb.BlobRef> {
    const client = this.pick();
    return new Promise<pb.BlobRef>((resolve, reject) => {
      let settled = false;
      let wake: (() => void) | null = null;
      const finish = (err: SuggestError | null, res?: pb.BlobRef) => {
        if (settled) return;
        settled = true;
        wake?.();
        if (err) reject(err);
        else resolve(res!);
      };
      const call: ClientWritableStream<pb.BlobChunk> = client.makeClientStreamRequest(
        S.putBlob.path,
        S.putBlob.requestSerialize,
        S.putBlob.responseDeserialize,
        new Metadata(),
        { deadline: Date.now() + this.deadlines.putBlob },
        (err, res) => {
          if (err) finish(remoteError(err, this.address));
          else if (res === undefined) finish(new SuggestError('internal', `${S.putBlob.path} answered without a message`));
          else finish(null, res);
        },
      );
      call.on('drain', () => wake?.());
      void (async () => {
        const it = chunks[Symbol.asyncIterator]();
        try {
          while (!settled) {
            const next = await it.next();
            if (next.done) break;
            if (settled) break;
            if (!call.write(next.value)) await new Promise<void>((r) => (wake = r));
            wake = null;
          }
          if (!settled) call.end();
          else await it.return?.();
        } catch (err) {
          // the source failed (client gone, too large): the shard must not keep a partial blob
          call.cancel();
          finish(asSuggestError(err));
        }
      })();
    });
  }

  /** Server stream; breaking out of the loop cancels the call. */
  async *getBlob(req: pb.BlobRequest): AsyncIterable<pb.BlobChunk> {
    const call = this.pick().makeServerStreamRequest(S.getBlob.path, S.getBlob.requestSerialize, S.getBlob.responseDeserialize, req, new Metadata(), {
      deadline: Date.now() + this.deadlines.getBlob,
    });
    let complete = false;
    try {
      for await (const chunk of call as AsyncIterable<pb.BlobChunk>) yield chunk;
      complete = true;
    } catch (err) {
      throw isServiceError(err) ? remoteError(err, this.address) : err;
    } finally {
      if (!complete) call.cancel();
    }
  }

  /** One WatchChanges call (no deadline: it lasts until cancelled). */
  watchChanges(req: pb.WatchChangesRequest, handlers: ChangeStreamHandlers): { cancel(): void } {
    const call = this.pick().makeServerStreamRequest(S.watchChanges.path, S.watchChanges.requestSerialize, S.watchChanges.responseDeserialize, req, new Metadata(), {});
    let ended = false;
    const end = (err: Error | null) => {
      if (ended) return;
      ended = true;
      handlers.closed(err);
    };
    call.on('data', (m: pb.IndexChange) => {
      if (!ended) handlers.message(m);
    });
    call.on('error', (err: Error) => end(err));
    call.on('end', () => end(null));
    return {
      cancel: () => {
        ended = true;
        call.cancel();
      },
    };
  }

  close(): void {
    for (const q of this.queries) q.close();
    for (const c of this.clients) c.close();
  }

  /**
   * Announces a write to this process's caches once the shard answered, before the shard's own
   * announcement arrives over the feed: a client reading through this router sees its write
   * right after the acknowledgement. A failed call is announced too: it may have been applied.
   */
  private written<T>(ref: pb.IndexRef | undefined, pending: Promise<T>): Promise<T> {
    return pending.finally(() => this.onWrite(ref));
  }

  private pick(): Client {
    return this.clients.length === 1 ? this.clients[0]! : this.clients[this.turn++ % this.clients.length]!;
  }

  /** One unary call; `timed` false for queries, which `query` times whichever way they went. */
  private call<Req, Res>(def: UnaryDefinition<Req, Res>, deadlineMs: number, req: Req, timed = true): Promise<Res> {
    const client = this.pick();
    const started = performance.now();
    const done = (outcome: string) => {
      if (timed) this.series.calls.labels(methodName(def.path), outcome).observe((performance.now() - started) / 1000);
    };
    return new Promise<Res>((resolve, reject) => {
      client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, req, { deadline: Date.now() + deadlineMs }, (err, res) => {
        if (err) {
          const e = remoteError(err, this.address);
          done(e.code);
          reject(e);
        } else if (res === undefined) {
          done('internal');
          reject(new SuggestError('internal', `${def.path} answered without a message`));
        } else {
          done('ok');
          resolve(res);
        }
      });
    });
  }
}

/** `/suggest.shard.ShardService/IndexStats` -> `indexStats`: the method label of the call series. */
function methodName(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** Rejection of a query the node could not take on a stream: ask it with a unary call instead. */
const USE_UNARY = Symbol('use a unary call');

interface WaitingQuery {
  resolve(res: pb.QueryResponse): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/**
 * The queries of one node on one channel's QueryStream call, opened at the first query and again
 * after it ends or fails. Each query has its own deadline, past which it is answered
 * `unavailable` (a late answer is dropped); a stream that fails or ends takes the queries still on
 * it along, answered as a failed unary call would be. A node that does not know QueryStream (an
 * older build during a rolling upgrade) answers UNIMPLEMENTED: its queries, those waiting
 * included, go unary.
 */
class QueryMux {
  private call: ClientDuplexStream<pb.QueryStreamRequest, pb.QueryStreamResponse> | null = null;
  private readonly waiting = new Map<number, WaitingQuery>();
  private nextId = 1;
  /** the node answered QueryStream UNIMPLEMENTED */
  unsupported = false;

  constructor(
    private readonly client: Client,
    private readonly address: string,
    private readonly series: QuerySeries,
  ) {}

  ask(query: pb.QueryRequest, deadlineMs: number): Promise<pb.QueryResponse> {
    const call = this.call ?? this.open();
    const id = this.nextId++;
    return new Promise<pb.QueryResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(suggestError('unavailable', { reason: `A shard node did not answer (no answer from ${this.address} within ${deadlineMs} ms)` }));
      }, deadlineMs);
      this.waiting.set(id, { resolve, reject, timer });
      call.write({ id, query });
    });
  }

  close(): void {
    const call = this.call;
    if (call === null) return;
    this.ended(call, suggestError('unavailable', { reason: `The connection to shard node ${this.address} was closed` }), 'closed');
    call.cancel();
  }

  private open(): ClientDuplexStream<pb.QueryStreamRequest, pb.QueryStreamResponse> {
    const q = S.queryStream;
    const call = this.client.makeBidiStreamRequest(q.path, q.requestSerialize, q.responseDeserialize, new Metadata(), {});
    this.call = call;
    this.series.opened.inc();
    call.on('data', (m: pb.QueryStreamResponse) => {
      const w = this.waiting.get(m.id);
      if (w === undefined) return;
      this.waiting.delete(m.id);
      clearTimeout(w.timer);
      if (m.failure !== undefined) w.reject(failureError(m.failure));
      else if (m.response !== undefined) w.resolve(m.response);
      else w.reject(new SuggestError('internal', `${q.path} answered neither a result nor a failure`));
    });
    call.on('error', (err: ServiceError) => {
      if (err.code === status.UNIMPLEMENTED) this.unsupported = true;
      this.ended(call, this.unsupported ? USE_UNARY : remoteError(err, this.address), this.unsupported ? 'unimplemented' : 'error');
    });
    call.on('end', () => this.ended(call, suggestError('unavailable', { reason: `Shard node at ${this.address} ended the query stream` }), 'ended'));
    return call;
  }

  /** The stream is over: the queries still on it get `reason`, and the next query opens another. */
  private ended(call: ClientDuplexStream<pb.QueryStreamRequest, pb.QueryStreamResponse>, reason: unknown, why: string): void {
    if (this.call !== call) return;
    this.call = null;
    this.series.ended.labels(why).inc();
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.reject(reason);
    }
    this.waiting.clear();
  }
}

interface QuerySeries {
  opened: Counter;
  ended: Counter<'reason'>;
  unary: Counter;
  calls: HotHistogram<'method' | 'outcome'>;
  /** the series of answered queries, found once (the hot path of a cluster router) */
  queriesOk: HotHistogramSeries;
}

/** The query streams' series on a registry, registered once (a registry may see several pools in tests). */
const querySeries = perRegistry((registry): QuerySeries => {
  const calls = new HotHistogram<'method' | 'outcome'>(
    'suggest_shard_call_duration_seconds',
    "Round trips of this process's gRPC calls to shard nodes, from the call to its answer, by method (query: on a QueryStream or unary) and outcome (ok, or the error's code).",
    ['method', 'outcome'],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registry,
  );
  return {
    opened: new Counter({ name: 'suggest_shard_query_streams_opened_total', help: 'QueryStream calls this router opened to shard nodes (one per node, again after one ends).', registers: [registry] }),
    ended: new Counter({
      name: 'suggest_shard_query_streams_ended_total',
      help: 'QueryStream calls that ended, by reason (error: failed, queries on it answered unavailable; ended: the node ended it, as when it stops; closed: by this router; unimplemented: a node without QueryStream).',
      labelNames: ['reason'],
      registers: [registry],
    }),
    unary: new Counter({ name: 'suggest_shard_queries_unary_total', help: 'Queries sent to shard nodes as unary calls: to nodes without QueryStream (an older build), or all of them with SUGGEST_QUERY_STREAMS=0.', registers: [registry] }),
    calls,
    queriesOk: calls.labels('query', 'ok'),
  };
});

/** The catalogue error a QueryStream answer carries (what `fromGrpcError` rebuilds from a unary call). */
function failureError(f: pb.QueryFailure): SuggestError {
  return errorFromFields(f.code, f.message, f.issuesJson, f.headersJson) ?? new SuggestError('internal', f.message);
}

function isServiceError(err: unknown): err is ServiceError {
  return typeof err === 'object' && err !== null && typeof (err as ServiceError).code === 'number' && 'metadata' in err;
}

function remoteError(err: ServiceError, address: string): SuggestError {
  const e = fromGrpcError(err);
  // a node that shuts down mid-call cancels it; to the caller that is a node that did not answer
  if (e.code === 'internal' && err.code === status.CANCELLED) {
    return suggestError('unavailable', { reason: `Shard node at ${address} stopped during the call` }, { cause: err });
  }
  return e;
}

export class GrpcClientPool implements ShardDirectory {
  private readonly byAddress = new Map<string, RemoteShard>();
  private readonly resolve: (node: NodeId) => string | undefined;
  private readonly deadlines: Record<ShardMethod, number>;
  private readonly channels: number;
  private readonly channelOptions: ChannelOptions;
  private readonly feed: GrpcChangeFeed;
  private readonly onWrite = (ref: pb.IndexRef | undefined): void => {
    if (ref) this.feed.announce(ref.tenantId, ref.physicalIndexId);
  };
  private closed = false;
  private readonly querySeries: QuerySeries;
  private readonly queryStreams: boolean;

  constructor(options: GrpcClientPoolOptions) {
    this.queryStreams = options.queryStreams ?? true;
    this.resolve = options.resolve;
    const base = options.deadlineMs ?? 5_000;
    const deadlines = {} as Record<ShardMethod, number>;
    for (const m of METHODS) deadlines[m] = options.deadlines?.[m] ?? LONG_DEADLINES[m] ?? base;
    this.deadlines = deadlines;
    this.channels = Math.max(1, options.channelsPerAddress ?? 1);
    const max = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.channelOptions = {
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      // a restarted node should be reachable again within a second or two, not after minutes
      'grpc.initial_reconnect_backoff_ms': 250,
      'grpc.max_reconnect_backoff_ms': 5_000,
      // without this, clients with equal options share one subchannel and channelsPerAddress is moot
      ...(this.channels > 1 ? { 'grpc.use_local_subchannel_pool': 1 } : {}),
      ...options.channelOptions,
    };
    this.querySeries = querySeries((options.changeFeed?.metrics ?? processMetrics).registry);
    this.feed = new GrpcChangeFeed({
      metrics: processMetrics,
      ...options.changeFeed,
      open: (address, req, handlers) => (this.at(address) as RemoteShard).watchChanges(req, handlers),
    });
  }

  /**
   * The shard nodes (id → gRPC address) whose change feeds a subscribed router must follow:
   * every live member with the shard role. Call on every membership change.
   */
  setShardMembers(members: ReadonlyMap<string, string>): void {
    this.feed.setMembers(members);
  }

  /** ShardDirectory: the change feed over every shard node's WatchChanges stream (started by the first subscriber). */
  subscribeChanges(listener: (tenantId: string, physicalIndexId: string) => void, reset?: () => void): () => void {
    return this.feed.subscribe(listener, reset);
  }

  /** ShardDirectory: false while some live shard node's feed is not open (caches must not answer). */
  changesLive(): boolean {
    return this.feed.live;
  }

  /** ShardDirectory: a change this process caused without forwarding the write itself. */
  announceChange(tenantId: string, physicalIndexId: string): void {
    this.feed.announce(tenantId, physicalIndexId);
  }

  /** The change feed's streams by node (connecting, open, waiting), for tests and diagnostics. */
  changeFeedStates(): Record<string, string> {
    return this.feed.states();
  }

  /** The client of a node; `unavailable` when the node has no known address. */
  client(node: NodeId): ShardApi {
    const address = this.resolve(node);
    if (address === undefined) fail('unavailable', { reason: `Shard node '${node}' is not a live member` });
    return this.at(address);
  }

  /** The client of an address (one per address for the life of the pool, until pruned). */
  at(address: string): ShardApi {
    if (this.closed) fail('unavailable', { reason: 'The shard client pool is closed' });
    let remote = this.byAddress.get(address);
    if (!remote) {
      const clients: Client[] = [];
      for (let i = 0; i < this.channels; i++) clients.push(new pb.ShardServiceClient(address, credentials.createInsecure(), this.channelOptions));
      remote = new RemoteShard(address, clients, this.deadlines, this.onWrite, this.querySeries, this.queryStreams);
      this.byAddress.set(address, remote);
    }
    return remote;
  }

  /** Closes the channels of addresses not in `keep` (call after a membership change). */
  prune(keep: Iterable<string>): void {
    const live = new Set(keep);
    for (const [address, remote] of this.byAddress) {
      if (live.has(address)) continue;
      remote.close();
      this.byAddress.delete(address);
    }
  }

  get addresses(): string[] {
    return [...this.byAddress.keys()];
  }

  close(): void {
    this.closed = true;
    this.feed.close();
    for (const remote of this.byAddress.values()) remote.close();
    this.byAddress.clear();
  }
}
