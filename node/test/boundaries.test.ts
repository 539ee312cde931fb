// The folder boundaries ARCHITECTURE.md fixes, checked on every import of every source file:
// router/ never reaches into shard/ or the coordinator's implementations, shard/ never into
// router/, coordinator/ into neither, node/runtime/ into no role, loadtest/ into no role's
// internals (it talks HTTP and gRPC, and may use the process harness).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(path.join(root, dir))) {
    const rel = path.join(dir, name);
    if (name === 'node_modules' || name === 'gen') continue;
    if (statSync(path.join(root, rel)).isDirectory()) out.push(...sources(rel));
    else if (name.endsWith('.ts')) out.push(rel);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec && spec.startsWith('.')) found.push(path.normalize(path.join(path.dirname(file), spec)));
  }
  return found;
}

const isTest = (f: string) => f.split(path.sep).includes('test') || f.split(path.sep).includes('bench');

/** [source folder, forbidden target prefixes, allowed exceptions] */
const RULES: [string, string[], string[]][] = [
  ['router', ['shard', 'coordinator', 'loadtest'], ['coordinator/coordinator.js']],
  ['shard', ['router', 'coordinator', 'loadtest'], ['coordinator/coordinator.js']],
  ['coordinator', ['router', 'shard', 'loadtest'], []],
  ['proto', ['router', 'shard', 'coordinator', 'node', 'loadtest'], []],
  ['node/runtime', ['router', 'shard', 'coordinator', 'loadtest'], ['coordinator/coordinator.js']],
];

describe('folder boundaries', () => {
  for (const [from, forbidden, allowed] of RULES) {
    it(`${from}/ imports only what it may`, () => {
      const violations: string[] = [];
      for (const file of sources(from).filter((f) => !isTest(f))) {
        for (const target of importsOf(file)) {
          if (allowed.some((a) => target === path.normalize(a))) continue;
          if (forbidden.some((f) => target === f || target.startsWith(f + path.sep))) violations.push(`${file} -> ${target}`);
        }
      }
      expect(violations).toEqual([]);
    });
  }

  it('finds the imports it checks (the scanner itself works)', () => {
    expect(importsOf('node/main.ts')).toContain(path.normalize('router/router-app.js'));
  });
});
