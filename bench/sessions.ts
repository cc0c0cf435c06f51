// Tools for the session benchmarks (bench/run.mjs).
const g = globalThis as any;
defineTool({ name: 'bench.noop', exposeAsTool: true, handler: () => null });
defineTool({ name: 'bench.spin', exposeAsTool: true, timeoutMs: 2000, handler: () => { for (;;) g.spins = (g.spins ?? 0) + 1; } });
defineTool({ name: 'bench.flood', exposeAsTool: true, timeoutMs: 3000, handler: () => { for (;;) console.log('flood ' + (g.lines = (g.lines ?? 0) + 1)); } });
