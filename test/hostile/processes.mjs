// Attacks on process lifetime: commands that try to outlive their call, their session or the server — by
// being abandoned, by the call timing out, by leaving their process group with setsid, by double-forking —
// and a server that is closed, terminated or killed mid-call. Nothing may be left in the process table. And
// a command gets no file descriptor but its stdio: none the server itself inherited.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { call, kilnBin, root, waitUntil } from '../helpers.mjs';
import { attack, live, serve, serverPid, sources, token } from './harness.mjs';

const COMMANDS = {
  sleep: { run: ['sleep', '${n}'] },
  escape: 'setsid sleep ${n} & echo started',
  daemon: '(sleep ${n} &) & echo started',
};
const extension = (dev = '4790.1') => `const C = ${JSON.stringify({ ...COMMANDS, dev: { run: `setsid sleep ${dev} & exec sleep ${dev}`, persistent: true } })};
defineTool({ name: 'p.run', exposeAsTool: true, timeoutMs: 60000, allow: { commands: C }, handler: ({ args, commands }: any) => commands.run(args.name, args.vars) });
defineTool({ name: 'p.runShort', exposeAsTool: true, timeoutMs: 300, allow: { commands: C }, handler: ({ args, commands }: any) => commands.run(args.name, args.vars) });
defineTool({ name: 'p.abandon', exposeAsTool: true, allow: { commands: C }, handler: ({ args, commands }: any) => { commands.run(args.name, args.vars).catch(() => {}); return 'returned'; } });
defineTool({ name: 'p.start', exposeAsTool: true, allow: { commands: C }, handler: ({ args, commands }: any) => commands.start(args.name) });
defineTool({ name: 'p.stop', exposeAsTool: true, allow: { commands: C }, handler: ({ args, commands }: any) => commands.stop(args.name) });
defineTool({ name: 'p.status', exposeAsTool: true, allow: { commands: C }, handler: ({ args, commands }: any) => commands.status(args.name) });
`;

/** A unique sleep duration: its text marks the process in `ps`. */
const unique = () => `47${Math.floor(Math.random() * 1e6)}.${Math.floor(Math.random() * 1e6)}`;
const gone = (n) => waitUntil(() => live(`sleep ${n}`).length === 0);
const started = (n, count = 1) => waitUntil(() => live(`sleep ${n}`).filter((l) => !l.includes('kiln-reaper')).length >= count);
const server = (t, dev) => serve(t, [join(sources(t, { 'p.ts': extension(dev) }), 'p.ts')]);

attack('proc-tool-timeout', 'a command without timeoutMs outlives the tool timeout that ended its call', async (t) => {
  const { client } = await server(t);
  const n = unique();
  const r = await call(client, 'p.runShort', { name: 'sleep', vars: { n } });
  assert.match(r.text, /TimeoutError/);
  assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
});

attack('proc-abandoned', 'a handler starts a command and returns without awaiting it', async (t) => {
  const { client } = await server(t);
  const n = unique();
  assert.equal((await call(client, 'p.abandon', { name: 'sleep', vars: { n } })).json, 'returned');
  assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
});

attack('proc-session-closed', 'a command keeps running after kiln_close_session ended its session', async (t) => {
  const { client } = await server(t);
  const n = unique();
  const pending = call(client, 'p.run', { name: 'sleep', vars: { n } }, { session: 'victim' });
  assert.ok(await started(n));
  await call(client, 'kiln_close_session', { session: 'victim' });
  assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
  assert.equal((await pending).isError, true);
});

attack('proc-setsid-oneshot', 'a one-shot command leaves its process group with setsid and returns', async (t) => {
  const { client } = await server(t);
  const n = unique();
  assert.equal((await call(client, 'p.run', { name: 'escape', vars: { n } })).json, 'started');
  assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
});

attack('proc-double-fork', 'a one-shot command double-forks a daemon and returns', async (t) => {
  const { client } = await server(t);
  const n = unique();
  assert.equal((await call(client, 'p.run', { name: 'daemon', vars: { n } })).json, 'started');
  assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
});

attack('proc-setsid-persistent', 'a persistent command leaves a setsid child behind, then is stopped', async (t) => {
  const { client } = await server(t, '4799.5');
  assert.equal((await call(client, 'p.start', { name: 'dev' })).isError, false);
  assert.ok(await started('4799.5', 2));
  await call(client, 'p.stop', { name: 'dev' });
  assert.ok(await gone('4799.5'), `left behind: ${live('sleep 4799.5')}`);
});

