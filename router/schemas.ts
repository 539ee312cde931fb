// Shared TypeBox schemas of the HTTP contract: request bodies, views and error bodies. Field
// names follow ARCHITECTURE.md "Contract decisions"; these schemas are both the validators and
// the OpenAPI components (named ones become `#/components/schemas/<name>`).
import { PREDICTION_TYPES } from '../node/runtime/predict-types.js';
import { hasControlChar, hasLoneSurrogate, MAX_DOC_ID_BYTES, MAX_DOCUMENT_ATTRIBUTES } from '../node/runtime/document.js';
import { FormatRegistry, Type, type TSchema } from '@sinclair/typebox';
import { ID_PATTERN } from '../node/runtime/ids.js';
import { REASON_CODES } from './predict-model.js';
import { DEFAULT_BOOST, DEFAULT_BURY, MERCH_LIMITS, RULE_ACTIONS, SYNONYM_LIMITS } from './ranking-config.js';

/** Schemas published as named OpenAPI components, by identity. */
export const NAMED_SCHEMAS = new Map<TSchema, string>();

function named<T extends TSchema>(name: string, schema: T): T {
  NAMED_SCHEMAS.set(schema, name);
  return schema;
}

FormatRegistry.Set('doc-id', (v) => v.length > 0 && !hasControlChar(v) && !hasLoneSurrogate(v) && Buffer.byteLength(v, 'utf8') <= MAX_DOC_ID_BYTES);
FormatRegistry.Set('hostname', (v) => /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(v));
// RFC 3339 date-time with a zone (what JSON clients send): 2026-11-23T18:00:00Z, ...+01:00
FormatRegistry.Set('date-time', (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(v) && Number.isFinite(Date.parse(v)));
FormatRegistry.Set('http-url', (v) => {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
});

// A URL the service calls on a tenant's behalf: credentials belong in api_key or headers, which
// are never shown back, not in the URL, which the admin views show
FormatRegistry.Set('http-url-no-credentials', (v) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
  } catch {
    return false;
  }
});

const ID_HINT = 'Use 1 to 128 letters, digits, dashes or underscores.';
export const Id = (description: string) => Type.String({ pattern: ID_PATTERN, 'x-hint': ID_HINT, description });
export const IndexIdParam = Id('Logical index id, or a physical index id allocated for it.');
export const DocIdParam = Type.String({
  format: 'doc-id',
  minLength: 1,
  maxLength: MAX_DOC_ID_BYTES,
  'x-hint': `Document ids are 1 to ${MAX_DOC_ID_BYTES} UTF-8 bytes of valid Unicode, without control characters.`,
  description: `Document id: 1 to ${MAX_DOC_ID_BYTES} UTF-8 bytes, no control characters, valid Unicode.`,
});
const Timestamp = Type.String({ format: 'date-time' });
const DATE_TIME_HINT = 'Use an RFC 3339 date-time with a time zone, such as 2026-12-01T00:00:00Z.';
const Count = Type.Integer({ minimum: 0 });

// ---------------------------------------------------------------- errors

export const ErrorBody = named(
  'Error',
  Type.Object({
    detail: Type.String({ description: 'What went wrong and what to do about it.' }),
    code: Type.String({ description: 'Machine-readable error code from the catalogue.' }),
  }),
);

export const ValidationErrorBody = named(
  'ValidationError',
  Type.Object({
    detail: Type.Array(
      Type.Object({
        loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Where: ["query", "limit"], ["body", "documents", 0, "id"], ...' }),
        msg: Type.String(),
        type: Type.String(),
      }),
    ),
  }),
);

// ---------------------------------------------------------------- documents

const RawAttributes = Type.Record(Type.String(), Type.Unknown(), {
  maxProperties: MAX_DOCUMENT_ATTRIBUTES,
  description: `Free-form attributes, at most ${MAX_DOCUMENT_ATTRIBUTES}; values are strings or numbers (booleans, null, small arrays and objects are kept as sent).`,
});
const TextField = (description: string) => Type.Union([Type.String(), Type.Null()], { description });

export const DocumentInput = named(
  'DocumentInput',
  Type.Object(
    {
      id: DocIdParam,
      title: Type.Optional(TextField('Title.')),
      desc: Type.Optional(TextField('Description.')),
      manufacturer: Type.Optional(TextField('Manufacturer or brand.')),
      raw: Type.Optional(RawAttributes),
    },
    { maxProperties: MAX_DOCUMENT_ATTRIBUTES, description: `A document to upsert, with at most ${MAX_DOCUMENT_ATTRIBUTES} fields. Further top-level fields are folded into \`raw\`.` },
  ),
);

export const MAX_INLINE_DOCUMENTS = 10_000;

export const DocumentsBody = named(
  'DocumentsBody',
  Type.Object({
    documents: Type.Array(DocumentInput, { maxItems: MAX_INLINE_DOCUMENTS, description: `At most ${MAX_INLINE_DOCUMENTS} documents; larger batches go through ingest/start or upload.` }),
  }),
);

export const DocumentView = named(
  'Document',
  Type.Object({ id: Type.String(), title: Type.String(), desc: Type.String(), manufacturer: Type.String(), raw: RawAttributes }),
);

export const DocumentPatch = named(
  'DocumentPatch',
  Type.Object(
    {
      id: Type.Optional(DocIdParam),
      title: Type.Optional(TextField('New title.')),
      desc: Type.Optional(TextField('New description.')),
      manufacturer: Type.Optional(TextField('New manufacturer.')),
      raw: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: MAX_DOCUMENT_ATTRIBUTES, description: 'Merged key by key into the stored raw attributes.' })),
    },
    { additionalProperties: false },
  ),
);

export const DocumentList = named(
  'DocumentList',
  Type.Object({ items: Type.Array(DocumentView), page: Type.Integer(), page_size: Type.Integer(), total: Count }),
);

export const IngestResponse = named(
  'IngestResponse',
  Type.Object({
    index_id: Type.String(),
    upserted: Count,
    failed: Count,
    errors: Type.Array(Type.Object({ id: Type.String(), detail: Type.String() })),
  }),
);

export const DocumentDeleted = Type.Object({ index_id: Type.String(), id: Type.String(), deleted: Type.Boolean() });

// ---------------------------------------------------------------- indexes

