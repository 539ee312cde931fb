// The HTTP transport over uWebSockets.js: one catch-all uWS handler, our own route table (so
// 404/405 carry the catalogue body and QUERY is routable), the abort guard attached before any
// await or body read, bounded body reading, corked writes that never touch an aborted response,
// and per-route metrics. Authentication, validation and handlers live in request-pipeline.ts.
//
// uWS v20.30 facts this file relies on (checked against the shipped binary):
// - `req.getMethod()` is lower-case; `getQuery()` returns undefined when the URL has no `?`.
// - `app.any()` covers only the nine standard methods: a request with any other method (QUERY
//   included) is closed by uWS before JS runs. QUERY therefore also arrives as POST with
//   `X-HTTP-Method-Override: QUERY`, which is routed exactly like QUERY; newer uWS builds that
//   pass unknown methods to `any()` reach the QUERY routes directly through the same table.
// - Every request/response object is only valid synchronously; an exception thrown out of the
//   handler kills the process, so everything here is guarded.
// - HEAD reaches `any()` like GET, and `end(body)` would send the body. `endWithoutBody(n)` writes
//   `Content-Length: n` but then waits for n body bytes (the response stays pending and the next
//   request on the connection is dropped); `endWithoutBody(undefined, ...)` reports a length of
//   2^63. Only `endWithoutBody()` with no arguments ends a response cleanly, so a HEAD answer
//   writes its Content-Length header itself.
// - Header values are stored with bytes below 33 *or above 127* trimmed from both ends: a value
//   made only of such bytes reads as '' like an absent header; `forEach()` still lists the
//   header, which tells the two apart. `getHeader()` returns the first value of a header sent
//   several times, byte per char (Latin-1); `forEach()` lists every value, decoded as UTF-8 with
//   U+FFFD for bytes that are not. A forEach() costs about 0.15 to 0.25 µs a header, a
//   getHeader() call about 0.13 µs.
// - A request line whose target does not start with `/` (absolute-form `GET http://host/x`,
//   asterisk-form `OPTIONS *`) or whose version is not exactly `HTTP/1.1` never reaches JS: uWS
//   waits for more bytes and drops the connection at its 10 s idle timeout. No answer is possible
//   from here; router/DESIGN.md ("uWS v20.30 caveat") has the details. What a build that hands
//   such targets over gets is decided all the same: absolute-form served by its path, others 400.
// - A request head (request line and headers) that arrives in more than one read is buffered up to
//   4 KB (uWS's MAX_FALLBACK_SIZE, fixed in this build: no setting, no environment variable); past
//   that, or past what one read holds (over loopback, 64 to 128 KB), uWS closes the connection before
//   JS runs, so no 431 can be sent. MAX_REQUEST_HEAD_BYTES is what clients are told to stay within.
import { isUtf8 } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { SuggestError, suggestError, validationError } from '../node/runtime/errors.js';
import type { Logger } from '../node/runtime/log.js';
import type { Metrics } from '../node/runtime/metrics.js';
import { CompiledRoute } from './compiled-route.js';
import { DRAIN_LIMIT, RequestBodyStream } from './request-body-stream.js';
import { Reply, StreamReply, type ResponseSink, type Route } from './route.js';
import { RouteTable } from './route-table.js';

/** The request head (request line and headers) every client can count on being read (see the header). */
export const MAX_REQUEST_HEAD_BYTES = 4096;

/** What the transport reads from the request before it goes out of scope. */
export interface RequestHead {
  apiKey: string;
  contentType: string;
  /** raw query string, undefined when there is none */
  query: string | undefined;
  /** values of the route's declared headers, in `validator.headerNames` order ('' = absent) */
  headerValues: string[];
}

/** Body bytes, or the error that ended reading (too large, client gone). */
export type BodyResult = Buffer | SuggestError;

export type Dispatch = (x: Exchange, route: CompiledRoute, params: string[], head: RequestHead, body: Promise<BodyResult> | null) => Promise<void>;

