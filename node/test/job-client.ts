// Helpers of the end-to-end job tests: multipart uploads over real HTTP, polling a job to its
// end, reading a server-sent event stream, and the real catalogs of /work/shared/data (or
// SUGGEST_DATA_SAMPLES) as CSV, JSON and JSON Lines.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ApiClient } from './api-client.js';

export const DATA_DIR = process.env.SUGGEST_DATA_SAMPLES ?? '/work/shared/data';

export interface JobView {
  job_id: string;
  kind: string;
  index_id: string;
  status: string;
  run: string;
  total: number;
  processed: number;
  failed: number;
  attempts: number;
  error: string | null;
  error_code: string | null;
  format: string | null;
  physical_index_id: string;
  errors: { record: number; line: number; id: string | null; detail: string }[];
  download_url?: string | null;
}

export interface StartView {
  job_id: string;
  index_id: string;
  status: string;
  run: 'immediate' | 'background';
  job: JobView;
  hint?: string;
  download_url?: string | null;
}

export interface UploadOptions {
  filename?: string;
  fields?: Record<string, string>;
  /** content type of the file part */
  type?: string;
  route?: string;
}

export async function uploadFile(baseUrl: string, key: string, index: string, file: string | Buffer, opts: UploadOptions = {}): Promise<{ status: number; body: StartView & { code?: string; detail?: unknown } }> {
  const form = new FormData();
  for (const [k, v] of Object.entries(opts.fields ?? {})) form.append(k, v);
  const bytes = typeof file === 'string' ? Buffer.from(file, 'utf8') : file;
  form.append('file', new Blob([new Uint8Array(bytes)], opts.type ? { type: opts.type } : {}), opts.filename ?? 'upload.bin');
  const res = await fetch(`${baseUrl}/v1/indexes/${index}/${opts.route ?? 'upload'}`, { method: 'POST', headers: { 'x-api-key': key }, body: form });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

export async function waitForJob(api: ApiClient, key: string, jobId: string, kind = 'ingestion', timeoutMs = 60_000): Promise<JobView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await api.call<JobView>('GET', `/v1/${kind}-jobs/${jobId}`, { key });
    if (r.status === 200 && ['succeeded', 'failed', 'canceled'].includes(r.body.status)) return r.body;
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not finish: ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** Reads an SSE stream until `until` says so, the stream ends, or the time runs out. */
export async function readStream(url: string, key: string, until: (events: EventSourceMessage[]) => boolean, opts: { headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ status: number; events: EventSourceMessage[]; comments: number; ended: boolean }> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 60_000);
  const events: EventSourceMessage[] = [];
  let comments = 0;
  let ended = false;
  let status = 0;
  try {
    const res = await fetch(url, { headers: { 'x-api-key': key, ...opts.headers }, signal: abort.signal });
    status = res.status;
    if (status !== 200) return { status, events, comments, ended };
    const parser = createParser({ onEvent: (e) => events.push(e), onComment: () => comments++ });
    const reader = res.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        ended = true;
        break;
      }
      parser.feed(Buffer.from(value).toString('utf8'));
      if (until(events)) break;
    }
  } catch (err) {
    if ((err as Error).name !== 'AbortError') throw err;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return { status, events, comments, ended };
}

export function bigBasketCsv(): Buffer {
  return readFileSync(path.join(DATA_DIR, 'bigbasket_products.csv'));
}

export function bestBuyJson(): Buffer {
  return readFileSync(path.join(DATA_DIR, 'bestbuy_products_3291.json'));
}

/** The Best Buy catalog as JSON Lines (one object per line, same objects). */
export function bestBuyJsonl(): Buffer {
  const items = JSON.parse(bestBuyJson().toString('utf8')) as unknown[];
  return Buffer.from(items.map((i) => JSON.stringify(i)).join('\n') + '\n', 'utf8');
}

/** The first lines of the Home Depot relevance file: a latin-1 CSV. */
export function homeDepotLatin1(lines: number): Buffer {
  const all = gunzipSync(readFileSync(path.join(DATA_DIR, 'homedepot_train.csv.gz')));
  let end = 0;
  for (let n = 0; n < lines && end >= 0; n++) end = all.indexOf(0x0a, end + 1);
  return all.subarray(0, end < 0 ? all.length : end + 1);
}
