// Typeahead and autocomplete end to end against a real single-node process, whose autocomplete
// is answered on two query threads (the local cluster's shard nodes answer it on their event
// loops on a 2-core machine, where they share the cores: cluster.test.ts runs the same suites).
import { afterAll, beforeAll } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { registerRankingSuite } from './ranking-suite.js';
import { registerSearchSuite } from './search-suite.js';
import { registerVectorSuite } from './vector-suite.js';

let node: SingleNode;
beforeAll(async () => {
  node = await startSingleNode({ env: { SUGGEST_QUERY_THREADS: '2' } });
});
afterAll(async () => {
  await node?.stop();
});

registerSearchSuite('search on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerSearchSuite('search on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
registerVectorSuite('vector modes on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerVectorSuite('vector modes on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
registerRankingSuite('synonyms and merchandising on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerRankingSuite('synonyms and merchandising on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
