// Placement settings from the environment: defaults, overrides, and refusal of values that would
// stall moves (0 concurrent moves), keep no copy (replication factor 0) or fail nodes over on
// every hiccup (a zero or fractional lease TTL).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';

describe('placement configuration', () => {
  it('defaults: replication factor 1, 2 concurrent moves, 10 s member lease', () => {
    const c = loadConfig({});
    expect([c.replicationFactor, c.maxConcurrentMoves, c.memberTtlSeconds]).toEqual([1, 2, 10]);
  });

  it('reads SUGGEST_REPLICATION_FACTOR, SUGGEST_MAX_CONCURRENT_MOVES and SUGGEST_MEMBER_TTL_SECONDS', () => {
    const c = loadConfig({ SUGGEST_REPLICATION_FACTOR: '3', SUGGEST_MAX_CONCURRENT_MOVES: '4', SUGGEST_MEMBER_TTL_SECONDS: '10' });
    expect([c.replicationFactor, c.maxConcurrentMoves, c.memberTtlSeconds]).toEqual([3, 4, 10]);
  });

  it('refuses values below 1, fractions and words, naming the variable', () => {
    expect(() => loadConfig({ SUGGEST_REPLICATION_FACTOR: '0' })).toThrow(/SUGGEST_REPLICATION_FACTOR/);
    expect(() => loadConfig({ SUGGEST_MAX_CONCURRENT_MOVES: '-1' })).toThrow(/SUGGEST_MAX_CONCURRENT_MOVES/);
    expect(() => loadConfig({ SUGGEST_MEMBER_TTL_SECONDS: '0.5' })).toThrow(/SUGGEST_MEMBER_TTL_SECONDS/);
    expect(() => loadConfig({ SUGGEST_MAX_CONCURRENT_MOVES: 'two' })).toThrow(/expected a number/);
  });
});

describe('memo budget configuration', () => {
  it('defaults to 256 MB, reads SUGGEST_MEMO_BUDGET_MB and refuses a budget below 1 MB', () => {
    expect(loadConfig({}).memoBudgetMb).toBe(256);
    expect(loadConfig({ SUGGEST_MEMO_BUDGET_MB: '2048' }).memoBudgetMb).toBe(2048);
    expect(() => loadConfig({ SUGGEST_MEMO_BUDGET_MB: '0' })).toThrow(/SUGGEST_MEMO_BUDGET_MB/);
    expect(() => loadConfig({ SUGGEST_MEMO_BUDGET_MB: 'lots' })).toThrow(/expected a number/);
  });
});

describe('response cache and engine idle settings', () => {
  it('default to 128 MB and 1800 s, take 0 (nothing cached, never unloaded) and refuse negatives and words, naming the variable', () => {
    const c = loadConfig({});
    expect([c.responseCacheMb, c.engineIdleSeconds]).toEqual([128, 1800]);
    const set = loadConfig({ SUGGEST_RESPONSE_CACHE_MB: '0', SUGGEST_ENGINE_IDLE_SECONDS: '0' });
    expect([set.responseCacheMb, set.engineIdleSeconds]).toEqual([0, 0]);
    expect(loadConfig({ SUGGEST_RESPONSE_CACHE_MB: '512', SUGGEST_ENGINE_IDLE_SECONDS: '2.5' })).toMatchObject({ responseCacheMb: 512, engineIdleSeconds: 2.5 });
    expect(() => loadConfig({ SUGGEST_RESPONSE_CACHE_MB: '-1' })).toThrow(/SUGGEST_RESPONSE_CACHE_MB must be a number, 0 or more, got '-1'/);
    expect(() => loadConfig({ SUGGEST_ENGINE_IDLE_SECONDS: 'soon' })).toThrow(/SUGGEST_ENGINE_IDLE_SECONDS: expected a number, got 'soon'/);
  });
});

describe('refresh interval', () => {
  it('defaults to 20 ms, takes whole milliseconds from 1 to 1000 and stops the start on anything else', () => {
    expect(loadConfig({}).refreshIntervalMs).toBe(20);
    expect(loadConfig({ SUGGEST_REFRESH_INTERVAL_MS: '50' }).refreshIntervalMs).toBe(50);
    expect(loadConfig({ SUGGEST_REFRESH_INTERVAL_MS: '1' }).refreshIntervalMs).toBe(1);
    for (const bad of ['0', '1001', '2.5', '-5']) {
      expect(() => loadConfig({ SUGGEST_REFRESH_INTERVAL_MS: bad })).toThrow(new RegExp(`SUGGEST_REFRESH_INTERVAL_MS must be a whole number of milliseconds from 1 to 1000, got '${bad}'`));
    }
    expect(() => loadConfig({ SUGGEST_REFRESH_INTERVAL_MS: 'often' })).toThrow(/SUGGEST_REFRESH_INTERVAL_MS: expected a number, got 'often'/);
  });
});