/** The hot path (request-pipeline.ts `fast`): a 200 JSON body, a promise of one (errors rendered as usual), or undefined. */
export type FastPath = (route: CompiledRoute, method: string, path: string, params: string[], head: RequestHead) => string | Promise<string> | undefined;

export interface HttpServerOptions {
  maxJsonBody: number;
  metrics: Metrics;
  log: Logger;
}

const STATUS_LINE: Record<number, string> = {};
for (const [code, text] of Object.entries(STATUS_CODES)) STATUS_LINE[Number(code)] = `${code} ${text}`;
const statusLine = (s: number) => STATUS_LINE[s] ?? `${s} Status`;

const JSON_TYPE = 'application/json';
const STATUS_200 = statusLine(200);
const CORS_ALLOW_HEADERS = 'x-api-key, x-tenant-id, content-type, x-bypass-cache, x-http-method-override, last-event-id';
const EMPTY_BODY: Promise<BodyResult> = Promise.resolve(Buffer.alloc(0));
/** uWS's ListenOptions: LIBUS_LISTEN_DEFAULT sets SO_REUSEPORT, LIBUS_LISTEN_EXCLUSIVE_PORT does not. */
const LIBUS_LISTEN_DEFAULT = 0;
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;
const KNOWN_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'QUERY', 'HEAD', 'OPTIONS']);

/** One request in flight: the response handle plus the guards that keep writes safe. */
export class Exchange {
  aborted = false;
  /** a response was sent (or the client is gone): nothing more may be written */
  done = false;
  /** false while request body bytes may still arrive; an early answer then closes the connection */
  bodyComplete = true;
  /** ends a pending body read when the client goes away */
  cancelBody: (() => void) | null = null;
  /** the body of a streaming route (multipart, stream), read as the handler consumes it */
  bodyStream: RequestBodyStream | null = null;
  /** declared Content-Length of a streaming route; null when absent */
  contentLength: number | null = null;
  /** a HEAD request: answered like GET, with the status and headers but never a body */
  readonly head: boolean;
  private abortHooks: (() => void)[] = [];

  constructor(
    private readonly server: HttpServer,
    readonly res: HttpResponse,
    readonly method: string,
    readonly path: string,
    readonly route: CompiledRoute | null,
    readonly start: number,
  ) {
    this.head = method === 'HEAD';
  }

  readonly onAborted = (): void => {
    this.aborted = true;
    if (!this.done) {
      this.done = true;
      this.server.record(this, 499);
    }
    this.cancelBody?.();
    this.bodyStream?.abort(new SuggestError('bad_request', 'The client closed the connection.'));
    for (const hook of this.abortHooks.splice(0)) hook();
  };

  /** Sends a handler result: a Reply as is, a StreamReply as a stream, anything else as 200 JSON. */
  reply(result: unknown): void {
    if (result instanceof StreamReply) {
      void this.stream(result);
    } else if (result instanceof Reply) {
      const body = result.encoded ? (result.body as string | Buffer) : JSON.stringify(result.body);
      this.send(result.status, body ?? '', result.contentType, result.headers);
    } else {
      this.send(200, JSON.stringify(result) ?? 'null', JSON_TYPE, undefined);
    }
  }

  /** Sends the catalogue body of an error; anything not from the catalogue becomes a logged 500. */
  error(err: unknown): void {
    if (this.done) return;
    // An `internal` error (ours or rebuilt from a shard's answer) carries details for the log,
    // not for the client: it gets the reference form like any unexpected exception.
    const e = err instanceof SuggestError && err.code !== 'internal' ? err : this.server.internal(err, this);
    this.send(e.status, JSON.stringify(e.toBody()), JSON_TYPE, e.headers);
  }

  send(status: number, body: string | Buffer, contentType: string, headers: Record<string, string> | undefined): void {
    if (this.done) return;
    this.done = true;
    this.server.record(this, status);
    if (this.aborted) return;
    const stream = this.bodyStream;
    if (stream && !stream.complete) {
      // answered before the streamed body was read: let the client finish sending first
      stream.drain((complete) => {
        this.bodyComplete = complete;
        if (!this.aborted) this.writeOut(status, body, contentType, headers);
      });
      return;
    }
    if (stream) this.bodyComplete = true;
    this.writeOut(status, body, contentType, headers);
  }

