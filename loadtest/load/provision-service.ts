// Puts a catalogue into a running service through its public HTTP routes, exactly as an
// operator would: an admin creates a tenant and its keys, the private key creates the index and
// upserts the documents in batches, and the public key is what searches use.
import { performance } from 'node:perf_hooks';
import type { SuggestDocument } from '../../node/runtime/document.js';

export const MAX_BATCH = 1000;

export interface ProvisionOptions {
  baseUrl: string;
  adminKey: string;
  tenantId: string;
  indexId: string;
  docs: readonly SuggestDocument[];
  plan?: 'free' | 'pro' | 'enterprise';
  batchSize?: number;
  /** index parts (default: the service's default, 1) */
  parts?: number;
  log?: (line: string) => void;
}

export interface ProvisionedIndex {
  baseUrl: string;
  tenantId: string;
  indexId: string;
  publicKey: string;
  privateKey: string;
  documents: number;
  ingestMs: number;
}

export class ServiceError extends Error {
  constructor(
    readonly step: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${step}: HTTP ${status} ${body.slice(0, 500)}`);
  }
}

async function call(baseUrl: string, step: string, method: string, path: string, key: string, body?: unknown, okStatuses = [200, 201]): Promise<{ status: number; json: unknown }> {
  const res = await fetch(baseUrl + path, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!okStatuses.includes(res.status)) throw new ServiceError(step, res.status, text);
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export async function provisionIndex(opts: ProvisionOptions): Promise<ProvisionedIndex> {
  const log = opts.log ?? (() => {});
  const batch = Math.min(opts.batchSize ?? MAX_BATCH, MAX_BATCH);
  const { baseUrl, adminKey, tenantId, indexId } = opts;
  // an existing tenant or index (409) is reused: documents are upserts
  await call(baseUrl, 'create tenant', 'POST', '/v1/admin/tenants', adminKey, { tenant_id: tenantId, name: tenantId, plan: opts.plan ?? 'enterprise' }, [200, 201, 409]);
  const key = async (kind: 'public' | 'private') => {
    const r = await call(baseUrl, `create ${kind} key`, 'POST', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`, adminKey, { kind, name: `loadtest-${kind}` });
    const k = (r.json as { key?: unknown }).key;
    if (typeof k !== 'string') throw new ServiceError(`create ${kind} key`, r.status, JSON.stringify(r.json));
    return k;
  };
  const privateKey = await key('private');
  const publicKey = await key('public');
  await call(baseUrl, 'create index', 'POST', '/v1/indexes', privateKey, { index_id: indexId, name: indexId, ...(opts.parts !== undefined ? { parts: opts.parts } : {}) }, [200, 201, 409]);

  const t0 = performance.now();
  for (let i = 0; i < opts.docs.length; i += batch) {
    const documents = opts.docs.slice(i, i + batch);
    const r = await call(baseUrl, `upsert documents ${i}..${i + documents.length - 1}`, 'POST', `/v1/indexes/${encodeURIComponent(indexId)}/documents`, privateKey, { documents });
    const failed = (r.json as { failed?: number }).failed ?? 0;
    if (failed > 0) throw new ServiceError(`upsert documents ${i}..`, r.status, JSON.stringify(r.json));
    if ((i / batch) % 10 === 0) log(`ingested ${i + documents.length}/${opts.docs.length}`);
  }
  const ingestMs = performance.now() - t0;
  log(`ingested ${opts.docs.length} documents in ${(ingestMs / 1000).toFixed(1)} s`);
  return { baseUrl, tenantId, indexId, publicKey, privateKey, documents: opts.docs.length, ingestMs };
}

/**
 * Waits until `probe` (a search path) answers 200 with at least one suggestion: documents are
 * searchable within the engine's refresh interval, not at the moment the upsert returns.
 * A route that answers something else than 200 or 503 fails at once with its body, so a service
 * whose search routes are not built yet says so instead of timing out.
 */
export async function waitSearchable(baseUrl: string, key: string, probe: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const res = await fetch(baseUrl + probe, { headers: { 'x-api-key': key } });
    const text = await res.text();
    if (res.status === 200) {
      // every part searchable: an answer without some part's documents says how many it lacks
      const body = JSON.parse(text) as { suggestions?: unknown[]; documents_indexing?: number };
      if ((body.suggestions?.length ?? 0) > 0 && body.documents_indexing === undefined) return;
      last = body.documents_indexing !== undefined ? `${body.documents_indexing} documents not searchable yet` : 'no suggestions yet';
    } else if (res.status === 503) {
      last = text;
    } else {
      throw new ServiceError(`search ${probe}`, res.status, text);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${probe} still not searchable after ${timeoutMs} ms (${last.slice(0, 200)})`);
}

/** What the index's parts look like once settled. */
export interface SettledIndex {
  /** segments per part, in part order */
  segments: number[];
  documents: number;
  settle_ms: number;
}

/**
 * Waits until the index's parts have indexed every buffered write and stopped merging (their
 * segment counts unchanged for `quietMs`), so that a load run measures the index a bulk load
 * leaves behind rather than one still being built: the engine merges segments on its pool
 * once writes stop. Logs what it found; gives up (returning the last state) after `timeoutMs`.
 */
export async function waitSettled(baseUrl: string, privateKey: string, indexId: string, log: (msg: string) => void = () => {}, opts: { quietMs?: number; timeoutMs?: number } = {}): Promise<SettledIndex> {
  const quietMs = opts.quietMs ?? 2500;
  const started = Date.now();
  const deadline = started + (opts.timeoutMs ?? 120_000);
  let last = '';
  let since = Date.now();
  let state: SettledIndex = { segments: [], documents: 0, settle_ms: 0 };
  while (Date.now() < deadline) {
    const r = await call(baseUrl, 'index stats', 'GET', `/v1/indexes/${encodeURIComponent(indexId)}/stats`, privateKey);
    const body = r.json as { document_count?: number; parts?: { engine?: { segments?: number; pending?: number } | null }[] };
    const parts = body.parts ?? [];
    const pending = parts.reduce((n, p) => n + (p.engine?.pending ?? 0), 0);
    state = { segments: parts.map((p) => p.engine?.segments ?? 0), documents: body.document_count ?? 0, settle_ms: Date.now() - started };
    const now = JSON.stringify(state.segments);
    if (now !== last || pending > 0) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) {
      log(`index settled in ${(state.settle_ms / 1000).toFixed(1)} s: ${state.documents} documents, segments per part ${state.segments.join(', ')}`);
      return state;
    }
    await new Promise((res) => setTimeout(res, 250));
  }
  log(`index not settled after ${((Date.now() - started) / 1000).toFixed(0)} s: segments per part ${state.segments.join(', ')}`);
  return state;
}
