// The gRPC server of a process: binds host:port (port 0 picks a free port and reports it), serves
// the ShardService and any other service given, and shuts down gracefully (in-flight calls
// finish) with a forced stop after a grace period. Message limits are raised because ingestion
// batches travel as one UpsertRequest.
import { Server, ServerCredentials, type ChannelOptions, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { ShardServiceService, type ShardServiceServer } from '../../proto/gen/shard.js';

/** Default largest message in either direction: a large ingestion batch or list page fits. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

export interface GrpcServiceBinding {
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

export interface GrpcServerOptions {
  host: string;
  /** 0: any free port (see `GrpcServer.port`) */
  port: number;
  shard?: ShardServiceServer;
  services?: readonly GrpcServiceBinding[];
  maxMessageBytes?: number;
  /** extra grpc-js server options, applied last */
  options?: ChannelOptions;
}

export class GrpcServer {
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly server: Server,
    readonly host: string,
    readonly port: number,
  ) {}

  /** `host:port` as a client dials it (IPv6 hosts bracketed). */
  get address(): string {
    return formatAddress(this.host, this.port);
  }

  static async start(opts: GrpcServerOptions): Promise<GrpcServer> {
    const max = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    const server = new Server({
      'grpc.max_receive_message_length': max,
      'grpc.max_send_message_length': max,
      // ping idle clients so a dead peer's connection is noticed and its resources freed
      'grpc.keepalive_time_ms': 60_000,
      'grpc.keepalive_timeout_ms': 20_000,
      ...opts.options,
    });
    if (opts.shard) server.addService(ShardServiceService, opts.shard);
    for (const s of opts.services ?? []) server.addService(s.definition, s.implementation);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync(formatAddress(opts.host, opts.port), ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    return new GrpcServer(server, opts.host, port);
  }

  /**
   * Stops accepting calls and waits up to `graceMs` for running calls to finish, then cancels
   * whatever is left. Safe to call more than once.
   */
  shutdown(graceMs = 5_000): Promise<void> {
    this.stopping ??= new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      timer.unref();
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.stopping;
  }

  /** Graceful shutdown with the default grace period. */
  close(): Promise<void> {
    return this.shutdown();
  }

  /** Cancels every call at once. */
  forceShutdown(): void {
    this.server.forceShutdown();
    this.stopping ??= Promise.resolve();
  }
}

/** Same as `GrpcServer.start`. */
export const startGrpcServer = (opts: GrpcServerOptions): Promise<GrpcServer> => GrpcServer.start(opts);
export type GrpcServerHandle = GrpcServer;

function formatAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}
