// Cancellation and per-guest serialisation over MCP, with the real SDK client: `notifications/cancelled`
// stops each kind of work a call can be doing (a timer wait, a busy loop, a fetch, a command), proven by the
// process table and the local server's log; the session's next call answers at once with fresh globals and
// its vars kept; and a slow call of one extension never makes another extension's tool wait.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { call, mcp, mcpHttp, tempDir, waitUntil } from './helpers.mjs';
import { startServer } from './http-server.mjs';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { kilnBin } from './helpers.mjs';

const SLOW = (port) => `
let calls = 0;
// /mark, then (its answer read) /marked, not awaited: the server's seeing /marked proves the handler is past
// its own request, in the code that follows (a wait, a loop), so a cancel from then on meets that code.
const mark = (what: string) => fetch('http://127.0.0.1:${port}/mark?' + what).then((r) => r.text()).then((text) => {
  fetch('http://127.0.0.1:${port}/marked').catch(() => {});
  return text;
});
defineTool({ name: 'slow.wait', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${port}'] }, handler: async () => {
  await mark('wait');
  await new Promise((r) => setTimeout(r, 25000));
  return 'waited';
} });
// A spinning guest sends nothing (its requests go out when it yields), so there is no /marked to wait for:
// it spins whenever the cancel comes, even one that aborted its /mark.
defineTool({ name: 'slow.spin', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${port}'] }, handler: async () => {
  await mark('spin').catch(() => {});
  let n = 0;
  for (;;) n++;
} });
defineTool({ name: 'slow.fetch', exposeAsTool: true, timeoutMs: 60000, allow: { net: ['127.0.0.1:${port}'] }, handler: async () => {
  const r = await fetch('http://127.0.0.1:${port}/hang');
  return r.status;
} });
defineTool({ name: 'slow.held', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${port}'] }, handler: async () => {
  const unread = await fetch('http://127.0.0.1:${port}/hello'); // its body stays open, unread
  await mark('held');
  await new Promise((r) => setTimeout(r, 25000));
  return unread.status;
} });
defineTool({ name: 'slow.cmd', exposeAsTool: true, timeoutMs: 60000, allow: { commands: { nap: { run: ['sleep', '\${s}'] } } }, handler: async ({ commands }) => {
  await commands.run('nap', { s: '23.25' });
  return 'slept';
} });
defineTool({ name: 'slow.viaplugin', exposeAsTool: true, timeoutMs: 600000, allow: { tools: ['other.nap'] }, handler: () => plugins['other.nap']({}) });
// Handlers that stop cleanly: they see the cancel as an AbortError (ctx.signal, or what they await).
const seen = (key: string, e: any, signal?: AbortSignal) =>
  vars.set(key, JSON.stringify({ name: e.name, dom: e instanceof DOMException, message: e.message, aborted: signal?.aborted ?? null }));
defineTool({ name: 'slow.polite', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${port}'] }, handler: async ({ signal }) => {
  await mark('polite');
  try {
    await new Promise((resolve, reject) => {
      const t = setTimeout(resolve, 25000);
      signal.addEventListener('abort', () => { clearTimeout(t); reject(signal.reason); });
    });
  } catch (e) { seen('polite', e, signal); throw e; }
} });
defineTool({ name: 'slow.fetchcatch', exposeAsTool: true, timeoutMs: 60000, allow: { net: ['127.0.0.1:${port}'] }, handler: async () => {
  try { await fetch('http://127.0.0.1:${port}/hang'); } catch (e) { seen('fetch', e); }
  return 'gave up';
} });
defineTool({ name: 'slow.cmdcatch', exposeAsTool: true, timeoutMs: 60000, allow: { commands: { nap: { run: ['sleep', '\${s}'] } } }, handler: async ({ commands, signal }) => {
  try { await commands.run('nap', { s: '23.25' }); } catch (e) { seen('cmd', e, signal); }
  return 'gave up';
} });
defineTool({ name: 'slow.recmd', exposeAsTool: true, timeoutMs: 60000, allow: { commands: { nap: { run: ['sleep', '\${s}'] } } }, handler: async ({ commands }) => {
  try { await commands.run('nap', { s: '23.25' }); } catch (first) {
    // Cancelled: a new command now must be refused, not started.
    try { await commands.run('nap', { s: '23.25' }); vars.set('recmd', 'ran'); } catch (e) { seen('recmd', e); }
  }
  return 'done';
} });
defineTool({ name: 'slow.viahear', exposeAsTool: true, timeoutMs: 600000, allow: { net: ['127.0.0.1:${port}'], tools: ['other.hear'] }, handler: async () => {
  await mark('viahear');
  return plugins['other.hear']({});
} });
defineTool({ name: 'slow.mark', exposeAsTool: true, handler: ({ args }) => { vars.set('order', (vars.get('order') ?? '') + args.tag); return vars.get('order'); } });
defineTool({ name: 'slow.signal', exposeAsTool: true, handler: (ctx) => ({ aborted: ctx.signal.aborted, isSignal: ctx.signal instanceof AbortSignal, same: ctx.signal === ctx.signal }) });
defineTool({ name: 'slow.seen', exposeAsTool: true, handler: () => ({ calls, polite: vars.get('polite') ?? null, fetch: vars.get('fetch') ?? null, cmd: vars.get('cmd') ?? null, recmd: vars.get('recmd') ?? null }) });
defineTool({ name: 'slow.state', exposeAsTool: true, handler: () => {
  calls++;
  if (!vars.has('first')) vars.set('first', 'kept');
  return { calls, first: vars.get('first') };
} });
`;
const OTHER = `
let count = 0;
defineTool({ name: 'other.quick', exposeAsTool: true, handler: () => 'quick' });
defineTool({ name: 'other.busy', exposeAsTool: true, handler: () => { const t = Date.now(); while (Date.now() - t < 400); return ++count; } });
defineTool({ name: 'other.hear', handler: ({ signal }) => new Promise((_, reject) => signal.addEventListener('abort', () => {
  vars.set('heard', signal.reason.message);
  reject(signal.reason);
})) });
defineTool({ name: 'other.heard', exposeAsTool: true, handler: () => vars.get('heard') ?? null });
defineTool({ name: 'other.nap', allow: { commands: { nap: { run: ['sleep', '\${s}'] } } }, handler: async ({ commands }) => {
  await commands.run('nap', { s: '23.25' });
  return 'slept';
} });`;

