// A route prepared for serving: its validators compiled, the tenant parameters added to
// tenant-scoped routes, its body mode settled and its metric series cached, so the per-request
// path does no schema work and no label lookups.
import { Type, type TObject } from '@sinclair/typebox';
import type { HotCounterSeries, HotHistogramSeries } from '../node/runtime/hot-metrics.js';
import type { Metrics } from '../node/runtime/metrics.js';
import { ID_PATTERN } from '../node/runtime/ids.js';
import { RequestValidator, withProperties } from './request-validator.js';
import type { BodyMode, Route } from './route.js';

interface Series {
  count: HotCounterSeries;
  time: HotHistogramSeries;
}

const TenantQuery = Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Tenant to act for; defaults to the key\'s own tenant. Admin keys must name one.' }));
const TenantHeader = Type.Optional(Type.String({ pattern: ID_PATTERN, description: 'Tenant to act for (same as the tenant_id query parameter).' }));

export class CompiledRoute {
  readonly validator: RequestValidator;
  readonly querySchema: TObject | undefined;
  readonly headerSchema: TObject | undefined;
  readonly bodyMode: BodyMode;
  /** an empty body stands for `{}` */
  readonly bodyOptional: boolean;
  /** the body may name the tenant (QUERY, predict, click): resolve the tenant after reading it */
  readonly tenantInBody: boolean;
  /**
   * The headers the transport reads for this route in its one pass over the request's headers
   * (lower case): the key on keyed routes, the declared headers, then content-type,
   * content-length and transfer-encoding. The first `singleHeaders` are read as one value each: a
   * request carrying one of them twice is refused (422 at `singleHeaderLocs[i]`), not guessed at.
   */
  readonly readHeaders: readonly string[];
  readonly singleHeaders: number;
  readonly singleHeaderLocs: readonly string[];
  /** where the key is in `readHeaders` (-1: a route without a key), and the first declared header */
  readonly keySlot: number;
  readonly declaredSlot: number;
  private readonly series = new Map<number, Series>();

  constructor(
    readonly spec: Route,
    private readonly metrics: Metrics,
  ) {
    this.querySchema = spec.tenant ? withProperties(spec.query, { tenant_id: TenantQuery }) : spec.query;
    this.headerSchema = spec.tenant ? withProperties(spec.headers, { 'X-Tenant-Id': TenantHeader }) : spec.headers;
    this.bodyMode = spec.bodyMode ?? (spec.body ? (spec.method === 'QUERY' ? 'query' : 'json') : 'none');
    this.bodyOptional = spec.body !== undefined && isOptionalBody(spec.body);
    this.tenantInBody = spec.tenant === true && (spec.body as { properties?: Record<string, unknown> } | undefined)?.properties?.tenant_id !== undefined;
    this.validator = new RequestValidator(spec, this.querySchema, this.headerSchema);
    const declared = Object.keys(this.headerSchema?.properties ?? {});
    const key = spec.access !== 'none' ? ['x-api-key'] : [];
    this.keySlot = key.length > 0 ? 0 : -1;
    this.declaredSlot = key.length;
    this.singleHeaderLocs = [...key, ...declared];
    this.singleHeaders = this.singleHeaderLocs.length;
    this.readHeaders = [...key, ...this.validator.headerNames, 'content-type', 'content-length', 'transfer-encoding'];
    // the transport's scratch for them has 32 slots (http-server.ts `scanValues`)
    if (this.readHeaders.length > 32) throw new Error(`route ${spec.method} ${spec.path}: too many declared headers`);
  }

  get label(): string {
    return this.spec.path;
  }

  /** Counts one answered request and its latency. */
  observe(status: number, seconds: number): void {
    let s = this.series.get(status);
    if (!s) {
      const labels = [this.spec.path, this.spec.method, String(status)] as const;
      s = { count: this.metrics.httpRequests.labels(...labels), time: this.metrics.httpDuration.labels(...labels) };
      this.series.set(status, s);
    }
    s.count.inc();
    s.time.observe(seconds);
  }
}

/** A body schema every property of which is optional accepts an empty body. */
function isOptionalBody(schema: Route['body']): boolean {
  const s = schema as { type?: unknown; required?: unknown[] };
  return s.type === 'object' && (s.required === undefined || s.required.length === 0);
}
