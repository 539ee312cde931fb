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

/** The value of an unlabelled series at `/metrics` (fails the test when it is absent). */
export async function metricValue(api: ApiClient, name: string): Promise<number> {
  const text = (await api.call<string>('GET', '/metrics')).body;
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (m === null) throw new Error(`${name} is not at /metrics`);
  return Number(m[1]);
}
