// Where the benchmark data lives and how its files are read. The data is kept outside the
// repository (licences: see SOURCES.md beside it), so the directory is resolved at run time:
// `SUGGEST_BENCH_DATA` when set, else the `shared/data` folder next to the repository.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const here = path.dirname(fileURLToPath(import.meta.url));
/** Repository root, whether this module runs from `loadtest/data/` (vitest) or `dist/loadtest/data/`. */
export const REPO_ROOT = path.resolve(here, here.includes(`${path.sep}dist${path.sep}`) ? '../../..' : '../..');

export const DATA_FILES = {
  homedepotTrain: 'homedepot_train.csv.gz',
  homedepotSpellcheck: 'homedepot_query_spellcheck.txt',
  bestbuyProducts: 'bestbuy_products_3291.json',
  bestbuyQueryLog: 'bestbuy_xbox_query_log.csv.gz',
  bigbasketProducts: 'bigbasket_products.csv',
} as const;

export type DataFile = keyof typeof DATA_FILES;

export function dataDir(): string {
  return process.env['SUGGEST_BENCH_DATA'] ?? path.resolve(REPO_ROOT, '../shared/data');
}

export function dataPath(file: DataFile): string {
  return path.join(dataDir(), DATA_FILES[file]);
}

/** The file's text: gunzipped when its name ends in `.gz`, decoded with `encoding`. */
export function readDataText(file: DataFile, encoding: BufferEncoding = 'utf8'): string {
  const p = dataPath(file);
  const bytes = readFileSync(p);
  return (p.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString(encoding);
}
