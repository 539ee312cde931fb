// Operations endpoints, no key needed: liveness, readiness (placement known and every partition
// readable: a live primary, or with reads over replicas a live follower) and Prometheus metrics.
import { fail } from '../../node/runtime/errors.js';
import { Reply, defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { Health, Readiness } from '../schemas.js';

const tags = ['operations'];

export function operationRoutes(deps: RouterDeps): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/healthz',
      operationId: 'healthz',
      summary: 'Liveness: the process answers',
      tags,
      access: 'none',
      response: { description: 'Alive.', schema: Health },
      handler: () => ({ status: 'ok' }),
    }),
    defineRoute({
      method: 'GET',
      path: '/readyz',
      operationId: 'readyz',
      summary:
        'Readiness: placement is known and every partition can be read (a live primary, or a live follower with reads over replicas; `writes_waiting` counts partitions whose writes wait for a failover); `coordination` says whether this process reaches etcd (searches answer either way)',
      tags,
      access: 'none',
      response: { description: 'Ready.', schema: Readiness },
      errors: ['unavailable'],
      handler() {
        const r = deps.data.readiness();
        if (!r.ready) return fail('unavailable', { reason: `Not ready: ${r.reason}` });
        // not a readiness condition: with etcd out of reach searches still answer, and taking
        // every router out of the load balancer would turn that into a full outage
        const coordination = deps.coordinator.health().reachable ? 'ok' : 'unreachable';
        return { status: 'ready', epoch: r.epoch, partitions: r.partitions, writes_waiting: r.writesWaiting, coordination };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics of this process',
      tags,
      access: 'none',
      response: { description: 'Text exposition format.', contentType: 'text/plain; version=0.0.4' },
      async handler() {
        return Reply.text(await deps.metrics.render(), deps.metrics.contentType);
      },
    }),
  ];
}