describe('replica reads', () => {
  it('are on unless SUGGEST_REPLICA_READS is 0 or false, and anything but 1/0/true/false stops the start', () => {
    expect(loadConfig({}).replicaReads).toBe(true);
    expect(loadConfig({ SUGGEST_REPLICA_READS: '0' }).replicaReads).toBe(false);
    expect(loadConfig({ SUGGEST_REPLICA_READS: 'true' }).replicaReads).toBe(true);
    expect(() => loadConfig({ SUGGEST_REPLICA_READS: 'maybe' })).toThrow(/SUGGEST_REPLICA_READS must be 1 or 0, got 'maybe'/);
  });
});

describe('query streams', () => {
  it('are on unless SUGGEST_QUERY_STREAMS is 0 or false, and anything but 1/0/true/false stops the start', () => {
    expect(loadConfig({}).queryStreams).toBe(true);
    expect(loadConfig({ SUGGEST_QUERY_STREAMS: '1' }).queryStreams).toBe(true);
    expect(loadConfig({ SUGGEST_QUERY_STREAMS: '0' }).queryStreams).toBe(false);
    expect(loadConfig({ SUGGEST_QUERY_STREAMS: 'false' }).queryStreams).toBe(false);
    expect(() => loadConfig({ SUGGEST_QUERY_STREAMS: 'off' })).toThrow(/SUGGEST_QUERY_STREAMS must be 1 or 0, got 'off'/);
  });
});

describe('default vector backend', () => {
  it('takes hnswlib or usearch and stops the start on anything else', () => {
    expect(() => loadConfig({ SUGGEST_VECTOR_BACKEND: 'usearch' })).not.toThrow();
    expect(() => loadConfig({ SUGGEST_VECTOR_BACKEND: 'hnswlib' })).not.toThrow();
    expect(() => loadConfig({ SUGGEST_VECTOR_BACKEND: 'faiss' })).toThrow(/SUGGEST_VECTOR_BACKEND must be 'hnswlib' or 'usearch', got 'faiss'/);
    expect(() => loadConfig({ SUGGEST_VECTOR_BACKEND: '' })).toThrow(/SUGGEST_VECTOR_BACKEND/);
  });
});

describe('operations port of a process without the router role', () => {
  it('is off unless SUGGEST_METRICS_PORT is set, takes 0 (a free port) to 65535, and refuses anything else', () => {
    expect(loadConfig({}).metricsPort).toBeNull();
    expect(loadConfig({ SUGGEST_METRICS_PORT: '' }).metricsPort).toBeNull();
    expect(loadConfig({ SUGGEST_METRICS_PORT: '0' }).metricsPort).toBe(0);
    expect(loadConfig({ SUGGEST_METRICS_PORT: '9464' }).metricsPort).toBe(9464);
    for (const bad of ['-1', '65536', '80.5', 'http']) expect(() => loadConfig({ SUGGEST_METRICS_PORT: bad }), bad).toThrow(/SUGGEST_METRICS_PORT/);
  });
});