attack('proc-persistent-killed-outside', 'a persistent process killed from outside: status says so and start works again', async (t) => {
  const { client } = await server(t, '4798.5');
  assert.equal((await call(client, 'p.start', { name: 'dev' })).isError, false);
  assert.ok(await started('4798.5', 2));
  const reaper = (await call(client, 'p.status', { name: 'dev' })).json.pid;
  const [command] = readFileSync(`/proc/${reaper}/task/${reaper}/children`, 'utf8').trim().split(/\s+/).map(Number);
  process.kill(command, 'SIGKILL'); // the command itself, as an outsider (or the OOM killer) might
  assert.ok(await waitUntil(async () => (await call(client, 'p.status', { name: 'dev' })).json.running === false));
  assert.ok(await gone('4798.5'), `left behind: ${live('sleep 4798.5')}`);
  assert.equal((await call(client, 'p.start', { name: 'dev' })).isError, false);
  assert.ok(await started('4798.5', 2));
});

attack('proc-slots-released', '17 abandoned commands do not exhaust the session\'s 16 slots', async (t) => {
  const { client } = await server(t);
  const ns = Array.from({ length: 17 }, unique);
  for (const n of ns) assert.equal((await call(client, 'p.abandon', { name: 'sleep', vars: { n } })).json, 'returned');
  const r = await call(client, 'p.run', { name: 'escape', vars: { n: unique() } });
  assert.equal(r.json, 'started', r.text);
  for (const n of ns) assert.ok(await gone(n), `left behind: ${live(`sleep ${n}`)}`);
});

for (const how of ['stdin', 'SIGTERM', 'SIGKILL']) {
  attack(`proc-server-${how}`, `the server goes away mid-call (${how === 'stdin' ? 'the client closes stdin' : how}): the command goes too`, async (t) => {
    const { client, transport } = await server(t);
    const pid = serverPid(transport);
    const n2 = unique();
    void call(client, 'p.run', { name: 'sleep', vars: { n: n2 } }, { session: 'other' }).catch(() => undefined);
    assert.ok(await started(n2));
    if (how === 'stdin') await client.close();
    else process.kill(pid, how);
    assert.ok(await gone(n2), `left behind: ${live(`sleep ${n2}`)}`);
    assert.ok(await waitUntil(() => live('kiln-reaper').every((l) => !l.includes(n2))));
  });
}

attack('proc-inherited-fd', 'a command uses a file descriptor the server inherited without close-on-exec (here: a secret file)', async (t) => {
  const secret = token('FD-SECRET');
  const dir = sources(t, {
    'secret.txt': secret,
    'fd.ts': `defineTool({ name: 'fd.run', exposeAsTool: true,
  allow: { commands: { fds: { run: ['sh', '-c', 'ls /proc/self/fd; cat /proc/self/fd/40; exit 0'] } } },
  handler: async ({ commands }: any) => { try { return await commands.run('fds', {}); } catch (e: any) { return e.name + ': ' + e.message + (e.stdout ?? '') + (e.stderr ?? ''); } } });`,
  });
  // kiln started with fd 40 open on the secret, not close-on-exec, as a parent (a shell, a test harness) leaves it
  // (bash: dash takes one-digit descriptors only, and node makes the lowest ones close-on-exec at start).
  const transport = new StdioClientTransport({
    command: '/bin/bash',
    args: ['-c', 'exec 40<"$0"; exec "$@"', join(dir, 'secret.txt'), process.execPath, kilnBin, 'mcp', join(dir, 'fd.ts')],
    cwd: root,
    env: process.env,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', () => {});
  const client = new Client({ name: 'kiln-test', version: '0.0.0' });
  t.after(async () => {
    await client.close().catch(() => {});
    await transport.close().catch(() => {});
  });
  await client.connect(transport);
  const flags = /^flags:\s+(\d+)$/m.exec(readFileSync(`/proc/${serverPid(transport)}/fdinfo/40`, 'utf8'));
  assert.ok(flags && (parseInt(flags[1], 8) & 0o2000000) === 0, 'the server holds fd 40, not close-on-exec');
  const r = await call(client, 'fd.run');
  assert.equal(r.text.includes(secret), false, `the command read the secret through fd 40: ${r.text.slice(0, 300)}`);
  // ls lists its own directory handle (3) besides 0, 1, 2: nothing else.
  const fds = r.text.split('\n').filter((l) => /^\d+$/.test(l)).map(Number);
  assert.deepEqual(fds, [0, 1, 2, 3], r.text.slice(0, 300));
});
