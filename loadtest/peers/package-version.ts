// The installed version of a package, for result files (some packages do not export their
// package.json, so it is found by walking up from the resolved entry point).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

export function packageVersion(name: string): string {
  let dir = path.dirname(require.resolve(name));
  while (dir !== path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name && pkg.version) return pkg.version;
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}
