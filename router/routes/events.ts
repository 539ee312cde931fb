// Engagement events: POST /v1/events/click takes one event or a batch of up to 100 (clicks,
// add-to-cart, purchases on documents, with the query that led there), checks them, rate limits
// them per API key (token bucket, SUGGEST_EVENTS_PER_SECOND / SUGGEST_EVENTS_BURST) and sends
// each to the shard part that holds its document, where it is appended to the part's event log
// and learned from (shard/engine/behavior.ts). Public keys may send events: browsers do.
import { DEFAULT_EVENTS_BURST, DEFAULT_EVENTS_PER_SECOND } from '../../node/runtime/config.js';
import { fail, invalid, validationError, type ValidationIssue } from '../../node/runtime/errors.js';
import { encodeEvents, type EngagementEvent, type EngagementType } from '../../node/runtime/engagement-event.js';
import { partOf } from '../../node/runtime/hash.js';
import type { ResolvedIndex } from '../data-plane.js';
import { RateLimiter } from '../rate-limiter.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { ClickEventsBody, ClickEventsResponse, MAX_EVENTS_PER_REQUEST } from '../schemas.js';
import { tenantOf } from './common.js';

/** How far ahead of this router's clock an event's timestamp may be. */
export const MAX_FUTURE_MS = 5 * 60_000;

type Body = {
  doc_id?: string;
  index?: string;
  query?: string;
  position?: number;
  user_id?: string;
  session_id?: string;
  type?: EngagementType;
  timestamp?: number;
  events?: Omit<Body, 'events'>[];
};

const EVENT_FIELDS = ['doc_id', 'index', 'query', 'position', 'user_id', 'session_id', 'type', 'timestamp'] as const;

export interface ClickResult {
  accepted: number;
  ignored: number;
  unknown_document_ids: string[];
}

export function eventRoutes(deps: RouterDeps): Route[] {
  // built on first use: the route table is also built without a configuration (contract tests)
  let limiter: RateLimiter | undefined;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/events/click',
      operationId: 'recordClick',
      summary: 'Record engagement events (clicks, add-to-cart, purchases)',
      description:
        `One event, or \`{"events": [...]}\` with 1 to ${MAX_EVENTS_PER_REQUEST}. Each event names a document of an index of the tenant (\`index\` defaults to \`default\`) ` +
        'and is stored with that document, then shapes ranking: document popularity, the documents chosen after a query, the brands and categories a query leads to (graph ranking), ' +
        'the user\'s affinity (used by autocomplete `user_id`, paid plans) and typeahead completions mined from the queries typed (index schema `events`). ' +
        'A single event on an unknown document answers 404 `document_not_found`; in a batch such events are ignored and listed. ' +
        `Rate limited per API key and router: ${DEFAULT_EVENTS_PER_SECOND} events per second with bursts of ${DEFAULT_EVENTS_BURST} by default (SUGGEST_EVENTS_PER_SECOND and SUGGEST_EVENTS_BURST); ` +
        'over it, 429 `rate_limited` with `Retry-After` (seconds). Public keys may send events.',
      tags: ['events'],
      access: 'public',
      tenant: true,
      body: ClickEventsBody,
      response: { description: 'How many events were stored, and the documents that were not found.', schema: ClickEventsResponse },
      errors: ['index_not_found', 'document_not_found', 'rate_limited', 'unavailable'],
      async handler(req): Promise<ClickResult> {
        const tenant = tenantOf(req).id;
        const body = req.body as Body;
        const single = body.events === undefined;
        if (single) {
          if (body.doc_id === undefined) invalid(['body', 'doc_id'], 'doc_id is required (or send a batch as {"events": [...]}).', 'missing');
        } else {
          const stray = EVENT_FIELDS.filter((f) => body[f] !== undefined);
          if (stray.length > 0) {
            throw validationError(stray.map((f): ValidationIssue => ({ loc: ['body', f], msg: 'With "events", every event field goes inside the events; none at the top level.', type: 'extra_forbidden' })));
          }
        }
        const items = single ? [body] : body.events!;
        const now = Date.now();
        items.forEach((e, i) => {
          if (e.timestamp !== undefined && e.timestamp > now + MAX_FUTURE_MS) {
            invalid(single ? ['body', 'timestamp'] : ['body', 'events', i, 'timestamp'], 'timestamp is more than 5 minutes in the future (epoch milliseconds expected).', 'value_error.future');
          }
        });

        limiter ??= new RateLimiter(deps.config.eventsPerSecond, deps.config.eventsBurst);
        const allowed = limiter.take(req.key?.id ?? 'anonymous', items.length);
        if (!allowed.ok) fail('rate_limited', { retry_after: allowed.retryAfterSeconds }, { headers: { 'Retry-After': String(allowed.retryAfterSeconds) } });

        // every index first: a batch naming an unknown index stores nothing
        const indexes = new Map<string, ResolvedIndex>();
        for (const name of new Set(items.map((e) => e.index ?? 'default'))) indexes.set(name, await deps.data.resolve(tenant, name));

        // group by (index, part): one RecordEvents call per part
        const groups = new Map<string, { resolved: ResolvedIndex; part: number; events: EngagementEvent[] }>();
        for (const e of items) {
          const resolved = indexes.get(e.index ?? 'default')!;
          const part = partOf(e.doc_id!, resolved.physical.parts);
          const k = `${resolved.physical.physical_index_id}\0${part}`;
          let g = groups.get(k);
          if (!g) groups.set(k, (g = { resolved, part, events: [] }));
          g.events.push({
            doc_id: e.doc_id!,
            type: e.type ?? 'click',
            query: e.query ?? '',
            position: e.position ?? 0,
            user_id: e.user_id ?? '',
            session_id: e.session_id ?? '',
            ts: e.timestamp ?? now,
          });
        }
        const results = await Promise.all(
          [...groups.values()].map((g) =>
            deps.data.onPart(tenant, g.resolved.physical, g.part, (api, ref) => api.recordEvents({ ref, events: encodeEvents(g.events) })),
          ),
        );
        let accepted = 0;
        const unknown = new Set<string>();
        for (const r of results) {
          accepted += r.accepted;
          for (const id of r.unknownDocumentIds) unknown.add(id);
        }
        if (single && accepted === 0) fail('document_not_found', { doc: body.doc_id!, index: body.index ?? 'default' });
        return { accepted, ignored: items.length - accepted, unknown_document_ids: [...unknown] };
      },
    }),
  ];
}