async function setup(t, transport = 'stdio') {
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'slow.ts'), SLOW(srv.port));
  writeFileSync(join(dir, 'other.ts'), OTHER);
  const { client } = await (transport === 'http' ? mcpHttp : mcp)(t, [dir]);
  return { srv, client };
}

/** Start `name`, wait for `ready`, cancel it through the client's AbortSignal; resolves with what the call did. */
async function cancelWhen(client, name, ready, meta) {
  const ac = new AbortController();
  let settled = false;
  const pending = client.callTool({ name, arguments: {}, ...(meta ? { _meta: meta } : {}) }, { signal: ac.signal, timeout: 120_000 })
    .then(() => 'answered', (e) => `rejected: ${e?.message ?? e}`).finally(() => { settled = true; });
  assert.ok(await waitUntil(ready), `${name} never started`);
  assert.equal(settled, false, `${name} ended before it was cancelled`);
  ac.abort('the user pressed stop');
  return pending;
}

/** Process ids whose command line is exactly `sleep 23.25` (the fixture's command). */
const sleepers = () => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === 'sleep\u000023.25\u0000';
  } catch {
    return false;
  }
});

// slow.held also leaves a response body open: discarding the guest destroys it (undici then emits an error
// that, unheard, once ended the server).
// Each kind of work over stdio and over Streamable HTTP: a timer wait, a busy loop, a fetch, a command.
for (const transport of ['stdio', 'http']) {
for (const tool of ['slow.wait', 'slow.spin', 'slow.held']) {
  // Without cancellation the next call would wait for the 10-minute deadline: the test's own bound catches it.
  test(`${transport}: cancelling ${tool} stops it: the session's next call answers with fresh globals and its vars kept`, { timeout: 30_000 }, async (t) => {
    const { srv, client } = await setup(t, transport);
    assert.deepEqual((await call(client, 'slow.state')).json, { calls: 1, first: 'kept' });
    const outcome = await cancelWhen(client, tool, () => srv.count(tool === 'slow.spin' ? '/mark' : '/marked') > 0);
    assert.match(outcome, /rejected/);
    // The guest was stopped (a spinning one too): the next call of this extension in this session runs now,
    // in a fresh guest, instead of waiting 25 s (or the 60 s deadline) behind the cancelled one.
    const next = await call(client, 'slow.state');
    assert.deepEqual(next.json, { calls: 1, first: 'kept' });
  });
}

test(`${transport}: cancelling a call blocked on fetch aborts the request: the local server sees its client go away`, async (t) => {
  const { srv, client } = await setup(t, transport);
  const outcome = await cancelWhen(client, 'slow.fetch', () => srv.count('/hang') > 0);
  assert.match(outcome, /rejected/);
  assert.ok(await waitUntil(() => srv.closed.includes('/hang'), 5000), 'the hanging request was not closed');
  assert.equal((await call(client, 'slow.state')).isError, false);
});

test(`${transport}: cancelling a call running a command kills the command's process`, async (t) => {
  const { client } = await setup(t, transport);
  const before = new Set(sleepers());
  const outcome = await cancelWhen(client, 'slow.cmd', () => sleepers().some((p) => !before.has(p)));
  assert.match(outcome, /rejected/);
  assert.ok(await waitUntil(() => sleepers().every((p) => before.has(p)), 5000), `still running: ${sleepers()}`);
});
}

