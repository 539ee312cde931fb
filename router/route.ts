// What a route is: one declaration carries the method, the path template, the access rule, the
// TypeBox schemas of params / query / headers / body and the documented responses. The same
// declaration drives request validation (request-validator.ts), the OpenAPI document
// (openapi.ts) and dispatch (request-pipeline.ts), so the published contract cannot drift from
// what the server enforces.
import type { Readable } from 'node:stream';
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { KeyRecord } from '../coordinator/coordinator.js';
import type { ErrorCode } from '../node/runtime/errors.js';
import type { FrontTicket } from './front-cache.js';
import type { TenantContext } from './tenant-context.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'QUERY';

/**
 * Who may call a route. `public`: any key (public, private, admin); `private`: private and admin
 * keys; `admin`: admin keys only; `none`: no key needed (health, discovery, contract).
 */
export type Access = 'none' | 'public' | 'private' | 'admin';

/**
 * How the body is read. `json`: application/json (absent content type tolerated), 422 on
 * malformed JSON; `query`: the QUERY method's contract, application/json only (415 otherwise),
 * 400 `invalid_query_content` when the body is not a JSON object; `multipart`: multipart/form-data,
 * handed over as a stream (`Req.bodyStream`); `stream`: any content type, handed over as a stream;
 * `none`: no body is read.
 */
export type BodyMode = 'none' | 'json' | 'query' | 'multipart' | 'stream';

export type PlanFeature = 'personalization' | 'merchandising' | 'integrations';

export interface ResponseSpec {
  description: string;
  schema?: TSchema;
  /** defaults to application/json */
  contentType?: string;
}

export interface Req<P = unknown, Q = unknown, H = unknown, B = unknown> {
  readonly method: HttpMethod;
  /** raw request path, without the query string */
  readonly path: string;
  readonly params: P;
  readonly query: Q;
  readonly headers: H;
  readonly body: B;
  /** the authenticated key; null on routes with access `none` */
  readonly key: KeyRecord | null;
  /** the tenant acted for; set on tenant-scoped routes, null elsewhere */
  readonly tenant: TenantContext | null;
  /** the undecoded body of multipart routes */
  readonly rawBody: Buffer | null;
  /**
   * The body of `multipart` and `stream` routes, read from the socket as it is consumed (the
   * client is paused while it is not); null when the request has no body.
   */
  readonly bodyStream: Readable | null;
  /** the declared Content-Length, null when absent (chunked) */
  readonly contentLength: number | null;
  /** the Content-Type header as sent ('' when absent) */
  readonly contentType: string;
  /** true once the client went away; long handlers may stop early */
  readonly aborted: boolean;
  /**
   * On the fast path of a tenant-scoped route without path parameters: the request as it
   * arrived, for a cached answer to be remembered by it (front-cache.ts); absent elsewhere.
   */
  readonly frontTicket?: FrontTicket | null;
}

export interface RouteSpec<P extends TObject = TObject, Q extends TObject = TObject, H extends TObject = TObject, B extends TSchema = TSchema> {
  method: HttpMethod;
  /** template with `{name}` parameters */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  /** tenant-scoped: takes `tenant_id` (query) / `X-Tenant-Id` (header) and resolves the tenant */
  tenant?: boolean;
  params?: P;
  query?: Q;
  headers?: H;
  body?: B;
  bodyMode?: BodyMode;
  /** the 200 response */
  response: ResponseSpec;
  /** catalogue codes this route raises beyond the ones every route of its kind can raise */
  errors?: readonly ErrorCode[];
  /** the whole route needs this paid feature (403 `plan_required` otherwise) */
  feature?: PlanFeature;
  /** capability not built yet: validated, authorized, then answered 501 naming this */
  notImplemented?: string;
  beta?: boolean;
  // Declared as a method so the typed handler of `defineRoute` stays assignable to `Route`.
  handler?(req: Req<Static<P>, Static<Q>, Static<H>, Static<B>>): unknown;
  /**
   * A synchronous answer for the hot path of a body-less route, tried inside the uWS callback
   * once the key, parameters and tenant were all found in caches: the 200 JSON body, a promise
   * of it (the checks are done and only the answer is awaited: a rejection is rendered like any
   * handler error), or undefined to send the request down the ordinary pipeline (which also
   * renders every error). Undefined must not follow side effects a retry by `handler` would repeat.
   */
  fast?(req: Req<Static<P>, Static<Q>, Static<H>, Static<B>>): string | Promise<string> | undefined;
}

/** A route with its types erased, as the table holds it. */
export type Route = RouteSpec<TObject, TObject, TObject, TSchema>;

/** Declares a route; the handler's params, query, headers and body are typed from the schemas. */
export function defineRoute<P extends TObject = TObject, Q extends TObject = TObject, H extends TObject = TObject, B extends TSchema = TSchema>(
  spec: RouteSpec<P, Q, H, B>,
): Route {
  return spec as unknown as Route;
}

/** Where a streamed response body goes. */
export interface ResponseSink {
  /** Sends a chunk; resolves once the socket can take more (at once after the client left). */
  write(chunk: string | Buffer): Promise<void>;
  /** true once the client went away: stop producing */
  readonly aborted: boolean;
  /** called once if the client goes away before the stream ends */
  onAbort(listener: () => void): void;
}

/**
 * A response whose body is produced over time (downloads, server-sent events). Status and headers
 * go out first; `produce` then writes the body and the response ends when it resolves. If it
 * throws, the connection is closed so the client sees a truncated body, never a complete one.
 */
export class StreamReply {
  constructor(
    readonly contentType: string,
    readonly produce: (sink: ResponseSink) => Promise<void>,
    readonly headers: Record<string, string> | undefined = undefined,
    readonly status = 200,
  ) {}
}

/** A non-200 or non-JSON answer from a handler. Anything else a handler returns is sent as 200 JSON. */
export class Reply {
  constructor(
    readonly status: number,
    /** a JSON value, or the bytes/text of a non-JSON body */
    readonly body: unknown,
    readonly contentType: string = 'application/json',
    readonly headers: Record<string, string> | undefined = undefined,
    /** `body` is already the bytes/text to send (never JSON-encoded again) */
    readonly encoded = false,
  ) {}

  /** A body sent as is, whatever its content type (pre-rendered JSON included). */
  static text(body: string | Buffer, contentType: string, status = 200): Reply {
    return new Reply(status, body, contentType, undefined, true);
  }
}
