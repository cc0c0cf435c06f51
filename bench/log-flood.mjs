// One session floods console.log while another session's no-op calls are timed: logging must not stall other
// sessions (target: p99 under 50 ms). A real `kiln mcp` over stdio with the MCP SDK's client, which parses
// every notifications/message as a real client does; the server's stderr is read as an operator's terminal
// would. Prints one JSON line: {p50Us, p99Us, maxUs, calls, notifications, stderrBytes}.
// Usage: node bench/log-flood.mjs <sessions.wasm>   (bench/run.mjs builds it from bench/sessions.ts)
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const transport = new StdioClientTransport({ command: process.execPath, args: [join(root, 'bin/kiln.js'), 'mcp', process.argv[2]], cwd: root, stderr: 'pipe' });
let stderrBytes = 0;
transport.stderr?.on('data', (d) => { stderrBytes += d.length; });
const client = new Client({ name: 'bench', version: '0' });
let notifications = 0;
client.setNotificationHandler('notifications/message', () => { notifications++; });
await client.connect(transport);
const callIn = (session, name) => client.callTool({ name, arguments: {}, _meta: { session } }, { timeout: 600_000 });
try {
  await callIn('flooder', 'bench.noop');
  for (let i = 0; i < 50; i++) await callIn('quiet', 'bench.noop'); // warm
  let done = false;
  const flood = callIn('flooder', 'bench.flood').finally(() => { done = true; }); // until its 3 s deadline
  await new Promise((r) => setTimeout(r, 100));
  const lat = [];
  for (let i = 0; i < 20_000 && !done; i++) {
    const t = performance.now();
    await callIn('quiet', 'bench.noop');
    lat.push((performance.now() - t) * 1000);
  }
  await flood;
  lat.sort((a, b) => a - b);
  const at = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
  process.stdout.write(JSON.stringify({ p50Us: at(0.5), p99Us: at(0.99), maxUs: lat[lat.length - 1], calls: lat.length, notifications, stderrBytes }) + '\n');
} finally {
  await client.close();
}