// ctx.signal and AbortError: a handler that listens stops cleanly, and then its guest (globals) is kept.
test('ctx.signal aborts with an AbortError carrying the reason; a handler that stops on it keeps its globals', { timeout: 30_000 }, async (t) => {
  const { srv, client } = await setup(t);
  assert.deepEqual((await call(client, 'slow.signal')).json, { aborted: false, isSignal: true, same: true });
  await call(client, 'slow.state'); // calls = 1
  assert.match(await cancelWhen(client, 'slow.polite', () => srv.count('/marked') > 0), /rejected/);
  const seen = (await call(client, 'slow.seen')).json;
  assert.equal(seen.calls, 1, 'the guest was discarded although its handler stopped on the signal');
  const polite = JSON.parse(seen.polite);
  assert.equal(polite.name, 'AbortError');
  assert.equal(polite.dom, true, 'the reason is a DOMException, as in Node');
  assert.equal(polite.aborted, true);
  assert.match(polite.message, /the user pressed stop/);
});

test('a handler awaiting fetch sees an AbortError and the request is closed; its guest is kept', { timeout: 30_000 }, async (t) => {
  const { srv, client } = await setup(t);
  await call(client, 'slow.state');
  assert.match(await cancelWhen(client, 'slow.fetchcatch', () => srv.count('/hang') > 0), /rejected/);
  assert.ok(await waitUntil(() => srv.closed.includes('/hang'), 5000), 'the hanging request was not closed');
  const seen = (await call(client, 'slow.seen')).json;
  assert.equal(seen.calls, 1);
  assert.deepEqual({ ...JSON.parse(seen.fetch), message: undefined }, { name: 'AbortError', dom: true, message: undefined, aborted: null });
});

test('a handler awaiting a command sees an AbortError and the process is killed', { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const before = new Set(sleepers());
  assert.match(await cancelWhen(client, 'slow.cmdcatch', () => sleepers().some((p) => !before.has(p))), /rejected/);
  assert.ok(await waitUntil(() => sleepers().every((p) => before.has(p)), 5000), `still running: ${sleepers()}`);
  const cmd = JSON.parse((await call(client, 'slow.seen')).json.cmd);
  assert.equal(cmd.name, 'AbortError');
  assert.equal(cmd.aborted, true);
});

