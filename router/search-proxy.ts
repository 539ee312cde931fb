// Search proxy mode: typeahead and autocomplete of a tenant in `proxy` mode are forwarded to the
// tenant's connected search API (its `search_api` record) and the API's answer is mapped onto the
// suggestion shapes of hosted search. Owns the outbound request (address check, timeout, no
// redirects, bounded body), the reading of the many response shapes search APIs use, and the
// 502 `upstream_unavailable` of every way that can fail. Nothing here is cached: a proxied answer
// is the connected API's to keep fresh, and the hosted response caches never see one.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { Counter } from 'prom-client';
import type { TenantRecord } from '../coordinator/coordinator.js';
import { suggestError } from '../node/runtime/errors.js';
import { perRegistry, type Metrics } from '../node/runtime/metrics.js';

/** The connected search API as the tenant record holds it. */
export type SearchApi = NonNullable<TenantRecord['search_api']>;

export type ProxyKind = 'typeahead' | 'autocomplete';

export interface ProxyRequest {
  kind: ProxyKind;
  query: string;
  limit: number;
  index: string;
}

export interface SearchProxyOptions {
  /** the whole exchange: address lookup, connection, headers and body */
  timeoutMs: number;
  /** forward to loopback, private, link-local and metadata addresses too (tests, local use) */
  allowPrivate: boolean;
  /** largest response body read */
  maxBodyBytes?: number;
}

export const DEFAULT_PROXY_MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Where a proxied request ended, the label of `suggest_proxy_requests_total`. */
export type ProxyOutcome = 'ok' | 'timeout' | 'unreachable' | 'refused_address' | 'redirect' | 'http_error' | 'invalid_response' | 'not_configured';

const OUTCOMES: ProxyOutcome[] = ['ok', 'timeout', 'unreachable', 'refused_address', 'redirect', 'http_error', 'invalid_response', 'not_configured'];

const proxyCounter = perRegistry(
  (registry) =>
    new Counter({
      name: 'suggest_proxy_requests_total',
      help: 'Typeahead and autocomplete requests of proxy-mode tenants forwarded to their connected search API, by kind and outcome (ok, timeout, unreachable, refused_address, redirect, http_error, invalid_response, not_configured).',
      labelNames: ['kind', 'outcome'],
      registers: [registry],
    }),
);

/**
 * Addresses a tenant-supplied URL must not reach: the router sits inside the deployment's network,
 * so a search API URL naming these would let any tenant admin probe it (or read a cloud metadata
 * service) through the router.
 */
const REFUSED = new BlockList();
REFUSED.addSubnet('0.0.0.0', 8, 'ipv4'); // unspecified, "this network"
REFUSED.addSubnet('10.0.0.0', 8, 'ipv4');
REFUSED.addSubnet('100.64.0.0', 10, 'ipv4'); // shared address space; also a metadata address of some clouds (100.100.100.200)
REFUSED.addSubnet('127.0.0.0', 8, 'ipv4');
REFUSED.addSubnet('169.254.0.0', 16, 'ipv4'); // link-local, with the usual metadata address 169.254.169.254
REFUSED.addSubnet('172.16.0.0', 12, 'ipv4');
REFUSED.addSubnet('192.0.0.0', 24, 'ipv4'); // IETF protocol assignments (192.0.0.192 is Oracle Cloud's metadata)
REFUSED.addSubnet('192.168.0.0', 16, 'ipv4');
REFUSED.addSubnet('224.0.0.0', 3, 'ipv4'); // multicast, reserved and broadcast: never a search API
REFUSED.addAddress('::', 'ipv6');
REFUSED.addAddress('::1', 'ipv6');
REFUSED.addSubnet('fe80::', 10, 'ipv6');
REFUSED.addSubnet('fc00::', 7, 'ipv6'); // unique local, with AWS's IPv6 metadata address fd00:ec2::254
REFUSED.addSubnet('ff00::', 8, 'ipv6');

/**
 * True when `address` (an IP literal) is one a search API may not be reached at without
 * SUGGEST_PROXY_ALLOW_PRIVATE. IPv4-mapped IPv6 addresses count as their IPv4 address.
 */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

const REFUSED_ADDRESS = 'EREFUSEDADDRESS';

const refusedAddress = () =>
  new ProxyFailure('refused_address', 'its host resolves to a loopback, private, link-local or metadata address, which this service does not connect to (SUGGEST_PROXY_ALLOW_PRIVATE)');

