// Every route module of the router, by module name. The order is the order of the OpenAPI
// document.
import type { Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { adminRoutes } from './admin.js';
import { ardRoutes } from './ard.js';
import { clusterRoutes } from './cluster.js';
import { discoveryRoutes } from './discovery.js';
import { documentRoutes } from './documents.js';
import { eventRoutes } from './events.js';
import { exportRoutes } from './exports.js';
import { indexRoutes } from './indexes.js';
import { ingestionRoutes } from './ingestion.js';
import { integrationRoutes } from './integrations.js';
import { jobRoutes } from './jobs.js';
import { operationRoutes } from './operations.js';
import { searchRoutes } from './search.js';

export const ROUTE_MODULES: Record<string, (deps: RouterDeps) => Route[]> = {
  search: searchRoutes,
  events: eventRoutes,
  indexes: indexRoutes,
  documents: documentRoutes,
  ingestion: ingestionRoutes,
  jobs: jobRoutes,
  exports: exportRoutes,
  integrations: integrationRoutes,
  admin: adminRoutes,
  cluster: clusterRoutes,
  discovery: discoveryRoutes,
  ard: ardRoutes,
  operations: operationRoutes,
};

export function allRoutes(deps: RouterDeps): Route[] {
  return Object.values(ROUTE_MODULES).flatMap((make) => make(deps));
}
