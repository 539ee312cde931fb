// Index administration: list, create, delete, stats, schema, merchandising, file-size limit,
// physical-index allocation and promotion (the alias swap), and the status stream (SSE).
//
// Promotion: one compare-and-swap of the alias in the coordinator. A request resolves the alias
// once and reads only the physical index it resolved, so every response comes wholly from the
// old or wholly from the new one; other routers switch when the watch event reaches them
// (milliseconds); the old physical index keeps serving until the logical index is deleted, so
// a request still in flight on it completes. Before the swap, the new physical index's engines
// are loaded on every replica that will answer it (warm-up.ts), within `ready_timeout_ms`.
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { unpack } from 'msgpackr';
import type { IndexRecord, PhysicalIndexRecord } from '../../coordinator/coordinator.js';
import { fail, validationError } from '../../node/runtime/errors.js';
import { IndexId, PhysicalIndexId, type TenantId } from '../../node/runtime/ids.js';
import type { ResolvedIndex } from '../data-plane.js';
import { checkMerchandising, checkSynonyms } from '../ranking-config.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import {
  AllocateResponse,
  FileSizeLimit,
  IndexCreate,
  IndexDeleted,
  IndexSchema,
  IndexStats,
  IndexView,
  Merchandising,
  WARM_READY_TIMEOUT_MS,
  PromoteBody,
  PromoteResponse,
  WarmBody,
  WarmResponse,
} from '../schemas.js';
import { sseReply, type NumberedEvent, type SseEvent } from '../sse.js';
import { indexView } from '../views.js';
import { warmUp } from '../warm-up.js';
import { IndexParams, nowIso, tenantOf } from './common.js';

const tags = ['indexes'];
/** How long after a swap the previous physical index's engines are let go (other routers switch within milliseconds). */
const UNLOAD_PREVIOUS_AFTER_MS = 5_000;

/** A fresh physical index id: readable prefix from the logical id, random suffix; fits ID_PATTERN. */
export function newPhysicalId(indexId: string): string {
  return `${indexId.slice(0, 96)}--${randomBytes(6).toString('hex')}`;
}

/** 409 while an index is being deleted: nothing may be written into it. */
export function assertWritable(target: ResolvedIndex, named: string): void {
  if (target.index.status === 'deleting') fail('conflict', { reason: `Index '${named}' is being deleted.` });
}

function decodeEngine(bytes: Buffer): unknown {
  if (!bytes || bytes.length === 0) return null;
  try {
    return unpack(bytes) as unknown;
  } catch {
    return null;
  }
}