export const IndexStatusSchema = Type.Union([Type.Literal('ready'), Type.Literal('building'), Type.Literal('deleting')]);

export const IndexView = named(
  'Index',
  Type.Object({
    index_id: Type.String(),
    name: Type.String(),
    document_count: Count,
    status: IndexStatusSchema,
    physical_index_id: Type.String(),
    created_at: Timestamp,
  }),
);

export const IndexCreate = named(
  'IndexCreate',
  Type.Object(
    {
      index_id: Id('Alphanumeric with dashes or underscores, 1 to 128 characters.'),
      name: Type.String({ minLength: 1, maxLength: 256 }),
      parts: Type.Optional(
        Type.Integer({ minimum: 1, maximum: 16, default: 1, description: 'Parts the index is split into; each part lives on its own partition (and, in a cluster, usually its own shard node). Large indexes use more.' }),
      ),
    },
    // a misspelt `parts` would otherwise create a one-part index without a word
    { additionalProperties: false, description: 'Unknown fields are refused (422 naming the field).' },
  ),
);

export const IndexDeleted = named(
  'IndexDeleted',
  Type.Object(
    {
      index_id: Type.String(),
      deleted: Type.Boolean(),
      physical_index_ids: Type.Array(Type.String()),
      documents_removed: Count,
    },
    { description: 'A logical index deleted, with every physical index it owned.' },
  ),
);

export const PhysicalIndexDeleted = named(
  'PhysicalIndexDeleted',
  Type.Object(
    {
      physical_index_id: Type.String({ description: 'The physical index deleted, with its data.' }),
      index_id: Type.String({ description: 'The logical index it belonged to; that index is not deleted.' }),
      live_physical_index_id: Type.String({ description: 'The physical index the logical index still points at.' }),
      deleted: Type.Literal(true),
      documents_removed: Count,
    },
    { description: 'A physical index that was not live, deleted with its data.' },
  ),
);

export const DeleteIndexResponse = Type.Union([IndexDeleted, PhysicalIndexDeleted], {
  description: 'IndexDeleted for a logical index id, PhysicalIndexDeleted for a physical index id (it has `physical_index_id`).',
});

export const PhysicalIndexList = named(
  'PhysicalIndexList',
  Type.Object({
    index_id: Type.String(),
    live_physical_index_id: Type.String(),
    max_physical_indexes: Type.Integer({ description: 'How many physical indexes the index may own at once, the live one included.' }),
    items: Type.Array(
      Type.Object({
        physical_index_id: Type.String(),
        created_at: Timestamp,
        live: Type.Boolean({ description: 'The alias points at it: searches and writes by the logical id reach it.' }),
        status: Type.Union([Type.Literal('ready'), Type.Literal('deleting')], { description: '`deleting`: a delete began and has not finished (repeat DELETE to finish it).' }),
        parts: Type.Integer({ minimum: 1 }),
        document_count: Type.Union([Count, Type.Null()], { description: 'Null when a part could not be reached.' }),
      }),
      { description: 'Oldest first.' },
    ),
  }),
);

export const IndexStats = named(
  'IndexStats',
  Type.Object({
    index_id: Type.String(),
    physical_index_id: Type.String(),
    status: IndexStatusSchema,
    document_count: Count,
    stored_bytes: Count,
    documents_indexing: Type.Integer({
      minimum: 0,
      description:
        'Documents written that queries cannot find yet (buffered, or in a segment being built: a bulk load; or in a part whose search engine is loading, or will load once a new index\'s writes pause); 0 once everything written is searchable. Meanwhile queries wait briefly for them, then answer from the documents already searchable.',
    }),
    parts: Type.Array(
      Type.Object({ part: Count, partition: Count, node: Type.String(), document_count: Count, stored_bytes: Count, engine: Type.Unknown() }),
    ),
  }),
);

export const AllocateResponse = Type.Object({ index_id: Type.String(), physical_index_id: Type.String() });
/** How long a promotion, or a warm request, waits at most for the engines by default (see router/warm-up.ts). */
export const WARM_READY_TIMEOUT_MS = 30_000;
const ReadyTimeout = (description: string) => Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000, default: WARM_READY_TIMEOUT_MS, description }));
export const PromoteBody = named(
  'PromoteRequest',
  Type.Object({
    physical_index_id: Id('The physical index the alias should point at.'),
    ready_timeout_ms: ReadyTimeout(
      'Before the swap, every replica of every part of the physical index loads its search engine, so that the first queries after the swap do not wait for it (seconds for a large index built since its last query). The swap waits this long at most for them, then happens regardless (unless `require_ready`); `warm` in the answer says how it went. 0: the loads start, the swap does not wait.',
    ),
    require_ready: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'true: when some replica is still loading (or cannot be reached) at the end of the wait, the swap does not happen: 409 `conflict`, with what is pending. The loads go on, so promoting again later finds them done.',
      }),
    ),
  }),
);
const ReplicaWarmState = Type.Object({
  part: Count,
  node: Type.Union([Type.String(), Type.Null()], { description: 'The shard node asked; null when the part\'s primary could not be reached.' }),
  state: Type.Union([Type.Literal('ready'), Type.Literal('loading'), Type.Literal('skipped'), Type.Literal('unavailable')]),
  documents: Count,
  detail: Type.Optional(Type.String()),
});
const WarmReport = (description: string) =>
  Type.Object(
    {
      ready: Type.Boolean({ description: 'Every replica asked had its engine in memory when the wait ended.' }),
      waited_ms: Count,
      replicas: Count,
      replicas_ready: Count,
      pending: Type.Array(ReplicaWarmState, { description: 'The replicas still loading (or not reachable) when the wait ended.' }),
    },
    { description },
  );
export const PromoteResponse = Type.Composite([
  IndexView,
  Type.Object({
    previous_physical_index_id: Type.String(),
    warm: WarmReport('The new physical index\'s engines at the swap (see `ready_timeout_ms`).'),
  }),
]);
export const WarmBody = named(
  'WarmRequest',
  Type.Object({
    ready_timeout_ms: ReadyTimeout('How long to wait at most for every replica to have its engine in memory; 0: the loads start, the answer does not wait for them.'),
  }),
);
export const WarmResponse = Type.Object({
  index_id: Type.String(),
  physical_index_id: Type.String(),
  warm: WarmReport('Where the engines stand when the wait ended.'),
});