/**
 * The connection's own name lookup, refusing internal addresses: the address connected to is the
 * one checked. A check before the request and a second lookup by the connection would let a name
 * whose records change in between (DNS rebinding) reach an internal address.
 */
function checkedLookup(hostname: string, options: LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void): void {
  dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
    if (err) return callback(err, []);
    if (addresses.length === 0 || addresses.some((a) => isRefusedAddress(a.address))) {
      return callback(Object.assign(new Error('refused address'), { code: REFUSED_ADDRESS }), []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    return callback(null, first.address, first.family);
  });
}

/** A failure with its metric outcome; rendered as 502 `upstream_unavailable`. */
class ProxyFailure extends Error {
  constructor(
    readonly outcome: ProxyOutcome,
    readonly reason: string,
  ) {
    super(reason);
  }
}

export class SearchProxy {
  private readonly counter: Counter<'kind' | 'outcome'>;
  private readonly maxBodyBytes: number;

  constructor(
    private readonly opts: SearchProxyOptions,
    metrics: Metrics,
  ) {
    this.counter = proxyCounter(metrics.registry);
    for (const kind of ['typeahead', 'autocomplete'] as const) for (const outcome of OUTCOMES) this.counter.inc({ kind, outcome }, 0);
    this.maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_PROXY_MAX_BODY_BYTES;
  }

  /**
   * The rendered response body after its leading `{"took_ms":...,` (as the search service renders
   * hosted answers); rejects with 502 `upstream_unavailable` whatever the connected API did wrong.
   * `api` null: the tenant is in proxy mode without a connected API.
   */
  async forward(api: SearchApi | null, req: ProxyRequest): Promise<string> {
    try {
      if (api === null) throw new ProxyFailure('not_configured', 'the tenant is in proxy mode but has no search_api');
      const items = await this.fetchItems(api, req);
      const suggestions = req.kind === 'typeahead' ? typeaheadSuggestions(items, req.limit) : autocompleteSuggestions(items, req.limit);
      this.counter.inc({ kind: req.kind, outcome: 'ok' });
      const body = {
        query: req.query,
        original_query: req.query,
        normalized_query: req.query,
        corrected_query: null,
        mode: req.kind === 'typeahead' ? 'typeahead' : 'proxy',
        index: req.index,
        suggestions,
        debug: null,
      };
      return JSON.stringify(body).slice(1);
    } catch (err) {
      const failure = err instanceof ProxyFailure ? err : new ProxyFailure('invalid_response', 'its answer could not be read');
      this.counter.inc({ kind: req.kind, outcome: failure.outcome });
      throw suggestError('upstream_unavailable', { reason: failure.reason }, { cause: err });
    }
  }

  private async fetchItems(api: SearchApi, req: ProxyRequest): Promise<unknown[]> {
    let url: URL;
    try {
      url = new URL(api.url);
    } catch {
      throw new ProxyFailure('not_configured', 'its URL is not valid');
    }
    url.searchParams.set('q', req.query);
    url.searchParams.set('limit', String(req.limit));
    url.searchParams.set('index', req.index);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(api.headers ?? {})) headers[name.toLowerCase()] = value;
    if (api.api_key !== undefined && api.api_key !== '') headers.authorization = `Bearer ${api.api_key}`;
    headers.accept = 'application/json';

