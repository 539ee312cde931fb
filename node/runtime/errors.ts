// The one error catalogue: code -> HTTP status, gRPC status, message template. Errors are raised
// through `fail(code, params)`, cross gRPC as status + metadata (`suggest-error-code`,
// `suggest-error-detail`) and are rebuilt on the other side with `fromGrpcError`.
import { Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';

type Params = Record<string, string | number>;

interface ErrorSpec {
  readonly http: number;
  readonly grpc: GrpcStatus;
  readonly message: string; // template with {name} placeholders
}

export const ERRORS = {
  bad_request: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT, message: '{reason}' },
  invalid_query_content: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT, message: 'The QUERY body is not valid: {reason}' },
  missing_api_key: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED, message: 'Send an API key in the x-api-key header.' },
  unknown_api_key: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED, message: 'The API key in x-api-key is not known; check it or ask an administrator for a new one.' },
  forbidden_key_kind: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED, message: 'A {kind} key cannot call this route; it needs {needed}.' },
  forbidden_tenant: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED, message: "This key belongs to tenant '{own}' and cannot act for tenant '{requested}'." },
  tenant_mismatch: { http: 422, grpc: GrpcStatus.INVALID_ARGUMENT, message: 'tenant_id and X-Tenant-Id name different tenants.' },
  plan_required: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED, message: "{feature} needs a paid plan; tenant '{tenant}' is on the '{plan}' plan." },
  plan_index_limit: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED, message: "The '{plan}' plan allows {limit} indexes; delete one or upgrade the plan to create more." },
  not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: 'No route {method} {path}; see /openapi.yaml for the routes this service offers.' },
  method_not_allowed: { http: 405, grpc: GrpcStatus.UNIMPLEMENTED, message: '{method} is not allowed on {path}; allowed: {allowed}.' },
  tenant_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "Tenant '{tenant}' does not exist." },
  index_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "Index '{index}' does not exist for tenant '{tenant}'; create it with POST /v1/indexes." },
  document_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "Document '{doc}' is not in index '{index}'." },
  job_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "Job '{job}' does not exist for this tenant." },
  key_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "Key '{key}' does not exist for tenant '{tenant}'." },
  file_not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND, message: "File '{file}' does not exist or has expired." },
  index_exists: { http: 409, grpc: GrpcStatus.ALREADY_EXISTS, message: "Index '{index}' already exists for tenant '{tenant}'." },
  tenant_exists: { http: 409, grpc: GrpcStatus.ALREADY_EXISTS, message: "Tenant '{tenant}' already exists." },
  document_limit: { http: 409, grpc: GrpcStatus.RESOURCE_EXHAUSTED, message: '{scope} document limit of {limit} reached ({count} stored, {adding} more requested); delete documents or raise the plan limit.' },
  conflict: { http: 409, grpc: GrpcStatus.ABORTED, message: '{reason}' },
  predict_disabled: { http: 409, grpc: GrpcStatus.FAILED_PRECONDITION, message: "Prediction is disabled for index '{index}' (its schema sets predict.enabled to false); enable it with PUT /v1/indexes/{index}/schema." },
  job_not_requeueable: { http: 409, grpc: GrpcStatus.FAILED_PRECONDITION, message: "Job '{job}' is {status}; only a failed job can be requeued." },
  export_not_ready: { http: 409, grpc: GrpcStatus.FAILED_PRECONDITION, message: "Export job '{job}' is {status}; its file can be downloaded once the job has succeeded." },
  upload_url_invalid: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED, message: 'This upload URL is not valid ({reason}); ask for a new one with POST /v1/indexes/{index_id}/upload-url.' },
  payload_too_large: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED, message: 'The request body is larger than {limit} bytes; {hint}' },
  unsupported_media_type: { http: 415, grpc: GrpcStatus.INVALID_ARGUMENT, message: "Content type '{type}' is not accepted here; send {expected}." },
  validation_failed: { http: 422, grpc: GrpcStatus.INVALID_ARGUMENT, message: '{reason}' },
  rate_limited: { http: 429, grpc: GrpcStatus.RESOURCE_EXHAUSTED, message: 'Too many requests for this key; retry after {retry_after} seconds.' },
  internal: { http: 500, grpc: GrpcStatus.INTERNAL, message: 'Internal error (reference {ref}); the request may be retried.' },
  not_implemented: { http: 501, grpc: GrpcStatus.UNIMPLEMENTED, message: '{feature} is not available in this build yet.' },
  upstream_unavailable: { http: 502, grpc: GrpcStatus.UNAVAILABLE, message: 'The connected search API of this tenant (proxy mode) failed: {reason}.' },
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE, message: '{reason}; retry shortly.' },
  wrong_owner: { http: 503, grpc: GrpcStatus.FAILED_PRECONDITION, message: 'Partition {partition} is not owned by this node at epoch {epoch}; refresh placement and retry.' },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** One entry of a 422 body: `{"detail": [{"loc": [...], "msg": "...", "type": "..."}]}`. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class SuggestError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly issues: ValidationIssue[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, opts: { cause?: unknown; issues?: ValidationIssue[]; headers?: Record<string, string> } = {}) {
    super(message, { cause: opts.cause });
    this.name = 'SuggestError';
    this.code = code;
    this.status = ERRORS[code].http;
    this.issues = opts.issues;
    this.headers = opts.headers;
  }

  /** The HTTP body ARCHITECTURE.md fixes: a list of issues for 422, else detail + code. */
  toBody(): unknown {
    if (this.issues) return { detail: this.issues };
    return { detail: this.message, code: this.code };
  }
}

