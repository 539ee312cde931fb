// An engine of some build of the service, loaded from that tree's `dist/` at run time (the
// in-process scripts import no engine code, so that two builds can be compared side by side),
// holding a catalogue and ready for the kind of query asked for.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** What the in-process scripts call of `SuggestEngine`. */
export interface EngineOfBuild {
  typeahead(req: { query: string; limit: number }): unknown;
  autocomplete(req: { query: string; limit: number; mode: string; stats?: unknown }): unknown;
  upsert(docs: unknown[]): void;
  remove(ids: Iterable<string>): number;
  optimize(): void;
  refresh(): void;
  collectionStats(terms: readonly string[]): unknown;
  whenVectorsReady?(): Promise<void>;
}

/** The `file:` URL of a build's compiled tree (`DIR/dist`), to import its modules from. */
export function distUrl(dir: string): string {
  return pathToFileURL(path.resolve(dir, 'dist')).href;
}

/**
 * A new engine of the build in `dir` holding `docs` in one segment; for a kind of query that
 * searches vectors, once its ANN graphs are built. `memoMb` sets the build's memo budget.
 */
export async function loadEngine(dir: string, docs: readonly unknown[], kind: string, memoMb?: number): Promise<EngineOfBuild> {
  const root = distUrl(dir);
  const { SuggestEngine } = (await import(`${root}/shard/engine/engine.js`)) as { SuggestEngine: new (o: object) => EngineOfBuild };
  if (memoMb !== undefined) {
    const { memoBudget } = (await import(`${root}/shard/engine/memo.js`)) as { memoBudget: { setLimit(bytes: number): void } };
    memoBudget.setLimit(memoMb * 1024 * 1024);
  }
  const engine = new SuggestEngine({});
  engine.upsert([...docs]);
  engine.optimize();
  if (kind !== 'typeahead' && kind !== 'fts_only') {
    // the ANN graphs (of the default library, the one queries use) build on timers: keep the
    // loop alive until they are done
    const keep = setInterval(() => {}, 1000);
    await engine.whenVectorsReady?.();
    clearInterval(keep);
  }
  return engine;
}
