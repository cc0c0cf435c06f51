// Session state and tool-to-tool calls: a note pad kept in the session's `vars` store.
// `notes.slug` is a helper: callable as plugins['notes.slug'] but not advertised over MCP.

defineTool({
  name: 'notes.slug',
  description: 'Turn a note into a short id',
  handler: ({ args }: { args: { text: string } }) =>
    args.text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 32) || 'note',
});

defineTool({
  name: 'notes.add',
  description: 'Remember a note for this session',
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string', minLength: 1, maxLength: 1000 } },
    required: ['text'],
    additionalProperties: false,
  },
  exposeAsTool: true,
  handler: async ({ args }: { args: { text: string } }) => {
    const id = (await plugins['notes.slug']({ text: args.text })) as string;
    vars.set(`note:${id}`, args.text);
    return { id, notes: vars.keys().filter((k) => k.startsWith('note:')).length };
  },
});

defineTool({
  name: 'notes.list',
  description: "List this session's notes",
  exposeAsTool: true,
  handler: () =>
    vars
      .keys()
      .filter((k) => k.startsWith('note:'))
      .map((k) => ({ id: k.slice('note:'.length), text: vars.get(k) })),
});
