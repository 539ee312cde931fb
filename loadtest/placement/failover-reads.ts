// Reads and writes while the primary of an index's partition crashes: a local cluster with
// replication factor 2 (real processes: etcd, 3 shard nodes, a router), an index in 2 parts, and
// `--clients` clients that each loop: upsert a document with a word of its own, ask typeahead for
// it (through the response cache and around it), read it back, delete it, ask again, read again.
// Every answered read checks what the acknowledged writes before it imply (the document there after its
// upsert, gone after its delete). `--readers` more clients only read: typeahead for a document
// loaded at the start (around the cache) and the document itself, whatever the writes do. Part-way through, the primary of part 0's partition is
// SIGKILLed. Reports, per second of the run, the operations done and the failed writes and reads,
// and every read that broke the rule; the router's `suggest_router_part_queries` counters at the end.
//
// `--replica-reads 0` runs the same with every read sent to primaries (SUGGEST_REPLICA_READS=0),
// the behaviour before reads were spread over replicas.
//
//   npm run build && node dist/loadtest/placement/failover-reads.js [--seconds 40] [--kill-at 12]
//     [--clients 4] [--replica-reads 1] [--out FILE]
import { partitionOf } from '../../node/runtime/hash.js';
import { startLocalCluster } from '../../node/runtime/process-harness.js';
import { runMain, writeResult } from '../load/result-file.js';
import { cliArgs } from '../load/cli.js';

const { values } = cliArgs({
  options: {
    seconds: { type: 'string', default: '40' },
    'kill-at': { type: 'string', default: '12' },
    clients: { type: 'string', default: '4' },
    readers: { type: 'string', default: '2' },
    'replica-reads': { type: 'string', default: '1' },
    out: { type: 'string' },
  },
});

const PARTITIONS = 8;
const TENANT = 'failover';
const log = (line: string) => process.stderr.write(`[failover-reads] ${line}\n`);

interface Second {
  /** write-read rounds of the writing clients */
  ops: number;
  /** read rounds of the reading clients */
  reads: number;
  write_failures: number;
  read_failures: number;
}

interface Broken {
  at_s: number;
  check: string;
  id: string;
  status: number;
}