export const FileSizeLimit = named(
  'FileSizeLimit',
  Type.Object({
    limit_bytes: Count,
    source: Type.Union([Type.Literal('tenant'), Type.Literal('plan'), Type.Literal('default')]),
    presigned_over_bytes: Count,
    cloud_required_over_bytes: Count,
  }),
);

export { PREDICTION_TYPES };
export const PredictionType = Type.Union(PREDICTION_TYPES.map((t) => Type.Literal(t)));

const ActionMapping = Type.Object({ target_field: Type.String({ minLength: 1 }), label_field: Type.String({ minLength: 1 }) });

export const PredictConfig = named(
  'PredictConfig',
  Type.Object({
    enabled: Type.Optional(Type.Boolean()),
    default_types: Type.Optional(Type.Array(PredictionType)),
    action_mappings: Type.Optional(
      Type.Object(Object.fromEntries(PREDICTION_TYPES.map((t) => [t, Type.Optional(ActionMapping)])), {
        additionalProperties: false,
        description: 'Prediction type -> names of the document fields giving the action target and label.',
      }),
    ),
    intent_rules: Type.Optional(
      Type.Array(
        Type.Object({
          intent: Type.String({ minLength: 1 }),
          match_terms: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, description: 'Words or phrases of a query that trigger the rule; none may be empty.' }),
          target: Type.String({
            pattern: '^(/(?!/)|https?://)',
            description: 'Where the action goes: a route of the site ("/cart", "/orders?status=open") or an http(s) URL. Other schemes (javascript:, data:) are refused.',
          }),
          label: Type.String(),
          type: PredictionType,
        }),
      ),
    ),
  }),
);

export const EventsConfig = named(
  'EventsConfig',
  Type.Object(
    {
      enabled: Type.Optional(Type.Boolean({ default: true, description: 'Engagement events change ranking (they are recorded either way).' })),
      min_query_count: Type.Optional(
        Type.Integer({ minimum: 1, maximum: 1_000_000, default: 3, description: 'Distinct sessions (or users) that must have typed a query before typeahead suggests it.' }),
      ),
      excluded_queries: Type.Optional(
        Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 10_000, description: 'Queries never suggested from engagement (compared after normalization).' }),
      ),
    },
    { additionalProperties: false, description: 'How engagement events (POST /v1/events/click) shape suggestions.' },
  ),
);

const SynonymTerm = Type.String({ minLength: 1, maxLength: SYNONYM_LIMITS.termLength, description: `A word or phrase of up to ${SYNONYM_LIMITS.wordsPerTerm} words.` });

export const SynonymEntry = named(
  'SynonymEntry',
  Type.Union(
    [
      Type.Array(SynonymTerm, { minItems: 2, maxItems: SYNONYM_LIMITS.termsPerEntry, description: 'Equivalent terms, two-way: ["tv", "television"].' }),
      Type.Object(
        { from: SynonymTerm, to: Type.Union([SynonymTerm, Type.Array(SynonymTerm, { minItems: 1, maxItems: SYNONYM_LIMITS.termsPerEntry })]) },
        { additionalProperties: false, description: 'One-way: a query with `from` also finds documents with `to`, not the reverse.' },
      ),
    ],
    {
      'x-hint': `Use a list of 2 to ${SYNONYM_LIMITS.termsPerEntry} equivalent terms (["tv", "television"]) or {"from": "ac", "to": ["air conditioner"]}; terms are 1 to ${SYNONYM_LIMITS.termLength} characters.`,
      description:
        'Autocomplete searches each synonym reading of the query (one phrase replaced, longest match first, at most 8 readings) beside the query as typed; ' +
        'documents found only through a synonym score x0.85 and carry `metadata.synonym: {from, to}`. Typeahead does not expand synonyms.',
    },
  ),
);

export const IndexSchema = named(
  'IndexSchema',
  Type.Object(
    {
      predict: Type.Optional(PredictConfig),
      synonyms: Type.Optional(Type.Array(SynonymEntry, { maxItems: SYNONYM_LIMITS.entries, description: `At most ${SYNONYM_LIMITS.entries} entries.` })),
      events: Type.Optional(EventsConfig),
    },
    { description: 'Stored and returned as sent; `predict`, `synonyms` and `events` are checked, other keys are kept.' },
  ),
);

const RuleValue = Type.Union([Type.String({ maxLength: MERCH_LIMITS.valueLength }), Type.Number(), Type.Boolean()]);

export const MerchandisingRule = named(
  'MerchandisingRule',
  Type.Object(
    {
      id: Type.String({ minLength: 1, maxLength: MERCH_LIMITS.ruleIdLength, pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]*$', description: 'Unique within the index; shown in `metadata.merchandised` and `debug.ranking`.' }),
      action: Type.Union(
        RULE_ACTIONS.map((a) => Type.Literal(a)),
        { description: 'pin: place at `position`; boost / bury: multiply the score by `factor`; hide: never suggest.' },
      ),
      target: Type.Object(
        {
          ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: MAX_DOC_ID_BYTES }), { minItems: 1, maxItems: MERCH_LIMITS.targetIds, description: 'Document ids (a pin places them in this order).' })),
          field: Type.Optional(
            Type.String({ minLength: 1, maxLength: MERCH_LIMITS.fieldLength, description: 'title, desc, manufacturer (or brand), id, or a raw attribute (`category` or `raw.category`).' }),
          ),
          values: Type.Optional(Type.Array(RuleValue, { minItems: 1, maxItems: MERCH_LIMITS.targetValues, description: 'Exact values, compared as filters compare them (text case- and accent-insensitive, numbers by value).' })),
        },
        { additionalProperties: false, description: 'Either `ids`, or `field` and `values`. A pin by attribute places the best match of the query having the attribute.' },
      ),
      position: Type.Optional(Type.Integer({ minimum: 1, maximum: MERCH_LIMITS.maxPosition, description: 'pin only: 1 = first suggestion; several ids take the positions that follow.' })),
      factor: Type.Optional(
        Type.Number({ minimum: MERCH_LIMITS.minFactor, maximum: MERCH_LIMITS.maxFactor, description: `boost: more than 1 (default ${DEFAULT_BOOST}); bury: less than 1 (default ${DEFAULT_BURY}).` }),
      ),
      when: Type.Optional(
        Type.Object(
          {
            query: Type.Optional(Type.String({ minLength: 1, maxLength: MERCH_LIMITS.whenLength, description: 'The whole query, compared after normalization (case, accents, spacing).' })),
            contains: Type.Optional(Type.String({ minLength: 1, maxLength: MERCH_LIMITS.whenLength, description: 'Words the query contains, in a row, as whole words.' })),
          },
          { additionalProperties: false, description: 'Absent: every query. With both keys both must hold.' },
        ),
      ),
      enabled: Type.Optional(Type.Boolean({ description: 'Default true.' })),
      starts_at: Type.Optional(Type.String({ format: 'date-time', 'x-hint': DATE_TIME_HINT, description: 'The rule applies from this instant (default: always).' })),
      ends_at: Type.Optional(Type.String({ format: 'date-time', 'x-hint': DATE_TIME_HINT, description: 'The rule no longer applies from this instant.' })),
    },
    { additionalProperties: false },
  ),
);

