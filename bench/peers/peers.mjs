// The peers and workloads that run-one.mjs and run-all.mjs know, and the Node flags each peer needs.
export const PEERS = {
  // kiln on its default backend (wasmtime where the addon is built) and on V8 (jco's bindings).
  kiln: { module: './kiln.mjs', nodeFlags: [] },
  'kiln-v8': { module: './kiln.mjs', nodeFlags: [], env: { KILN_ENGINE: 'v8' } },
  'node-vm': { module: './node-vm.mjs', nodeFlags: [] },
  quickjs: { module: './quickjs.mjs', nodeFlags: [] },
  'quickjs-ng': { module: './quickjs-ng.mjs', nodeFlags: [] },
  // isolated-vm's README: on Node 20+ node must run with --no-node-snapshot.
  'isolated-vm': { module: './isolated-vm.mjs', nodeFlags: ['--no-node-snapshot'] },
  'componentize-js': { module: './componentize-js.mjs', nodeFlags: [] },
};

/** warmup and timed iterations per workload; maxMs bounds the timed loop whatever the count. */
export const WORKLOADS = {
  noop: { warmup: 500, iterations: 5000, maxMs: 10_000 },
  transform: { warmup: 20, iterations: 200, maxMs: 20_000 },
  sort: { warmup: 3, iterations: 30, maxMs: 30_000 },
  fib: { warmup: 3, iterations: 30, maxMs: 30_000 },
  sieve: { warmup: 3, iterations: 30, maxMs: 30_000 },
  hostCalls: { warmup: 50, iterations: 500, maxMs: 10_000 },
  newInstance: { warmup: 3, iterations: 50, maxMs: 30_000 },
  rss100: { instances: 100 },
};
