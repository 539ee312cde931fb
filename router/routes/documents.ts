// Documents of an index: inline upsert, paged list, read, partial update and delete. Documents
// are routed to part `partOf(id, parts)` of the addressed physical index; writes to one physical
// index are serialized on this router and checked against the plan's document limits first.
//
// Decision (spec leaves the ingest response "not shown"): a request with any invalid document
// is refused whole with 422 and a loc per document (nothing is written). `failed` / `errors`
// report parts of a multi-part index that could not be written (shard unreachable) while others
// were; a retry of the same request is safe because upserts are idempotent.
import { Type } from '@sinclair/typebox';
import { MAX_DOCUMENT_ATTRIBUTES, wellFormed, type RawValue, type SuggestDocument } from '../../node/runtime/document.js';
import { SuggestError, fail, invalid, suggestError } from '../../node/runtime/errors.js';
import { partOf } from '../../node/runtime/hash.js';
import type { TenantId } from '../../node/runtime/ids.js';
import type { ResolvedIndex } from '../data-plane.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { DocumentDeleted, DocumentList, DocumentPatch, DocumentView, DocumentsBody, IngestResponse } from '../schemas.js';
import { documentView } from '../views.js';
import { DocParams, IndexParams, tenantOf } from './common.js';
import { assertWritable } from './indexes.js';

const tags = ['documents'];
const KNOWN_FIELDS = new Set(['id', 'title', 'desc', 'manufacturer', 'raw']);

/** Largest page number: keeps (page - 1) * page_size inside the shard protocol's uint32 offset. */
export const MAX_PAGE = 10_000_000;

type DocumentInput = { id: string; title?: string | null; desc?: string | null; manufacturer?: string | null; raw?: Record<string, unknown> } & Record<string, unknown>;

/** Input -> stored document; unknown top-level fields join `raw` (explicit `raw` keys win). */
export function toDocument(input: DocumentInput): SuggestDocument {
  const extras: [string, unknown][] = [];
  for (const k of Object.keys(input)) if (!KNOWN_FIELDS.has(k)) extras.push([k, input[k]]);
  // Object.fromEntries defines properties, so a "__proto__" key stays a plain key.
  const raw = Object.fromEntries([...extras, ...Object.entries(input.raw ?? {})]) as Record<string, RawValue>;
  return { id: input.id, title: input.title ?? '', desc: input.desc ?? '', manufacturer: input.manufacturer ?? '', raw };
}

