// The service's Prometheus /metrics as the load scripts read it: a parser of the text exposition
// format (version 0.0.4) and a lookup of one series' value by its name and labels. Only samples
// are read; # HELP and # TYPE lines and timestamps are skipped, as the scripts want current values.

/** One sample line: a series (name and labels) and its value. */
export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

/** The value of the series with exactly these labels (none when omitted); undefined when absent. */
export type MetricLookup = (name: string, labels?: Readonly<Record<string, string>>) => number | undefined;

const LABEL_NAME = String.raw`[a-zA-Z_][a-zA-Z0-9_]*`;
// a label value may hold \\, \" and \n escapes, and commas and braces: pairs are matched whole,
// never split on commas
const QUOTED = String.raw`"(?:[^"\\]|\\.)*"`;
const PAIR = String.raw`${LABEL_NAME}\s*=\s*${QUOTED}`;
const SAMPLE = new RegExp(
  String.raw`^([a-zA-Z_:][a-zA-Z0-9_:]*)` + // name
    String.raw`(?:\s*\{\s*(${PAIR}(?:\s*,\s*${PAIR})*)?\s*,?\s*\})?` + // labels, a trailing comma allowed
    String.raw`\s+(\S+)(?:\s+-?\d+)?$`, // value, then an optional timestamp
);
const LABEL_PAIR = new RegExp(String.raw`(${LABEL_NAME})\s*=\s*(${QUOTED})`, 'g');
// Prometheus reads these in any case, and prom-client writes NaN as "Nan"
const SPECIAL_VALUES: Readonly<Record<string, number>> = { nan: NaN, inf: Infinity, '+inf': Infinity, '-inf': -Infinity };

/** The samples of an exposition text, in order; throws on a line that is not one. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    const value = m === null ? undefined : sampleValue(m[3] as string);
    if (m === null || value === undefined) throw new Error(`not a Prometheus sample: ${line}`);
    samples.push({ name: m[1] as string, labels: labelsOf(m[2] ?? ''), value });
  }
  return samples;
}

function sampleValue(text: string): number | undefined {
  const special = SPECIAL_VALUES[text.toLowerCase()];
  if (special !== undefined) return special;
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

function labelsOf(pairs: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const [, name, quoted] of pairs.matchAll(LABEL_PAIR)) {
    labels[name as string] = (quoted as string).slice(1, -1).replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

/** A lookup over parsed samples. */
export function metricLookup(samples: readonly Sample[]): MetricLookup {
  // a series is named by all its labels: matching a subset could pick any of several series
  const key = (name: string, labels: Readonly<Record<string, string>>) => JSON.stringify([name, Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1))]);
  const values = new Map(samples.map((s) => [key(s.name, s.labels), s.value]));
  return (name, labels = {}) => values.get(key(name, labels));
}

/** The samples of one scrape of `${base}/metrics`; throws when it is refused or unreadable. */
async function scrape(base: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${base}/metrics`, { headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${base}/metrics answered HTTP ${res.status}: ${text.slice(0, 200)}`);
  return parseExposition(text);
}

/** Scrapes `${base}/metrics` once. */
export async function readMetrics(base: string, headers: Record<string, string> = {}): Promise<MetricLookup> {
  return metricLookup(await scrape(base, headers));
}

/** Response-cache lookups of a service, over its caches of answers (`*_response`). */
export interface CacheLookups {
  hit: number;
  miss: number;
}

/**
 * The service's response-cache lookups so far (`suggest_cache_lookups_total` of the caches of
 * answers), or null when `base` has no readable /metrics (a baseline server).
 */
export async function cacheLookups(base: string): Promise<CacheLookups | null> {
  let samples: Sample[];
  try {
    samples = await scrape(base);
  } catch {
    return null;
  }
  // the API-key cache is counted under the same name: every request looks its key up
  const counted = samples.filter((s) => s.name === 'suggest_cache_lookups_total' && s.labels.cache?.endsWith('_response') === true);
  if (counted.length === 0) return null;
  const sum = (result: string) => counted.filter((s) => s.labels.result === result).reduce((n, s) => n + s.value, 0);
  return { hit: sum('hit'), miss: sum('miss') };
}

/** Hits over lookups (NaN when there were none). */
export function hitRatio(l: CacheLookups): number {
  return l.hit / (l.hit + l.miss);
}
