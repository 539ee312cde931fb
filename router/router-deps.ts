// What route modules are given: the shared services of one router instance.
import type { Coordinator } from '../coordinator/coordinator.js';
import type { Config } from '../node/runtime/config.js';
import type { NodeId } from '../node/runtime/ids.js';
import type { Logger } from '../node/runtime/log.js';
import type { Metrics } from '../node/runtime/metrics.js';
import type { Auth } from './auth.js';
import type { DataPlane } from './data-plane.js';
import type { DocumentLimits } from './document-limits.js';
import type { JobService } from './job-service.js';
import type { Signer } from './signing.js';
import type { MetaHub } from './sse.js';
import type { SearchService } from './search-service.js';
import type { PredictService } from './predict-service.js';

/** The OpenAPI document, rendered once after every route is registered. */
export interface Contract {
  json: string;
  yaml: string;
}

export interface RouterDeps {
  config: Config;
  coordinator: Coordinator;
  data: DataPlane;
  auth: Auth;
  limits: DocumentLimits;
  search: SearchService;
  predict: PredictService;
  metrics: Metrics;
  log: Logger;
  nodeId: NodeId;
  contract: () => Contract;
  /** ingestion and export jobs, their files and the active-job tracker */
  jobs: JobService;
  /** HMAC signatures of presigned upload URLs and export links */
  signer: Signer;
  /** index and job events for the server-sent event streams */
  events: MetaHub;
}
