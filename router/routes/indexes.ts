// Index administration: list, create, delete, stats, schema, merchandising, file-size limit,
// physical-index allocation, listing, promotion (the alias swap) and deletion, and the status
// stream (SSE).
//
// Promotion: one compare-and-swap of the alias in the coordinator. A request resolves the alias
// once and reads only the physical index it resolved, so every response comes wholly from the
// old or wholly from the new one; other routers switch when the watch event reaches them
// (milliseconds); the old physical index keeps serving until it (or the logical index) is
// deleted, so a request still in flight on it completes. Before the swap, the new physical
// index's engines are loaded on every replica that will answer it (warm-up.ts), within
// `ready_timeout_ms`.
//
// Physical-index lifecycle: at most MAX_PHYSICAL_INDEXES_PER_INDEX per logical index, so a
// rebuild loop cannot pile up data and records; one that is not live is deleted in three steps:
// marked `deleting` (a coordinator transaction that commits only while the alias names another,
// and after which no promotion may name it and no write may enter it), its parts dropped, then
// its record removed. So no record names dropped data without the mark, the record never goes
// before the data (which would leave data nothing points at), and a failed drop leaves the mark
// for a repeated DELETE to finish.
import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { unpack } from 'msgpackr';
import { MAX_PHYSICAL_INDEXES_PER_INDEX, type IndexRecord, type JobRecord, type PhysicalIndexRecord } from '../../coordinator/coordinator.js';
import { fail, SuggestError, validationError } from '../../node/runtime/errors.js';
import { IndexId, PhysicalIndexId, type TenantId } from '../../node/runtime/ids.js';
import type { ResolvedIndex } from '../data-plane.js';
import { checkMerchandising, checkSynonyms } from '../ranking-config.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import {
  AllocateResponse,
  DeleteIndexResponse,
  FileSizeLimit,
  IndexCreate,
  IndexSchema,
  IndexStats,
  IndexView,
  Merchandising,
  PhysicalIndexList,
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
/** How long a physical-index delete waits for the runners of jobs it canceled to let go before it drops the parts. */
const JOB_STOP_WAIT_MS = 10_000;
/** Jobs looked at for ones still using a physical index (the tenant's newest; older ones have long finished). */
const JOBS_SCANNED = 200;
const ACTIVE_JOB = new Set<JobRecord['status']>(['queued', 'processing']);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A fresh physical index id: readable prefix from the logical id, random suffix; fits ID_PATTERN. */
export function newPhysicalId(indexId: string): string {
  return `${indexId.slice(0, 96)}--${randomBytes(6).toString('hex')}`;
}