  /**
   * Streams a StreamReply: status and headers at once, then whatever `produce` writes, each write
   * waiting for the socket to drain (uWS `onWritable`) so a slow client slows the producer.
   */
  private async stream(reply: StreamReply): Promise<void> {
    if (this.done) return;
    this.done = true;
    this.server.record(this, reply.status);
    if (this.aborted) return;
    const res = this.res;
    this.bodyStream?.detach();
    let waiter: (() => void) | null = null;
    const release = () => {
      const w = waiter;
      waiter = null;
      w?.();
    };
    const listeners: (() => void)[] = [release];
    this.abortHooks.push(() => {
      for (const l of listeners) l();
    });
    if (!this.head) {
      res.onWritable(() => {
        release();
        return true;
      });
    }
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      res.writeHeader('content-type', reply.contentType);
      res.writeHeader('access-control-allow-origin', '*');
      if (reply.headers) for (const k in reply.headers) res.writeHeader(k, reply.headers[k]!);
      // the length of a streamed body is not known in advance: a HEAD answer has none
      if (this.head) res.endWithoutBody();
    });
    // On HEAD the producer still runs, against a sink that is closed from the start, so whatever
    // the handler opened for it (a file being read, a subscription) is released.
    const isAborted = () => this.aborted || this.head;
    const sink: ResponseSink = {
      get aborted() {
        return isAborted();
      },
      onAbort(listener) {
        if (isAborted()) listener();
        else listeners.push(listener);
      },
      write(chunk) {
        if (isAborted()) return Promise.resolve();
        let ok = true;
        res.cork(() => {
          ok = res.write(chunk);
        });
        if (ok || isAborted()) return Promise.resolve();
        return new Promise<void>((resolve) => {
          waiter = resolve;
        });
      },
    };
    try {
      await reply.produce(sink);
      if (!isAborted()) res.cork(() => res.end());
    } catch (err) {
      this.server.internal(err, this);
      // a truncated body must not look complete: close instead of ending the chunked stream
      if (!isAborted()) res.close();
    }
  }

  private writeOut(status: number, body: string | Buffer, contentType: string, headers: Record<string, string> | undefined): void {
    const res = this.res;
    const close = !this.bodyComplete;
    const head = this.head;
    this.bodyStream?.detach();
    res.cork(() => {
      res.writeStatus(statusLine(status));
      res.writeHeader('content-type', contentType);
      res.writeHeader('access-control-allow-origin', '*');
      if (headers) for (const k in headers) res.writeHeader(k, headers[k]!);
      if (!head) res.end(body, close);
      // endWithoutBody() cannot close the connection (see the header of this file); a HEAD whose
      // own body was too large to drain gets `Content-Length: 0` and the close instead
      else if (close) res.end('', true);
      else {
        res.writeHeader('content-length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
        res.endWithoutBody();
      }
    });
  }
}

export class HttpServer {
  private readonly app: TemplatedApp;
  private readonly table = new RouteTable<CompiledRoute>();
  private listenSocket: us_listen_socket | null = null;
  private readonly unmatchedCount;
  private readonly unmatchedTime;

  constructor(
    private readonly opts: HttpServerOptions,
    private readonly dispatch: Dispatch,
    private readonly fast: FastPath | null = null,
  ) {
    this.app = uWS.App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
    this.unmatchedCount = opts.metrics.httpRequests;
    this.unmatchedTime = opts.metrics.httpDuration;
  }

  add(route: Route): CompiledRoute {
    const compiled = new CompiledRoute(route, this.opts.metrics);
    this.table.add(route.method, route.path, compiled);
    return compiled;
  }

  routes(): CompiledRoute[] {
    return this.table.list().map((e) => e.route);
  }

