// GET /v1/admin/cluster: what an SRE watches while growing the cluster. Shard nodes (live or
// named by placement), the placement table (primary and followers of every partition), the
// moves in progress, and per-node document counts asked of each live shard node. Admin keys only.
import { Type } from '@sinclair/typebox';
import type { MemberRecord, PlacementTable } from '../../coordinator/coordinator.js';
import { NodeId } from '../../node/runtime/ids.js';
import { defineRoute, type Route } from '../route.js';
import type { RouterDeps } from '../router-deps.js';
import { NAMED_SCHEMAS } from '../schemas.js';

const Count = Type.Integer({ minimum: 0 });

const ClusterNode = Type.Object({
  node_id: Type.String(),
  live: Type.Boolean({ description: 'Holds a membership lease now (SUGGEST_MEMBER_TTL_SECONDS after a crash it turns false).' }),
  grpc_address: Type.Union([Type.String(), Type.Null()]),
  metrics_address: Type.Union([Type.String(), Type.Null()], { description: "host:port of the node's /metrics, /healthz and /readyz (SUGGEST_METRICS_PORT); null when it serves none." }),
  started_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  primaries: Type.Integer({ minimum: 0, description: 'Partitions this node is the primary of.' }),
  replicas: Type.Integer({ minimum: 0, description: 'Partitions this node holds a copy of (primary or follower).' }),
  moving_in: Type.Integer({ minimum: 0, description: 'Moves copying a partition onto this node.' }),
  document_count: Type.Union([Count, Type.Null()], { description: 'Documents in the partitions this node holds; null when it did not answer.' }),
});

const ClusterPartition = Type.Object({
  partition: Count,
  primary: Type.Union([Type.String(), Type.Null()]),
  followers: Type.Array(Type.String()),
  moving_to: Type.Union([Type.String(), Type.Null()], { description: 'Target of a move in progress.' }),
});

const ClusterMove = Type.Object({
  partition: Count,
  from: Type.Union([Type.String(), Type.Null()], { description: 'The primary running the copy.' }),
  to: Type.String(),
  replaces: Type.Union([Type.String(), Type.Null()], { description: 'The replica the target takes the place of once caught up; null when it adds one.' }),
  started_at: Type.String({ format: 'date-time' }),
  running_ms: Count,
});

export const ClusterView = Type.Object({
  epoch: Type.Union([Count, Type.Null()], { description: 'Placement epoch; null before the first table.' }),
  partition_count: Count,
  replication_factor: Type.Integer({ minimum: 1 }),
  max_concurrent_moves: Type.Integer({ minimum: 1 }),
  settled: Type.Boolean({ description: 'No move in progress, every partition has its full replica set on live nodes and replicas are balanced.' }),
  nodes: Type.Array(ClusterNode),
  partitions: Type.Array(ClusterPartition),
  moves: Type.Array(ClusterMove),
  router: Type.Object({
    node_id: Type.String(),
    epoch: Type.Union([Count, Type.Null()], { description: 'The epoch this router routes with.' }),
    retries_wrong_owner: Count,
    retries_unavailable: Count,
    part_reads: Type.Object(
      { primary: Count, follower: Count, follower_fallback: Count, follower_for_primary: Count },
      { description: 'Part reads (searches, predictions, document reads) this router sent since start, by the replica that answered: how reads spread over replicas, and how many were moved by a failure (`suggest_router_part_queries`).' },
    ),
  }),
});
NAMED_SCHEMAS.set(ClusterView, 'ClusterView');

export function clusterRoutes(deps: RouterDeps): Route[] {
  const { coordinator, config, data } = deps;
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/admin/cluster',
      operationId: 'getCluster',
      summary: 'Cluster nodes, partition placement and moves in progress',
      description:
        'Grow the cluster by starting a shard node with the same SUGGEST_ETCD: the placement leader moves replicas to it, at most max_concurrent_moves at a time (SUGGEST_MAX_CONCURRENT_MOVES). Watch `moves` empty out and `settled` turn true.',
      tags: ['administration'],
      access: 'admin',
      response: { description: 'The cluster as the coordinator sees it now.', schema: ClusterView },
      async handler() {
        const [table, members] = await Promise.all([coordinator.getPlacement(), coordinator.listMembers()]);
        return clusterView(table, members, deps, await documentCounts(members, deps));
      },
    }),
  ];

  function clusterView(table: PlacementTable | undefined, members: MemberRecord[], d: RouterDeps, counts: Map<string, number>) {
    const shardMembers = members.filter((m) => m.roles.includes('shard'));
    const live = new Map(shardMembers.map((m) => [m.node_id as string, m]));
    const ids = new Set<string>(live.keys());
    for (const list of table?.nodes ?? []) for (const n of list) ids.add(n);
    const moves = table?.moves ?? [];
    const now = Date.now();
    const rf = Math.max(1, config.replicationFactor);
    const nodes = [...ids].sort().map((id) => {
      const m = live.get(id);
      let primaries = 0;
      let replicas = 0;
      for (const list of table?.nodes ?? []) {
        if (list[0] === id) primaries++;
        if (list.includes(NodeId(id))) replicas++;
      }
      return {
        node_id: id,
        live: m !== undefined,
        grpc_address: m?.grpc_address ?? null,
        metrics_address: m?.metrics_address ?? null,
        started_at: m?.started_at ?? null,
        primaries,
        replicas,
        moving_in: moves.filter((mv) => mv.to === id).length,
        document_count: counts.get(id) ?? null,
      };
    });
    const want = Math.min(rf, live.size);
    const liveLoads = nodes.filter((n) => n.live).map((n) => n.replicas);
    const balanced = liveLoads.length === 0 || Math.max(...liveLoads) - Math.min(...liveLoads) <= 1;
    const full = (table?.nodes ?? []).every((list) => list.length >= want && list.every((n) => live.has(n)));
    return {
      epoch: table?.epoch ?? null,
      partition_count: table?.partitions ?? config.partitions,
      replication_factor: rf,
      max_concurrent_moves: Math.max(1, config.maxConcurrentMoves),
      settled: table !== undefined && moves.length === 0 && full && balanced,
      nodes,
      partitions: (table?.nodes ?? []).map((list, p) => ({
        partition: p,
        primary: list[0] ?? null,
        followers: list.slice(1),
        moving_to: moves.find((mv) => mv.partition === p)?.to ?? null,
      })),
      moves: moves.map((mv) => ({
        partition: mv.partition,
        from: table?.nodes[mv.partition]?.[0] ?? null,
        to: mv.to,
        replaces: mv.replaces,
        started_at: mv.started_at,
        running_ms: Math.max(0, now - Date.parse(mv.started_at)),
      })),
      router: { node_id: d.nodeId, epoch: data.currentPlacement?.epoch ?? null, retries_wrong_owner: data.retries.wrongOwner, retries_unavailable: data.retries.unavailable, part_reads: { ...data.partQueries } },
    };
  }
}

/** Documents per live shard node (the partitions it holds), asked concurrently; a node that fails is left out. */
async function documentCounts(members: MemberRecord[], deps: RouterDeps): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  await Promise.all(
    members
      .filter((m) => m.roles.includes('shard'))
      .map(async (m) => {
        try {
          const r = await deps.data.partitionStats(m.node_id);
          out.set(m.node_id, r.partitions.reduce((n, p) => n + p.documentCount, 0));
        } catch {
          // a node that does not answer shows null
        }
      }),
  );
  return out;
}
