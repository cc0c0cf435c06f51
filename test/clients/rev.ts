// The tools every client of test/mcp-revisions.test.mjs calls, on each protocol revision and transport.
defineTool({ name: 'rev.echo', exposeAsTool: true, description: 'returns its arguments', handler: async ({ args }) => args });
defineTool({ name: 'rev.fail', exposeAsTool: true, handler: async () => { throw new Error('boom: rev.fail failed on purpose'); } });
defineTool({
  name: 'rev.progress', exposeAsTool: true,
  handler: async ({ args, progress }) => {
    for (let i = 1; i <= args.n; i++) {
      progress(i, args.n, `step ${i}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return { steps: args.n };
  },
});
// Reports once, then waits for its call to be cancelled (a bound keeps a broken test from waiting forever).
defineTool({
  name: 'rev.wait', exposeAsTool: true, timeoutMs: 120000,
  handler: async ({ progress, signal }) => {
    progress(1, 2, 'waiting to be cancelled');
    await new Promise((resolve, reject) => {
      const t = setTimeout(resolve, 110000);
      signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); });
    });
    return 'never cancelled';
  },
});
// A session's state: vars outlive the call, in the session the call names.
defineTool({
  name: 'rev.count', exposeAsTool: true,
  handler: async () => {
    const n = Number(vars.get('n') ?? 0) + 1;
    vars.set('n', String(n));
    return { n };
  },
});
// Asked for under [approvals] preset "strict": a command whose side effect is a file.
defineTool({
  name: 'rev.touch', exposeAsTool: true,
  allow: { commands: { touch: { run: ['touch', '${path}'] } } },
  handler: async ({ commands, args }) => {
    try {
      await commands.run('touch', { path: args.path });
      return 'ran';
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  },
});
// Tools to page through.
for (const n of ['a', 'b', 'c', 'd', 'e']) defineTool({ name: `rev.page.${n}`, exposeAsTool: true, handler: async () => n });
