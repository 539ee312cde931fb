// The engagement loop end to end against a real single-node process.
import { afterAll, beforeAll } from 'vitest';
import { startSingleNode, type SingleNode } from '../runtime/process-harness.js';
import { registerEventsSuite } from './events-suite.js';

let node: SingleNode;
beforeAll(async () => {
  node = await startSingleNode();
});
afterAll(async () => {
  await node?.stop();
});

registerEventsSuite('engagement events on a single node', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 1 });
registerEventsSuite('engagement events on a single node, index in 3 parts', () => ({ urls: [node.baseUrl], adminKey: node.adminKey }), { parts: 3 });
