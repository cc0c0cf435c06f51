// A tool whose one operation needs a human under [approvals] preset "strict": the approval round trip of
// bench/run.mjs's "revisions" section (a small file write, so the cost measured is the asking).
defineTool({
  name: 'bench.approved', exposeAsTool: true,
  allow: { fs: { write: ['out'] } },
  handler: async ({ fs }) => {
    await fs.writeFile('out/approved.txt', 'yes');
    return null;
  },
});