export const Merchandising = named(
  'Merchandising',
  Type.Object(
    { rules: Type.Optional(Type.Array(MerchandisingRule, { maxItems: MERCH_LIMITS.rules, description: `At most ${MERCH_LIMITS.rules} rules.` })) },
    {
      additionalProperties: false,
      description:
        'Merchandising rules of autocomplete. Boost, bury and hide act while each index part scores (a boosted document can enter the top results); pins are placed after the parts are merged, ' +
        'so they hold for an index in several parts. A pinned document is shown even when it does not match the query, but never when it fails the request filters or a hide rule matches it (hide wins). ' +
        'Typeahead honours hide rules only (its product suggestions). Affected suggestions carry `metadata.merchandised: [{id, action, factor|position}]`; `debug=true` adds `debug.ranking`.',
    },
  ),
);

// ---------------------------------------------------------------- jobs

export const JobView = named(
  'Job',
  Type.Object({
    job_id: Type.String(),
    kind: Type.Union([Type.Literal('ingestion'), Type.Literal('export'), Type.Literal('sync')]),
    index_id: Type.String(),
    status: Type.Union(['queued', 'processing', 'succeeded', 'failed', 'canceled'].map((s) => Type.Literal(s))),
    source_type: Type.Union([Type.String(), Type.Null()]),
    source_filename: Type.Union([Type.String(), Type.Null()]),
    total: Count,
    processed: Count,
    failed: Count,
    attempts: Count,
    error: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    started_at: Type.Union([Timestamp, Type.Null()]),
    finished_at: Type.Union([Timestamp, Type.Null()]),
    physical_index_id: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'The physical index the job reads or writes.' })),
    run: Type.Optional(Type.Union([Type.Literal('immediate'), Type.Literal('background'), Type.Null()])),
    error_code: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Machine code of `error`: document_limit, no_valid_rows, unreadable_file, empty_file, stuck, ...' })),
    format: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    errors: Type.Optional(
      Type.Array(Type.Object({ record: Count, line: Count, id: Type.Union([Type.String(), Type.Null()]), detail: Type.String() }), {
        description: 'Ingestion: rows that failed, with their line (the first 100; `failed` counts them all). Record 0 concerns the file as a whole.',
      }),
    ),
    progress: Type.Optional(Type.Object({ bytes_total: Count, bytes_done: Count, records_done: Count })),
    download_url: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Export: where the finished file is downloaded (relative to the service).' })),
    expires_at: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  }),
);

export const StartIngestion = named(
  'StartIngestion',
  Type.Object({
    job_id: Type.String(),
    index_id: Type.String(),
    status: Type.String({ description: 'After an immediate run: the final status; after starting a background job: queued or processing.' }),
    run: Type.Union([Type.Literal('immediate'), Type.Literal('background')]),
    job: Type.Optional(JobView),
    hint: Type.Optional(Type.String({ description: 'Advice, e.g. to use a presigned upload for files over 20 MB.' })),
  }),
);

export const StartExport = named('StartExport', Type.Composite([StartIngestion, Type.Object({ download_url: Type.Union([Type.String(), Type.Null()]) })]));

export const JobDeleted = Type.Object({ job_id: Type.String(), deleted: Type.Literal(true) });

export const CloudComplete = named(
  'CloudCompleteRequest',
  Type.Object({
    upload_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'As returned by POST .../upload-url.' })),
    object_key: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Same as upload_id (either one).' })),
    source_filename: Type.Optional(Type.String({ maxLength: 512 })),
    filename: Type.Optional(Type.String({ maxLength: 512, description: 'Same as source_filename.' })),
    format: Type.Optional(Type.Union([Type.Literal('csv'), Type.Literal('json'), Type.Literal('jsonl')])),
    encoding: Type.Optional(Type.String({ maxLength: 32, description: 'utf-8, utf-16le, utf-16be, windows-1252; otherwise from a BOM or sniffed.' })),
    mapping: Type.Optional(Type.Union([Type.Literal('documents'), Type.Literal('shopping-feed')], { description: 'How rows become documents (default documents).' })),
    size_bytes: Type.Optional(Count),
  }),
);

export const UploadUrlRequest = named(
  'UploadUrlRequest',
  Type.Object({
    filename: Type.Optional(Type.String({ maxLength: 512 })),
    size_bytes: Type.Optional(Type.Integer({ minimum: 0, description: 'Size of the file, when known: refused at once (413) over the limit.' })),
  }),
);

export const UploadUrl = named(
  'UploadUrl',
  Type.Object({
    upload_id: Type.String(),
    object_key: Type.String(),
    upload_url: Type.String({ description: 'Relative to the service: PUT the raw file to it, no API key needed.' }),
    method: Type.Literal('PUT'),
    expires_at: Timestamp,
    max_bytes: Count,
    complete_url: Type.String({ description: 'POST here with {upload_id} once the PUT has succeeded.' }),
  }),
);

export const UploadReceived = named(
  'UploadReceived',
  Type.Object({ upload_id: Type.String(), object_key: Type.String(), size_bytes: Count, sha256: Type.String() }),
);

export const ExportStartBody = named('StartExportRequest', Type.Object({ format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('jsonl')])) }));

export const ExportDocuments = named(
  'ExportDocuments',
  Type.Object({
    index_id: Type.String(),
    physical_index_id: Type.String(),
    documents: Type.Array(DocumentView),
    total: Count,
  }),
);

