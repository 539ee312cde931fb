// A shard node behind a real gRPC server on 127.0.0.1:0, called through GrpcClientPool: the same
// answers and the same catalogue errors as an in-process call.
import { pack, unpack } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type * as pb from '../../proto/gen/shard.js';
import { SuggestError } from '../../node/runtime/errors.js';
import { GrpcClientPool } from '../../node/runtime/grpc-client-pool.js';
import { GrpcServer } from '../../node/runtime/grpc-server.js';
import { NodeId } from '../../node/runtime/ids.js';
import { metrics } from '../../node/runtime/metrics.js';
import type { ShardApi } from '../../node/runtime/shard-api.js';
import { ShardNode } from '../shard-node.js';
import { shardGrpcService } from '../shard-grpc-service.js';
import { doc, quietLogger, refOf, rejection, tempDir, titleOf } from './helpers.js';

const ME = NodeId('grpc-node');
const P = 8;

/** The blob and job calls of a fake ShardApi that never uses them. */
const noJobs: Pick<ShardApi, 'putBlob' | 'getBlob' | 'deleteBlob' | 'startJob' | 'cancelJob'> = {
  putBlob: () => Promise.reject(new Error('no blobs here')),
  getBlob: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('no blobs here')) }) }),
  deleteBlob: () => Promise.resolve({ deleted: false }),
  startJob: () => Promise.reject(new Error('no jobs here')),
  cancelJob: () => Promise.resolve({ accepted: false, status: '' }),
};

const never = new Promise<never>(() => undefined);

/** A fake ShardApi: the calls given, and every other one never answers. */
const fakeApi = (calls: Partial<ShardApi>): ShardApi => ({
  upsert: () => never,
  getDocument: () => never,
  deleteDocument: () => never,
  listDocuments: () => never,
  dropIndex: () => never,
  indexStats: () => never,
  query: () => never,
  partitionStats: () => never,
  recordEvents: () => never,
  ...noJobs,
  ...calls,
});

async function* chunksOf(tenantId: string, blobId: string, data: Buffer, size: number, failAfter = -1): AsyncIterable<pb.BlobChunk> {
  for (let i = 0, n = 0; i < data.length; i += size, n++) {
    if (n === failAfter) throw new SuggestError('payload_too_large', 'too large (test)');
    yield { tenantId: i === 0 ? tenantId : '', blobId: i === 0 ? blobId : '', maxBytes: 0, data: data.subarray(i, i + size) };
  }
}

