// Per-stage timings (profile=true): the stages partition the engine's time, name what ran, and
// leave the answer itself unchanged.
import { describe, expect, it } from 'vitest';
import { SuggestEngine } from '../engine.js';
import { StageClock, type EngineProfile } from '../stage-clock.js';
import { loadBestBuy } from './helpers.js';

const spin = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

function expectPartition(p: EngineProfile): void {
  const sum = Object.values(p.stages).reduce((a, b) => a + b, 0);
  // each figure is rounded to the microsecond
  expect(Math.abs(sum - p.engine_ms)).toBeLessThanOrEqual(0.0005 * (Object.keys(p.stages).length + 1));
  for (const ms of Object.values(p.stages)) expect(ms).toBeGreaterThanOrEqual(0);
}

describe('StageClock', () => {
  it('charges each lap to its stage, adds repeated stages up, and partitions the whole', () => {
    const clock = new StageClock();
    spin(2);
    clock.lap('a');
    spin(1);
    clock.lap('b');
    spin(1);
    clock.lap('a');
    const p = clock.report();
    expect(Object.keys(p.stages)).toEqual(['a', 'b']);
    // both laps of `a` (2 + 1 ms) add up; wall-clock spins only lengthen when the thread is
    // preempted, so lower bounds are all that hold on a busy machine (b < a failed once)
    expect(p.stages.a).toBeGreaterThanOrEqual(3);
    expect(p.stages.b).toBeGreaterThanOrEqual(1);
    expectPartition(p);
  });
});

describe('engine profile', () => {
  const engine = new SuggestEngine({ vectors: { exactBelow: 1_000_000 } });
  engine.upsert(loadBestBuy().slice(0, 1500));
  engine.optimize();

  it('times autocomplete by stage, lexical passes included, and answers the same', () => {
    for (const req of [{ query: 'samsung galaxy' }, { query: 'samsng galxy case for iph', mode: 'hybrid' as const }, { query: 'zzqx wireless', mode: 'fts_rerank' as const }]) {
      const plain = engine.autocomplete(req);
      expect(plain.profile).toBeUndefined();
      const profiled = engine.autocomplete({ ...req, profile: true });
      const { profile, ...rest } = profiled;
      expect(rest).toEqual(plain);
      expect(profile).toBeDefined();
      expectPartition(profile!);
      expect(Object.keys(profile!.stages)).toEqual(expect.arrayContaining(['snapshot', 'analyze', 'lexical_expand', 'lexical_strict', 'render']));
      if (req.mode === 'hybrid') expect(Object.keys(profile!.stages)).toEqual(expect.arrayContaining(['embed', 'fuse', 'correct']));
      if (req.mode === 'fts_rerank') expect(Object.keys(profile!.stages)).toEqual(expect.arrayContaining(['embed', 'rerank', 'lexical_drop']));
    }
  });

  it('times typeahead by stage, the product fallback and spelling included', () => {
    const plain = engine.typeahead({ query: 'samsng galaxy s7 32gb bl' });
    const { profile, ...rest } = engine.typeahead({ query: 'samsng galaxy s7 32gb bl', profile: true });
    expect(rest).toEqual(plain);
    expectPartition(profile!);
    expect(Object.keys(profile!.stages)).toEqual(expect.arrayContaining(['analyze', 'tables', 'spelling', 'rank', 'lexical_strict', 'fallback']));
  });
});