// ---------------------------------------------------------------- integrations

export const IntegrationView = named(
  'Integration',
  Type.Object({
    integration_id: Type.String(),
    index_id: Type.String(),
    kind: Type.String(),
    name: Type.String(),
    config: Type.Record(Type.String(), Type.Unknown()),
    created_at: Timestamp,
  }),
);

const PLAIN_TEXT = '^[^\\u0000-\\u001F\\u007F]*$';

/** A label shown back to people (job listings, admin views): at most `maxLength` characters, no control characters. */
export const PlainText = (maxLength: number, options: { description?: string; default?: string; minLength?: number } = {}) =>
  Type.String({ ...options, maxLength, pattern: PLAIN_TEXT, 'x-hint': `At most ${maxLength} characters, without control characters.` });

const IntegrationName = PlainText(256);

// additionalProperties: false so that a misspelt field (`confg`) is refused instead of silently dropped
export const IntegrationCreate = named(
  'IntegrationCreate',
  Type.Object(
    {
      index_id: Id('Index the integration feeds.'),
      kind: Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: PLAIN_TEXT,
        'x-hint': 'Name the source system in 1 to 64 characters, without control characters.',
        description: 'Source system, for example a shopping feed or a commerce platform.',
      }),
      name: Type.Optional(IntegrationName),
      config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    },
    { additionalProperties: false },
  ),
);

export const IntegrationPatch = named(
  'IntegrationPatch',
  Type.Object({ name: Type.Optional(IntegrationName), config: Type.Optional(Type.Record(Type.String(), Type.Unknown())) }, { additionalProperties: false }),
);

// ---------------------------------------------------------------- search

const FilterValue = Type.Union([
  Type.Array(Type.Union([Type.String(), Type.Number(), Type.Boolean()]), { description: 'Exact values (any of).' }),
  Type.Object(
    {
      gte: Type.Optional(Type.Union([Type.Number(), Type.String()])),
      gt: Type.Optional(Type.Union([Type.Number(), Type.String()])),
      lte: Type.Optional(Type.Union([Type.Number(), Type.String()])),
      lt: Type.Optional(Type.Union([Type.Number(), Type.String()])),
    },
    { additionalProperties: false, minProperties: 1, description: 'Range.' },
  ),
], { 'x-hint': 'Each filter is a list of exact values (["red", "blue"]) or a range {"gte", "gt", "lte", "lt"} of numbers or strings.' });
export const Filters = named('Filters', Type.Record(Type.String(), FilterValue, { description: 'Field name -> exact values or a range (gte, gt, lte, lt).' }));

export const SEARCH_MODES = ['fts_only', 'vector_only', 'hybrid', 'fts_rerank'] as const;
export const SearchMode = Type.Union(SEARCH_MODES.map((m) => Type.Literal(m)), { description: 'Default `fts_only`.' });
export const VECTOR_BACKENDS = ['hnswlib', 'usearch'] as const;
export const VectorBackend = Type.Union(VECTOR_BACKENDS.map((m) => Type.Literal(m)), { description: 'ANN library of the vector modes; default `hnswlib`.' });

const BackendTiming = Type.Object({
  ms: Type.Number({ description: 'Time of this library\'s vector retrieval (slowest part).' }),
  method: Type.String({ description: '`ann` (its graphs answered), `exact` (a graph was not complete: exact scan), `mixed`, `none`.' }),
  graph_ready: Type.Boolean(),
  recall_at_k: Type.Number({ description: 'Share of the exact top k found (a hit as similar as the exact k-th counts); mean over parts.' }),
});
export const VectorDebug = named(
  'VectorDebug',
  Type.Object(
    {
      backend: Type.String(),
      embedder: Type.String({ description: 'Name of the embedder of documents and queries.' }),
      dimensions: Type.Integer(),
      method: Type.String({ description: 'How vector candidates were found: `ann`, `exact`, `mixed` (some parts or segments each way) or `none` (the mode needs none).' }),
      graph: Type.Object({ ready: Type.Boolean(), built: Type.Integer(), total: Type.Integer() }, { description: 'ANN graph build progress of the requested library, in documents.' }),
      candidates: Type.Integer(),
      ms: Type.Number(),
      benchmark: Type.Optional(
        Type.Object({
          k: Type.Integer(),
          backends: Type.Object({ hnswlib: BackendTiming, usearch: BackendTiming }),
          overlap_at_k: Type.Number({ description: '|top k of hnswlib ∩ top k of usearch| / k; mean over parts.' }),
          exact_ms: Type.Number(),
        }),
      ),
      provider: Type.Optional(Type.String({ description: 'fts_rerank on a node with an embeddings endpoint (SUGGEST_EMBEDDINGS_URL): `ok`, or `fallback: timeout|http|network|malformed|dimensions` when the built-in embedder answered.' })),
      parts: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()), { description: 'Each part\'s own report, when the index has several.' })),
    },
    { description: 'What the vector retrieval did (debug=true or benchmark=true).' },
  ),
);

export const SearchText = Type.String({ minLength: 1, maxLength: 512 });
export const SearchLimit = Type.Integer({ minimum: 1, maximum: 50, default: 10 });
export const SearchIndex = Type.String({ pattern: ID_PATTERN, default: 'default', description: 'Logical index id.' });

export const QueryMethodBody = named(
  'SuggestQueryBody',
  Type.Object({
    tenant_id: Type.Optional(Id('Tenant (or the X-Tenant-Id header).')),
    index: Type.Optional(SearchIndex),
    query: SearchText,
    limit: Type.Optional(SearchLimit),
  }),
);

export const TypeaheadSuggestion = named(
  'TypeaheadSuggestion',
  Type.Object({ id: Type.String(), type: Type.String(), title: Type.String(), score: Type.Number() }),
);

