// A workload file (loadtest/workloads/*.json) describes one load test as data: the route, the
// query-string template, the load shape and where the query texts come from. This module reads
// and checks one, and turns its query source into the list of request paths the driver cycles.
import { readFileSync } from 'node:fs';
import { keystrokeStream, loadWeightedQueries, parseQuerySources, queryStream } from '../data/keystrokes.js';

export interface KeystrokeSource {
  kind: 'keystrokes';
  /** query sources: "homedepot", "bestbuy-log" */
  from: string[];
  /** typed queries drawn (each expands to one request per keystroke) */
  sessions: number;
  seed: number;
  /** shortest prefix sent */
  min_prefix: number;
}

export interface WholeQuerySource {
  kind: 'queries';
  from: string[];
  /** queries drawn */
  count: number;
  seed: number;
}

export interface Workload {
  name: string;
  description: string;
  route: '/v1/typeahead' | '/v1/autocomplete';
  /** query-string parameters; "{query}" and "{index}" are substituted, values URL-encoded */
  params: Record<string, string>;
  headers: Record<string, string>;
  connections: number;
  pipelining: number;
  /** measured seconds per round and target */
  duration_s: number;
  /** unmeasured seconds per target before the first round */
  warmup_s: number;
  /** measured rounds per target, alternating baseline and target */
  rounds: number;
  /** per-request timeout */
  timeout_s: number;
  source: KeystrokeSource | WholeQuerySource;
}

const ROUTES = ['/v1/typeahead', '/v1/autocomplete'];
/** every round stops by itself: a mistyped duration must not hold the machine for hours */
const MAX_DURATION_S = 600;

export function parseWorkload(value: unknown, origin = 'workload'): Workload {
  const fail = (msg: string): never => {
    throw new Error(`${origin}: ${msg}`);
  };
  if (typeof value !== 'object' || value === null) fail('not a JSON object');
  const w = value as Partial<Workload>;
  if (typeof w.name !== 'string' || !w.name) fail('name must be a non-empty string');
  if (!ROUTES.includes(w.route as string)) fail(`route must be one of ${ROUTES.join(', ')}`);
  if (typeof w.params !== 'object' || w.params === null) fail('params must be an object');
  if (!Object.values(w.params!).some((v) => v.includes('{query}'))) fail('params must use "{query}"');
  const int = (k: keyof Workload, min: number, max: number) => {
    const v = w[k];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) fail(`${k} must be an integer in ${min}..${max}`);
  };
  int('connections', 1, 10_000);
  int('pipelining', 1, 100);
  int('duration_s', 1, MAX_DURATION_S);
  int('warmup_s', 0, MAX_DURATION_S);
  int('rounds', 1, 100);
  int('timeout_s', 1, 120);
  const s = w.source;
  if (!s || (s.kind !== 'keystrokes' && s.kind !== 'queries')) fail('source.kind must be "keystrokes" or "queries"');
  if (!Array.isArray(s!.from) || s!.from.length === 0) fail('source.from must list query sources');
  parseQuerySources(s!.from);
  return { description: '', headers: {}, ...w } as Workload;
}

export function loadWorkload(file: string): Workload {
  return parseWorkload(JSON.parse(readFileSync(file, 'utf8')), file);
}

/** The query texts of the workload, in the order they are sent. */
export function workloadQueries(w: Workload): string[] {
  const queries = loadWeightedQueries(parseQuerySources(w.source.from));
  return w.source.kind === 'keystrokes'
    ? keystrokeStream(queries, { sessions: w.source.sessions, seed: w.source.seed, minPrefix: w.source.min_prefix })
    : queryStream(queries, { count: w.source.count, seed: w.source.seed });
}

/** `route?params` with the template filled in for one query text. */
export function requestPath(w: Pick<Workload, 'route' | 'params'>, query: string, index: string): string {
  const qs = Object.entries(w.params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.replace(/\{(query|index)\}/g, (_, slot: string) => (slot === 'query' ? query : index)))}`)
    .join('&');
  return `${w.route}?${qs}`;
}

/**
 * `NAME=VALUE,NAME=VALUE`: the environment settings of a single node compared with the target
 * (run-load `--compare-env`). A value may hold `=` (`NODE_OPTIONS=--max-semi-space-size=4`) but
 * not a comma.
 */
export function parseEnvSettings(spec: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of spec.split(',')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(pair);
    if (m === null) throw new Error(`expected NAME=VALUE pairs separated by commas, got '${pair}'`);
    env[m[1]!] = m[2]!;
  }
  return env;
}
