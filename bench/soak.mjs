// npm run soak: many tool calls across many sessions through one `kiln mcp` with real clients, a mix of work
// (net against a local server, commands, timers, failures, timeouts). Reports RSS after warm-up and at the end,
// the server's open file descriptors and child processes before and after, and that every call was answered.
// KILN_SOAK_CALLS (default 100000) and KILN_SOAK_SESSIONS (default 50) set the size.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const CALLS = Number(process.env.KILN_SOAK_CALLS ?? 100_000);
const SESSIONS = Number(process.env.KILN_SOAK_SESSIONS ?? 50);
const CLIENTS = 4;
const root = new URL('..', import.meta.url).pathname;

const server = createServer((req, res) => res.end('ok'));
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const dir = mkdtempSync(join(tmpdir(), 'kiln-soak-'));
writeFileSync(join(dir, 'soak.ts'), `
defineTool({ name: 'soak.noop', exposeAsTool: true, handler: () => 1 });
defineTool({ name: 'soak.net', exposeAsTool: true, allow: { net: ['127.0.0.1'] }, handler: async () => (await fetch('http://127.0.0.1:${port}/')).text() });
defineTool({ name: 'soak.cmd', exposeAsTool: true, allow: { commands: { t: { run: ['true'] } } }, handler: ({ commands }: any) => commands.run('t') });
defineTool({ name: 'soak.timer', exposeAsTool: true, handler: async () => { await new Promise((r) => setTimeout(r, 2)); setTimeout(() => {}, 5000); return 2; } });
defineTool({ name: 'soak.fail', exposeAsTool: true, handler: () => { throw new Error('planned'); } });
defineTool({ name: 'soak.timeout', exposeAsTool: true, timeoutMs: 20, handler: async () => { await new Promise(() => {}); } });
defineTool({ name: 'soak.vars', exposeAsTool: true, handler: () => { vars.set('n', String(Number(vars.get('n') ?? 0) + 1)); return vars.get('n'); } });
`);
const MIX = process.env.KILN_SOAK_MIX ? process.env.KILN_SOAK_MIX.split(',') : ['soak.noop', 'soak.noop', 'soak.noop', 'soak.vars', 'soak.net', 'soak.timer', 'soak.fail', 'soak.cmd'];
const TIMEOUT_EVERY = Number(process.env.KILN_SOAK_TIMEOUT_EVERY ?? 500);

const clients = [];
for (let i = 0; i < CLIENTS; i++) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [join(root, 'bin/kiln.js'), 'mcp', dir], stderr: 'ignore' });
  const client = new Client({ name: 'soak', version: '0' });
  await client.connect(transport);
  clients.push({ client, pid: transport.pid });
}

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
const fds = (pid) => readdirSync(`/proc/${pid}/fd`).length;
const children = (pid) => execFileSync('ps', ['-eo', 'ppid='], { encoding: 'utf8' }).split('\n').filter((l) => Number(l) === pid).length;
const stats = () => clients.map(({ pid }) => ({ rss: rss(pid), fds: fds(pid), children: children(pid) }));

let answered = 0, errors = 0, n = 0;
async function run(count) {
  await Promise.all(clients.map(async ({ client }, c) => {
    for (let i = c; i < count; i += CLIENTS) {
      const k = n++;
      const name = TIMEOUT_EVERY && k % TIMEOUT_EVERY === 0 ? 'soak.timeout' : MIX[k % MIX.length];
      const res = await client.callTool({ name, arguments: {}, _meta: { session: `s${k % SESSIONS}` } });
      answered++;
      if (res.isError) errors++;
    }
  }));
}

const started = Date.now();
const WARMUP = Number(process.env.KILN_SOAK_WARMUP ?? Math.min(50000, CALLS / 2));
await run(WARMUP); // warm-up, to the high water: guests, JIT tiers, pools and the allocator have grown
const warm = stats();
// In quarters, so a report shows whether memory climbs steadily (a leak) or settles (the allocator's high water).
const quarters = [];
for (let q = 0; q < 4; q++) {
  await run(CALLS / 4);
  quarters.push(stats().map((s) => +(s.rss / 1048576).toFixed(1)));
}
await new Promise((r) => setTimeout(r, 1000));
const end = stats();
const total = answered;
for (const { client } of clients) await client.close();
server.close();
rmSync(dir, { recursive: true, force: true });

const growth = end.map((e, i) => (e.rss - warm[i].rss) / warm[i].rss);
const report = {
  date: new Date().toISOString(), machine: `${cpus().length} cores, ${process.platform}, node ${process.version}`,
  calls: total, errors, seconds: Math.round((Date.now() - started) / 1000), sessions: SESSIONS, servers: CLIENTS,
  rssWarmMiB: warm.map((s) => +(s.rss / 1048576).toFixed(1)), rssByQuarterMiB: quarters, rssEndMiB: end.map((s) => +(s.rss / 1048576).toFixed(1)),
  rssGrowthPercent: growth.map((g) => +(g * 100).toFixed(1)), fdsWarm: warm.map((s) => s.fds), fdsEnd: end.map((s) => s.fds),
  childrenEnd: end.map((s) => s.children),
};
process.stdout.write(JSON.stringify(report, null, 2) + '\n');
const ok = total === CALLS + WARMUP && growth.every((g) => g < 0.1) && end.every((s, i) => s.fds <= warm[i].fds + 2 && s.children === 0);
process.stdout.write(ok ? 'soak: passed\n' : 'soak: FAILED (answers, RSS growth < 10%, no leaked fds or children)\n');
process.exitCode = ok ? 0 : 1;
