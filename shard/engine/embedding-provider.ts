// A client of an OpenAI-compatible `POST /v1/embeddings` endpoint (OpenAI, vLLM, llama.cpp
// server, Ollama, text-embeddings-inference...), configured per node by environment:
//
//   SUGGEST_EMBEDDINGS_URL         base URL (`http://host:port`, `/v1/embeddings` is appended) or
//                                  the full endpoint URL (ending in `/embeddings`)
//   SUGGEST_EMBEDDINGS_MODEL       model name sent with every request (required with the URL)
//   SUGGEST_EMBEDDINGS_API_KEY     sent as `Authorization: Bearer ...` when set
//   SUGGEST_EMBEDDINGS_DIMENSIONS  asked for (`dimensions`) and checked on every answer, when set
//   SUGGEST_EMBEDDINGS_TIMEOUT_MS  per request (default 300: a query must not wait longer)
//
// Vectors come back L2-normalized, in input order. Nothing is downloaded: the model runs behind
// the endpoint. Every failure (timeout, HTTP status, malformed body, wrong dimensions) is an
// EmbeddingProviderError; callers fall back to the built-in embedder.

export interface EmbeddingProviderConfig {
  url: string;
  model: string;
  apiKey?: string;
  dimensions?: number;
  /** per request (default 300 ms) */
  timeoutMs?: number;
  /** texts per request at most (default 256) */
  maxBatch?: number;
}

export class EmbeddingProviderError extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'http' | 'network' | 'malformed' | 'dimensions',
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'EmbeddingProviderError';
  }
}

interface EmbeddingsResponse {
  data?: { embedding?: unknown; index?: unknown }[];
}

export const DEFAULT_EMBEDDINGS_TIMEOUT_MS = 300;

export class EmbeddingProvider {
  readonly name: string;
  readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly maxBatch: number;

  constructor(private readonly config: EmbeddingProviderConfig) {
    const u = new URL(config.url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`embeddings URL must be http(s): ${config.url}`);
    this.endpoint = /\/embeddings\/?$/.test(u.pathname) ? u.toString() : new URL(`${u.pathname.replace(/\/$/, '')}/v1/embeddings`, u).toString();
    if (!config.model) throw new Error('an embeddings model name is required');
    this.timeoutMs = config.timeoutMs ?? DEFAULT_EMBEDDINGS_TIMEOUT_MS;
    this.maxBatch = config.maxBatch ?? 256;
    this.name = `openai:${config.model}${config.dimensions ? `:${config.dimensions}` : ''}`;
  }

  /** Unit vectors of `texts`, in order; batches of at most maxBatch texts, each within the timeout. */
  async embed(texts: readonly string[], timeoutMs = this.timeoutMs): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let from = 0; from < texts.length; from += this.maxBatch) out.push(...(await this.embedBatch(texts.slice(from, from + this.maxBatch), timeoutMs)));
    return out;
  }

  private async embedBatch(input: string[], timeoutMs: number): Promise<Float32Array[]> {
    if (input.length === 0) return [];
    const body: Record<string, unknown> = { model: this.config.model, input, encoding_format: 'float' };
    if (this.config.dimensions) body.dimensions = this.config.dimensions;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.apiKey) headers.authorization = `Bearer ${this.config.apiKey}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.endpoint, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
      text = await res.text();
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new EmbeddingProviderError(timedOut ? `embeddings endpoint did not answer within ${timeoutMs} ms` : `embeddings endpoint unreachable: ${String(err)}`, timedOut ? 'timeout' : 'network', { cause: err });
    }
    if (!res.ok) throw new EmbeddingProviderError(`embeddings endpoint answered ${res.status}: ${text.slice(0, 200)}`, 'http');
    let parsed: EmbeddingsResponse;
    try {
      parsed = JSON.parse(text) as EmbeddingsResponse;
    } catch (err) {
      throw new EmbeddingProviderError('embeddings endpoint answered with invalid JSON', 'malformed', { cause: err });
    }
    const data = parsed.data;
    if (!Array.isArray(data) || data.length !== input.length) throw new EmbeddingProviderError(`expected ${input.length} embeddings, got ${Array.isArray(data) ? data.length : 'none'}`, 'malformed');
    const out = new Array<Float32Array>(input.length);
    data.forEach((item, i) => {
      const at = typeof item.index === 'number' && Number.isInteger(item.index) ? item.index : i;
      const e = item.embedding;
      if (at < 0 || at >= input.length || out[at] !== undefined) throw new EmbeddingProviderError(`embedding index ${String(item.index)} is out of range or repeated`, 'malformed');
      if (!Array.isArray(e) || e.length === 0 || !e.every((x) => typeof x === 'number' && Number.isFinite(x))) throw new EmbeddingProviderError('an embedding is not an array of finite numbers', 'malformed');
      if (this.config.dimensions && e.length !== this.config.dimensions) throw new EmbeddingProviderError(`expected ${this.config.dimensions} dimensions, got ${e.length}`, 'dimensions');
      out[at] = normalize(Float32Array.from(e as number[]));
    });
    const dims = out[0]?.length ?? 0;
    if (out.some((v) => v.length !== dims)) throw new EmbeddingProviderError('embeddings of one answer differ in length', 'dimensions');
    return out;
  }
}

function normalize(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += (v[i] as number) * (v[i] as number);
  if (n > 0) {
    const inv = 1 / Math.sqrt(n);
    for (let i = 0; i < v.length; i++) v[i] = (v[i] as number) * inv;
  }
  return v;
}

/** The provider the environment configures, or null (the built-in embedder only). */
export function embeddingProviderFromEnv(env: NodeJS.ProcessEnv = process.env): EmbeddingProvider | null {
  const url = env.SUGGEST_EMBEDDINGS_URL;
  if (!url) return null;
  const model = env.SUGGEST_EMBEDDINGS_MODEL;
  if (!model) throw new Error('SUGGEST_EMBEDDINGS_URL is set but SUGGEST_EMBEDDINGS_MODEL is not');
  const int = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, not "${raw}"`);
    return n;
  };
  const dimensions = int('SUGGEST_EMBEDDINGS_DIMENSIONS');
  const timeoutMs = int('SUGGEST_EMBEDDINGS_TIMEOUT_MS');
  return new EmbeddingProvider({
    url,
    model,
    ...(env.SUGGEST_EMBEDDINGS_API_KEY ? { apiKey: env.SUGGEST_EMBEDDINGS_API_KEY } : {}),
    ...(dimensions !== undefined ? { dimensions } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
}
