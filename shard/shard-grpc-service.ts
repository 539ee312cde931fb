// Serves a ShardApi over gRPC: each generated ShardService handler calls the matching method
// and answers with its result, or with the catalogue error as gRPC status + metadata
// (`toGrpcError`) so the caller rebuilds the same error code on its side. Blob streams become
// async iterables for the ShardApi; a cancelled upload ends its iterable with an error, never
// with a normal end, so a truncated file is never stored as complete. WatchChanges streams the
// node's change notifications to routers, which keep response caches (see serveChanges).
// QueryStream answers the queries a router multiplexes on one stream (see serveQueries).
import type { handleBidiStreamingCall, handleClientStreamingCall, handleServerStreamingCall, handleUnaryCall, ServerReadableStream, ServerWritableStream } from '@grpc/grpc-js';
import type { BlobChunk, BlobRef, BlobRequest, IndexChange, QueryFailure, QueryRequest, QueryResponse, QueryStreamRequest, QueryStreamResponse, ShardServiceServer, WatchChangesRequest } from '../proto/gen/shard.js';
import { SuggestError, asSuggestError, toGrpcError } from '../node/runtime/errors.js';
import { HotHistogram } from '../node/runtime/hot-metrics.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import { metrics as processMetrics, perRegistry } from '../node/runtime/metrics.js';
import type { ShardApi } from '../node/runtime/shard-api.js';
import type { ChangeEvent, ChangeListener } from './shard-node.js';

export interface ShardGrpcServiceOptions {
  /** the node's change notifications (ShardNode.onChange); without it WatchChanges answers UNIMPLEMENTED */
  changes?: { onChange(listener: ChangeListener): () => void };
  /** named in every IndexChange */
  nodeId?: string;
  /** aborted when the process stops: every WatchChanges stream ends at once (no grace period wasted on them) */
  stopping?: AbortSignal;
}

/** Heartbeat period when the caller asks for none, and the bounds of what it may ask. */
const DEFAULT_HEARTBEAT_MS = 250;
const MIN_HEARTBEAT_MS = 20;
const MAX_HEARTBEAT_MS = 60_000;

/**
 * How long this node took over each call, on the process registry. The callers' round trips
 * (`suggest_shard_call_duration_seconds`) minus these are the network and the queues between.
 */
