// Segment builds of two builds of the engine side by side in one process: the CPU time to build a
// segment of N documents, as the node's refresher builds one from fresh writes (in place up to 256
// documents, on the segment pool beyond). Sizes and builds alternate, so that a noisy machine
// moves both alike.
//
//   node dist/loadtest/segment-build-ab.js --a /tmp/base --b . [--sizes 1,16,256,2048]
//        [--catalog bestbuy] [--builds 400] [--repeats 3]
//
// `--builds`: segments built per size and repeat (fewer for large sizes: at most the catalogue's
// worth of documents). The engines are loaded from each tree's `dist/` at run time.
import { loadCatalogSpec } from './data/catalog.js';
import { distUrl } from './load/engine-build.js';
import { percentile } from './load/latency-stats.js';
import { cliArgs } from './load/cli.js';

interface Builder {
  addAll(docs: Iterable<unknown>): Builder;
  build(): unknown;
}

const { values } = cliArgs({
  options: {
    a: { type: 'string' },
    b: { type: 'string' },
    sizes: { type: 'string', default: '1,16,256,2048' },
    catalog: { type: 'string', default: 'bestbuy' },
    builds: { type: 'string', default: '400' },
    repeats: { type: 'string', default: '3' },
  },
});
if (values.a === undefined || values.b === undefined) {
  process.stderr.write('usage: segment-build-ab --a DIR --b DIR [--sizes 1,16,256,2048] [--builds 400] [--repeats 3]\n');
  process.exit(2);
}
const sizes = (values.sizes as string).split(',').map(Number);
if (sizes.some((n) => !(Number.isInteger(n) && n >= 1))) throw new Error('--sizes takes whole numbers of documents, at least 1');
const builds = Number(values.builds);
const repeats = Number(values.repeats);
const docs = loadCatalogSpec(values.catalog as string);

async function load(dir: string): Promise<{ name: string; make: () => Builder }> {
  const root = distUrl(dir);
  const { SegmentBuilder } = (await import(`${root}/shard/engine/segment-builder.js`)) as { SegmentBuilder: new () => Builder };
  return { name: dir, make: () => new SegmentBuilder() };
}

/** CPU µs per build of `size` documents, over up to `builds` consecutive slices of the catalogue. */
function measure(make: () => Builder, size: number): number {
  const n = Math.max(1, Math.min(builds, Math.floor(docs.length / size)));
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) make().addAll(docs.slice(i * size, (i + 1) * size)).build();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const trees = await Promise.all([values.a, values.b].map((d) => load(d as string)));
const timings = new Map<string, number[]>();
for (let r = 0; r < repeats; r++) {
  for (const size of sizes) {
    const order = r % 2 === 0 ? trees : [...trees].reverse();
    for (const t of order) {
      const key = `${t.name}\0${size}`;
      timings.set(key, [...(timings.get(key) ?? []), measure(t.make, size)]);
    }
  }
}
const median = (xs: number[]): number => percentile([...xs].sort((x, y) => x - y), 50);
console.log(`segment builds from ${values.catalog} (${docs.length} documents), ${repeats} repeats; CPU µs per build, median (all)`);
for (const size of sizes) {
  const [a, b] = [values.a, values.b].map((d) => timings.get(`${d}\0${size}`) as number[]);
  console.log(`${String(size).padStart(6)} documents  a ${median(a!).toFixed(0).padStart(8)} (${a!.map((x) => x.toFixed(0)).join(' ')})  b ${median(b!).toFixed(0).padStart(8)} (${b!.map((x) => x.toFixed(0)).join(' ')})  b/a ${(median(b!) / median(a!)).toFixed(3)}`);
}
