import { loadCatalogSpec } from './dist/loadtest/data/catalog.js';
import { keystrokeStream, loadWeightedQueries, parseQuerySources } from './dist/loadtest/data/keystrokes.js';
import { SuggestEngine } from './dist/shard/engine/engine.js';
const docs = loadCatalogSpec('bestbuy,homedepot');
const weighted = loadWeightedQueries(parseQuerySources(['homedepot', 'bestbuy-log']));
const stream = keystrokeStream(weighted, { sessions: 8000, seed: 2, minPrefix: 1 });
const e = new SuggestEngine({}); e.upsert([...docs]); e.optimize();
for (const q of stream) e.typeahead({ query: q, limit: 10 });
const tot = new Map(); let n = 0; let fb = 0; let fbTime = 0; const byWords = new Map();
const t0 = performance.now();
for (const q of stream) {
  const a = performance.now();
  const r = e.typeahead({ query: q, limit: 10, profile: true });
  const dt = performance.now() - a;
  n++;
  const st = r.profile?.stages ?? r.profile;
  let hasFb = false;
  for (const [k, v] of Object.entries(st ?? {})) { if (typeof v === 'number') { tot.set(k, (tot.get(k) ?? 0) + v); if (k.startsWith('fallback') || k.startsWith('lexical')) hasFb = hasFb || v > 0; } }
  if (hasFb) { fb++; fbTime += dt; }
  const w = q.trim().split(/\s+/).length;
  const key = (w > 3 ? 4 : w) + (q.endsWith(' ') ? 's' : '');
  const S = (globalThis.S ??= new Map()); const m = S.get(key) ?? { n: 0, t: 0 }; m.n++; m.t += dt; for (const [k, v] of Object.entries(st ?? {})) if (typeof v === 'number') m[k] = (m[k] ?? 0) + v; S.set(key, m);
  const o = byWords.get(w) ?? [0, 0]; o[0]++; o[1] += dt; byWords.set(w, o);
}
console.log('total ms', (performance.now() - t0).toFixed(0), 'n', n, 'per q µs', ((performance.now() - t0) * 1000 / n).toFixed(1));
console.log('profile keys sample', JSON.stringify(e.typeahead({ query: 'samsung gal', limit: 10, profile: true }).profile));
for (const [k, v] of tot) console.log(k, (v * 1000 / n).toFixed(1), 'µs/q');
console.log('fallback queries', fb, 'share', (fb / n).toFixed(3), 'mean µs', (fbTime * 1000 / fb).toFixed(1));
for (const [w, [c, t]] of [...byWords].sort((a, b) => a[0] - b[0])) console.log('words', w, 'count', c, 'mean µs', (t * 1000 / c).toFixed(1));

for (const [k, m] of [...globalThis.S].sort()) console.log(k, 'n', m.n, Object.entries(m).filter(([x]) => x !== 'n').map(([x, v]) => `${x}=${(v * 1000 / m.n).toFixed(1)}`).join(' '));
