// The "big package" build workload (bench/run.mjs, section `build`): one tool on mathjs's expression parser,
// which pulls in ~1,000 of the package's modules (2.3 MB of source) — the largest import graph among the
// packages kiln's tests and benchmarks use. Only built, never served.
import { evaluate } from 'mathjs';

defineTool({
  name: 'bench.calc',
  inputSchema: { type: 'object', properties: { expr: { type: 'string' } }, required: ['expr'], additionalProperties: false },
  handler: ({ args }: { args: { expr: string } }) => String(evaluate(args.expr)),
});