/** Orders ids as the shards store them: by UTF-8 bytes (= code points), not UTF-16 units. */
export function compareIds(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export function documentRoutes(deps: RouterDeps): Route[] {
  const { data, limits } = deps;
  /**
   * A write that waited behind a delete of its index on this router (`serialize`) finds the
   * physical index gone and is refused, rather than acknowledged and dropped with it. (A write
   * from another router that reaches a part after its drop is refused by the shard.)
   */
  const assertStillThere = async (tenant: TenantId, target: ResolvedIndex, named: string): Promise<void> => {
    const now = await data.physical(tenant, target.physical.physical_index_id);
    if (now === null) fail('index_not_found', { index: named, tenant });
    assertWritable({ ...target, physical: now }, named);
  };

  return [
    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/documents',
      operationId: 'upsertDocuments',
      summary: 'Insert or replace documents',
      description:
        'Inline upsert of a small batch (at most 10,000 documents; use ingest/start or upload beyond). Documents with the same id replace the stored one; within one request the last occurrence wins. ' +
        'Any invalid document refuses the whole request with 422 (loc names the document). 409 `document_limit` when the index or account limit would be passed; nothing is written then.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: DocumentsBody,
      response: { description: 'What was written.', schema: IngestResponse },
      errors: ['index_not_found', 'document_limit', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const named = req.params.index_id;
        const target = await data.resolve(t.id, named);
        assertWritable(target, named);
        const byId = new Map<string, SuggestDocument>();
        for (const input of req.body.documents) byId.set(input.id, toDocument(input as DocumentInput));
        const parts = target.physical.parts;
        const groups = new Map<number, SuggestDocument[]>();
        for (const doc of byId.values()) {
          const p = partOf(doc.id, parts);
          let g = groups.get(p);
          if (!g) groups.set(p, (g = []));
          g.push(doc);
        }
        if (groups.size === 0) return { index_id: named, upserted: 0, failed: 0, errors: [] };
        return data.serialize(t.id, target.physical.physical_index_id, async () => {
          await assertStillThere(t.id, target, named);
          // spec rule 1: wait for the ingestion jobs running on this index (free when there is none)
          await deps.jobs.awaitIdle(t.id, target.physical.physical_index_id);
          const caps = await limits.check(t, target, groups);
          const entries = [...groups];
          const results = await Promise.allSettled(entries.map(([part, docs]) => data.upsertPart(t.id, target.physical, part, docs, caps.get(part) ?? 0)));
          let upserted = 0;
          let created = 0;
          let firstError: unknown = null;
          const errors: { id: string; detail: string }[] = [];
          results.forEach((r, i) => {
            if (r.status === 'fulfilled') {
              upserted += r.value.upserted;
              created += r.value.created;
            } else {
              // a shard that dropped the part names the physical index: say it of the index the caller named
              const reason = r.reason instanceof SuggestError && r.reason.code === 'index_not_found' ? suggestError('index_not_found', { index: named, tenant: t.id }) : r.reason;
              firstError ??= reason;
              const detail = reason instanceof SuggestError ? reason.message : 'The part could not be written.';
              for (const d of entries[i]![1]) errors.push({ id: d.id, detail });
            }
          });
          // Nothing written: the error is the answer (409, 503, ...), not a 200 listing failures.
          if (upserted === 0 && firstError !== null) throw firstError;
          limits.adjust(t.id, created);
          return { index_id: named, upserted, failed: errors.length, errors };
        });
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/documents',
      operationId: 'listDocuments',
      summary: 'List documents, paged, in id order',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      query: Type.Object({
        page: Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: 1 }),
        page_size: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
      }),
      response: { description: 'One page of documents and the total count.', schema: DocumentList },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const { page, page_size } = req.query;
        const offset = (page - 1) * page_size;
        const physical = target.physical;
        if (physical.parts <= 1) {
          const r = await data.listPart(t.id, physical, 0, offset, page_size);
          return { items: r.items.map(documentView), page, page_size, total: r.total };
        }
        // Several parts: each returns its first offset + page_size ids; the merged order is the
        // global id order. Deep pages cost O(offset) per part.
        const lists = await Promise.all(Array.from({ length: physical.parts }, (_, p) => data.listPart(t.id, physical, p, 0, offset + page_size)));
        const total = lists.reduce((n, l) => n + l.total, 0);
        const merged = lists.flatMap((l) => l.items).sort((a, b) => compareIds(a.id, b.id));
        return { items: merged.slice(offset, offset + page_size).map(documentView), page, page_size, total };
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/documents/{doc_id}',
      operationId: 'getDocument',
      summary: 'Read one document',
      tags,
      access: 'private',
      tenant: true,
      params: DocParams,
      response: { description: 'The document.', schema: DocumentView },
      errors: ['index_not_found', 'document_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const { index_id, doc_id } = req.params;
        const target = await data.resolve(t.id, index_id);
        const doc = await data.getDocument(t.id, target.physical, doc_id);
        if (!doc) return fail('document_not_found', { doc: doc_id, index: index_id });
        return documentView(doc);
      },
    }),

    defineRoute({
      method: 'PATCH',
      path: '/v1/indexes/{index_id}/documents/{doc_id}',
      operationId: 'updateDocument',
      summary: 'Update fields of one document',
      description: 'Given fields replace the stored ones (null clears a text field); `raw` is merged key by key into the stored attributes.',
      tags,
      access: 'private',
      tenant: true,
      params: DocParams,
      body: DocumentPatch,
      response: { description: 'The document after the update.', schema: DocumentView },
      errors: ['index_not_found', 'document_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const { index_id, doc_id } = req.params;
        const patch = req.body;
        if (patch.id !== undefined && patch.id !== doc_id) invalid(['body', 'id'], 'The id cannot change; it must match the path.', 'value_error');
        const target = await data.resolve(t.id, index_id);
        assertWritable(target, index_id);
        return data.serialize(t.id, target.physical.physical_index_id, async () => {
          await assertStillThere(t.id, target, index_id);
          const doc = await data.getDocument(t.id, target.physical, doc_id);
          if (!doc) return fail('document_not_found', { doc: doc_id, index: index_id });
          // text as it reads back once stored (a lone surrogate is stored as U+FFFD): the answer shows that
          const merged: SuggestDocument = {
            id: doc_id,
            title: wellFormed(patch.title !== undefined ? (patch.title ?? '') : (doc.title ?? '')),
            desc: wellFormed(patch.desc !== undefined ? (patch.desc ?? '') : (doc.desc ?? '')),
            manufacturer: wellFormed(patch.manufacturer !== undefined ? (patch.manufacturer ?? '') : (doc.manufacturer ?? '')),
            raw: Object.fromEntries([...Object.entries(doc.raw ?? {}), ...Object.entries(patch.raw ?? {})]) as Record<string, RawValue>,
          };
          const attributes = Object.keys(merged.raw).length;
          if (attributes > MAX_DOCUMENT_ATTRIBUTES) {
            invalid(['body', 'raw'], `The document would have ${attributes} attributes; at most ${MAX_DOCUMENT_ATTRIBUTES} are allowed. Set fewer, or replace the document with POST .../documents.`, 'value_error');
          }
          // The document exists, so the write adds nothing: no limit cap.
          await data.upsertPart(t.id, target.physical, partOf(doc_id, target.physical.parts), [merged], 0);
          return documentView(merged);
        });
      },
    }),

    defineRoute({
      method: 'DELETE',
      path: '/v1/indexes/{index_id}/documents/{doc_id}',
      operationId: 'deleteDocument',
      summary: 'Delete one document',
      tags,
      access: 'private',
      tenant: true,
      params: DocParams,
      response: { description: 'The document was deleted.', schema: DocumentDeleted },
      errors: ['index_not_found', 'document_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const { index_id, doc_id } = req.params;
        const target = await data.resolve(t.id, index_id);
        return data.serialize(t.id, target.physical.physical_index_id, async () => {
          await assertStillThere(t.id, target, index_id);
          const deleted = await data.deleteDocument(t.id, target.physical, doc_id);
          if (!deleted) return fail('document_not_found', { doc: doc_id, index: index_id });
          limits.adjust(t.id, -1);
          return { index_id, id: doc_id, deleted: true };
        });
      },
    }),
  ];
}