  listen(host: string, port: number, opts: { reusePort?: boolean } = {}): Promise<number> {
    return new Promise((resolve, reject) => {
      // Exclusive unless asked: uWS otherwise sets SO_REUSEPORT, and a second node started on a
      // port already taken would silently share its connections (each process with its own data)
      // instead of failing to start. The binding takes (host, port, options, cb); its typings list
      // only (port, options, cb).
      const listen = this.app.listen.bind(this.app) as unknown as (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void;
      listen(host, port, opts.reusePort === true ? LIBUS_LISTEN_DEFAULT : LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${host}:${port} (is another process using the port?)`));
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket as unknown as Parameters<typeof uWS.us_socket_local_port>[0]));
      });
    });
  }

  close(): void {
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    // Also drops open keep-alive connections, so a closed server really lets the process exit.
    (this.app as TemplatedApp & { close?: () => void }).close?.();
  }

  /** Counts an answered request under its route template ('unmatched' for 404/405). */
  record(x: Exchange, status: number): void {
    const seconds = (performance.now() - x.start) / 1000;
    if (x.route) x.route.observe(status, seconds);
    else {
      const method = KNOWN_METHODS.has(x.method) ? x.method : 'OTHER';
      this.unmatchedCount.labels('unmatched', method, String(status)).inc();
      this.unmatchedTime.labels('unmatched', method, String(status)).observe(seconds);
    }
  }

  /** Logs an unexpected error under a reference the client can quote. */
  internal(err: unknown, x: Exchange): SuggestError {
    const ref = randomBytes(6).toString('hex');
    this.opts.log.error('request failed', { ref, method: x.method, route: x.route?.label ?? x.path.slice(0, 200), err: err instanceof Error ? err : String(err) });
    return suggestError('internal', { ref }, { cause: err });
  }

  private onRequest(res: HttpResponse, req: HttpRequest): void {
    const start = performance.now();
    let x: Exchange | null = null;
    let isHead = false;
    try {
      let method = req.getMethod().toUpperCase();
      let path = req.getUrl();
      if (path.charCodeAt(0) !== 47 /* / */) {
        // unreachable with uWS v20.30 (see the header), decided for a build that hands these over
        const origin = absoluteFormPath(path);
        if (origin === null) {
          x = new Exchange(this, res, method, path.slice(0, 200), null, start);
          res.onAborted(x.onAborted);
          if (hasBody(req)) dropBody(x, res);
          return x.error(suggestError('bad_request', { reason: 'The request target must be a path starting with / (or an absolute http URL); this service has no server-wide resources.' }));
        }
        path = origin;
      }
      if (method === 'POST') {
        const override = req.getHeader('x-http-method-override');
        if (override !== '' && override.toUpperCase() === 'QUERY') method = 'QUERY';
      }
      // Every GET route answers HEAD (RFC 9110 9.3.2); the exchange leaves the body out.
      isHead = method === 'HEAD';
      const m = this.table.match(isHead ? 'GET' : method, path);
      if (m.kind !== 'found') {
        x = new Exchange(this, res, method, path, null, start);
        if (hasBody(req)) {
          // answered once the body is over: the exchange must hear the client leave meanwhile
          res.onAborted(x.onAborted);
          dropBody(x, res);
        }
        this.unmatched(x, m.kind === 'method' ? withHead(m.allowed) : null);
        return;
      }
      const route = m.route;
      // One pass over the headers reads what this route reads and sees any read twice.
      const repeated = scanHeaders(req, route);
      const slots = route.readHeaders.length;
      const names = route.validator.headerNames;
      const headerValues = new Array<string>(names.length);
      let unreadable: SuggestError | null = null;
      for (let i = 0; i < names.length; i++) {
        const v = scannedText(req, route.declaredSlot + i, names[i]!);
        if (v === undefined) unreadable ??= unreadableHeader(names[i]!, false);
        headerValues[i] = v ?? '';
      }
      // Only the headers this route reads are checked: a garbled key on /healthz changes nothing.
      let apiKey = '';
      if (route.keySlot >= 0) {
        // present but empty: only bytes uWS trims away (see the header), not an absent key
        const v = scannedText(req, route.keySlot, 'x-api-key');
        if (v === undefined || v === '') unreadable ??= unreadableHeader('x-api-key', v === '');
        apiKey = v ?? '';
      }
      let contentType = scanValues[slots - 3] ?? '';
      if (route.bodyMode !== 'none') {
        // an empty content type would otherwise pass for an absent one, which JSON routes accept
        const v = scannedText(req, slots - 3, 'content-type');
        if (v === undefined || v === '') unreadable ??= unreadableHeader('content-type', v === '');
        contentType = v ?? '';
      }
      const contentLength = scanValues[slots - 2] ?? '';
      const transferEncoding = scanValues[slots - 1] ?? '';
      const bodyFollows = contentLength !== '' ? contentLength !== '0' : transferEncoding !== '';
      // One value each: a key or tenant given twice is ambiguous, and taking either would be a guess.
      if (repeated >= 0) unreadable ??= repeatedHeaderError(route.singleHeaderLocs[repeated]!);
      if (unreadable !== null) {
        x = new Exchange(this, res, method, path, route, start);
        res.onAborted(x.onAborted);
        if (bodyFollows) dropBody(x, res);
        return x.error(unreadable);
      }
      const head: RequestHead = { apiKey, contentType, query: req.getQuery(), headerValues };
      if (!isHead && this.fast !== null && route.spec.fast !== undefined && route.bodyMode === 'none' && !bodyFollows) {
        // Answered before this callback returns: no abort handler, no exchange, no promise.
        const answer = this.fast(route, method, path, m.params, head);
        if (typeof answer === 'string') {
          res.writeStatus(STATUS_200).writeHeader('content-type', JSON_TYPE).writeHeader('access-control-allow-origin', '*').end(answer);
          route.observe(200, (performance.now() - start) / 1000);
          return;
        }
        if (answer !== undefined) {
          // checked and on its way (a query thread, an engine loading): answered when it arrives
          const waiting = new Exchange(this, res, method, path, route, start);
          res.onAborted(waiting.onAborted);
          answer.then(
            (text) => waiting.send(200, text, JSON_TYPE, undefined),
            (err: unknown) => waiting.error(err),
          );
          return;
        }
      }
      x = new Exchange(this, res, method, path, route, start);
      res.onAborted(x.onAborted);
      let body: Promise<BodyResult> | null = null;
      if (route.bodyMode === 'none') {
        if (bodyFollows) dropBody(x, res);
      } else {
        const length = contentLength === '' ? -1 : Number(contentLength);
        const present = length > 0 || (length < 0 && transferEncoding !== '');
        x.bodyComplete = !present;
        const typeError = contentTypeError(route, head.contentType, present);
        if (typeError) return x.error(typeError);
        if (route.bodyMode === 'multipart' || route.bodyMode === 'stream') {
          x.contentLength = length >= 0 ? length : null;
          if (present) x.bodyStream = new RequestBodyStream(res);
        }
        else if (length > this.opts.maxJsonBody) return this.discard(x, res, tooLarge(this.opts.maxJsonBody));
        else body = present ? this.readBody(x, res, length, this.opts.maxJsonBody) : EMPTY_BODY;
      }
      void this.dispatch(x, route, m.params, head, body);
    } catch (err) {
      if (x) x.error(err);
      else {
        // Nothing was set up: answer directly, the request is still in scope.
        this.opts.log.error('request setup failed', { err: err instanceof Error ? err : String(err) });
        res.writeStatus(statusLine(500)).writeHeader('content-type', JSON_TYPE).end(isHead ? '' : JSON.stringify({ detail: 'Internal error.', code: 'internal' }), true);
      }
    }
  }

  private unmatched(x: Exchange, allowed: string[] | null): void {
    const path = x.path.length > 200 ? `${x.path.slice(0, 200)}...` : x.path;
    if (x.method === 'OPTIONS' && allowed) {
      // CORS preflight: keys travel in headers, never cookies, so any origin may call.
      const methods = allowed.join(', ');
      x.send(204, '', 'text/plain', {
        'access-control-allow-methods': methods,
        'access-control-allow-headers': CORS_ALLOW_HEADERS,
        'access-control-max-age': '600',
        allow: methods,
      });
      return;
    }
    if (allowed) {
      const methods = allowed.join(', ');
      // a QUERY request line never reaches this server (see the header): say how to send one
      const said = allowed.includes('QUERY') ? `${methods} (send QUERY as POST with X-HTTP-Method-Override: QUERY)` : methods;
      const e = suggestError('method_not_allowed', { method: x.method, path, allowed: said }, { headers: { allow: methods } });
      x.error(e);
      return;
    }
    x.error(suggestError('not_found', { method: x.method, path }));
  }

  /**
   * Collects the body up to `limit` bytes. Past it the rest is read and dropped, and the 413 goes
   * out once the client has finished sending: a client still writing when the connection closes
   * may never read the answer. Past DRAIN_LIMIT the 413 goes out at once and the connection closes.
   * The promise settles when the body is complete, the 413 has been sent, or the client is gone.
   */
  private readBody(x: Exchange, res: HttpResponse, declared: number, limit: number): Promise<BodyResult> {
    return new Promise<BodyResult>((resolve) => {
      const fixed = declared > 0 ? Buffer.allocUnsafe(declared) : null;
      const chunks: Buffer[] = [];
      let size = 0;
      let tooBig: SuggestError | null = null;
      x.cancelBody = () => resolve(tooBig ?? new SuggestError('bad_request', 'The client closed the connection.'));
      res.onData((chunk, isLast) => {
        if (x.done) return;
        const n = chunk.byteLength;
        if (tooBig === null && (size + n > limit || (fixed !== null && size + n > fixed.length))) tooBig = tooLarge(limit);
        if (tooBig !== null) {
          size += n;
          if (isLast || size > DRAIN_LIMIT) {
            x.bodyComplete = isLast;
            x.error(tooBig);
            resolve(tooBig);
          }
          return;
        }
        // uWS neuters the chunk when this callback returns: copy it now.
        if (fixed) fixed.set(new Uint8Array(chunk), size);
        else chunks.push(Buffer.from(chunk.slice(0)));
        size += n;
        if (isLast) {
          x.bodyComplete = true;
          resolve(fixed ? fixed.subarray(0, size) : Buffer.concat(chunks, size));
        }
      });
    });
  }

  /** Reads and drops a body declared larger than allowed, then answers `err` (see readBody). */
  private discard(x: Exchange, res: HttpResponse, err: SuggestError): void {
    let dropped = 0;
    res.onData((chunk, isLast) => {
      if (x.done) return;
      dropped += chunk.byteLength;
      if (isLast || dropped > DRAIN_LIMIT) {
        x.bodyComplete = isLast;
        x.error(err);
      }
    });
  }
}

/**
 * A body the request carries but its route does not read (a GET or DELETE with one, or no route
 * at all): dropped as it arrives, and the answer waits for its end (Exchange.send), because uWS
 * closes a connection whose response ends before its request body did, and a client still
 * sending then loses the answer.
 */
function dropBody(x: Exchange, res: HttpResponse): void {
  const stream = new RequestBodyStream(res);
  stream.drain(() => undefined);
  x.bodyStream = stream;
}

/**
 * The path of an absolute-form request target (`http://host/path`), which RFC 9112 3.2.2 has a
 * server accept and serve like its origin-form; null for any other target not starting with `/`
 * (asterisk-form `*`, authority-form `host:port`, garbage).
 */
export function absoluteFormPath(target: string): string | null {
  const m = /^https?:\/\/[^/?#\s]*(\/[^?#\s]*)?$/i.exec(target);
  return m ? (m[1] ?? '/') : null;
}

/** `allowed` with HEAD wherever GET is in it: every GET route answers HEAD too. */
function withHead(allowed: string[]): string[] {
  return allowed.includes('GET') && !allowed.includes('HEAD') ? [...allowed, 'HEAD'].sort() : allowed;
}

const NON_ASCII = /[\u0080-\uffff]/;

/**
 * A header value as text: uWS hands it over one char per byte, so anything beyond ASCII is
 * decoded here as UTF-8; undefined when the bytes are not UTF-8.
 */
function headerText(raw: string): string | undefined {
  if (!NON_ASCII.test(raw)) return raw;
  const bytes = Buffer.from(raw, 'latin1');
  return isUtf8(bytes) ? bytes.toString('utf8') : undefined;
}

// The one pass over a matched request's headers (scanHeaders). uWS's getHeader() answers only the
// first of several values, and costs about as much per call as forEach() does per header, so
// the pass replaces the half dozen getHeader() calls a request made and also sees a header sent
// twice. Module state rather than a closure per request: uWS calls back synchronously.
let scanNames: readonly string[] = [];
let scanSingles = 0;
let scanRepeated = -1;
const scanValues: (string | undefined)[] = new Array<string | undefined>(32).fill(undefined);
const scanHeader = (name: string, value: string): void => {
  const names = scanNames;
  for (let i = 0; i < names.length; i++) {
    if (name !== names[i]) continue;
    if (scanValues[i] === undefined) scanValues[i] = value;
    else if (i < scanSingles && scanRepeated < 0) scanRepeated = i;
    return;
  }
};

/**
 * Reads the first value of each of `route.readHeaders` into `scanValues` (undefined: absent) and
 * returns the index of the first single-value header the request carries twice, or -1.
 */
function scanHeaders(req: HttpRequest, route: CompiledRoute): number {
  scanNames = route.readHeaders;
  scanSingles = route.singleHeaders;
  scanRepeated = -1;
  scanValues.fill(undefined, 0, scanNames.length);
  req.forEach(scanHeader);
  return scanRepeated;
}

/**
 * A scanned value as text: null when the header is absent, undefined when it is not UTF-8.
 * forEach() decodes values as UTF-8 and turns bytes that are not into U+FFFD, so a value beyond
 * ASCII is read again byte per char (getHeader(): the first value, the only one of a
 * single-value header) and decoded strictly.
 */
function scannedText(req: HttpRequest, slot: number, name: string): string | null | undefined {
  const v = scanValues[slot];
  if (v === undefined) return null;
  return NON_ASCII.test(v) ? headerText(req.getHeader(name)) : v;
}

function repeatedHeaderError(name: string): SuggestError {
  return validationError([{ loc: ['header', name], msg: 'Expected a single value; the header was sent more than once. Send it once: the service does not pick one of several.', type: 'repeated' }]);
}

/**
 * 400 for a header this route reads whose value is not text. An empty value stands here for one
 * made only of bytes beyond ASCII, which uWS trims away; read as absent it would turn a garbled
 * key into "send a key" and a garbled content type into "JSON assumed".
 */
function unreadableHeader(name: string, empty: boolean): SuggestError {
  const what = empty ? 'is empty (bytes beyond ASCII at either end of a header value are dropped before it is read)' : 'is not valid UTF-8 text';
  return suggestError('bad_request', { reason: `The ${name} header ${what}; send its value as ASCII text.` });
}

function hasBody(req: HttpRequest): boolean {
  const cl = req.getHeader('content-length');
  return cl !== '' ? cl !== '0' : req.getHeader('transfer-encoding') !== '';
}

function tooLarge(limit: number): SuggestError {
  return suggestError('payload_too_large', {
    limit,
    hint: 'send large batches through POST /v1/indexes/{index_id}/upload (multipart file) or split them into smaller requests.',
  });
}

/** 415 when the declared content type does not fit the route's body mode. */
function contentTypeError(route: CompiledRoute, contentType: string, bodyPresent: boolean): SuggestError | null {
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  const mode = route.bodyMode;
  let ok: boolean;
  let expected: string;
  if (mode === 'query') {
    // The QUERY contract: application/json only, whether or not a body came.
    ok = type === JSON_TYPE;
    expected = 'application/json';
  } else if (mode === 'multipart') {
    ok = type === 'multipart/form-data' || (!bodyPresent && type === '');
    expected = 'multipart/form-data';
  } else if (mode === 'stream') {
    ok = true;
    expected = 'any content type';
  } else {
    ok = type === '' || type === JSON_TYPE || type.endsWith('+json');
    expected = 'application/json';
  }
  if (ok) return null;
  return suggestError('unsupported_media_type', { type: type || '(none)', expected });
}