describe('ShardService over gRPC', () => {
  let remove: () => Promise<void>;
  let node: ShardNode;
  let server: GrpcServer;
  let pool: GrpcClientPool;
  let shard: ShardApi;
  const addresses = new Map<string, string>();

  beforeAll(async () => {
    const tmp = await tempDir('shard-grpc-');
    remove = tmp.remove;
    node = new ShardNode({ nodeId: ME, dataDir: tmp.dir, partitions: P, logger: quietLogger });
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    server = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(node, quietLogger) });
    expect(server.port).toBeGreaterThan(0);
    addresses.set(ME, server.address);
    pool = new GrpcClientPool({ resolve: (id) => addresses.get(id) });
    shard = pool.client(ME);
  });
  afterAll(async () => {
    pool?.close();
    await server?.shutdown(1_000);
    await node?.close();
    await remove?.();
  });

  it('streams blobs both ways, with flow control, and keeps nothing of a cancelled upload', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) % 251;
    const ref = await shard.putBlob(chunksOf('acme', 'blob-1', data, 64 * 1024));
    expect(ref).toMatchObject({ tenantId: 'acme', blobId: 'blob-1', size: data.length, nodeId: ME });
    const back: Buffer[] = [];
    for await (const c of shard.getBlob({ tenantId: 'acme', blobId: 'blob-1', offset: 0 })) back.push(Buffer.from(c.data));
    expect(Buffer.concat(back).equals(data)).toBe(true);
    const err = await rejection(shard.putBlob(chunksOf('acme', 'blob-2', data, 64 * 1024, 5)));
    expect(err.code).toBe('payload_too_large');
    const missing = await rejection((async () => {
      for await (const _ of shard.getBlob({ tenantId: 'acme', blobId: 'blob-2', offset: 0 })) void _;
    })());
    expect(missing.code).toBe('file_not_found');
    const capped = await rejection(shard.putBlob((async function* () {
      yield { tenantId: 'acme', blobId: 'blob-3', maxBytes: 10, data: Buffer.alloc(11) };
    })()));
    expect(capped.code).toBe('payload_too_large');
    expect((await shard.deleteBlob({ tenantId: 'acme', blobId: 'blob-1', offset: 0 })).deleted).toBe(true);
    const traversal = await rejection(shard.deleteBlob({ tenantId: 'acme', blobId: '../blob-1', offset: 0 }));
    expect(traversal.code).toBe('bad_request');
    // a node without a job runner says so
    expect((await rejection(shard.startJob({ tenantId: 'acme', jobId: 'j', wait: false, requeue: false }))).code).toBe('not_implemented');
  });

  it('round-trips every RPC', async () => {
    const ref = refOf('acme', 'products');
    expect(await shard.upsert({ ref, documents: [doc('1', 'tv'), doc('2', 'radio'), doc('3')], maxDocuments: 0 })).toEqual({ upserted: 3, created: 3, documentCount: 3 });
    const got = await shard.getDocument({ ref, docId: '2' });
    expect(got.found).toBe(true);
    expect(titleOf(got.document?.body)).toBe('radio');
    expect(await shard.getDocument({ ref, docId: 'nope' })).toEqual({ found: false, document: undefined });
    const page = await shard.listDocuments({ ref, afterId: '', limit: 2, offset: 1 });
    expect(page.total).toBe(3);
    expect(page.documents.map((d) => d.id)).toEqual(['2', '3']);
    expect(await shard.deleteDocument({ ref, docId: '3' })).toEqual({ deleted: true, documentCount: 2 });
    expect((await shard.indexStats({ ref })).documentCount).toBe(2);
    const stats = await shard.partitionStats({});
    expect(stats.nodeId).toBe(ME);
    expect(stats.partitions.find((p) => p.partition === ref.partition)).toEqual({ partition: ref.partition, documentCount: 2, indexCount: 1 });
    expect(await shard.dropIndex({ ref })).toEqual({ removed: 2 });
    expect((await shard.indexStats({ ref })).documentCount).toBe(0);
  });

  it('brings catalogue errors back with the same code', async () => {
    const ref = refOf('acme', 'limited');
    await shard.upsert({ ref, documents: [doc('1')], maxDocuments: 2 });
    const limit = await rejection(shard.upsert({ ref, documents: [doc('2'), doc('3')], maxDocuments: 2 }));
    expect(limit).toBeInstanceOf(SuggestError);
    expect(limit.code).toBe('document_limit');
    expect(limit.status).toBe(409);
    expect(limit.message).toBe('Index document limit of 2 reached (1 stored, 2 more requested); delete documents or raise the plan limit.');
    expect((await shard.indexStats({ ref })).documentCount).toBe(1);

    const query = await rejection(shard.query({ ref, kind: 'typeahead', payload: pack({ q: 'x' }) }));
    expect(query.code).toBe('not_implemented');

    const bad = await rejection(shard.upsert({ ref, documents: [doc('')], maxDocuments: 0 }));
    expect(bad.code).toBe('bad_request');
  });

  it('reports wrong_owner across gRPC once the partition moves away', async () => {
    const ref = refOf('acme', 'moving');
    await shard.upsert({ ref, documents: [doc('1')], maxDocuments: 0 });
    const moved = ShardNode.soloPlacement(ME, P, 2);
    moved.nodes[ref.partition] = [NodeId('elsewhere')];
    node.setPlacement(moved);
    try {
      const err = await rejection(shard.upsert({ ref: { ...ref, epoch: 2 }, documents: [doc('2')], maxDocuments: 0 }));
      expect(err.code).toBe('wrong_owner');
      expect(err.status).toBe(503);
      expect(err.message).toContain(`Partition ${ref.partition} is not owned by this node at epoch 2`);
      // a query, on the node's QueryStream, says the same: the router re-reads the placement on it
      const q = await rejection(shard.query({ ref: { ...ref, epoch: 2 }, kind: 'typeahead', payload: pack({ query: 'x', limit: 5 }) }));
      expect([q.code, q.status]).toEqual(['wrong_owner', 503]);
    } finally {
      node.setPlacement(ShardNode.soloPlacement(ME, P, 3));
    }
  });

  it('carries an ingestion batch larger than the gRPC default of 4 MB', async () => {
    const ref = refOf('acme', 'bulk');
    const filler = 'x'.repeat(2_000);
    const documents = Array.from({ length: 4_000 }, (_, i) => doc(`d${i}`, `doc ${i}`, { filler }));
    expect(documents.reduce((n, d) => n + d.body.length, 0)).toBeGreaterThan(6 * 1024 * 1024);
    expect((await shard.upsert({ ref, documents, maxDocuments: 0 })).created).toBe(4_000);
    const page = await shard.listDocuments({ ref, afterId: '', limit: 3_000, offset: 0 });
    expect(page.documents).toHaveLength(3_000);
  });

  it('answers unavailable for an unknown node and for a dead address', async () => {
    expect(() => pool.client(NodeId('ghost'))).toThrow(SuggestError);
    try {
      pool.client(NodeId('ghost'));
    } catch (err) {
      expect((err as SuggestError).code).toBe('unavailable');
    }

    // a port that was just bound and released has nobody listening
    const gone = await GrpcServer.start({ host: '127.0.0.1', port: 0 });
    const deadAddress = gone.address;
    await gone.shutdown();
    addresses.set('dead-node', deadAddress);
    const err = await rejection(pool.client(NodeId('dead-node')).getDocument({ ref: refOf('acme', 'products'), docId: '1' }));
    expect(err.code).toBe('unavailable');
    expect(err.status).toBe(503);
  });

  it('gives up after the deadline with unavailable, and reports non-catalogue failures as internal', async () => {
    const stuck = fakeApi({ query: () => Promise.reject(new Error('engine exploded')) });
    const slow = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(stuck, quietLogger) });
    const impatient = new GrpcClientPool({ resolve: () => slow.address, deadlineMs: 200, deadlines: { query: 2_000 } });
    try {
      const started = Date.now();
      const late = await rejection(impatient.client(ME).getDocument({ ref: refOf('a', 'b'), docId: '1' }));
      expect(late.code).toBe('unavailable');
      expect(Date.now() - started).toBeLessThan(2_000);
      const broken = await rejection(impatient.client(ME).query({ ref: refOf('a', 'b'), kind: 'typeahead', payload: Buffer.alloc(0) }));
      expect(broken.code).toBe('internal');
      expect(broken.message).toContain('engine exploded');
    } finally {
      impatient.close();
      slow.forceShutdown();
    }
  });

  it('lets a running call finish on graceful shutdown, and cuts it off after the grace period', async () => {
    const slowStats = fakeApi({ partitionStats: () => new Promise((resolve) => setTimeout(() => resolve({ nodeId: 'slow', partitions: [] }), 300)) });
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(slowStats, quietLogger) });
    const client = new GrpcClientPool({ resolve: () => srv.address, deadlineMs: 5_000 });
    try {
      const running = client.client(ME).partitionStats({});
      const hanging = rejection(client.client(ME).upsert({ ref: refOf('a', 'b'), documents: [], maxDocuments: 0 }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = Date.now();
      await srv.shutdown(600);
      // the slow call finished inside the grace period; the hanging one was cancelled at its end
      expect((await running).nodeId).toBe('slow');
      expect((await hanging).code).toBe('unavailable');
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      client.close();
    }
  });

  it('returns query results produced by an attached handler', async () => {
    const ref = refOf('acme', 'searchable');
    await shard.upsert({ ref, documents: [doc('1', 'television')], maxDocuments: 0 });
    node.setQueryHandler({ query: ({ kind, payload }) => ({ kind, echo: payload }) });
    const res: pb.QueryResponse = await shard.query({ ref, kind: 'autocomplete', payload: pack({ q: 'tel' }) });
    expect(unpack(res.result)).toEqual({ kind: 'autocomplete', echo: { q: 'tel' } });
  });

  it('brings back the response headers an error asks for (Retry-After of a busy node)', async () => {
    const ref = refOf('acme', 'busy');
    node.setQueryHandler({
      query: () => {
        throw new SuggestError('unavailable', 'Every query thread of this node is busy; retry shortly.', { headers: { 'retry-after': '1' } });
      },
    });
    const busy = await rejection(shard.query({ ref, kind: 'autocomplete', payload: pack({ q: 'x' }) }));
    expect(busy.code).toBe('unavailable');
    expect(busy.status).toBe(503);
    expect((busy as SuggestError).headers).toEqual({ 'retry-after': '1' });
    expect(busy.message).toBe('Every query thread of this node is busy; retry shortly.');
  });

  it('spreads calls over several channels per address', async () => {
    const wide = new GrpcClientPool({ resolve: (id) => addresses.get(id), channelsPerAddress: 3 });
    try {
      const ref = refOf('acme', 'wide');
      await wide.client(ME).upsert({ ref, documents: [doc('1')], maxDocuments: 0 });
      const all = await Promise.all(Array.from({ length: 30 }, () => wide.client(ME).getDocument({ ref, docId: '1' })));
      expect(all.every((r) => r.found)).toBe(true);
      expect(wide.addresses).toEqual([server.address]);
      wide.prune([]);
      expect(wide.addresses).toEqual([]);
    } finally {
      wide.close();
    }
  });
});