    // an address written in the URL is never looked up: it is checked here instead
    const literal = url.hostname.startsWith('[') && url.hostname.endsWith(']') ? url.hostname.slice(1, -1) : url.hostname;
    if (!this.opts.allowPrivate && isIP(literal) !== 0 && isRefusedAddress(literal)) throw refusedAddress();

    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), this.opts.timeoutMs);
    try {
      let res: IncomingMessage;
      try {
        res = await new Promise<IncomingMessage>((resolve, reject) => {
          const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
          const r = send(url, { method: 'GET', headers, signal: abort.signal, ...(this.opts.allowPrivate ? {} : { lookup: checkedLookup }) }, resolve);
          r.on('error', reject);
          r.end();
        });
      } catch (err) {
        if (err instanceof ProxyFailure) throw err;
        if (abort.signal.aborted) throw this.timedOut();
        if ((err as { code?: unknown }).code === REFUSED_ADDRESS) throw refusedAddress();
        throw new ProxyFailure('unreachable', `it could not be reached (${networkCode(err)})`);
      }
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        res.destroy();
        throw new ProxyFailure('redirect', `it answered with a redirect (HTTP ${status}), which is not followed; configure the final URL`);
      }
      if (status < 200 || status >= 300) {
        res.destroy();
        throw new ProxyFailure('http_error', `it answered HTTP ${status}`);
      }
      const text = await this.readBody(res, abort.signal);
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        throw new ProxyFailure('invalid_response', 'its answer is not JSON');
      }
      const items = itemsOf(value);
      if (items === null) throw new ProxyFailure('invalid_response', `its answer has no list of results (a JSON array, or an array under one of ${LIST_KEYS.join(', ')})`);
      return items;
    } finally {
      clearTimeout(timer);
    }
  }

  private async readBody(res: IncomingMessage, signal: AbortSignal): Promise<string> {
    const declared = Number(res.headers['content-length'] ?? '');
    if (Number.isFinite(declared) && declared > this.maxBodyBytes) {
      res.destroy();
      throw this.tooLarge();
    }
    const chunks: Buffer[] = [];
    let size = 0;
    try {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        size += chunk.byteLength;
        if (size > this.maxBodyBytes) {
          res.destroy();
          throw this.tooLarge();
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof ProxyFailure) throw err;
      if (signal.aborted) throw this.timedOut();
      throw new ProxyFailure('unreachable', `its answer was cut off (${networkCode(err)})`);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private timedOut(): ProxyFailure {
    return new ProxyFailure('timeout', `it did not answer within ${this.opts.timeoutMs} ms`);
  }

  private tooLarge(): ProxyFailure {
    return new ProxyFailure('invalid_response', `its answer is larger than ${this.maxBodyBytes} bytes`);
  }
}

/** The system error code behind a fetch failure (ECONNREFUSED, ENOTFOUND...): never the URL, which may carry secrets. */
function networkCode(err: unknown): string {
  for (let e: unknown = err, depth = 0; e !== null && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return code;
  }
  return 'network error';
}

// ---------------------------------------------------------------- reading the answer

/** Where search APIs put their result list, in the order looked at. */
const LIST_KEYS = ['results', 'hits', 'items', 'products', 'documents', 'data', 'suggestions'];

type Fields = Record<string, unknown>;

const isObject = (v: unknown): v is Fields => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The result list: the answer itself when it is an array, else the first array under a list key,
 * one level down too (Elasticsearch's `hits.hits`, `data.items`); null when there is none.
 */
export function itemsOf(value: unknown): unknown[] | null {
  if (Array.isArray(value)) return value;
  if (!isObject(value)) return null;
  for (const k of LIST_KEYS) if (Array.isArray(value[k])) return value[k] as unknown[];
  for (const k of LIST_KEYS) {
    const inner = value[k];
    if (isObject(inner)) for (const j of LIST_KEYS) if (Array.isArray(inner[j])) return inner[j] as unknown[];
  }
  return null;
}

const ID_KEYS = ['id', '_id', 'objectid', 'sku', 'product_id', 'uid'];
const TITLE_KEYS = ['title', 'name', 'product_name', 'label', 'suggestion', 'query', 'text'];
const COMPLETION_KEYS = ['suggestion', 'query', 'text'];
const SUBTITLE_KEYS = ['subtitle', 'category', 'brand', 'manufacturer', 'vendor'];
const DESCRIPTION_KEYS = ['description', 'desc', 'summary', 'short_description'];
// the display keys hosted documents are read with (shard/engine/doc-fields.ts), which router/ may not import
const URL_KEYS = ['url', 'link', 'product_url', 'producturl', 'href', 'permalink', 'page_url', 'web_url'];
const IMAGE_KEYS = ['image', 'image_url', 'imageurl', 'image_link', 'imagelink', 'thumbnail', 'thumbnail_url', 'thumbnailimage', 'img', 'picture', 'photo', 'images'];
const PRICE_KEYS = ['price', 'sale_price', 'saleprice', 'current_price', 'final_price', 'amount', 'market_price', 'list_price', 'msrp'];
const CURRENCY_KEYS = ['currency', 'currency_code', 'currencycode', 'price_currency'];
const CONCEPT_KEYS = ['brand', 'manufacturer', 'category', 'categories'];

const MAX_TEXT = 1000;
const MAX_DESCRIPTION = 300;

/**
 * An item's fields by their compared names (lower case, spaces and dashes as `_`), with those of
 * a nested document (`_source` of Elasticsearch, `document` of Typesense) under the item's own.
 */
function fieldsOf(item: Fields): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const add = (o: Fields) => {
    for (const [k, v] of Object.entries(o)) {
      const name = k.toLowerCase().replace(/[\s-]+/g, '_');
      if (v !== null && v !== undefined && v !== '' && !out.has(name)) out.set(name, v);
    }
  };
  add(item);
  for (const nested of ['_source', 'document', 'fields']) {
    const v = item[nested];
    if (isObject(v)) add(v);
  }
  return out;
}

/** The first text value under `keys` (a string, a number, or an array's first), trimmed and bounded. */
function text(fields: Map<string, unknown>, keys: readonly string[], max = MAX_TEXT): string | null {
  for (const k of keys) {
    let v = fields.get(k);
    if (Array.isArray(v)) v = v[0];
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    if (typeof v === 'string') {
      const t = v.trim();
      if (t) return t.length > max ? `${t.slice(0, max)}…` : t;
    }
  }
  return null;
}

function price(fields: Map<string, unknown>): number | null {
  for (const k of PRICE_KEYS) {
    const v = fields.get(k);
    if (typeof v === 'number') return Number.isFinite(v) ? v : null;
    if (typeof v === 'string') {
      const s = v.replace(/[\s,$€£¥₹]/g, '');
      if (/^[-+]?(?:\d+\.?\d*|\.\d+)$/.test(s)) return Number(s);
    }
  }
  return null;
}

function concepts(fields: Map<string, unknown>): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const k of CONCEPT_KEYS) {
    const v = fields.get(k);
    for (const x of Array.isArray(v) ? v : [v]) {
      if (typeof x !== 'string' || !x.trim() || x.length > 120) continue;
      const key = x.trim().toLowerCase();
      if (!seen.has(key)) {
        seen.add(key);
        out.push(x.trim());
      }
    }
  }
  return out;
}

