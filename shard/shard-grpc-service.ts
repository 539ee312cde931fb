// Serves a ShardApi over gRPC: each generated ShardService handler calls the matching method
// and answers with its result, or with the catalogue error as gRPC status + metadata
// (`toGrpcError`) so the caller rebuilds the same error code on its side. Blob streams become
// async iterables for the ShardApi; a cancelled upload ends its iterable with an error, never
// with a normal end, so a truncated file is never stored as complete.
import type { handleClientStreamingCall, handleServerStreamingCall, handleUnaryCall, ServerReadableStream, ServerWritableStream } from '@grpc/grpc-js';
import type { BlobChunk, BlobRef, BlobRequest, ShardServiceServer } from '../proto/gen/shard.js';
import { SuggestError, toGrpcError } from '../node/runtime/errors.js';
import { log as rootLog, type Logger } from '../node/runtime/log.js';
import type { ShardApi } from '../node/runtime/shard-api.js';

export function shardGrpcService(api: ShardApi, logger: Logger = rootLog): ShardServiceServer {
  const log = logger.child({ component: 'shard-grpc-service' });

  function unary<Req, Res>(method: string, fn: (req: Req) => Promise<Res>): handleUnaryCall<Req, Res> {
    const fault = (err: unknown) => {
      // catalogue errors are answers; anything else is a bug worth a log line
      if (!(err instanceof SuggestError)) log.error('shard rpc failed', { method, err });
      return toGrpcError(err);
    };
    return (call, callback) => {
      let pending: Promise<Res>;
      try {
        pending = fn(call.request);
      } catch (err) {
        callback(fault(err));
        return;
      }
      pending.then(
        (res) => callback(null, res),
        (err: unknown) => callback(fault(err)),
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

  return {
    putBlob,
    getBlob,
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