const handleSeries = perRegistry(
  (registry) =>
    new HotHistogram<'method' | 'outcome'>(
      'suggest_shard_handle_duration_seconds',
      "Time this shard node took to answer each gRPC call, from its arrival to its answer, by method (query: on a QueryStream or unary) and outcome (ok, or the error's code).",
      ['method', 'outcome'],
      [0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registry,
    ),
);

export function shardGrpcService(api: ShardApi, logger: Logger = rootLog, options: ShardGrpcServiceOptions = {}): ShardServiceServer {
  const log = logger.child({ component: 'shard-grpc-service' });
  const handled = handleSeries(processMetrics.registry);
  const record = (method: string, err: unknown, started: number): void => {
    const outcome = err === null ? 'ok' : asSuggestError(err).code;
    handled.labels(method, outcome).observe((performance.now() - started) / 1000);
  };

  function unary<Req, Res>(method: string, fn: (req: Req) => Promise<Res>): handleUnaryCall<Req, Res> {
    const fault = (err: unknown) => {
      // catalogue errors are answers; anything else is a bug worth a log line
      if (!(err instanceof SuggestError)) log.error('shard rpc failed', { method, err });
      return toGrpcError(err);
    };
    return (call, callback) => {
      const started = performance.now();
      let pending: Promise<Res>;
      try {
        pending = fn(call.request);
      } catch (err) {
        record(method, err, started);
        callback(fault(err));
        return;
      }
      pending.then(
        (res) => {
          record(method, null, started);
          callback(null, res);
        },
        (err: unknown) => {
          record(method, err, started);
          callback(fault(err));
        },
      );
    };
  }

  const streamFault = (method: string, err: unknown) => {
    if (!(err instanceof SuggestError)) log.error('shard rpc failed', { method, err });
    return toGrpcError(err);
  };

  const putBlob: handleClientStreamingCall<BlobChunk, BlobRef> = (call, callback) => {
    let pending: Promise<BlobRef>;
    try {
      pending = api.putBlob(incoming(call));
    } catch (err) {
      callback(streamFault('putBlob', err));
      return;
    }
    pending.then(
      (res) => callback(null, res),
      (err: unknown) => callback(streamFault('putBlob', err)),
    );
  };

  const getBlob: handleServerStreamingCall<BlobRequest, BlobChunk> = (call) => {
    void sendAll(call, () => api.getBlob(call.request)).catch((err: unknown) => {
      if (!call.cancelled) call.emit('error', streamFault('getBlob', err));
    });
  };

  const watchChanges: handleServerStreamingCall<WatchChangesRequest, IndexChange> = (call) => {
    if (!options.changes) {
      call.emit('error', toGrpcError(new SuggestError('not_implemented', 'The change feed of this shard node is not available in this build yet.')));
      return;
    }
    serveChanges(call, options.changes, options.nodeId ?? '', options.stopping);
  };

  const queryStream: handleBidiStreamingCall<QueryStreamRequest, QueryStreamResponse> = (call) => {
    serveQueries(
      call,
      (query) => {
        const started = performance.now();
        let answer: Promise<QueryResponse>;
        try {
          answer = api.query(query);
        } catch (err) {
          record('query', err, started);
          throw err;
        }
        return answer.then(
          (res) => {
            record('query', null, started);
            return res;
          },
          (err: unknown) => {
            record('query', err, started);
            throw err;
          },
        );
      },
      (err) => queryFailure(err, log),
      options.stopping,
    );
  };

  return {
    putBlob,
    getBlob,
    watchChanges,
    queryStream,
    deleteBlob: unary('deleteBlob', api.deleteBlob.bind(api)),
    startJob: unary('startJob', api.startJob.bind(api)),
    cancelJob: unary('cancelJob', api.cancelJob.bind(api)),
    upsert: unary('upsert', api.upsert.bind(api)),
    getDocument: unary('getDocument', api.getDocument.bind(api)),
    deleteDocument: unary('deleteDocument', api.deleteDocument.bind(api)),
    listDocuments: unary('listDocuments', api.listDocuments.bind(api)),
    dropIndex: unary('dropIndex', api.dropIndex.bind(api)),
    indexStats: unary('indexStats', api.indexStats.bind(api)),
    query: unary('query', api.query.bind(api)),
    partitionStats: unary('partitionStats', api.partitionStats.bind(api)),
    recordEvents: unary('recordEvents', api.recordEvents.bind(api)),
  };
}

/**
 * One WatchChanges stream. The listener is registered before `open` is written, so every write
 * applied after the caller reads `open` is announced: that is what lets a router trust its cache
 * from then on. ShardNode calls listeners after the write is durable and applied to the search
 * engine (SearchHost listens first), so a router that re-queries on an announcement sees it.
 * A caller that reads slowly does not make this node buffer every event: while the stream is
 * blocked by flow control, announcements are coalesced per index part (an announcement only says
 * "this changed"; order does not matter), so memory stays bounded by the indexes written.
 */
function serveChanges(call: ServerWritableStream<WatchChangesRequest, IndexChange>, source: { onChange(listener: ChangeListener): () => void }, nodeId: string, stopping: AbortSignal | undefined): void {
  const asked = call.request.heartbeatMs;
  const heartbeatMs = asked === 0 ? DEFAULT_HEARTBEAT_MS : Math.min(MAX_HEARTBEAT_MS, Math.max(MIN_HEARTBEAT_MS, asked));
  let seq = 0;
  let sentSinceTick = false;
  let blocked = false;
  let ended = false;
  const pending = new Map<string, ChangeEvent>();

  const send = (kind: string, e: ChangeEvent | null): void => {
    sentSinceTick = true;
    const ok = call.write({ seq: ++seq, kind, tenantId: e?.ref.tenantId ?? '', physicalIndexId: e?.ref.physicalIndexId ?? '', part: e?.ref.part ?? 0, nodeId });
    if (!ok) blocked = true;
  };
  const listener: ChangeListener = (e) => {
    if (ended) return;
    if (blocked) pending.set(`${e.ref.tenantId}\0${e.ref.physicalIndexId}\0${e.ref.part}`, e);
    else send(e.type, e);
  };
  const onDrain = () => {
    blocked = false;
    for (const [k, e] of pending) {
      pending.delete(k);
      send(e.type, e);
      if (blocked) return;
    }
  };
  const unsubscribe = source.onChange(listener);
  const timer = setInterval(() => {
    // a heartbeat only when nothing else went out in the last period: silence means trouble
    if (!sentSinceTick && !blocked) send('heartbeat', null);
    sentSinceTick = false;
  }, heartbeatMs);
  timer.unref();
  const cleanup = () => {
    if (ended) return;
    ended = true;
    clearInterval(timer);
    unsubscribe();
    pending.clear();
    call.off('drain', onDrain);
    stopping?.removeEventListener('abort', stop);
  };
  const stop = () => {
    if (ended) return;
    cleanup();
    call.end();
  };
  call.on('drain', onDrain);
  call.on('cancelled', cleanup);
  call.on('close', cleanup);
  call.on('error', cleanup);
  if (stopping?.aborted) {
    stop();
    return;
  }
  stopping?.addEventListener('abort', stop);
  send('open', null);
}

const NO_QUERY: QueryRequest = { ref: undefined, kind: '', payload: Buffer.alloc(0) };

/** A failed query as QueryStream carries it; anything but a catalogue error is a bug worth a log line. */
function queryFailure(err: unknown, log: Logger): QueryFailure {
  if (!(err instanceof SuggestError)) log.error('shard rpc failed', { method: 'queryStream', err });
  const e = asSuggestError(err);
  return { code: e.code, message: e.message, issuesJson: e.issues ? JSON.stringify(e.issues) : '', headersJson: e.headers ? JSON.stringify(e.headers) : '' };
}

/**
 * One QueryStream call: every request is answered with its id as soon as its query is done, in
 * whatever order they finish. When the caller ends its side, or the node stops, the stream ends
 * once the queries in flight are answered; a query arriving after the node began to stop is
 * refused at once (unavailable) rather than left to its deadline.
 */
function serveQueries(
  call: Parameters<handleBidiStreamingCall<QueryStreamRequest, QueryStreamResponse>>[0],
  query: (req: QueryRequest) => Promise<QueryResponse>,
  failure: (err: unknown) => QueryFailure,
  stopping: AbortSignal | undefined,
): void {
  let inFlight = 0;
  let ending = false;
  let closed = false;
  const send = (out: QueryStreamResponse): void => {
    if (!closed && !call.cancelled) call.write(out);
  };
  const finish = (): void => {
    if (!ending || inFlight > 0 || closed) return;
    closed = true;
    stopping?.removeEventListener('abort', stop);
    call.end();
  };
  const stop = (): void => {
    ending = true;
    finish();
  };
  const gone = (): void => {
    closed = true;
    stopping?.removeEventListener('abort', stop);
  };
  call.on('data', (m: QueryStreamRequest) => {
    if (ending) {
      send({ id: m.id, response: undefined, failure: failure(new SuggestError('unavailable', 'This shard node is stopping; ask again.')) });
      return;
    }
    inFlight++;
    let answered: Promise<QueryResponse>;
    try {
      answered = query(m.query ?? NO_QUERY);
    } catch (err) {
      answered = Promise.reject(err);
    }
    answered
      .then(
        (response) => send({ id: m.id, response, failure: undefined }),
        (err: unknown) => send({ id: m.id, response: undefined, failure: failure(err) }),
      )
      .finally(() => {
        inFlight--;
        finish();
      });
  });
  call.on('end', stop);
  call.on('cancelled', gone);
  call.on('error', gone);
  if (stopping?.aborted) stop();
  else stopping?.addEventListener('abort', stop);
}

/** The messages of a client stream; throws if the caller cancelled instead of ending the stream. */
async function* incoming<T>(call: ServerReadableStream<T, unknown>): AsyncIterable<T> {
  let cancelled = false;
  call.on('cancelled', () => {
    cancelled = true;
    call.destroy();
  });
  try {
    for await (const message of call as AsyncIterable<T>) yield message;
  } catch (err) {
    if (cancelled || call.cancelled) throw new SuggestError('bad_request', 'The caller cancelled the stream.', { cause: err });
    throw err;
  }
  if (cancelled || call.cancelled) throw new SuggestError('bad_request', 'The caller cancelled the stream.');
}

/** Writes every message of `source` with flow control, then ends the call. */
async function sendAll<T>(call: ServerWritableStream<unknown, T>, source: () => AsyncIterable<T>): Promise<void> {
  const it = source()[Symbol.asyncIterator]();
  try {
    for (;;) {
      if (call.cancelled) return;
      const next = await it.next();
      if (next.done) break;
      if (!call.write(next.value)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            call.off('drain', done);
            call.off('cancelled', done);
            resolve();
          };
          call.on('drain', done);
          call.on('cancelled', done);
        });
      }
    }
    call.end();
  } finally {
    if (call.cancelled) await it.return?.();
  }
}
