// Serves a ShardApi over gRPC: each generated ShardService handler calls the matching method
// and answers with its result, or with the catalogue error as gRPC status + metadata
// (`toGrpcError`) so the caller rebuilds the same error code on its side.
import type { handleUnaryCall } from '@grpc/grpc-js';
import type { ShardServiceServer } from '../proto/gen/shard.js';
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

  return {
    upsert: unary('upsert', api.upsert.bind(api)),
    getDocument: unary('getDocument', api.getDocument.bind(api)),
    deleteDocument: unary('deleteDocument', api.deleteDocument.bind(api)),
    listDocuments: unary('listDocuments', api.listDocuments.bind(api)),
    dropIndex: unary('dropIndex', api.dropIndex.bind(api)),
    indexStats: unary('indexStats', api.indexStats.bind(api)),
    query: unary('query', api.query.bind(api)),
    partitionStats: unary('partitionStats', api.partitionStats.bind(api)),
  };
}
