// The PartitionHandoff service (proto/placement.proto) over gRPC: the server binding a shard
// node adds to its gRPC server, and the clients it uses to reach the other shard nodes (one
// channel per address, resolved from membership on every call). Errors cross as catalogue codes
// (toGrpcError / fromGrpcError), like the ShardService's.
import { Metadata, credentials, type ServiceError, type UntypedServiceImplementation } from '@grpc/grpc-js';
import * as hpb from '../proto/gen/placement.js';
import { DEFAULT_MAX_MESSAGE_BYTES, type GrpcServiceBinding } from '../node/runtime/grpc-server.js';
import { SuggestError, fail, fromGrpcError, toGrpcError } from '../node/runtime/errors.js';
import type { NodeId } from '../node/runtime/ids.js';
import type { Logger } from '../node/runtime/log.js';
import type { HandoffApi, HandoffPeers, PartitionHandoff } from './partition-handoff.js';

export function partitionHandoffGrpcService(handoff: PartitionHandoff, log: Logger): GrpcServiceBinding {
  const fault = (method: string, err: unknown) => {
    if (!(err instanceof SuggestError)) log.error('handoff rpc failed', { method, err });
    return toGrpcError(err);
  };
  const implementation: hpb.PartitionHandoffServer = {
    beginTransfer: (call, callback) => {
      handoff.beginTransfer(call.request).then(
        (res) => callback(null, res),
        (err: unknown) => callback(fault('beginTransfer', err)),
      );
    },
    replicate: (call, callback) => {
      handoff.replicate(call.request).then(
        (res) => callback(null, res),
        (err: unknown) => callback(fault('replicate', err)),
      );
    },
    sendSnapshot: (call, callback) => {
      let cancelled = false;
      call.on('cancelled', () => {
        cancelled = true;
      });
      async function* incoming(): AsyncGenerator<hpb.SnapshotChunk> {
        for await (const chunk of call as AsyncIterable<hpb.SnapshotChunk>) yield chunk;
        // a cancelled stream must not count as a complete snapshot
        if (cancelled || call.cancelled) throw new SuggestError('bad_request', 'The sender cancelled the snapshot stream.');
      }
      handoff.sendSnapshot(incoming()).then(
        (res) => callback(null, res),
        (err: unknown) => callback(fault('sendSnapshot', err)),
      );
    },
  };
  return { definition: hpb.PartitionHandoffService, implementation: implementation as UntypedServiceImplementation };
}

export interface GrpcHandoffPeersOptions {
  resolve: (node: NodeId) => string | undefined;
  /** deadline of a Replicate call, ms (default 5000): a follower slower than this is evicted */
  replicateDeadlineMs?: number;
}

const SNAPSHOT_DEADLINE_MS = 60 * 60_000;
const BEGIN_DEADLINE_MS = 30_000;

class RemoteHandoff implements HandoffApi {
  constructor(
    private readonly client: hpb.PartitionHandoffClient,
    private readonly address: string,
    private readonly replicateDeadlineMs: number,
  ) {}

  beginTransfer(req: hpb.BeginTransferRequest): Promise<hpb.BeginTransferResponse> {
    return new Promise((resolve, reject) =>
      this.client.beginTransfer(req, new Metadata(), { deadline: Date.now() + BEGIN_DEADLINE_MS }, (err, res) => (err ? reject(this.error(err)) : resolve(res))),
    );
  }

  replicate(req: hpb.ReplicateRequest): Promise<hpb.ReplicateResponse> {
    return new Promise((resolve, reject) =>
      this.client.replicate(req, new Metadata(), { deadline: Date.now() + this.replicateDeadlineMs }, (err, res) => (err ? reject(this.error(err)) : resolve(res))),
    );
  }

  /** Client stream with flow control: the next chunk is read from the snapshot only when the channel drains. */
  sendSnapshot(chunks: AsyncIterable<hpb.SnapshotChunk>): Promise<hpb.SnapshotSummary> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let wake: (() => void) | null = null;
      const finish = (err: Error | null, res?: hpb.SnapshotSummary) => {
        if (settled) return;
        settled = true;
        wake?.();
        if (err) reject(err);
        else resolve(res!);
      };
      const call = this.client.sendSnapshot({ deadline: Date.now() + SNAPSHOT_DEADLINE_MS }, (err, res) => (err ? finish(this.error(err)) : finish(null, res)));
      call.on('drain', () => wake?.());
      void (async () => {
        const it = chunks[Symbol.asyncIterator]();
        try {
          while (!settled) {
            const next = await it.next();
            if (next.done || settled) break;
            if (!call.write(next.value)) await new Promise<void>((r) => (wake = r));
            wake = null;
          }
          if (!settled) call.end();
          else await it.return?.();
        } catch (err) {
          call.cancel();
          finish(err instanceof Error ? err : new Error(String(err)));
        }
      })();
    });
  }

  private error(err: ServiceError): SuggestError {
    const e = fromGrpcError(err);
    if (e.code !== 'internal' || err.metadata?.get('suggest-error-code').length) return e;
    return new SuggestError('unavailable', `Shard node at ${this.address} did not complete the call (${err.message})`, { cause: err });
  }

  close(): void {
    this.client.close();
  }
}

export class GrpcHandoffPeers implements HandoffPeers {
  private readonly byAddress = new Map<string, RemoteHandoff>();
  private closed = false;

  constructor(private readonly opts: GrpcHandoffPeersOptions) {}

  client(node: NodeId): HandoffApi {
    if (this.closed) fail('unavailable', { reason: 'The handoff client pool is closed' });
    const address = this.opts.resolve(node);
    if (address === undefined) fail('unavailable', { reason: `Shard node '${node}' is not a live member` });
    let remote = this.byAddress.get(address);
    if (!remote) {
      const client = new hpb.PartitionHandoffClient(address, credentials.createInsecure(), {
        'grpc.max_receive_message_length': DEFAULT_MAX_MESSAGE_BYTES,
        'grpc.max_send_message_length': DEFAULT_MAX_MESSAGE_BYTES,
        'grpc.initial_reconnect_backoff_ms': 250,
        'grpc.max_reconnect_backoff_ms': 2_000,
      });
      remote = new RemoteHandoff(client, address, this.opts.replicateDeadlineMs ?? 5_000);
      this.byAddress.set(address, remote);
    }
    return remote;
  }

  close(): void {
    this.closed = true;
    for (const r of this.byAddress.values()) r.close();
    this.byAddress.clear();
  }
}
