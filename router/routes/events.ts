// Engagement events (planned in the spec): first-party clicks for relevance tuning. Validated
// and authorized now (public keys may send them); storing them comes with the click pipeline.
import { Type } from '@sinclair/typebox';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { ClickEvent } from '../schemas.js';
import { pending } from './common.js';

export function eventRoutes(deps: RouterDeps): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/events/click',
      operationId: 'recordClick',
      summary: 'Record a click on a suggestion (planned)',
      tags: ['events'],
      access: 'public',
      tenant: true,
      body: ClickEvent,
      response: { description: 'The event was accepted.', schema: Type.Object({ accepted: Type.Boolean() }) },
      errors: ['not_implemented'],
      handler: pending(deps, 'Click events (the engagement event pipeline)'),
    }),
  ];
}
