// What happens to a matched request between the transport and the handler, in this order:
// key (401) and key kind (403), path/query/header validation (422), tenant (403/404/422) and
// plan feature (403), body (413/415/400/422), then the handler or the 501 of a capability not
// built yet. Every failure is a catalogue error rendered by the transport.
import type { Readable } from 'node:stream';
import type { KeyRecord } from '../coordinator/coordinator.js';
import { SuggestError, fail } from '../node/runtime/errors.js';
import type { Auth } from './auth.js';
import type { CompiledRoute } from './compiled-route.js';
import type { FrontCache, FrontTicket } from './front-cache.js';
import type { BodyResult, Dispatch, Exchange, RequestHead } from './http-server.js';
import { parseJsonBody } from './json-body.js';
import type { HttpMethod, Req } from './route.js';
import { requireFeature, type TenantContext } from './tenant-context.js';

class RouteRequest implements Req<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, unknown> {
  constructor(
    private readonly x: Exchange,
    readonly params: Record<string, unknown>,
    readonly query: Record<string, unknown>,
    readonly headers: Record<string, unknown>,
    readonly body: unknown,
    readonly key: KeyRecord | null,
    readonly tenant: TenantContext | null,
    private readonly contentTypeHeader: string,
  ) {}

  /** GET for a HEAD request: the handler is the GET route's, the transport leaves the body out */
  get method(): HttpMethod {
    return (this.x.head ? 'GET' : this.x.method) as HttpMethod;
  }

  get path(): string {
    return this.x.path;
  }

  get rawBody(): Buffer | null {
    return null;
  }

  get bodyStream(): Readable | null {
    return this.x.bodyStream;
  }

  get contentLength(): number | null {
    return this.x.contentLength;
  }

  get contentType(): string {
    return this.contentTypeHeader;
  }

  get aborted(): boolean {
    return this.x.aborted;
  }
}

/** The request as the synchronous fast path sees it: no body, no exchange, never aborted. */
class FastRequest implements Req<Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, unknown> {
  readonly body = undefined;
  readonly rawBody = null;
  readonly bodyStream = null;
  readonly contentLength = null;
  readonly aborted = false;

  constructor(
    readonly method: HttpMethod,
    readonly path: string,
    readonly params: Record<string, unknown>,
    readonly query: Record<string, unknown>,
    readonly headers: Record<string, unknown>,
    readonly key: KeyRecord | null,
    readonly tenant: TenantContext | null,
    readonly contentType: string,
    readonly frontTicket: FrontTicket | null,
  ) {}
}

const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/** A cache miss abandoned by the fast path; the pipeline asks again and reports its outcome. */
const settle = (p: Promise<unknown>): undefined => {
  p.catch(() => undefined);
  return undefined;
};

export class RequestPipeline {
  /** `front`: answers remembered by the request as it arrived (front-cache.ts); null: none */
  constructor(
    private readonly auth: Auth,
    private readonly front: FrontCache | null = null,
  ) {}

  readonly dispatch: Dispatch = async (x, route, rawParams, head, body) => {
    try {
      await this.run(x, route, rawParams, head, body);
    } catch (err) {
      x.error(err);
    }
  };

  /**
   * The synchronous path of a route with a `fast` handler: key, parameters and tenant from
   * caches, then the handler's cached answer. Undefined whenever any step would wait or fail;
   * the caller then dispatches the request as usual, which repeats the checks and renders errors.
   */
  readonly fast = (route: CompiledRoute, method: string, path: string, rawParams: string[], head: RequestHead): string | Promise<string> | undefined => {
    const spec = route.spec;
    if (!spec.fast || route.tenantInBody) return undefined;
    // remembered requests are found by query string and headers: none with path parameters
    const front = rawParams.length === 0 ? this.front : null;
    try {
      let key: KeyRecord | null = null;
      if (spec.access !== 'none') {
        const k = this.auth.authenticate(head.apiKey);
        if (k instanceof Promise) return settle(k);
        this.auth.checkAccess(k, spec.access);
        key = k;
        // the same request answered from the cache before, and nothing it rests on changed
        if (front !== null) {
          const known = front.answer(route, head, k);
          if (known !== undefined) return known;
        }
      }
      const v = route.validator;
      const params = v.params(rawParams);
      const query = v.query(head.query);
      const headers = v.headers(head.headerValues);
      let tenant: TenantContext | null = null;
      let ticket: FrontTicket | null = null;
      if (spec.tenant === true && key !== null) {
        const t = this.auth.tenantFor(key, { query: asString(query.tenant_id), header: asString(headers['X-Tenant-Id']), body: undefined });
        if (t instanceof Promise) return settle(t);
        if (spec.feature) requireFeature(t, spec.feature);
        tenant = t;
        if (front !== null) ticket = { route, head, key, tenant };
      }
      return spec.fast.call(spec, new FastRequest(method as HttpMethod, path, params, query, headers, key, tenant, head.contentType, ticket));
    } catch {
      return undefined;
    }
  };

  private async run(x: Exchange, route: CompiledRoute, rawParams: string[], head: RequestHead, body: Promise<BodyResult> | null): Promise<void> {
    const spec = route.spec;
    let key: KeyRecord | null = null;
    if (spec.access !== 'none') {
      const k = this.auth.authenticate(head.apiKey);
      key = k instanceof Promise ? await k : k;
      this.auth.checkAccess(key, spec.access);
    }
    const v = route.validator;
    const params = v.params(rawParams);
    const query = v.query(head.query);
    const headers = v.headers(head.headerValues);

    let tenant: TenantContext | null = null;
    const tenantScoped = spec.tenant === true && key !== null;
    if (tenantScoped && !route.tenantInBody) tenant = await this.tenant(key!, query, headers, undefined, route);

    let bodyValue: unknown = undefined;
    if (body !== null) {
      const b = await body;
      if (b instanceof SuggestError) throw b;
      if (x.done) return;
      bodyValue = v.body(parseJsonBody(b, route.bodyMode === 'query' ? 'query' : 'json', route.bodyOptional));
    }
    if (tenantScoped && route.tenantInBody) tenant = await this.tenant(key!, query, headers, (bodyValue as { tenant_id?: unknown } | undefined)?.tenant_id, route);

    if (x.done) return;
    const handler = spec.handler;
    if (!handler) return fail('not_implemented', { feature: spec.notImplemented ?? `${spec.method} ${spec.path}` });
    const req = new RouteRequest(x, params, query, headers, bodyValue, key, tenant, head.contentType);
    let result = handler.call(spec, req);
    if (result instanceof Promise) result = await result;
    x.reply(result);
  }

  private async tenant(key: KeyRecord, query: Record<string, unknown>, headers: Record<string, unknown>, bodyTenant: unknown, route: CompiledRoute): Promise<TenantContext> {
    const t = this.auth.tenantFor(key, { query: asString(query.tenant_id), header: asString(headers['X-Tenant-Id']), body: asString(bodyTenant) });
    const tenant = t instanceof Promise ? await t : t;
    if (route.spec.feature) requireFeature(tenant, route.spec.feature);
    return tenant;
  }
}
