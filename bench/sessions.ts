// Tools for the session benchmarks (bench/run.mjs).
const g = globalThis as any;
defineTool({ name: 'bench.noop', exposeAsTool: true, handler: () => null });
defineTool({ name: 'bench.spin', exposeAsTool: true, timeoutMs: 2000, handler: () => { for (;;) g.spins = (g.spins ?? 0) + 1; } });
