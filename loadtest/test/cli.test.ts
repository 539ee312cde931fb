// The load tools' command lines: --help lists the options, a wrong option is one line on stderr
// and exit code 2 (a real tool from dist/, run as a person would).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAIN_JS } from '../../node/runtime/process-harness.js';
import { usage } from '../load/cli.js';

const tool = path.resolve(path.dirname(MAIN_JS), '../loadtest/engine-ab.js');
const run = (...args: string[]) => spawnSync(process.execPath, [tool, ...args], { encoding: 'utf8', timeout: 30_000 });

describe('load tool command lines', () => {
  it('lists the options with their defaults', () => {
    const text = usage('x.js', { options: { sessions: { type: 'string', default: '4000' }, quiet: { type: 'boolean' } } });
    expect(text).toContain('--sessions <sessions>  (default "4000")');
    expect(text).toContain('  --quiet\n');
    const help = run('--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('usage: node engine-ab.js');
    expect(help.stdout).toContain('--kind <kind>  (default "typeahead")');
  });

  it('answers a wrong option with one line and exit code 2, not a stack trace', () => {
    for (const args of [['--bogus'], ['--a', '.', '--b', '.', '--sessions']]) {
      const r = run(...args);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^engine-ab\.js: .*(Unknown option '--bogus'|'--sessions <value>' argument missing)/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
