import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/test/**/*.test.ts'],
    exclude: ['node_modules/**', 'dist/**'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    // Tests read their writes: a query waits for documents written before it however long their
    // indexing takes (the service's default answers a query from the documents already searchable
    // after 250 ms, which under a loaded test machine would make answers depend on timing). Passed
    // on to the processes the tests start; the answer during a bulk load has tests of its own,
    // which set their wait themselves.
    env: { SUGGEST_FRESH_WAIT_MS: '600000' },
  },
});