export const AutocompleteSuggestion = named(
  'AutocompleteSuggestion',
  Type.Object({
    id: Type.String(),
    type: Type.String(),
    title: Type.String(),
    subtitle: Type.Union([Type.String(), Type.Null()]),
    description: Type.Union([Type.String(), Type.Null()]),
    url: Type.Union([Type.String(), Type.Null()]),
    image: Type.Union([Type.String(), Type.Null()]),
    price: Type.Union([Type.Number(), Type.Null()]),
    currency: Type.Union([Type.String(), Type.Null()]),
    score: Type.Number(),
    metadata: Type.Object(
      {
        concepts: Type.Array(Type.String()),
        synonym: Type.Optional(Type.Object({ from: Type.String(), to: Type.String() }, { description: 'Present when only a synonym reading of the query found the document (from the index schema).' })),
        merchandised: Type.Optional(
          Type.Array(
            Type.Object({ id: Type.String(), action: Type.String(), factor: Type.Optional(Type.Number()), position: Type.Optional(Type.Integer()) }),
            { description: 'The merchandising rules that acted on this suggestion: boost/bury with their factor, pin with the position it took.' },
          ),
        ),
      },
      { additionalProperties: true },
    ),
  }),
);

const DOCUMENTS_INDEXING_ANSWER =
  'Present only while a bulk load of this index is still being indexed: documents written before the request that this answer did not see. ' +
  'Such an answer is not cached; once the load is searchable (`documents_indexing` of GET /v1/indexes/{index_id}/stats is 0) the same request sees them.';

const suggestResponse = (name: string, suggestion: TSchema, debugSchema: TSchema) =>
  named(
    name,
    Type.Object({
      query: Type.String(),
      original_query: Type.String(),
      normalized_query: Type.String({
        description:
          'The query as the engine reads it, documents being read the same way: Unicode NFKC, lower case, generic diacritics removed ("crème" -> "creme"), typographic quotes and dashes as ASCII, invisible format characters removed rather than read as spaces (a soft hyphen, zero-width space or joiner, word joiner, byte-order mark or bidirectional mark inside "sam\u00adsung" leaves "samsung"; the zero-width non-joiner between the parts of a Persian or Indic word joins them, as a hyphen does, so the word is found typed with a space or with nothing there), Arabic-script letters typed in several forms read as one (Arabic kaf and yeh as the Persian forms, an alef with hamza or madda as the bare alef, teh marbuta as heh) with Arabic and Hebrew vowel marks dropped, decimal digits of every script as ASCII digits ("٧٩٩" -> "799"), whitespace collapsed.',
      }),
      corrected_query: Type.Union([Type.String(), Type.Null()], { description: 'The query as corrected from the index\'s own vocabulary (only its last six words are questioned), null when unchanged. A last word still being typed is searched as the start of a word ("cofee" as "coffe") and shown whole when the whole word is as near to what was typed ("coffee").' }),
      mode: Type.String({ description: 'Effective mode (`typeahead` on typeahead; `proxy` on autocomplete of a tenant in proxy mode, answered by its connected search API).' }),
      index: Type.String(),
      took_ms: Type.Number(),
      suggestions: Type.Array(suggestion),
      documents_indexing: Type.Optional(Type.Integer({ minimum: 1, description: DOCUMENTS_INDEXING_ANSWER })),
      debug: debugSchema,
    }),
  );
const PartProfile = Type.Object(
  {
    part: Type.Integer({ description: 'Index part.' }),
    node: Type.String({ description: 'Shard node that answered.' }),
    ms: Type.Number({ description: 'Round trip to the part as the router saw it.' }),
    thread: Type.Optional(Type.String({ description: '`event loop`, or `query thread N` when a query thread answered.' })),
    queue_ms: Type.Optional(Type.Number({ description: 'Waiting for a free query thread.' })),
    handoff_ms: Type.Optional(Type.Number({ description: 'The rest of the trip to the query thread and back (and the part\'s view, when the thread lacked it).' })),
    view_sent: Type.Optional(Type.Boolean({ description: 'The query thread was sent the part\'s segments first.' })),
    fresh_wait_ms: Type.Optional(Type.Number({ description: 'Waiting for documents written just before to become searchable.' })),
    load_wait_ms: Type.Optional(Type.Number({ description: 'Waiting for the part\'s search engine to load (read back, or built from the stored documents), at most SUGGEST_LOAD_WAIT_MS.' })),
    engine_ms: Type.Optional(Type.Number({ description: 'The engine\'s own time: the sum of `stages`.' })),
    stages: Type.Optional(Type.Record(Type.String(), Type.Number(), { description: 'Milliseconds per engine stage, in the order they ran.' })),
  },
  { additionalProperties: true },
);
const Profile = Type.Object(
  {
    resolve_ms: Type.Number({ description: 'Index and alias resolution.' }),
    scatter_gather_ms: Type.Number({ description: 'From sending the query to the parts until the last answered.' }),
    merge_ms: Type.Number({ description: 'Merging the parts\' top-k lists and rendering.' }),
    parts: Type.Array(PartProfile),
    total_ms: Type.Number(),
  },
  { description: 'With profile=true: where the request\'s time went.', additionalProperties: true },
);
const plainDebug = Type.Union([Type.Object({ profile: Type.Optional(Profile) }, { additionalProperties: true }), Type.Null()], { description: 'null unless profile was asked for' });
const autocompleteDebug = Type.Union(
  [Type.Object({ vector: Type.Optional(VectorDebug), profile: Type.Optional(Profile) }, { additionalProperties: true }), Type.Null()],
  { description: 'null unless debug, profile or benchmark was asked for; `vector` with debug or benchmark, `profile` with profile' },
);
export const TypeaheadResponse = suggestResponse('TypeaheadResponse', TypeaheadSuggestion, plainDebug);
export const AutocompleteResponse = suggestResponse('AutocompleteResponse', AutocompleteSuggestion, autocompleteDebug);