describe('WatchChanges over gRPC', () => {
  let remove: () => Promise<void>;
  let node: ShardNode;
  let server: GrpcServer;
  let subscribed = 0;
  const stopping = new AbortController();

  beforeAll(async () => {
    const tmp = await tempDir('shard-feed-');
    remove = tmp.remove;
    node = new ShardNode({ nodeId: ME, dataDir: tmp.dir, partitions: P, logger: quietLogger });
    node.setPlacement(ShardNode.soloPlacement(ME, P));
    // counts live subscriptions, so the test sees a cancelled stream let go of its listener
    const changes = {
      onChange: (l: Parameters<ShardNode['onChange']>[0]) => {
        subscribed++;
        const off = node.onChange(l);
        return () => {
          subscribed--;
          off();
        };
      },
    };
    server = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(node, quietLogger, { changes, nodeId: ME, stopping: stopping.signal }) });
  });
  afterAll(async () => {
    stopping.abort();
    await server?.shutdown(1_000);
    await node?.close();
    await remove?.();
  });

  const until = async (what: string, ok: () => boolean, ms = 3_000) => {
    const deadline = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  it('announces every kind of write applied on the node, and lets go of its listener when the caller goes', async () => {
    const pool = new GrpcClientPool({ resolve: () => server.address, changeFeed: { heartbeatMs: 50 } });
    const seen: string[] = [];
    let resets = 0;
    pool.setShardMembers(new Map([[ME, server.address]]));
    pool.subscribeChanges((t, p) => seen.push(`${t}/${p}`), () => resets++);
    try {
      await until('the feed to open', () => pool.changesLive());
      expect(resets).toBe(1);
      expect(subscribed).toBe(1);
      // written in process, not through the pool: only the feed can tell
      const ref = refOf('acme', 'fed');
      await node.upsert({ ref, documents: [doc('1', 'tv'), doc('2', 'radio')], maxDocuments: 0 });
      await until('the upsert', () => seen.length === 1);
      await node.deleteDocument({ ref, docId: '2' });
      const events = pack([{ doc_id: '1', type: 'click', query: 'tv', position: 1, user_id: 'u', session_id: 's', ts: Date.now() }]);
      await node.recordEvents({ ref, events });
      await node.dropIndex({ ref });
      await until('delete, events and drop', () => seen.length === 4);
      expect(seen).toEqual(['acme/fed', 'acme/fed', 'acme/fed', 'acme/fed']);
      // heartbeats keep a quiet stream live
      await new Promise((r) => setTimeout(r, 400));
      expect(pool.changesLive()).toBe(true);
      expect(resets).toBe(1);
      // a write through the pool is announced by the pool once acknowledged, and by the feed
      // (usually first: the node announces before it answers)
      seen.length = 0;
      await pool.client(ME).upsert({ ref: refOf('acme', 'mine'), documents: [doc('1')], maxDocuments: 0 });
      expect(seen.length).toBeGreaterThanOrEqual(1);
      await until('both announcements', () => seen.length === 2);
      expect(seen).toEqual(['acme/mine', 'acme/mine']);
    } finally {
      pool.close();
    }
    await until('the listener to be removed', () => subscribed === 0);
  });

  it('ends the streams when the node stops, and the router stops trusting its cache', async () => {
    const pool = new GrpcClientPool({ resolve: () => server.address, changeFeed: { heartbeatMs: 50, initialBackoffMs: 5_000 } });
    let resets = 0;
    pool.setShardMembers(new Map([[ME, server.address]]));
    pool.subscribeChanges(() => undefined, () => resets++);
    try {
      await until('the feed to open', () => pool.changesLive());
      stopping.abort();
      await until('the feed to drop', () => !pool.changesLive());
      expect(resets).toBe(2);
      await until('the listener to be removed', () => subscribed === 0);
    } finally {
      pool.close();
    }
  });
});

