// A node started with a setting it cannot take stops at once with one line naming the variable,
// before it opens a port or a data directory, instead of running on a default nobody chose.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAIN_JS } from '../runtime/process-harness.js';

const base = mkdtempSync(path.join(tmpdir(), 'suggest-config-start-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('a start with a malformed setting', () => {
  it.each([
    ['SUGGEST_LOAD_WAIT_MS', '2s', /^configuration error: SUGGEST_LOAD_WAIT_MS: expected a number, got '2s'$/],
    ['SUGGEST_QUERY_THREADS', '-1', /^configuration error: SUGGEST_QUERY_THREADS must be a whole number of at least 0, got '-1'$/],
    ['SUGGEST_TYPEAHEAD_THREADS', 'yes', /^configuration error: SUGGEST_TYPEAHEAD_THREADS must be 1 or 0, got 'yes'$/],
    ['SUGGEST_LOG_LEVEL', 'loud', /^configuration error: SUGGEST_LOG_LEVEL must be one of debug, info, warn, error, got 'loud'$/],
  ])('%s=%s exits with status 2 and says what is wrong', (name, value, message) => {
    const dataDir = path.join(base, name);
    const run = spawnSync(process.execPath, [MAIN_JS], { env: { ...process.env, SUGGEST_PORT: '0', SUGGEST_GRPC_PORT: '0', SUGGEST_DATA_DIR: dataDir, [name]: value }, encoding: 'utf8', timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toMatch(message);
    expect(run.stdout).not.toContain('"ready"');
    expect(existsSync(dataDir)).toBe(false);
  });
});