export const PredictRequest = named(
  'PredictRequest',
  Type.Object(
    {
      tenant_id: Type.Optional(Id('Tenant (or the X-Tenant-Id header).')),
      index: Type.Optional(SearchIndex),
      query: Type.String({ minLength: 1, maxLength: 512, description: 'Raw user input (required).' }),
      limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 20, default: 5, description: 'Most alternatives returned (0 to 20, default 5).' })),
      user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Personalization; paid plans only (403 `plan_required`).' })),
      filters: Type.Optional(Filters),
      context: Type.Optional(
        Type.Object(
          {
            surface: Type.Optional(Type.String({ maxLength: 128 })),
            page_type: Type.Optional(Type.String({ maxLength: 128 })),
            locale: Type.Optional(Type.String({ maxLength: 64 })),
            device: Type.Optional(Type.String({ maxLength: 64 })),
          },
          { additionalProperties: false, description: 'Where the query was typed. Accepted and reported in debug; it does not change ranking yet.' },
        ),
      ),
      allowed_types: Type.Optional(
        Type.Array(PredictionType, {
          minItems: 1,
          maxItems: 6,
          uniqueItems: true,
          description: "Prediction types that may be returned. Default: the schema's predict.default_types, else every type.",
        }),
      ),
      include: Type.Optional(
        Type.Object(
          {
            alternatives: Type.Optional(Type.Boolean({ default: true, description: 'Return alternatives (default true).' })),
            supporting_suggestions: Type.Optional(Type.Boolean({ default: true, description: 'Return the typeahead suggestions behind the prediction (default true, at most 10).' })),
            debug: Type.Optional(Type.Boolean({ default: false, description: 'Return the debug object: every candidate with its features, log-odds and confidence (default false).' })),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

const PredictAction = Type.Object(
  {
    kind: Type.Union([Type.Literal('navigate'), Type.Literal('search'), Type.Literal('apply_filter'), Type.Literal('start_workflow')]),
    target: Type.String({ description: 'A route (path and query string), or the value of the mapped target field.' }),
    method: Type.Union([Type.Literal('GET'), Type.Literal('POST')], { description: 'GET for navigate, search and apply_filter; POST for start_workflow.' }),
  },
  {
    description:
      'navigate: the action_mappings target of the type when the document has it, else /products/{id}, /content/{id}, /pages/{id} or /brands/{slug}; ' +
      'search: /search?q=... (intent); apply_filter: /search?filters={"category":[...]} (category); start_workflow: /workflows/{id} (workflow). Intent rules use their own target.',
  },
);
const Confidence = Type.Number({ minimum: 0, maximum: 1 });
const Entity = Type.Object({ id: Type.String(), object: Type.String({ description: 'product, document, brand, category, query, attribute or intent_rule' }) });
const ReasonCodes = Type.Array(Type.String(), {
  description: `Why the prediction was made, each code once: ${Object.entries(REASON_CODES)
    .map(([code, meaning]) => `${code}: ${meaning}`)
    .join(' ')}`,
});
export const PredictResponse = named(
  'PredictResponse',
  Type.Object({
    took_ms: Type.Number(),
    query: Type.String({ description: 'Effective (corrected) query.' }),
    original_query: Type.String(),
    normalized_query: Type.String(),
    corrected_query: Type.Union([Type.String(), Type.Null()], { description: 'null when unchanged' }),
    mode: Type.Literal('predict'),
    index: Type.String(),
    prediction: Type.Union(
      [
        Type.Object({
          type: PredictionType,
          label: Type.String(),
          action: PredictAction,
          entity: Entity,
          confidence: Type.Number({ minimum: 0, maximum: 1, description: 'Calibrated probability that this is the right prediction (see BENCHMARKS.md).' }),
          reason_codes: ReasonCodes,
        }),
        Type.Null(),
      ],
      { description: 'null when nothing matches.' },
    ),
    alternatives: Type.Array(Type.Object({ type: PredictionType, label: Type.String(), action: PredictAction, entity: Entity, confidence: Confidence, reason_codes: ReasonCodes }), {
      description: 'Up to `limit`, by decreasing confidence; empty when include.alternatives is false.',
    }),
    supporting_suggestions: Type.Array(Type.Object({ id: Type.String(), type: Type.String(), title: Type.String(), score: Confidence }), {
      description: 'Typeahead suggestions for the query (at most 10), score relative to the best one; empty when include.supporting_suggestions is false.',
    }),
    documents_indexing: Type.Optional(Type.Integer({ minimum: 1, description: DOCUMENTS_INDEXING_ANSWER })),
    debug: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'null unless include.debug is true.' }),
  }),
);

export const MAX_EVENTS_PER_REQUEST = 100;
export const EngagementTypeSchema = Type.Union([Type.Literal('click'), Type.Literal('add_to_cart'), Type.Literal('purchase')], {
  default: 'click',
  description: 'What the user did with the document; ranking weighs click 1, add_to_cart 3, purchase 5.',
});
// Mined queries are shown to every visitor of the tenant as typeahead completions, so an event may
// not carry control characters (tab and line breaks fold to spaces) or half a surrogate pair.
const SURROGATE_PAIRS_ONLY = '[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]';
const EVENT_QUERY_PATTERN = `^(?:[^\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\u007F\\uD800-\\uDFFF]|${SURROGATE_PAIRS_ONLY})*$`;
const EVENT_ID_PATTERN = `^(?:[^\\u0000-\\u001F\\u007F\\uD800-\\uDFFF]|${SURROGATE_PAIRS_ONLY})*$`;
const EventText = (description: string) =>
  Type.String({ minLength: 1, maxLength: 256, pattern: EVENT_ID_PATTERN, 'x-hint': 'Use 1 to 256 characters of text, without control characters or unpaired surrogates.', description });
const clickEventFields = {
  index: Type.Optional(Type.String({ pattern: ID_PATTERN, 'x-hint': ID_HINT, default: 'default', description: 'Logical index id (default `default`).' })),
  query: Type.Optional(
    Type.String({
      maxLength: 512,
      pattern: EVENT_QUERY_PATTERN,
      'x-hint': 'Send the query as typed, without control characters (tab and line breaks are allowed) or unpaired surrogates.',
      description: 'The query typed when the document was chosen; omit when there was none. Queries typed often become typeahead completions.',
    }),
  ),
  position: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: '1-based rank of the document in the list shown.' })),
  user_id: Type.Optional(EventText('Stable user id: builds the affinity that `user_id` on autocomplete uses (paid plans).')),
  session_id: Type.Optional(EventText('Session id: repeated events of one session on one document count once.')),
  type: Type.Optional(EngagementTypeSchema),
  timestamp: Type.Optional(
    Type.Integer({ minimum: 946_684_800_000, description: 'When it happened, epoch milliseconds (default: arrival). At most 5 minutes in the future; older events weigh less (half-life 30 days).' }),
  ),
};

export const ClickEvent = named(
  'ClickEvent',
  Type.Object({ doc_id: DocIdParam, ...clickEventFields }, { additionalProperties: false, description: 'One engagement event on one document.' }),
);