export function format(template: string, params: Params): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => (k in params ? String(params[k]) : `{${k}}`));
}

/** The error `code` with its message filled from `params` (what `fail` throws; for a caller that returns or rejects with it). */
export function suggestError(code: ErrorCode, params: Params = {}, opts: { cause?: unknown; headers?: Record<string, string> } = {}): SuggestError {
  return new SuggestError(code, format(ERRORS[code].message, params), opts);
}

export function fail(code: ErrorCode, params: Params = {}, opts: { cause?: unknown; headers?: Record<string, string> } = {}): never {
  throw suggestError(code, params, opts);
}

export function validationError(issues: ValidationIssue[]): SuggestError {
  return new SuggestError('validation_failed', issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; '), { issues });
}

/** 422 for one field, in the shared body shape. */
export function invalid(loc: (string | number)[], msg: string, type = 'value_error'): never {
  throw validationError([{ loc, msg, type }]);
}

const CODE_KEY = 'suggest-error-code';
const DETAIL_KEY = 'suggest-error-detail';
const ISSUES_KEY = 'suggest-error-issues';
const HEADERS_KEY = 'suggest-error-headers';

/** `err` as a catalogue error: itself, or `internal` with its message. */
export function asSuggestError(err: unknown): SuggestError {
  return err instanceof SuggestError ? err : new SuggestError('internal', String((err as Error)?.message ?? err), { cause: err });
}

/** Error to send back from a gRPC handler. */
export function toGrpcError(err: unknown): Partial<ServiceError> {
  const e = asSuggestError(err);
  const metadata = new Metadata();
  metadata.set(CODE_KEY, e.code);
  metadata.set(DETAIL_KEY, encodeURIComponent(e.message));
  if (e.issues) metadata.set(ISSUES_KEY, encodeURIComponent(JSON.stringify(e.issues)));
  if (e.headers) metadata.set(HEADERS_KEY, encodeURIComponent(JSON.stringify(e.headers)));
  return { code: ERRORS[e.code].grpc, details: e.message, metadata };
}

/**
 * A catalogue error sent between processes as its fields: the code, the message, and the
 * validation issues and response headers (Retry-After of a busy node) as JSON when there are any;
 * null for a code this build does not know.
 */
export function errorFromFields(code: string, message: string, issuesJson: string | undefined, headersJson: string | undefined, cause?: unknown): SuggestError | null {
  if (!(code in ERRORS)) return null;
  const issues = issuesJson ? (JSON.parse(issuesJson) as ValidationIssue[]) : undefined;
  // only string values are headers
  const parsed: unknown = headersJson ? JSON.parse(headersJson) : undefined;
  const headers = parsed !== null && typeof parsed === 'object' ? Object.fromEntries(Object.entries(parsed).filter((kv): kv is [string, string] => typeof kv[1] === 'string')) : undefined;
  return new SuggestError(code as ErrorCode, message, { ...(cause !== undefined ? { cause } : {}), ...(issues ? { issues } : {}), ...(headers ? { headers } : {}) });
}

/** Rebuild the catalogue error on the calling side of a gRPC call. */
export function fromGrpcError(err: ServiceError): SuggestError {
  const code = err.metadata?.get(CODE_KEY)[0];
  if (typeof code === 'string') {
    const detail = err.metadata.get(DETAIL_KEY)[0];
    const field = (key: string) => {
      const v = err.metadata.get(key)[0];
      return typeof v === 'string' ? decodeURIComponent(v) : undefined;
    };
    const e = errorFromFields(code, typeof detail === 'string' ? decodeURIComponent(detail) : err.message, field(ISSUES_KEY), field(HEADERS_KEY), err);
    if (e !== null) return e;
  }
  if (err.code === GrpcStatus.UNAVAILABLE || err.code === GrpcStatus.DEADLINE_EXCEEDED) {
    return suggestError('unavailable', { reason: `A shard node did not answer (${err.details || err.message})` }, { cause: err });
  }
  return new SuggestError('internal', err.message, { cause: err });
}
