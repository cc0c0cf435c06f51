// Calls a JSON API on this machine with the standard fetch. allow.net lists the only hosts it may reach:
// any other host, a redirect elsewhere, or a private address the operator forbids is refused by the host.
interface Item {
  name: string;
  done: boolean;
}

defineTool({
  name: 'api.summary',
  description: 'Fetch a JSON list of {name, done} items from a local API and summarise it',
  inputSchema: {
    type: 'object',
    properties: { url: { type: 'string', description: 'e.g. http://127.0.0.1:8080/items' } },
    required: ['url'],
    additionalProperties: false,
  },
  exposeAsTool: true,
  timeoutMs: 10_000,
  allow: { net: ['127.0.0.1', 'localhost'] },
  handler: async ({ args }: { args: { url: string } }) => {
    const res = await fetch(args.url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5000) });
    if (!res.ok) throw new Error(`HTTP ${res.status} from ${res.url}`);
    const items = (await res.json()) as Item[];
    const open = items.filter((i) => !i.done).map((i) => i.name);
    return { total: items.length, done: items.length - open.length, open };
  },
});
