// A small HTTP client for end-to-end tests: real requests over a socket, JSON in and out.
export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  key?: string | undefined;
  body?: unknown;
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
}

export class ApiClient {
  constructor(readonly baseUrl: string) {}

  async call<T = unknown>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key !== undefined) headers['x-api-key'] = opts.key;
    let body: string | Uint8Array | undefined;
    if (opts.rawBody !== undefined) body = opts.rawBody;
    else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.baseUrl + path, { method, headers, body: body as BodyInit | undefined });
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text.length > 0) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }
}

/**
 * Creates a tenant (admin key) and returns a new private key of it: what most end-to-end tests
 * start with. Throws, naming the step, when either call is refused.
 */
export async function tenantKey(api: ApiClient, adminKey: string, tenant: { tenant_id: string; name: string; plan: 'free' | 'pro' | 'enterprise' }): Promise<string> {
  const created = await api.call('POST', '/v1/admin/tenants', { key: adminKey, body: tenant });
  if (created.status !== 200) throw new Error(`creating tenant ${tenant.tenant_id}: ${created.status} ${JSON.stringify(created.body)}`);
  const key = await api.call<{ key: string }>('POST', `/v1/admin/tenants/${tenant.tenant_id}/keys`, { key: adminKey, body: { kind: 'private', name: 'k' } });
  if (key.status !== 200) throw new Error(`creating a key of tenant ${tenant.tenant_id}: ${key.status} ${JSON.stringify(key.body)}`);
  return key.body.key;
}

/** Poll until `probe` returns true or the time runs out. */
export async function waitFor(probe: () => Promise<boolean>, timeoutMs = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      if (await probe()) return;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
}

/**
 * The value of a series at `/metrics` (fails the test when it is absent). `name` is read as a
 * regular expression: a labelled series has its braces escaped (`'name\\{label="value"\\}'` as a
 * string literal).
 */
export async function metricValue(api: ApiClient, name: string): Promise<number> {
  const text = (await api.call<string>('GET', '/metrics')).body;
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (m === null) throw new Error(`${name} is not at /metrics`);
  return Number(m[1]);
}

/** Whether each part of an index (or physical index) has its search engine in memory, from its stats. */
export async function enginesLoaded(api: ApiClient, key: string, index: string): Promise<boolean[]> {
  const r = await api.call<{ parts: { engine: { loaded: boolean } }[] }>('GET', `/v1/indexes/${index}/stats`, { key });
  return r.body.parts.map((p) => p.engine.loaded);
}

/**
 * Brings every part of an index's search engine into memory and waits for it (POST .../warm),
 * as a client does after a bulk load before it needs every document in its answers: a query
 * waits at most SUGGEST_LOAD_WAIT_MS for a part that is loading, then answers without it.
 */
export async function untilSearchable(api: ApiClient, key: string, index: string, timeoutMs = 90_000): Promise<void> {
  const r = await api.call<{ warm?: { ready: boolean } }>('POST', `/v1/indexes/${index}/warm`, { key, body: { ready_timeout_ms: timeoutMs } });
  if (r.status !== 200 || r.body.warm?.ready !== true) throw new Error(`index ${index} not searchable: ${r.status} ${JSON.stringify(r.body)}`);
}
