// The smallest useful extension: one promoted tool, no capabilities.
interface Args {
  name?: string;
}

function greeting(name: string): string {
  return `Hello, ${name}!`;
}

defineTool({
  name: 'hello.greet',
  description: 'Greet someone by name',
  inputSchema: {
    type: 'object',
    properties: { name: { type: 'string', description: 'who to greet' } },
    additionalProperties: false,
  },
  exposeAsTool: true,
  handler: async ({ args }: { args: Args }) => ({ message: greeting(args.name ?? 'world'), host: kiln.host }),
});

// A no-op tool: what the benchmarks call to measure the cost of a call itself.
defineTool({ name: 'hello.noop', exposeAsTool: true, handler: () => null });