describe('threads and query waits', () => {
  it('default to 2 segment threads, query threads by core count, waits of 250 ms and 2 s, and a warm-up after 3 s without writes', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ segmentThreads: 2, queryThreads: null, typeaheadOnThreads: false, graphsOnPool: true, freshWaitMs: 250, loadWaitMs: 2_000, warmAfterWritesMs: 3_000, restoreEngines: true });
  });

  it('read their variables, 0 included', () => {
    const c = loadConfig({
      SUGGEST_SEGMENT_THREADS: '0',
      SUGGEST_QUERY_THREADS: '0',
      SUGGEST_TYPEAHEAD_THREADS: '1',
      SUGGEST_GRAPH_THREAD: '0',
      SUGGEST_FRESH_WAIT_MS: '0',
      SUGGEST_LOAD_WAIT_MS: '600000',
      SUGGEST_WARM_AFTER_WRITES_MS: '0',
      SUGGEST_RESTORE_ENGINES: 'false',
    });
    expect(c).toMatchObject({ segmentThreads: 0, queryThreads: 0, typeaheadOnThreads: true, graphsOnPool: false, freshWaitMs: 0, loadWaitMs: 600_000, warmAfterWritesMs: 0, restoreEngines: false });
    expect(loadConfig({ SUGGEST_QUERY_THREADS: '3' }).queryThreads).toBe(3);
  });

  it('stop the start on a word, a negative or a fraction, naming the variable, instead of falling back quietly', () => {
    expect(() => loadConfig({ SUGGEST_LOAD_WAIT_MS: '2s' })).toThrow(/SUGGEST_LOAD_WAIT_MS: expected a number, got '2s'/);
    expect(() => loadConfig({ SUGGEST_FRESH_WAIT_MS: '-1' })).toThrow(/SUGGEST_FRESH_WAIT_MS must be a whole number of at least 0, got '-1'/);
    expect(() => loadConfig({ SUGGEST_QUERY_THREADS: '1.5' })).toThrow(/SUGGEST_QUERY_THREADS/);
    expect(() => loadConfig({ SUGGEST_SEGMENT_THREADS: 'two' })).toThrow(/SUGGEST_SEGMENT_THREADS/);
    expect(() => loadConfig({ SUGGEST_WARM_AFTER_WRITES_MS: '-3000' })).toThrow(/SUGGEST_WARM_AFTER_WRITES_MS/);
    expect(() => loadConfig({ SUGGEST_TYPEAHEAD_THREADS: 'yes' })).toThrow(/SUGGEST_TYPEAHEAD_THREADS must be 1 or 0, got 'yes'/);
    expect(() => loadConfig({ SUGGEST_RESTORE_ENGINES: 'no' })).toThrow(/SUGGEST_RESTORE_ENGINES/);
    expect(() => loadConfig({ SUGGEST_GRAPH_THREAD: 'off' })).toThrow(/SUGGEST_GRAPH_THREAD/);
  });

  it('are checked when they come from the SUGGEST_CONFIG file too', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'suggest-config-'));
    try {
      const file = (settings: object): string => {
        const f = path.join(dir, `${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(f, JSON.stringify(settings));
        return f;
      };
      expect(loadConfig({ SUGGEST_CONFIG: file({ loadWaitMs: 500, restoreEngines: false }) })).toMatchObject({ loadWaitMs: 500, restoreEngines: false });
      expect(() => loadConfig({ SUGGEST_CONFIG: file({ loadWaitMs: -5 }) })).toThrow(/SUGGEST_LOAD_WAIT_MS must be a whole number of at least 0, got '-5'/);
      expect(() => loadConfig({ SUGGEST_CONFIG: file({ restoreEngines: 'no' }) })).toThrow(/SUGGEST_RESTORE_ENGINES must be true or false, got 'no'/);
      expect(() => loadConfig({ SUGGEST_CONFIG: file({ logLevel: 'loud' }) })).toThrow(/SUGGEST_LOG_LEVEL must be one of/);
      expect(() => loadConfig({ SUGGEST_CONFIG: file([1, 2]) })).toThrow(/SUGGEST_CONFIG: '.*' must hold a JSON object of settings/);
      const broken = path.join(dir, 'broken.json');
      writeFileSync(broken, '{"loadWaitMs": 5,');
      expect(() => loadConfig({ SUGGEST_CONFIG: broken })).toThrow(/SUGGEST_CONFIG: '.*broken.json' is not JSON/);
      expect(() => loadConfig({ SUGGEST_CONFIG: path.join(dir, 'missing.json') })).toThrow(/SUGGEST_CONFIG: cannot read '.*missing.json'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('ports, partitions, job and event settings out of their range stop the start', () => {
    expect(() => loadConfig({ SUGGEST_PORT: '70000' })).toThrow(/SUGGEST_PORT must be a port \(0 to 65535\), got '70000'/);
    expect(() => loadConfig({ SUGGEST_GRPC_PORT: '-1' })).toThrow(/SUGGEST_GRPC_PORT must be a port/);
    expect(() => loadConfig({ SUGGEST_PARTITIONS: '0' })).toThrow(/SUGGEST_PARTITIONS must be a whole number of at least 1, got '0'/);
    expect(() => loadConfig({ SUGGEST_JOB_BATCH_SIZE: '2.5' })).toThrow(/SUGGEST_JOB_BATCH_SIZE/);
    expect(() => loadConfig({ SUGGEST_EVENTS_PER_SECOND: '0' })).toThrow(/SUGGEST_EVENTS_PER_SECOND must be a number above 0, got '0'/);
    expect(() => loadConfig({ SUGGEST_REUSE_PORT: 'yes' })).toThrow(/SUGGEST_REUSE_PORT must be 1 or 0, got 'yes'/);
    expect(loadConfig({ SUGGEST_EVENTS_PER_SECOND: '0.5', SUGGEST_PORT: '0', SUGGEST_REUSE_PORT: '1' })).toMatchObject({ eventsPerSecond: 0.5, port: 0, reusePort: true });
  });

  it('a log level other than debug, info, warn or error stops the start', () => {
    expect(loadConfig({ SUGGEST_LOG_LEVEL: 'warn' }).logLevel).toBe('warn');
    expect(() => loadConfig({ SUGGEST_LOG_LEVEL: 'verbose' })).toThrow(/SUGGEST_LOG_LEVEL must be one of debug, info, warn, error, got 'verbose'/);
  });
});