export const ClickEventsBody = named(
  'ClickEventsBody',
  Type.Object(
    {
      tenant_id: Type.Optional(Id('Tenant (or the X-Tenant-Id header).')),
      doc_id: Type.Optional(DocIdParam),
      ...clickEventFields,
      events: Type.Optional(Type.Array(ClickEvent, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST, description: `A batch of 1 to ${MAX_EVENTS_PER_REQUEST} events.` })),
    },
    {
      additionalProperties: false,
      description: `Either one event (the fields of ClickEvent at the top level, \`doc_id\` required) or \`{"events": [...]}\`, a batch of 1 to ${MAX_EVENTS_PER_REQUEST} events (then no event field at the top level).`,
    },
  ),
);

export const ClickEventsResponse = named(
  'ClickEventsResponse',
  Type.Object({
    accepted: Count,
    ignored: Type.Integer({ minimum: 0, description: 'Events of a batch not stored because their document is not in the index.' }),
    unknown_document_ids: Type.Array(Type.String(), { description: 'The distinct document ids of the ignored events.' }),
  }),
);

// ---------------------------------------------------------------- administration

export const PlanNameSchema = Type.Union([Type.Literal('free'), Type.Literal('pro'), Type.Literal('enterprise')]);
export const TenantModeSchema = Type.Union([Type.Literal('hosted'), Type.Literal('proxy')]);
const Limit = Type.Integer({ minimum: 0 });
const Bytes = Type.Integer({ minimum: 1 });

const MAX_SEARCH_API_HEADERS = 32;
// The headers are sent with every proxied request and the record is held by every router, so
// they are bounded, and names and values must be ones an HTTP request can carry (no CR/LF).
const SearchApiInput = Type.Object(
  {
    url: Type.String({ format: 'http-url-no-credentials', maxLength: 2048 }),
    api_key: Type.Optional(Type.String({ maxLength: 1024, pattern: '^[\\u0020-\\u007E]*$' })),
    headers: Type.Optional(
      Type.Record(Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$" }), Type.String({ maxLength: 4096, pattern: '^[^\\u0000-\\u0008\\u000A-\\u001F\\u007F]*$' }), {
        maxProperties: MAX_SEARCH_API_HEADERS,
        additionalProperties: false,
      }),
    ),
  },
  { additionalProperties: false },
);
const SearchApiField = Type.Union([SearchApiInput, Type.Null()], {
  'x-hint':
    'search_api is null or {"url": "https://...", "api_key": "...", "headers": {"Name": "value"}}: url an http or https URL of at most 2048 characters, without user:password@ (send credentials as api_key or headers, which are never shown back); ' +
    `api_key printable ASCII; at most ${MAX_SEARCH_API_HEADERS} headers, names HTTP tokens of at most 128 characters, values of at most 4096 characters without control characters.`,
});

export const LimitsPatch = Type.Object(
  {
    max_indexes: Type.Optional(Type.Union([Limit, Type.Null()])),
    max_documents_per_index: Type.Optional(Type.Union([Limit, Type.Null()])),
    max_documents_total: Type.Optional(Type.Union([Limit, Type.Null()])),
    upload_limit_bytes: Type.Optional(Type.Union([Bytes, Type.Null()])),
  },
  { additionalProperties: false, description: 'Overrides of the plan values; null removes an override.' },
);

/** What an admin may set on a tenant, at creation and later. */
const TenantSettings = {
  plan: Type.Optional(PlanNameSchema),
  mode: Type.Optional(TenantModeSchema),
  upload_limit_bytes: Type.Optional(Type.Union([Bytes, Type.Null()])),
  limits: Type.Optional(LimitsPatch),
  search_api: Type.Optional(SearchApiField),
};
const TenantName = Type.String({ minLength: 1, maxLength: 256 });

// Unknown fields are refused on both: a misspelt `plan` or `search_api` would otherwise change nothing without a word.
export const TenantCreate = named(
  'TenantCreate',
  Type.Object({ tenant_id: Id('Alphanumeric with dashes or underscores, 1 to 128 characters.'), name: TenantName, ...TenantSettings }, { additionalProperties: false }),
);

export const TenantPatch = named('TenantPatch', Type.Object({ name: Type.Optional(TenantName), ...TenantSettings }, { additionalProperties: false }));

export const EffectiveLimitsSchema = Type.Object({
  max_indexes: Count,
  max_documents_per_index: Count,
  max_documents_total: Count,
  upload_limit_bytes: Count,
});

export const TenantView = named(
  'Tenant',
  Type.Object({
    tenant_id: Type.String(),
    name: Type.String(),
    plan: PlanNameSchema,
    mode: TenantModeSchema,
    upload_limit_bytes: Type.Union([Count, Type.Null()], { description: 'The tenant override; null when the plan value applies.' }),
    limits: EffectiveLimitsSchema,
    features: Type.Object({ personalization: Type.Boolean(), merchandising: Type.Boolean(), integrations: Type.Boolean() }),
    search_api: Type.Union([Type.Object({ url: Type.String(), has_api_key: Type.Boolean() }), Type.Null()]),
    created_at: Timestamp,
  }),
);

export const KeyCreate = named(
  'KeyCreate',
  Type.Object({ kind: Type.Union([Type.Literal('public'), Type.Literal('private')]), name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })) }),
);

export const KeyView = named(
  'Key',
  Type.Object({
    id: Type.String(),
    kind: Type.Union([Type.Literal('public'), Type.Literal('private'), Type.Literal('admin')]),
    name: Type.String(),
    tenant_id: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
  }),
);

export const KeyCreated = named('KeyCreated', Type.Composite([KeyView, Type.Object({ key: Type.String({ description: 'The secret; shown only in this response.' }) })]));

// ---------------------------------------------------------------- operations

export const Health = Type.Object({ status: Type.String() });
export const Readiness = Type.Object({
  status: Type.String(),
  epoch: Type.Union([Type.Integer(), Type.Null()]),
  partitions: Type.Union([Type.Integer(), Type.Null()]),
  reason: Type.Optional(Type.String()),
  writes_waiting: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'Partitions whose primary is not live: their writes answer 503 until the failover, their reads are served by followers (reads over replicas on). 0 when every primary is live.',
    }),
  ),
  coordination: Type.Optional(
    Type.Union([Type.Literal('ok'), Type.Literal('unreachable')], {
      description: "'unreachable' from a call of this process that could not reach etcd until one that did; routes that need etcd answer 503 meanwhile, searches still answer",
    }),
  ),
});
