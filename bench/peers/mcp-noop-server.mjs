// A peer for the MCP-over-stdio measurement: the SDK's own server with one no-op tool and nothing else.
// What kiln adds over this is kiln's cost; what this costs is the protocol's floor.
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

const server = new Server({ name: 'noop', version: '0.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler('tools/list', async () => ({ tools: [{ name: 'noop', inputSchema: { type: 'object' } }] }));
server.setRequestHandler('tools/call', async () => ({ content: [{ type: 'text', text: 'null' }] }));
process.stdin.on('end', () => process.exit(0));
await server.connect(new StdioServerTransport());