test('a call cancelled while it waits in its guest\'s queue never runs', { timeout: 30_000 }, async (t) => {
  const { srv, client } = await setup(t);
  const first = new AbortController();
  const running = client.callTool({ name: 'slow.wait', arguments: {} }, { signal: first.signal, timeout: 120_000 }).catch(() => {});
  assert.ok(await waitUntil(() => srv.count('/mark') === 1));
  // Queued behind slow.wait (same extension, same session), then cancelled before its turn...
  const outcome = await cancelWhen(client, 'slow.fetch', () => true);
  assert.match(outcome, /rejected/);
  // ...and once the queue moves on, it is not run.
  first.abort();
  await running;
  assert.equal((await call(client, 'slow.state')).isError, false);
  assert.equal(srv.count('/hang'), 0, 'the cancelled call ran');
});

test("one extension's slow call does not make another extension's tool wait, in the same session", { timeout: 30_000 }, async (t) => {
  const { srv, client } = await setup(t);
  let slowSettled = false;
  const ac = new AbortController();
  const slow = client.callTool({ name: 'slow.wait', arguments: {} }, { signal: ac.signal, timeout: 120_000 }).catch(() => {}).finally(() => { slowSettled = true; });
  assert.ok(await waitUntil(() => srv.count('/mark') === 1));
  const quick = await call(client, 'other.quick');
  assert.equal(quick.text, 'quick');
  assert.equal(slowSettled, false, 'other.quick answered only after slow.wait ended');
  ac.abort();
  await slow;
});

test("cancelling a call cancels the tools it called through plugins[...]: the callee's command is killed", { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const before = new Set(sleepers());
  const outcome = await cancelWhen(client, 'slow.viaplugin', () => sleepers().some((p) => !before.has(p)));
  assert.match(outcome, /rejected/);
  assert.ok(await waitUntil(() => sleepers().every((p) => before.has(p)), 5000), `still running: ${sleepers()}`);
});

test('a call cancelled while its guest is being made never starts', { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const before = new Set(sleepers());
  const ac = new AbortController();
  const p = client.callTool({ name: 'slow.cmd', arguments: {} }, { signal: ac.signal }).catch(() => 'rejected');
  ac.abort('at once');
  assert.equal(await p, 'rejected');
  // The command would start within a moment of the guest's load; give it that moment, then look.
  await call(client, 'slow.state');
  assert.deepEqual(sleepers().filter((x) => !before.has(x)), [], 'the cancelled call ran its command');
});

test("a CPU-busy call of one extension is not discarded when the session calls another: the other waits its turn", { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const busy = call(client, 'other.busy');
  await new Promise((r) => setTimeout(r, 100)); // other.busy is computing now
  const [b, state] = await Promise.all([busy, call(client, 'slow.state')]);
  assert.equal(b.isError, false, b.text);
  assert.equal(state.isError, false, state.text);
  assert.equal((await call(client, 'other.busy')).json, 2, "other.busy's globals were kept");
});

// The v1 SDK client (@modelcontextprotocol/sdk) cancels through its own request options; the same holds.
test('v1 SDK client: cancelling a spinning call and one awaiting a command stops them; the guest hears it', { timeout: 60_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'slow.ts'), SLOW(srv.port));
  const client = new ClientV1({ name: 'kiln-test-v1', version: '0.0.0' });
  await client.connect(new StdioV1({ command: process.execPath, args: [kilnBin, 'mcp', dir], stderr: 'ignore' }));
  t.after(() => client.close());
  const cancelV1 = async (name, ready) => {
    const ac = new AbortController();
    const p = client.callTool({ name, arguments: {} }, undefined, { signal: ac.signal, timeout: 120_000 }).then(() => 'answered', () => 'rejected');
    assert.ok(await waitUntil(ready), `${name} never started`);
    ac.abort('stop from v1');
    return p;
  };
  assert.equal(await cancelV1('slow.spin', () => srv.count('/mark') > 0), 'rejected');
  const state = await client.callTool({ name: 'slow.state', arguments: {} });
  assert.deepEqual(state.structuredContent, { calls: 1, first: 'kept' }, 'the spinning guest was stopped and discarded');
  const before = new Set(sleepers());
  assert.equal(await cancelV1('slow.cmdcatch', () => sleepers().some((p) => !before.has(p))), 'rejected');
  assert.ok(await waitUntil(() => sleepers().every((p) => before.has(p)), 5000), `still running: ${sleepers()}`);
  const seen = (await client.callTool({ name: 'slow.seen', arguments: {} })).structuredContent;
  assert.equal(JSON.parse(seen.cmd).name, 'AbortError');
  assert.match(JSON.parse(seen.cmd).message, /stop from v1/);
});