runMain(async () => {
  const seconds = Number(values.seconds);
  const killAt = Number(values['kill-at']);
  const clients = Number(values.clients);
  if (!(seconds > 0 && killAt >= 0 && killAt < seconds && Number.isInteger(clients) && clients > 0)) throw new Error('--seconds > --kill-at >= 0 and --clients >= 1 are required');
  log('starting etcd, 3 shard nodes and a router (replication factor 2)');
  const replicaReads = values['replica-reads'] !== '0';
  const cluster = await startLocalCluster({ shards: 3, routers: 1, partitions: PARTITIONS, env: { SUGGEST_REPLICATION_FACTOR: '2', SUGGEST_REPLICA_READS: replicaReads ? '1' : '0' } });
  try {
    const base = cluster.routerUrls[0]!;
    const call = async <T = Record<string, unknown>>(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; body: T }> => {
      try {
        const r = await fetch(base + path, { method, headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        return { status: r.status, body: (text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text) as T };
      } catch {
        return { status: 0, body: {} as T };
      }
    };
    for (let i = 0; i < 100 && (await call('GET', '/readyz', '')).status !== 200; i++) await new Promise((r) => setTimeout(r, 300));
    const admin = cluster.adminKey;
    await call('POST', '/v1/admin/tenants', admin, { tenant_id: TENANT, name: TENANT, plan: 'enterprise' });
    const key = (await call<{ key: string }>('POST', `/v1/admin/tenants/${TENANT}/keys`, admin, { kind: 'private', name: 'load' })).body.key;
    await call('POST', '/v1/indexes', key, { index_id: 'shop', name: 'shop', parts: 2 });
    const documents = Array.from({ length: 200 }, (_, i) => ({ id: `base${i}`, title: `Wombat Kettle ${i}` }));
    if ((await call('POST', '/v1/indexes/shop/documents', key, { documents })).status !== 200) throw new Error('could not load the index');
    const physical = (await call<{ index_id: string; physical_index_id: string }[]>('GET', '/v1/indexes', key)).body.find((v) => v.index_id === 'shop')!.physical_index_id;
    const partition = partitionOf(TENANT, physical, 0, PARTITIONS);

    const perSecond: Second[] = Array.from({ length: Math.ceil(seconds) + 1 }, () => ({ ops: 0, reads: 0, write_failures: 0, read_failures: 0 }));
    const broken: Broken[] = [];
    const t0 = Date.now();
    const now = () => (Date.now() - t0) / 1000;
    const slot = () => perSecond[Math.min(perSecond.length - 1, Math.floor(now()))]!;
    const read = async (check: string, id: string, path: string, ok: (status: number, body: Record<string, unknown>) => boolean) => {
      const r = await call('GET', path, key);
      // a failed read is an error status; a broken one answered, without what it had to show
      if (r.status !== 200 && r.status !== 404) slot().read_failures++;
      else if (!ok(r.status, r.body)) broken.push({ at_s: Math.round(now() * 10) / 10, check, id, status: r.status });
    };
    const listed = (id: string) => (status: number, body: Record<string, unknown>) => status === 200 && (body.suggestions as { id: string }[]).some((s) => s.id === id);
    const unlisted = (id: string) => (status: number, body: Record<string, unknown>) => status === 200 && !(body.suggestions as { id: string }[]).some((s) => s.id === id);

    const client = async (c: number) => {
      for (let i = 0; now() < seconds; i++) {
        const id = `c${c}n${i}`;
        const word = `zq${c}k${i}v`;
        const up = await call('POST', '/v1/indexes/shop/documents', key, { documents: [{ id, title: `Numbat ${word} Lamp` }] });
        if (up.status !== 200) {
          slot().write_failures++;
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        await read('listed after its upsert', id, `/v1/typeahead?index=shop&bypass_cache=true&query=${word}`, listed(id));
        await read('listed after its upsert (cache path)', id, `/v1/typeahead?index=shop&query=${word}`, listed(id));
        await read('readable after its upsert', id, `/v1/indexes/shop/documents/${id}`, (s) => s === 200);
        const del = await call('DELETE', `/v1/indexes/shop/documents/${id}`, key);
        if (del.status !== 200) {
          slot().write_failures++;
          continue;
        }
        await read('unlisted after its delete', id, `/v1/typeahead?index=shop&query=${word}`, unlisted(id));
        await read('404 after its delete', id, `/v1/indexes/shop/documents/${id}`, (s) => s === 404);
        slot().ops++;
      }
    };
    let killed: { node: string | null; at_s: number } = { node: null, at_s: killAt };
    const killer = (async () => {
      await new Promise((r) => setTimeout(r, killAt * 1000));
      const view = (await call<{ partitions: { partition: number; primary: string | null }[] }>('GET', '/v1/admin/cluster', admin)).body;
      const victim = view.partitions.find((p) => p.partition === partition)?.primary ?? null;
      killed = { node: victim, at_s: Math.round(now() * 10) / 10 };
      log(`t=${killed.at_s}s: SIGKILL ${victim}, primary of partition ${partition} (part 0)`);
      await cluster.shards.find((s) => s.name === victim)?.kill();
    })();
    const reader = async (r: number) => {
      for (let i = 0; now() < seconds; i++) {
        const n = (r * 7919 + i * 31) % 200;
        await read('a loaded document listed', `base${n}`, `/v1/typeahead?index=shop&bypass_cache=true&limit=20&query=wombat%20kettle%20${n}`, listed(`base${n}`));
        await read('a loaded document readable', `base${n}`, `/v1/indexes/shop/documents/base${n}`, (s) => s === 200);
        slot().reads++;
      }
    };
    const readers = Number(values.readers);
    await Promise.all([...Array.from({ length: clients }, (_, c) => client(c)), ...Array.from({ length: readers }, (_, r) => reader(r))]);
    await killer;
    const metrics = (await (await fetch(`${base}/metrics`)).text()).split('\n').filter((l) => l.startsWith('suggest_router_part_queries{'));
    const partQueries = Object.fromEntries(metrics.map((l) => [/replica="([^"]+)"/.exec(l)![1]!, Number(l.split(' ')[1])]));
    const totals = perSecond.reduce((a, s) => ({ ops: a.ops + s.ops, reads: a.reads + s.reads, write_failures: a.write_failures + s.write_failures, read_failures: a.read_failures + s.read_failures }), { ops: 0, reads: 0, write_failures: 0, read_failures: 0 });
    const writesDown = perSecond.map((s, i) => (s.write_failures > 0 ? i : -1)).filter((i) => i >= 0);
    const result = {
      seconds,
      clients,
      replica_reads: replicaReads,
      killed,
      partition,
      totals,
      broken_reads: broken.length,
      broken: broken.slice(0, 50),
      seconds_with_failed_writes: writesDown.length,
      failed_writes_from_s: writesDown[0] ?? null,
      failed_writes_to_s: writesDown.at(-1) ?? null,
      part_queries: partQueries,
      per_second: perSecond,
    };
    const file = writeResult('failover-reads', values.out, result);
    log(`${totals.ops} write-read rounds, ${totals.reads} read rounds, ${totals.read_failures} failed reads, ${broken.length} reads that missed an acknowledged write, ${totals.write_failures} failed writes (in ${writesDown.length} seconds, ${result.failed_writes_from_s}-${result.failed_writes_to_s} s)`);
    log(`part queries: ${JSON.stringify(partQueries)}; wrote ${file}`);
    process.stdout.write(`${JSON.stringify({ totals, broken_reads: broken.length, killed, failed_writes_from_s: result.failed_writes_from_s, failed_writes_to_s: result.failed_writes_to_s, part_queries: partQueries })}\n`);
  } finally {
    await cluster.stop();
  }
});