describe('QueryStream over gRPC', () => {
  /** A ShardApi whose queries answer `{ echo: payload }` after the payload's `ms`, or never, or fail. */
  const echo = fakeApi({
    query: async (req) => {
      const p = unpack(req.payload) as { n: number; ms?: number; stuck?: boolean; fail?: boolean };
      if (p.stuck) return never;
      if (p.ms) await new Promise((r) => setTimeout(r, p.ms));
      if (p.fail) throw new SuggestError('validation_failed', `query ${p.n} is wrong`, { issues: [{ loc: ['query', 'limit'], msg: 'too large', type: 'maximum' }] });
      return { result: pack({ echo: p.n }) };
    },
  });
  /** The service with unary Query refused: a query that does not travel on the stream fails the test. */
  const streamOnly = (stopping?: AbortSignal) => ({ ...shardGrpcService(echo, quietLogger, { ...(stopping ? { stopping } : {}) }), query: (_call: unknown, cb: (err: unknown) => void) => cb({ code: 9, details: 'unary Query used' }) });
  const ask = (pool: GrpcClientPool, payload: Record<string, unknown>) => pool.client(ME).query({ ref: refOf('a', 'b'), kind: 'typeahead', payload: pack(payload) });
  /** A counter of this process's registry (its sum over labels matching `labels`). */
  const counter = async (name: string, labels: Record<string, string> = {}) => {
    const m = metrics.registry.getSingleMetric(name);
    if (m === undefined) return 0;
    const { values } = await m.get();
    return values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((n, v) => n + v.value, 0);
  };

  it('answers many queries on one stream, each with its own answer, in the order they finish', async () => {
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly() as never });
    const pool = new GrpcClientPool({ resolve: () => srv.address });
    try {
      const finished: number[] = [];
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, n) =>
          ask(pool, { n, ms: (n * 7) % 23 }).then((r) => {
            finished.push(n);
            return (unpack(r.result) as { echo: number }).echo;
          }),
        ),
      );
      expect(answers).toEqual(Array.from({ length: 200 }, (_, n) => n));
      // answered as they finished, not as they were sent
      expect(finished).not.toEqual([...finished].sort((a, b) => a - b));
      // catalogue errors keep their code, message and issues
      const wrong = (await rejection(ask(pool, { n: 7, fail: true }))) as SuggestError;
      expect([wrong.code, wrong.message, wrong.issues?.[0]?.msg]).toEqual(['validation_failed', 'query 7 is wrong', 'too large']);
    } finally {
      pool.close();
      srv.forceShutdown();
    }
  });

  it('times each call to a shard node by method and outcome, on both sides, streamed queries and unary calls alike', async () => {
    /** count and sum of one series of a histogram of this process (routers' calls, or this node's answers) */
    const series = async (name: string, method: string, outcome: string) => {
      const m = metrics.registry.getSingleMetric(name);
      const values = m === undefined ? [] : (await m.get()).values.filter((v) => v.labels.method === method && v.labels.outcome === outcome);
      // histogram values name their series (`_count`, `_sum`, `_bucket`)
      const of = (suffix: string) => values.find((v) => (v as { metricName?: string }).metricName === `${name}_${suffix}`)?.value ?? 0;
      return { count: of('count'), sum: of('sum') };
    };
    const timed = (method: string, outcome: string) => series('suggest_shard_call_duration_seconds', method, outcome);
    const handled = (method: string, outcome: string) => series('suggest_shard_handle_duration_seconds', method, outcome);
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly() as never });
    const unaryServer = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(echo, quietLogger, {}) as never });
    const pool = new GrpcClientPool({ resolve: () => srv.address });
    const unary = new GrpcClientPool({ resolve: () => unaryServer.address, queryStreams: false });
    try {
      const ok = await timed('query', 'ok');
      const wrong = await timed('query', 'validation_failed');
      const jobs = await timed('cancelJob', 'ok');
      const served = await handled('query', 'ok');
      const refused = await handled('query', 'validation_failed');
      const jobsServed = await handled('cancelJob', 'ok');
      await Promise.all(Array.from({ length: 5 }, (_, n) => ask(pool, { n, ms: 20 })));
      await ask(unary, { n: 6, ms: 20 });
      expect((await rejection(ask(pool, { n: 7, fail: true }))).code).toBe('validation_failed');
      await pool.client(ME).cancelJob({ tenantId: 'a', jobId: 'j', wait: false, requeue: false });
      const okNow = await timed('query', 'ok');
      expect(okNow.count - ok.count).toBe(6);
      // each waited its 20 ms on the node
      expect(okNow.sum - ok.sum).toBeGreaterThanOrEqual(6 * 0.019);
      expect((await timed('query', 'validation_failed')).count - wrong.count).toBe(1);
      expect((await timed('cancelJob', 'ok')).count - jobs.count).toBe(1);
      // the nodes' side of the same calls (both servers run in this process): no less than the 20 ms each waited
      const servedNow = await handled('query', 'ok');
      expect(servedNow.count - served.count).toBe(6);
      expect(servedNow.sum - served.sum).toBeGreaterThanOrEqual(6 * 0.019);
      expect((await handled('query', 'validation_failed')).count - refused.count).toBe(1);
      expect((await handled('cancelJob', 'ok')).count - jobsServed.count).toBe(1);
    } finally {
      pool.close();
      unary.close();
      srv.forceShutdown();
      unaryServer.forceShutdown();
    }
  });

  it('keeps one stream per channel when a node has several, and spreads the queries over them', async () => {
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly() as never });
    const pool = new GrpcClientPool({ resolve: () => srv.address, channelsPerAddress: 3 });
    try {
      const opened = await counter('suggest_shard_query_streams_opened_total');
      const answers = await Promise.all(Array.from({ length: 30 }, (_, n) => ask(pool, { n, ms: 5 })));
      expect(answers.map((r) => (unpack(r.result) as { echo: number }).echo)).toEqual(Array.from({ length: 30 }, (_, n) => n));
      expect(await counter('suggest_shard_query_streams_opened_total')).toBe(opened + 3);
    } finally {
      pool.close();
      srv.forceShutdown();
    }
  });

  it('gives a stuck query up at its deadline while the stream answers the others', async () => {
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly() as never });
    const pool = new GrpcClientPool({ resolve: () => srv.address, deadlines: { query: 300 } });
    try {
      const started = Date.now();
      const stuck = rejection(ask(pool, { n: 1, stuck: true }));
      const others = await Promise.all([2, 3, 4].map((n) => ask(pool, { n, ms: 10 })));
      expect(others.map((r) => (unpack(r.result) as { echo: number }).echo)).toEqual([2, 3, 4]);
      const late = await stuck;
      expect(late.code).toBe('unavailable');
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect((unpack((await ask(pool, { n: 5 })).result) as { echo: number }).echo).toBe(5);
    } finally {
      pool.close();
      srv.forceShutdown();
    }
  });

  it('fails the queries of a node that dies with unavailable, and opens a new stream to it once it is back', async () => {
    const first = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly() as never });
    const port = first.port;
    const pool = new GrpcClientPool({ resolve: () => `127.0.0.1:${port}` });
    try {
      const opened = await counter('suggest_shard_query_streams_opened_total');
      const failed = await counter('suggest_shard_query_streams_ended_total', { reason: 'error' });
      expect((unpack((await ask(pool, { n: 1 })).result) as { echo: number }).echo).toBe(1);
      const cut = rejection(ask(pool, { n: 2, stuck: true }));
      await new Promise((r) => setTimeout(r, 50));
      first.forceShutdown();
      expect((await cut).code).toBe('unavailable');
      expect(await counter('suggest_shard_query_streams_ended_total', { reason: 'error' })).toBe(failed + 1);
      const again = await GrpcServer.start({ host: '127.0.0.1', port, shard: streamOnly() as never });
      try {
        const deadline = Date.now() + 5_000;
        let answered: number | null = null;
        while (answered === null && Date.now() < deadline) {
          answered = await ask(pool, { n: 3 }).then((r) => (unpack(r.result) as { echo: number }).echo, () => null);
          if (answered === null) await new Promise((r) => setTimeout(r, 100));
        }
        expect(answered).toBe(3);
        // the first stream, then at least one to the node once it was back
        expect(await counter('suggest_shard_query_streams_opened_total')).toBeGreaterThanOrEqual(opened + 2);
      } finally {
        again.forceShutdown();
      }
    } finally {
      pool.close();
    }
  });

  it('ends its streams when the node stops, after answering the queries in flight, without holding up the shutdown', async () => {
    const stopping = new AbortController();
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: streamOnly(stopping.signal) as never });
    const pool = new GrpcClientPool({ resolve: () => srv.address });
    try {
      expect((unpack((await ask(pool, { n: 1 })).result) as { echo: number }).echo).toBe(1);
      const inFlight = ask(pool, { n: 2, ms: 200 });
      await new Promise((r) => setTimeout(r, 50));
      stopping.abort();
      const started = Date.now();
      await srv.shutdown(5_000);
      // the open stream did not hold the graceful shutdown for its grace period
      expect(Date.now() - started).toBeLessThan(2_000);
      expect((unpack((await inFlight).result) as { echo: number }).echo).toBe(2);
    } finally {
      pool.close();
    }
  });

  it('sends every query as a unary call when streams are turned off (SUGGEST_QUERY_STREAMS=0)', async () => {
    const srv = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: shardGrpcService(echo, quietLogger) });
    const pool = new GrpcClientPool({ resolve: () => srv.address, queryStreams: false });
    try {
      const [opened, unary] = [await counter('suggest_shard_query_streams_opened_total'), await counter('suggest_shard_queries_unary_total')];
      const answers = await Promise.all([1, 2].map((n) => ask(pool, { n })));
      expect(answers.map((r) => (unpack(r.result) as { echo: number }).echo)).toEqual([1, 2]);
      expect(await counter('suggest_shard_query_streams_opened_total')).toBe(opened);
      expect(await counter('suggest_shard_queries_unary_total')).toBe(unary + 2);
    } finally {
      pool.close();
      srv.forceShutdown();
    }
  });

  it('asks a node that has no QueryStream (an older build) with unary calls', async () => {
    const impl = shardGrpcService(echo, quietLogger) as unknown as Record<string, unknown>;
    delete impl.queryStream;
    const old = await GrpcServer.start({ host: '127.0.0.1', port: 0, shard: impl as never });
    const pool = new GrpcClientPool({ resolve: () => old.address });
    try {
      const unary = await counter('suggest_shard_queries_unary_total');
      const answers = await Promise.all([1, 2, 3].map((n) => ask(pool, { n })));
      expect(answers.map((r) => (unpack(r.result) as { echo: number }).echo)).toEqual([1, 2, 3]);
      expect((unpack((await ask(pool, { n: 4 })).result) as { echo: number }).echo).toBe(4);
      // all four went unary, the first three after the stream was refused, the fourth at once
      expect(await counter('suggest_shard_queries_unary_total')).toBe(unary + 4);
      expect(await counter('suggest_shard_query_streams_ended_total', { reason: 'unimplemented' })).toBeGreaterThanOrEqual(1);
    } finally {
      pool.close();
      old.forceShutdown();
    }
  });
});