test('a cancelled handler may start nothing more: a command it tries after the AbortError is refused', { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const before = new Set(sleepers());
  const spawned = new Set();
  // Every look at the process table records what it sees, the look that triggers the cancel included: a
  // command started and stopped between two ticks of the watch is still counted.
  const look = () => {
    const fresh = sleepers().filter((p) => !before.has(p));
    for (const p of fresh) spawned.add(p);
    return fresh.length > 0;
  };
  const watch = setInterval(look, 20);
  t.after(() => clearInterval(watch));
  assert.match(await cancelWhen(client, 'slow.recmd', look), /rejected/);
  assert.ok(await waitUntil(() => sleepers().every((p) => before.has(p)), 5000), `still running: ${sleepers()}`);
  const { recmd } = (await call(client, 'slow.seen')).json;
  assert.notEqual(recmd, 'ran', 'a cancelled handler started a command');
  assert.equal(JSON.parse(recmd).name, 'AbortError');
  clearInterval(watch);
  assert.equal(spawned.size, 1, `processes started: ${[...spawned]}`);
});

test("a tool called through plugins[...] hears the client's reason when its caller is cancelled", { timeout: 30_000 }, async (t) => {
  const { srv, client } = await setup(t);
  assert.match(await cancelWhen(client, 'slow.viahear', () => srv.count('/marked') > 0), /rejected/);
  assert.ok(await waitUntil(async () => (await call(client, 'other.heard')).text !== 'null'));
  assert.match((await call(client, 'other.heard')).text, /the user pressed stop/);
});

test('calls to one guest run in arrival order, with and without a progress token', { timeout: 30_000 }, async (t) => {
  const { client } = await setup(t);
  const calls = ['A', 'B', 'C', 'D', 'E', 'F'].map((tag, i) =>
    client.callTool({ name: 'slow.mark', arguments: { tag }, ...(i % 2 === 0 ? { _meta: { progressToken: `p${i}` } } : {}) }));
  await Promise.all(calls);
  assert.equal((await call(client, 'slow.mark', { tag: '' })).text, 'ABCDEF');
});

/** CPU time (s) the process has used, from /proc (utime + stime, all threads). */
const cpuSeconds = (pid) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

// Guests of several sessions share a worker thread; stopping two of them back to back must stop both (each
// gets its own stop slot): a leaked spinning loop would burn a core until its 10-minute deadline.
test('cancelling busy loops in many sessions at once stops every one of them', { timeout: 60_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = tempDir(t);
  writeFileSync(join(dir, 'slow.ts'), SLOW(srv.port));
  const { client, transport } = await mcp(t, [dir]);
  const aborts = [];
  const pending = [];
  for (let i = 0; i < 6; i++) {
    const ac = new AbortController();
    aborts.push(ac);
    pending.push(client.callTool({ name: 'slow.spin', arguments: {}, _meta: { session: `spin${i}` } }, { signal: ac.signal, timeout: 120_000 }).catch(() => 'rejected'));
  }
  assert.ok(await waitUntil(() => srv.count('/mark') === 6), `started: ${srv.count('/mark')}`);
  for (const ac of aborts) ac.abort('all at once');
  await Promise.all(pending);
  await new Promise((r) => setTimeout(r, 1000)); // the grace periods pass
  const before = cpuSeconds(transport.pid);
  await new Promise((r) => setTimeout(r, 2000));
  const used = cpuSeconds(transport.pid) - before;
  assert.ok(used < 1, `the server used ${used.toFixed(2)} s of CPU in 2 s after every loop was cancelled: one still spins`);
});