/** Rank scores: 1 for the first item, 1/rank after it (the connected API's order is the ranking). */
const rankScore = (rank: number) => Math.round((1 / rank) * 1e4) / 1e4;

/** Autocomplete suggestions, in the API's order; items that are not objects or have no title are skipped. */
export function autocompleteSuggestions(items: unknown[], limit: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const item of items) {
    if (out.length >= limit) break;
    if (!isObject(item)) continue;
    const fields = fieldsOf(item);
    const title = text(fields, TITLE_KEYS);
    if (title === null) continue;
    const url = text(fields, URL_KEYS);
    const currency = text(fields, CURRENCY_KEYS, 16);
    out.push({
      id: text(fields, ID_KEYS, 256) ?? url ?? title,
      type: 'product',
      title,
      subtitle: text(fields, SUBTITLE_KEYS),
      description: text(fields, DESCRIPTION_KEYS, MAX_DESCRIPTION),
      url,
      image: text(fields, IMAGE_KEYS),
      price: price(fields),
      currency: currency === null ? null : currency.toUpperCase(),
      score: rankScore(out.length + 1),
      metadata: { concepts: concepts(fields) },
    });
  }
  return out;
}

/**
 * Typeahead suggestions: a plain string, or an object's `suggestion`/`query`/`text`, is a query
 * completion (`q:<lower-case text>`, type `query`); otherwise an object's title is a product
 * completion with the item's id. Deduplicated by text without case, in the API's order.
 */
export function typeaheadSuggestions(items: unknown[], limit: number): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    if (out.length >= limit) break;
    let title: string | null = null;
    let id: string | null = null;
    if (typeof item === 'string') title = item.trim().slice(0, MAX_TEXT) || null;
    else if (isObject(item)) {
      const fields = fieldsOf(item);
      title = text(fields, COMPLETION_KEYS);
      if (title === null) {
        title = text(fields, TITLE_KEYS);
        id = title === null ? null : text(fields, ID_KEYS, 256);
      }
    }
    if (title === null) continue;
    const norm = title.toLowerCase();
    if (seen.has(norm)) continue;
    seen.add(norm);
    out.push(id === null ? { id: `q:${norm}`, type: 'query', title, score: rankScore(out.length + 1) } : { id, type: 'product', title, score: rankScore(out.length + 1) });
  }
  return out;
}