/** Documents a part's engine statistics count as not searchable yet (0 for an engine not loaded). */
function indexingOf(engine: unknown): number {
  const n = (engine as { indexing?: unknown } | null)?.indexing;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

export function indexRoutes(deps: RouterDeps): Route[] {
  const { coordinator, data, config } = deps;
  /**
   * The physical index a promotion swapped away from: its engines are let go (snapshots written)
   * once every router has switched, rather than holding their memory beside the new index's
   * until they go idle. A request still on it, or one more query, keeps them.
   */
  const unloadLater = (tenant: TenantId, physicalId: string) => {
    const timer = setTimeout(() => {
      void (async () => {
        const old = await data.physical(tenant, physicalId);
        if (old) await data.unload(tenant, old);
      })().catch(() => undefined);
    }, UNLOAD_PREVIOUS_AFTER_MS);
    timer.unref();
  };

  const view = async (tenant: ResolvedIndex['tenant'], rec: IndexRecord) => {
    const physical = await data.physical(tenant, rec.physical_index_id);
    const count = physical ? await data.documentCount(tenant, physical) : 0;
    return indexView(rec, count);
  };

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/indexes',
      operationId: 'listIndexes',
      summary: 'List the indexes of the tenant',
      tags,
      access: 'private',
      tenant: true,
      response: { description: 'Index views, by index id.', schema: Type.Array(IndexView) },
      errors: ['unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const records = await coordinator.listIndexes(t.id);
        records.sort((a, b) => (a.index_id < b.index_id ? -1 : a.index_id > b.index_id ? 1 : 0));
        return Promise.all(records.map((r) => view(t.id, r)));
      },
    }),

    defineRoute({
      method: 'POST',
      path: '/v1/indexes',
      operationId: 'createIndex',
      summary: 'Create an index',
      description: 'Creates the logical index and its first physical index. 403 `plan_index_limit` when the plan allows no more indexes; 409 `index_exists` when the id is taken.',
      tags,
      access: 'private',
      tenant: true,
      body: IndexCreate,
      response: { description: 'The new index.', schema: IndexView },
      errors: ['index_exists', 'plan_index_limit'],
      handler(req) {
        const t = tenantOf(req);
        const { index_id, name } = req.body;
        const parts = req.body.parts ?? 1;
        // One creation at a time per tenant on this router keeps the plan count exact here.
        return data.serialize(t.id, '\0create-index', async () => {
          const existing = await coordinator.listIndexes(t.id);
          if (existing.some((i) => i.index_id === index_id)) fail('index_exists', { index: index_id, tenant: t.id });
          if (existing.length >= t.limits.max_indexes) fail('plan_index_limit', { plan: t.record.plan, limit: t.limits.max_indexes });
          // A physical index of that id would make the name ambiguous in index routes.
          if (await coordinator.getPhysicalIndex(t.id, PhysicalIndexId(index_id))) fail('index_exists', { index: index_id, tenant: t.id });
          const now = nowIso();
          const physical: PhysicalIndexRecord = {
            tenant_id: t.id,
            physical_index_id: PhysicalIndexId(newPhysicalId(index_id)),
            index_id: IndexId(index_id),
            parts,
            created_at: now,
          };
          const rec: IndexRecord = {
            tenant_id: t.id,
            index_id: IndexId(index_id),
            name,
            physical_index_id: physical.physical_index_id,
            status: 'ready',
            created_at: now,
            updated_at: now,
            schema: {},
            merchandising: {},
          };
          await coordinator.createIndex(rec, physical);
          data.rememberPhysical(physical);
          data.remember(rec, t.id, index_id);
          return indexView(rec, 0);
        });
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/stream',
      operationId: 'streamIndexStatus',
      summary: 'Server-sent events of index status changes',
      description:
        'First `snapshot` (`{indexes: [index views]}`), then `index` on every change of an index of the tenant (`{index_id, name, status, physical_index_id, updated_at}`, or `{index_id, deleted: true}`: create, promote, delete) and `task` on every change of one of its jobs (the job view). ' +
        'Event ids are per router; with Last-Event-ID the events missed since are replayed when this router still has them, otherwise a new snapshot comes first. Heartbeat comment lines every `sseHeartbeatMs`.',
      tags,
      access: 'private',
      tenant: true,
      headers: Type.Object({ 'Last-Event-ID': Type.Optional(Type.String({ maxLength: 128, description: 'Resume after this event id.' })) }),
      response: { description: 'An SSE stream (text/event-stream).', contentType: 'text/event-stream' },
      errors: ['unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const hub = deps.events;
        const missed = hub.since(req.headers['Last-Event-ID']);
        return sseReply(config.sseHeartbeatMs, async (w) => {
          const render = ({ seq, event }: NumberedEvent): SseEvent | null => {
            if (event.type === 'index') {
              if (event.tenant_id !== t.id) return null;
              const r = event.record;
              const data = r ? { index_id: r.index_id, name: r.name, status: r.status, physical_index_id: r.physical_index_id, updated_at: r.updated_at } : { index_id: event.index_id, deleted: true };
              return { id: hub.idOf(seq), event: 'index', data };
            }
            if (event.type === 'job') {
              if (event.tenant_id !== t.id) return null;
              const data = event.record ? deps.jobs.view(event.record) : { job_id: event.job_id, deleted: true };
              return { id: hub.idOf(seq), event: 'task', data };
            }
            return null;
          };
          const at = hub.position;
          w.onClose(
            hub.subscribe((e) => {
              const ev = render(e);
              if (ev) w.send(ev);
            }),
          );
          if (missed) {
            for (const e of missed) {
              const ev = render(e);
              if (ev) w.send(ev);
            }
            return;
          }
          const records = await coordinator.listIndexes(t.id);
          records.sort((a, b) => (a.index_id < b.index_id ? -1 : a.index_id > b.index_id ? 1 : 0));
          // counts from list pages, not IndexStats: a snapshot must not make shards build search engines
          const count = async (r: IndexRecord) => {
            const physical = await data.physical(t.id, r.physical_index_id);
            return physical ? deps.jobs.countDocuments(t.id, physical) : 0;
          };
          const indexes = await Promise.all(records.map(async (r) => indexView(r, await count(r).catch(() => 0))));
          w.send({ id: hub.idOf(at), event: 'snapshot', data: { indexes } });
        });
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/file-size-limit',
      operationId: 'getFileSizeLimit',
      summary: 'Upload size limit of the tenant',
      description: 'Tenant override if set, else the plan limit, else the default (10 MB). Files over `presigned_over_bytes` should use a presigned cloud upload; over `cloud_required_over_bytes` they must.',
      tags,
      access: 'private',
      tenant: true,
      response: { description: 'The limit and where it comes from.', schema: FileSizeLimit },
      handler(req) {
        const t = tenantOf(req);
        return {
          limit_bytes: t.limits.upload_limit_bytes,
          source: t.uploadLimitSource,
          presigned_over_bytes: config.presignedOverBytes,
          cloud_required_over_bytes: config.cloudRequiredOverBytes,
        };
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/stats',
      operationId: 'getIndexStats',
      summary: 'Statistics of an index',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'Document count, stored bytes and per-part statistics.', schema: IndexStats },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const parts = await data.stats(t.id, target.physical);
        const engines = parts.map((p) => decodeEngine(p.engine));
        return {
          index_id: req.params.index_id,
          physical_index_id: target.physical.physical_index_id as string,
          status: target.index.status,
          document_count: parts.reduce((n, p) => n + p.document_count, 0),
          stored_bytes: parts.reduce((n, p) => n + p.stored_bytes, 0),
          documents_indexing: engines.reduce<number>((n, e) => n + indexingOf(e), 0),
          parts: parts.map((p, i) => ({ part: p.part, partition: p.partition, node: p.node, document_count: p.document_count, stored_bytes: p.stored_bytes, engine: engines[i] })),
        };
      },
    }),

    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/warm',
      operationId: 'warmIndex',
      summary: 'Load the index\'s search engines ahead of its queries',
      description:
        'Every replica of every part of the index (or of the physical index named) brings its search engine into memory: after a restart, or before traffic moves to an index nobody has queried for a while, so that its first queries do not wait for an engine read back or built from the stored documents. Waits for them within `ready_timeout_ms`. A promotion does this itself before its swap.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: WarmBody,
      response: { description: 'Where the engines stand.', schema: WarmResponse },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const warm = await warmUp(data, t.id, target.physical, req.body.ready_timeout_ms ?? WARM_READY_TIMEOUT_MS);
        return { index_id: req.params.index_id, physical_index_id: target.physical.physical_index_id as string, warm };
      },
    }),

    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/allocate-physical-id',
      operationId: 'allocatePhysicalIndex',
      summary: 'Allocate an empty physical index for a staging build',
      description: 'The physical index exists, empty, from then on; fill it by using its id in place of {index_id} in the document and ingestion routes, then promote it.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'The new physical index id.', schema: AllocateResponse },
      errors: ['index_not_found', 'conflict'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        if (target.index.status === 'deleting') fail('conflict', { reason: `Index '${target.index.index_id}' is being deleted.` });
        const physical: PhysicalIndexRecord = {
          tenant_id: t.id,
          physical_index_id: PhysicalIndexId(newPhysicalId(target.index.index_id)),
          index_id: target.index.index_id,
          parts: target.physical.parts,
          created_at: nowIso(),
        };
        await coordinator.putPhysicalIndex(physical);
        data.rememberPhysical(physical);
        return { index_id: target.index.index_id as string, physical_index_id: physical.physical_index_id as string };
      },
    }),

    defineRoute({
      method: 'POST',
      path: '/v1/indexes/{index_id}/promote',
      operationId: 'promotePhysicalIndex',
      summary: 'Point the index at another of its physical indexes (atomic alias swap)',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: PromoteBody,
      response: { description: 'The index view after the swap, with the physical index it pointed at before.', schema: PromoteResponse },
      errors: ['index_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const logical = target.index;
        const next = req.body.physical_index_id;
        const physical = await data.physical(t.id, next);
        if (!physical) fail('index_not_found', { index: next, tenant: t.id });
        if (physical.index_id !== logical.index_id) fail('conflict', { reason: `Physical index '${next}' belongs to index '${physical.index_id}', not '${logical.index_id}'.` });
        // a staging build still being filled must not go live half-done
        const filling = await deps.jobs.activeJobsOn(t.id, next);
        if (filling.length > 0) fail('conflict', { reason: `Ingestion job ${filling[0]} is still writing to '${next}'; promote it once the job has finished (or cancel the job).` });
        const warm = await warmUp(data, t.id, physical, req.body.ready_timeout_ms ?? WARM_READY_TIMEOUT_MS);
        if (req.body.require_ready === true && !warm.ready) {
          const pending = warm.pending.map((p) => `part ${p.part} on ${p.node ?? 'its primary'}: ${p.state}${p.detail ? ` (${p.detail})` : ''}`).join('; ');
          fail('conflict', { reason: `Physical index '${next}' is not ready after ${warm.waited_ms} ms (${warm.replicas_ready} of ${warm.replicas} replicas have their search engine in memory; ${pending}); the alias was not swapped. The loads go on: promote again later, or with a longer ready_timeout_ms.` });
        }
        // The swap compares against the alias as stored, not as cached here: another router may
        // have promoted a moment ago, and "point the index at X" should not fail on a stale cache.
        let previous: string | null = null;
        for (let attempt = 0; attempt < 5 && previous === null; attempt++) {
          const current = await coordinator.getIndex(t.id, logical.index_id);
          if (!current) return fail('index_not_found', { index: logical.index_id, tenant: t.id });
          if (current.status === 'deleting') fail('conflict', { reason: `Index '${logical.index_id}' is being deleted.` });
          if (current.physical_index_id === next) previous = current.physical_index_id;
          else if (await coordinator.swapAlias(t.id, logical.index_id, current.physical_index_id, physical.physical_index_id)) previous = current.physical_index_id;
        }
        if (previous === null) fail('conflict', { reason: `Index '${logical.index_id}' is being promoted concurrently; read it again and retry.` });
        const fresh = await coordinator.getIndex(t.id, logical.index_id);
        if (!fresh) return fail('index_not_found', { index: logical.index_id, tenant: t.id });
        data.remember(fresh, t.id, logical.index_id);
        if (previous !== next) unloadLater(t.id, previous);
        return { ...(await view(t.id, fresh)), previous_physical_index_id: previous, warm };
      },
    }),

    defineRoute({
      method: 'DELETE',
      path: '/v1/indexes/{index_id}',
      operationId: 'deleteIndex',
      summary: 'Delete an index and all its data',
      description: 'Drops every part of every physical index of the index on its shard node, then the metadata. A physical index id is refused (409): delete the logical index.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'What was deleted.', schema: IndexDeleted },
      errors: ['index_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const logical = target.index;
        if (target.viaPhysical) {
          fail('conflict', { reason: `'${req.params.index_id}' is a physical index of '${logical.index_id}'; delete '${logical.index_id}' to remove it with every physical index.` });
        }
        return data.serialize(t.id, logical.physical_index_id, async () => {
          // Marked first: if a shard is unreachable the index stays visible as `deleting` and a
          // retry of DELETE finishes the job; metadata never disappears before the data.
          const marked = await coordinator.updateIndex(t.id, logical.index_id, (r) => ({ ...r, status: 'deleting', updated_at: nowIso() }));
          data.remember(marked, t.id, logical.index_id);
          // running jobs would write into parts being dropped: stop them first
          await deps.jobs.cancelIndexJobs(t.id, logical.index_id);
          const physicals = await coordinator.listPhysicalIndexes(t.id, logical.index_id);
          let removed = (await Promise.all(physicals.map((p) => data.drop(t.id, p)))).reduce((a, b) => a + b, 0);
          const owned = await coordinator.deleteIndex(t.id, logical.index_id);
          const dropped = new Set(physicals.map((p) => p.physical_index_id as string));
          // Allocated while we were dropping: drop those too.
          for (const p of owned) if (!dropped.has(p.physical_index_id)) removed += await data.drop(t.id, p);
          const ids = [...new Set([...dropped, ...owned.map((p) => p.physical_index_id as string)])];
          data.remember(null, t.id, logical.index_id);
          for (const id of ids) data.forgetPhysical(t.id, id);
          deps.limits.forget(t.id);
          return { index_id: logical.index_id as string, deleted: true, physical_index_ids: ids, documents_removed: removed };
        });
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/schema',
      operationId: 'getIndexSchema',
      summary: 'The index schema',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'The schema as stored (`{}` when none was set).', schema: IndexSchema },
      errors: ['index_not_found'],
      async handler(req) {
        const t = tenantOf(req);
        return (await data.resolve(t.id, req.params.index_id)).index.schema ?? {};
      },
    }),

    defineRoute({
      method: 'PUT',
      path: '/v1/indexes/{index_id}/schema',
      operationId: 'putIndexSchema',
      summary: 'Replace the index schema',
      description:
        'Stored and returned as sent. The `predict` object is validated: enabled (boolean), default_types and rule types from destination|intent|product|category|content|workflow, action_mappings type -> {target_field, label_field}, intent_rules [{intent, match_terms, target, label, type}]. ' +
        '`synonyms` is validated (see SynonymEntry) and applies to the next autocomplete query.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      body: IndexSchema,
      response: { description: 'The stored schema.', schema: IndexSchema },
      errors: ['index_not_found', 'conflict'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        assertWritable(target, req.params.index_id);
        const schema = req.body as Record<string, unknown>;
        const issues = checkSynonyms(schema);
        if (issues.length > 0) throw validationError(issues);
        const rec = await coordinator.updateIndex(t.id, target.index.index_id, (r) => ({ ...r, schema, updated_at: nowIso() }));
        data.remember(rec, t.id, rec.index_id);
        return rec.schema;
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/merchandising',
      operationId: 'getMerchandising',
      summary: 'The merchandising configuration',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'The stored configuration (`{}` when none was set).', schema: Merchandising },
      errors: ['index_not_found'],
      async handler(req) {
        const t = tenantOf(req);
        return (await data.resolve(t.id, req.params.index_id)).index.merchandising ?? {};
      },
    }),

    defineRoute({
      method: 'PUT',
      path: '/v1/indexes/{index_id}/merchandising',
      operationId: 'putMerchandising',
      summary: 'Replace the merchandising configuration (paid plans)',
      description:
        '`{rules: [...]}` (see Merchandising), validated (422 names the rule and field at fault), stored and returned as sent; the next query applies it. 403 `plan_required` on plans without merchandising.',
      tags,
      access: 'private',
      tenant: true,
      feature: 'merchandising',
      params: IndexParams,
      body: Merchandising,
      response: { description: 'The stored configuration.', schema: Merchandising },
      errors: ['index_not_found', 'conflict'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        assertWritable(target, req.params.index_id);
        const merchandising = req.body as Record<string, unknown>;
        const issues = checkMerchandising(merchandising);
        if (issues.length > 0) throw validationError(issues);
        const rec = await coordinator.updateIndex(t.id, target.index.index_id, (r) => ({ ...r, merchandising, updated_at: nowIso() }));
        data.remember(rec, t.id, rec.index_id);
        return rec.merchandising;
      },
    }),
  ];
}
