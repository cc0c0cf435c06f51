// Declared processes. argv form (no shell at all) wherever possible; shell form only for a pipeline.
// Values are data: `repo` is passed as one argument, or single-quoted by kiln in the shell line.
defineTool({
  name: 'git.sha',
  description: 'The commit a local git repository is at, and its subject line',
  inputSchema: {
    type: 'object',
    properties: { repo: { type: 'string', description: 'path to a git work tree' } },
    required: ['repo'],
    additionalProperties: false,
  },
  exposeAsTool: true,
  allow: {
    commands: {
      headSha: { run: ['git', '-C', '${repo}', 'rev-parse', 'HEAD'], timeoutMs: 5000 },
      subject: { run: 'git -C ${repo} log -1 --format=%s | head -c 200', timeoutMs: 5000 },
    },
  },
  handler: async ({ args, commands }: { args: { repo: string }; commands: any }) => ({
    sha: await commands.run('headSha', { repo: args.repo }),
    subject: await commands.run('subject', { repo: args.repo }),
  }),
});
