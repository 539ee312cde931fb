// The part of autocannon's programmatic API that the load driver uses (the package ships no
// type declarations). Shapes follow autocannon 9's lib/run.js and lib/aggregateResult.js.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface RequestParams {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }

  export interface RequestSpec extends RequestParams {
    setupRequest?: (req: RequestParams, context: Record<string, unknown>) => RequestParams;
  }

  export interface Options {
    url: string;
    connections?: number;
    duration?: number;
    amount?: number;
    pipelining?: number;
    timeout?: number;
    headers?: Record<string, string>;
    requests?: RequestSpec[];
    excludeErrorStats?: boolean;
  }

  export interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p99: number;
    p99_9: number;
    total: number;
  }

  export interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    '2xx': number;
    '4xx': number;
    '5xx': number;
    statusCodeStats: Record<string, { count: number }>;
    latency: Histogram;
    requests: Histogram & { sent: number };
    throughput: Histogram;
  }

  export interface Instance extends EventEmitter {
    stop(): void;
    on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
    on(event: 'done', listener: (result: Result) => void): this;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }

  function autocannon(opts: Options, cb: (err: Error | null, result: Result) => void): Instance;
  export default autocannon;
}