/** 409 while an index, or the physical index addressed, is being deleted: nothing may be written into it. */
export function assertWritable(target: ResolvedIndex, named: string): void {
  if (target.index.status === 'deleting') fail('conflict', { reason: `Index '${named}' is being deleted.` });
  if (target.physical.status === 'deleting') fail('conflict', { reason: `Physical index '${target.physical.physical_index_id}' is being deleted.` });
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

  /** Queued or running jobs (ingestion writing into it, export reading it) of one physical index. */
  const jobsOn = async (tenant: TenantId, physicalId: string): Promise<JobRecord[]> =>
    (await coordinator.listJobs(tenant, null, JOBS_SCANNED)).filter((j) => ACTIVE_JOB.has(j.status) && j.state.physical_index_id === physicalId);

  /**
   * Deletes a physical index that is not live. Jobs found on it refuse the delete (409), as they
   * refuse a promotion: the caller decides whether the job's work should be thrown away. A job
   * started between that check and the mark is canceled, since everything it writes is about to
   * be dropped.
   */
  const deletePhysical = async (tenant: TenantId, target: ResolvedIndex) => {
    const id = target.physical.physical_index_id;
    const logicalId = target.index.index_id;
    // the stored alias, not this router's cache: another router may have promoted a moment ago
    const current = await coordinator.getIndex(tenant, logicalId);
    if (!current) return fail('index_not_found', { index: id, tenant });
    if (current.status === 'deleting') fail('conflict', { reason: `Index '${logicalId}' is being deleted, with every physical index it owns.` });
    if (current.physical_index_id === id) {
      fail('conflict', { reason: `Physical index '${id}' is the live one of index '${logicalId}' (the alias points at it); promote another physical index first (POST /v1/indexes/${logicalId}/promote), then delete this one.` });
    }
    const stored = await coordinator.getPhysicalIndex(tenant, id);
    if (!stored) return fail('index_not_found', { index: id, tenant });
    if (stored.status !== 'deleting') {
      const busy = (await jobsOn(tenant, id))[0];
      if (busy) {
        const what = busy.kind === 'export' ? 'is still reading' : 'is still writing to';
        const route = busy.kind === 'export' ? 'export-jobs' : 'ingestion-jobs';
        fail('conflict', { reason: `${busy.kind === 'export' ? 'Export' : 'Ingestion'} job ${busy.job_id} ${what} '${id}'; cancel it (DELETE /v1/${route}/${busy.job_id}) or let it finish, then delete the physical index.` });
      }
    }
    // conflict here when a promotion on another router made it live since the read above
    const marked = await coordinator.markPhysicalIndexDeleting(tenant, id);
    if (!marked) return fail('index_not_found', { index: id, tenant });
    // Before the drop is queued: a write on this router that passed assertWritable is already
    // queued ahead of it; any later one sees the mark and is refused.
    data.rememberPhysical(marked);
    const late = await jobsOn(tenant, id);
    for (const j of late) await deps.jobs.cancel(j).catch(() => undefined);
    const deadline = Date.now() + JOB_STOP_WAIT_MS;
    for (const j of late) {
      while (Date.now() < deadline && (await coordinator.jobLeaseHolder(j.job_id)) !== null) await sleep(100);
    }
    const removed = await data.serialize(tenant, id, () => data.drop(tenant, marked));
    await coordinator.deletePhysicalIndex(tenant, id);
    data.forgetPhysical(tenant, id);
    deps.limits.forget(tenant);
    const after = await coordinator.getIndex(tenant, logicalId);
    return {
      physical_index_id: id as string,
      index_id: logicalId as string,
      live_physical_index_id: (after ?? current).physical_index_id as string,
      deleted: true as const,
      documents_removed: removed,
    };
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
      description:
        'The physical index exists, empty, from then on; fill it by using its id in place of {index_id} in the document and ingestion routes, then promote it. ' +
        `An index owns at most ${MAX_PHYSICAL_INDEXES_PER_INDEX} physical indexes at once, the live one included (each keeps its data until deleted): past that, 409 \`conflict\` with the count; delete unused ones with DELETE /v1/indexes/{physical_index_id} (GET /v1/indexes/{index_id}/physical-indexes lists them).`,
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'The new physical index id.', schema: AllocateResponse },
      errors: ['index_not_found', 'conflict'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const logicalId = target.index.index_id;
        if (target.index.status === 'deleting') fail('conflict', { reason: `Index '${logicalId}' is being deleted.` });
        const physical: PhysicalIndexRecord = {
          tenant_id: t.id,
          physical_index_id: PhysicalIndexId(newPhysicalId(logicalId)),
          index_id: logicalId,
          parts: target.physical.parts,
          created_at: nowIso(),
        };
        const res = await coordinator.allocatePhysicalIndex(physical, MAX_PHYSICAL_INDEXES_PER_INDEX);
        if (!res.allocated) {
          fail('conflict', {
            reason:
              `Index '${logicalId}' has ${res.count} physical indexes, the most it may have (${MAX_PHYSICAL_INDEXES_PER_INDEX}, the live one included). ` +
              `Delete unused ones with DELETE /v1/indexes/{physical_index_id} (GET /v1/indexes/${logicalId}/physical-indexes lists them), then allocate again.`,
          });
        }
        data.rememberPhysical(physical);
        return { index_id: target.index.index_id as string, physical_index_id: physical.physical_index_id as string };
      },
    }),

    defineRoute({
      method: 'GET',
      path: '/v1/indexes/{index_id}/physical-indexes',
      operationId: 'listPhysicalIndexes',
      summary: 'The physical indexes of an index, the live one flagged',
      description: `Every physical index the index owns (at most ${MAX_PHYSICAL_INDEXES_PER_INDEX}), oldest first: the live one, staging builds and old ones kept since a promotion. Delete the ones not needed with DELETE /v1/indexes/{physical_index_id}. A physical id in the path lists the physical indexes of its logical index.`,
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'The physical indexes.', schema: PhysicalIndexList },
      errors: ['index_not_found', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const logical = (await coordinator.getIndex(t.id, target.index.index_id)) ?? target.index;
        const physicals = await coordinator.listPhysicalIndexes(t.id, logical.index_id);
        // counted from list pages, as the status stream does: stats would load every part's engine
        const items = await Promise.all(
          physicals.map(async (p) => ({
            physical_index_id: p.physical_index_id as string,
            created_at: p.created_at,
            live: p.physical_index_id === logical.physical_index_id,
            status: p.status ?? 'ready',
            parts: p.parts,
            document_count: await deps.jobs.countDocuments(t.id, p).catch(() => null),
          })),
        );
        return { index_id: logical.index_id as string, live_physical_index_id: logical.physical_index_id as string, max_physical_indexes: MAX_PHYSICAL_INDEXES_PER_INDEX, items };
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
        // the body names a physical index: the hint is to allocate one, not to create an index
        if (!physical) throw new SuggestError('index_not_found', `Physical index '${next}' does not exist for tenant '${t.id}' (never allocated, or deleted); allocate one with POST /v1/indexes/${logical.index_id}/allocate-physical-id, fill it, then promote it.`);
        if (physical.index_id !== logical.index_id) fail('conflict', { reason: `Physical index '${next}' belongs to index '${physical.index_id}', not '${logical.index_id}'.` });
        if (physical.status === 'deleting') fail('conflict', { reason: `Physical index '${next}' is being deleted; it cannot be promoted.` });
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
      summary: 'Delete an index and all its data, or one physical index that is not live',
      description:
        'A logical index id: drops every part of every physical index of the index on its shard node, then the metadata (IndexDeleted); running jobs of the index are canceled. ' +
        'A physical index id (an old or staging build): drops that physical index\'s parts and its record; the logical index and its live physical index are untouched (PhysicalIndexDeleted). ' +
        'The live one (the alias points at it) is refused with 409 `conflict`: promote another first. A queued or running job on it (ingestion writing, export reading) is refused with 409 naming the job: cancel it or let it finish; a job started while the delete is under way is canceled. ' +
        'While it is being deleted the physical index refuses writes and promotion (409); if a shard could not be reached it stays `deleting` (see physical-indexes) and repeating the DELETE finishes it.',
      tags,
      access: 'private',
      tenant: true,
      params: IndexParams,
      response: { description: 'What was deleted.', schema: DeleteIndexResponse },
      errors: ['index_not_found', 'conflict', 'unavailable'],
      async handler(req) {
        const t = tenantOf(req);
        const target = await data.resolve(t.id, req.params.index_id);
        const logical = target.index;
        if (target.viaPhysical) return deletePhysical(t.id, target);
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
