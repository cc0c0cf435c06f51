// The component boundary itself: what a guest can import, and what it cannot reach.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { componentWit } from '@bytecodealliance/jco';
import { call, mcp, root, tempDir } from './helpers.mjs';

test('the engine imports only kiln interfaces and the WASI ones the host answers: no sockets, http or WASI random (entropy is kiln:extension/crypto)', async () => {
  const wit = await componentWit(readFileSync(join(root, 'build/engine/engine.wasm')));
  const imports = wit.split('\n').map((l) => /^\s*import ([^;]+);/.exec(l)?.[1]).filter(Boolean).map((i) => i.replace(/@[\d.]+$/, ''));
  assert.deepEqual(imports.sort(), [
    'kiln:extension/browser', 'kiln:extension/commands', 'kiln:extension/fs', 'kiln:extension/http', 'kiln:extension/plugins',
    'kiln:extension/crypto', 'kiln:extension/intl', 'kiln:extension/runtime', 'kiln:extension/types', 'kiln:extension/vars',
    'wasi:cli/stderr', 'wasi:cli/stdin', 'wasi:cli/stdout', 'wasi:cli/terminal-input', 'wasi:cli/terminal-output',
    'wasi:cli/terminal-stderr', 'wasi:cli/terminal-stdin', 'wasi:cli/terminal-stdout',
    'wasi:clocks/monotonic-clock', 'wasi:clocks/wall-clock',
    'wasi:filesystem/preopens', 'wasi:filesystem/types',
    'wasi:io/error', 'wasi:io/streams',
  ].sort());
  assert.match(wit, /export kiln:extension\/guest/);
});

test('a guest reaching for Node modules, files or the host process at run time gets an error, and the server lives on', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'escape.ts'), `
defineTool({ name: 'esc.import', exposeAsTool: true, handler: async ({ args }) => { const m = args.m; return await import(m); } });
defineTool({ name: 'esc.globals', exposeAsTool: true, handler: () => {
  const g = globalThis as any;
  return { std: typeof g.std, os: typeof g.os, require: typeof g.require, Deno: typeof g.Deno, Buffer: typeof g.Buffer,
    dlopen: typeof g.process.dlopen, kill: typeof g.process.kill, chdir: typeof g.process.chdir, setuid: typeof g.process.setuid, binding: typeof g.process.binding,
    env: Object.keys(g.process.env).length, frozenEnv: Object.isFrozen(g.process.env), cwd: g.process.cwd() };
} });
defineTool({ name: 'esc.ok', exposeAsTool: true, handler: () => 'still here' });
`);
  const { client } = await mcp(t, [dir]);
  for (const m of ['node:fs', 'fs', 'child_process', '/etc/passwd', 'std', 'os']) {
    const r = await call(client, 'esc.import', { m });
    assert.equal(r.isError, true, m);
    assert.match(r.text, /could not load module|not defined|unsupported|cannot/i, m);
  }
  assert.deepEqual((await call(client, 'esc.globals')).json, {
    std: 'undefined', os: 'undefined', require: 'undefined', Deno: 'undefined', Buffer: 'undefined',
    dlopen: 'undefined', kill: 'undefined', chdir: 'undefined', setuid: 'undefined', binding: 'undefined',
    env: 0, frozenEnv: true, cwd: '/',
  });
  assert.equal((await call(client, 'esc.ok')).json, 'still here');
});
