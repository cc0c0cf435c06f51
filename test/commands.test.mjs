// allow.commands through a real extension in a real .wasm artifact, with real processes.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { buildFixture, call, kiln, kilnBin, mcp, root, tempDir, waitUntil } from './helpers.mjs';

let artifact;
before(async () => {
  artifact = await buildFixture('commands/cmd.ts');
});

/** Command lines of live processes containing `token`: with `reapers`, kiln-reaper processes too. */
const live = (token, reapers = false) => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n')
  .filter((l) => l.includes(token) && !l.includes('ps -eo') && (reapers || !l.includes('kiln-reaper')));

const serve = (t, opts = {}) => mcp(t, [artifact, ...(opts.config ? ['--config', opts.config] : [])], opts);
const run = (client, name, vars) => call(client, 'cmd.run', { name, ...(vars ? { vars } : {}) });

test('shell metacharacters in values are inert, in shell form and in argv form', async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, 'pwned');
  const { client } = await serve(t);
  const attacks = [`; touch ${marker}`, `$(touch ${marker})`, `\`touch ${marker}\``, `x\ntouch ${marker}`,
    `'; touch ${marker}; '`, `"; touch ${marker}; "`, `| touch ${marker}`, `&& touch ${marker}`, `> ${marker}`, `$HOME \${HOME} * ?`];
  for (const value of attacks) {
    for (const form of ['echoShell', 'echoArgv']) {
      const r = await run(client, form, { value });
      assert.equal(r.isError, false, `${form} ${JSON.stringify(value)}: ${r.text}`);
      assert.equal(r.json, value.trim(), `${form} printed the value literally`);
      assert.equal(existsSync(marker), false, `${form} ${JSON.stringify(value)} created the marker`);
    }
  }
});

test('argument injection: a value starting with "-" is refused before anything runs', async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, 'uploaded');
  const { client } = await serve(t);
  const r = await run(client, 'clone', { url: `--upload-pack=touch ${marker}`, dest: join(dir, 'repo') });
  assert.equal(r.isError, true);
  assert.match(r.text, /^PermissionError: value for \$\{url\} starts an argument with "-" and would be read as an option \(argument injection\)/);
  assert.equal(existsSync(marker), false, 'git never ran');
  assert.equal(existsSync(join(dir, 'repo')), false);
  for (const form of ['echoShell', 'echoArgv']) assert.equal((await run(client, form, { value: '-rf' })).isError, true, form);
  // the opt-ins: allowDash for the placeholder, or a literal "--" before it
  assert.equal((await run(client, 'dashAllowed', { value: '--version' })).json, '--version');
  assert.equal((await run(client, 'afterSeparator', { value: '-n' })).json, '--|-n|');
});

test('strict substitution: missing, unknown, object, NUL and oversized values throw; numbers and booleans pass', async (t) => {
  const { client } = await serve(t);
  const cases = [
    [{}, /missing value for \$\{value\}/],
    [{ value: 'a', extra: 'b' }, /no placeholder for "extra"/],
    [{ value: { a: 1 } }, /must be a string, a finite number or a boolean, not object/],
    [{ value: ['a'] }, /not an array/],
    [{ value: null }, /not null/],
    [{ value: 'a\u0000b' }, /contains a NUL byte/],
    [{ value: 'x'.repeat(70_000) }, /is over 65536 bytes/],
  ];
  for (const [vars, expected] of cases) {
    const r = await run(client, 'echoArgv', vars);
    assert.equal(r.isError, true, JSON.stringify(vars).slice(0, 60));
    assert.match(r.text, expected);
  }
  assert.equal((await run(client, 'echoArgv', { value: 42 })).text, '42');
  assert.equal((await run(client, 'echoShell', { value: true })).text, 'true');
});

test('undeclared names are refused, even when another tool in the same file declares them', async (t) => {
  const { client } = await serve(t);
  const r = await run(client, 'rm', { path: '/' });
  assert.match(r.text, /^PermissionError: tool "cmd.run" did not declare a command named "rm"/);
  const none = await call(client, 'cmd.none', { name: 'echoArgv', vars: { value: 'x' } });
  assert.equal(none.isError, true);
  assert.match(none.text, /^PermissionError: tool "cmd.none" did not declare a command named "echoArgv" in allow.commands \(it declares none\)/);
});

test('a guest cannot flood the host: 16 commands at once per session, 1024 operations in flight per guest', async (t) => {
  const { client } = await serve(t);
  const flood = (await call(client, 'cmd.flood')).json;
  assert.equal(flood.filter((x) => x === 'ok').length, 16);
  assert.equal(flood.filter((x) => /at most 16 one-shot commands at once/.test(x)).length, 4);
  assert.ok(await waitUntil(() => live('sleep 0.3').length === 0));
  const timers = await call(client, 'cmd.timers');
  assert.equal(timers.isError, false, timers.text);
  assert.deepEqual(timers.json, { timerSetAtTheLimit: 'fired', timers: 2000, refusedAtOnce: 76, refusedByPolicy: 1024 });
});

test('the environment is scrubbed to PATH and the listed names', async (t) => {
  const { client } = await mcp(t, [artifact], { env: { KILN_TEST_LISTED: 'yes', KILN_TEST_SECRET: 'hidden', AWS_SECRET_ACCESS_KEY: 'nope' } });
  const lines = (await run(client, 'env')).json.split('\n').sort();
  assert.deepEqual(lines.map((l) => l.split('=')[0]), ['KILN_TEST_LISTED', 'PATH']);
  assert.ok(lines.includes('KILN_TEST_LISTED=yes'));
});

test('a timeout kills the whole process group, grandchildren included', async (t) => {
  const { client } = await serve(t);
  const r = await run(client, 'sleepy');
  assert.equal(r.isError, true);
  assert.match(r.text, /^CommandError: command "sleepy" timed out after 300 ms; it and everything it started were killed/);
  assert.ok(await waitUntil(() => live('sleep 31.7').length === 0), `left behind: ${live('sleep 31.7')}`);
});

test('output past 8 MiB throws and the process is killed', async (t) => {
  const { client } = await serve(t);
  const r = await run(client, 'flood');
  assert.equal(r.isError, true);
  assert.match(r.text, /^CommandError: command "flood" printed more than 8 MiB; it was killed/);
  assert.ok(await waitUntil(() => live('yes kiln-flood').length === 0), 'yes is still running');
});

test('exit codes, output shapes, cwd and a missing program', async (t) => {
  const { client } = await serve(t);
  const fail = await run(client, 'fail');
  assert.equal(fail.isError, true);
  assert.match(fail.text, /^CommandError: command "fail" exited with code 3: oops/);
  assert.equal((await run(client, 'text')).json, 'padded');
  assert.deepEqual((await run(client, 'json')).json, { a: [1, 2] });
  assert.match((await run(client, 'badJson')).text, /^CommandError: command "badJson" printed invalid JSON/);
  assert.deepEqual((await run(client, 'lines')).json, ['a', 'b']);
  assert.equal((await run(client, 'cwd')).json, '/tmp');
  assert.match((await run(client, 'missingProgram')).text, /^CommandError: command "missingProgram": kiln-no-such-program was not found on PATH/);
  assert.deepEqual((await call(client, 'cmd.empty')).json, { out: '', type: 'string' });
});

test('persistent processes: idempotent start, status with output, kinds do not mix, survive a guest reset, stop', async (t) => {
  const { client } = await serve(t);
  const started = (await call(client, 'cmd.start', { name: 'dev' })).json;
  assert.ok(started.pid > 0);
  assert.deepEqual((await call(client, 'cmd.start', { name: 'dev' })).json, started, 'start is idempotent');
  assert.ok(await waitUntil(async () => (await call(client, 'cmd.status', { name: 'dev' })).json.stdout.includes('started')));
  const status = (await call(client, 'cmd.status', { name: 'dev' })).json;
  assert.equal(status.running, true);
  assert.equal(status.pid, started.pid);
  assert.equal(status.exitCode, null);
  assert.ok(status.uptimeMs >= 0);
  assert.match((await run(client, 'dev')).text, /^PermissionError: command "dev" is persistent: use commands.start\/status\/stop, not run/);
  assert.match((await call(client, 'cmd.start', { name: 'echoArgv' })).text, /^PermissionError: command "echoArgv" is one-shot/);
  // a handler timeout rebuilds the guest; the process lives on
  assert.match((await call(client, 'cmd.hang')).text, /^TimeoutError/);
  const after = (await call(client, 'cmd.status', { name: 'dev' })).json;
  assert.equal(after.running, true);
  assert.equal(after.pid, started.pid);
  assert.equal((await call(client, 'cmd.stop', { name: 'dev' })).json, null);
  assert.equal((await call(client, 'cmd.status', { name: 'dev' })).json.running, false);
  assert.ok(await waitUntil(() => live('sleep 32.5').length === 0));
});

test('at most 16 persistent processes per session; none outlives the server when stdin closes', async (t) => {
  const { client } = await serve(t);
  for (let i = 0; i < 16; i++) assert.equal((await call(client, 'cmd.start', { name: `p${i}` })).isError, false, `p${i}`);
  const seventeenth = await call(client, 'cmd.start', { name: 'p16' });
  assert.match(seventeenth.text, /^CommandError: a session runs at most 16 persistent processes/);
  const other = await call(client, 'cmd.start', { name: 'p16' }, { session: 'other' });
  assert.equal(other.isError, false, 'the limit is per session');
  assert.ok(await waitUntil(() => live('sleep 4242.').length === 17), `running: ${live('sleep 4242.').length}`);
  await client.close();
  assert.ok(await waitUntil(() => live('sleep 4242.', true).length === 0), `orphans: ${live('sleep 4242.', true)}`);
});

test('no orphans after the server is killed with SIGTERM or SIGINT', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT']) {
    const child = spawn(process.execPath, [kilnBin, 'mcp', artifact], { cwd: root, stdio: ['pipe', 'pipe', 'ignore'] });
    t.after(() => child.kill('SIGKILL')); // whatever the outcome (its reaper then ends what it started)
    const exited = new Promise((r) => child.on('exit', r));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const send = (msg) => child.stdin.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
    send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    send({ method: 'notifications/initialized' });
    send({ id: 2, method: 'tools/call', params: { name: 'cmd.start', arguments: { name: 'dev' } } });
    assert.ok(await waitUntil(() => out.includes('"id":2') && live('sleep 32.5').length === 1), `${signal}: dev did not start`);
    child.kill(signal);
    await exited;
    assert.ok(await waitUntil(() => live('sleep 32.5', true).length === 0), `${signal}: orphan left`);
  }
});

test('the operator ceiling: commands off entirely, or only listed names; kiln_extensions shows both', async (t) => {
  const dir = tempDir(t);
  const off = join(dir, 'off.toml');
  writeFileSync(off, '[commands]\nenabled = false\n');
  const { client: c1 } = await serve(t, { config: off });
  assert.match((await run(c1, 'echoArgv', { value: 'x' })).text, /^PermissionError: the operator has turned commands off/);
  const only = join(dir, 'only.toml');
  writeFileSync(only, `[commands.extensions]\n"${artifact}" = ["echoArgv"]\n`);
  const { client: c2 } = await serve(t, { config: only });
  assert.equal((await run(c2, 'echoArgv', { value: 'ok' })).json, 'ok');
  assert.match((await run(c2, 'echoShell', { value: 'x' })).text, /^PermissionError: tool "[^"]+" declares commands "echoShell", but the operator has not granted it to .*commands_cmd\.wasm.*add "echoShell" to commands in \[grants\./);
  const audit = (await call(c2, 'kiln_extensions')).json;
  const tool = audit.extensions[0].tools.find((x) => x.name === 'cmd.run');
  assert.ok(Object.keys(tool.allow.commands).includes('echoShell'), 'declared is shown');
  assert.deepEqual(tool.granted.commands, ['echoArgv'], 'granted is shown');
  assert.deepEqual(tool.effective.commands, Object.keys(tool.allow.commands).filter((n) => n === 'echoArgv'), 'effective is declared ∩ granted');
  assert.deepEqual(tool.granted.net, null, 'a kind the grant does not list is not narrowed (mode "declared")');
  assert.deepEqual(audit.operator.commands, { enabled: true, maxProcesses: 64 });
  assert.equal(audit.operator.policy.mode, 'declared');
  const bad = join(dir, 'bad.toml');
  writeFileSync(bad, '[commands]\nenabled = "yes"\n');
  assert.match((await kiln(['mcp', artifact, '--config', bad])).stderr, /\[commands\] enabled must be true or false/);
  writeFileSync(bad, '[commands]\nmaxProcesses = 0\n');
  assert.match((await kiln(['mcp', artifact, '--config', bad])).stderr, /\[commands\] maxProcesses must be an integer from 1 to 4096/);
});

const templates = [
  ['sh -c "${x}"', /a placeholder inside quotes, where kiln's quoting does not hold/],
  ["echo '${x}'", /a placeholder inside quotes/],
  ['eval ${x}', /\$\{x\} is an argument of eval, which runs its arguments as code/],
  ['echo $(${x})', /is in command position/],
  ['echo `${x}`', /a placeholder inside backticks/],
  ['${x} --version', /is in command position/],
  ['ls; ${x}', /is in command position/],
  ['bash -c ${x}', /\$\{x\} is the script of a shell's -c/],
  [['sh', '-c', 'echo ${x}'], /\$\{x\} is the script of a shell's -c/],
  [['${x}', '--help'], /the program \(run\[0\]\) must be literal/],
  [{ run: ['pwd'], cwd: '/tmp/${x}' }, /cwd must be a literal path/],
];

for (const [run, expected] of templates) {
  test(`a template that would re-evaluate a value is refused at build time: ${JSON.stringify(run)}`, async (t) => {
    const dir = tempDir(t);
    const spec = typeof run === 'object' && !Array.isArray(run) ? run : { run };
    writeFileSync(join(dir, 'bad.ts'), `defineTool({ name: 'bad.tpl', allow: { commands: { c: ${JSON.stringify(spec)} } }, handler: () => 1 });`);
    const r = await kiln(['build', join(dir, 'bad.ts'), '-o', join(dir, 'bad.wasm')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /tool "bad\.tpl": allow\.commands\.c/);
    assert.match(r.stderr, expected);
  });
}

test('a failed command throws a CommandError with exitCode, signal, stdout and stderr', async (t) => {
  const { client } = await serve(t);
  const failed = (await call(client, 'cmd.caught', { name: 'fail' })).json;
  assert.deepEqual(failed, {
    name: 'CommandError', message: 'command "fail" exited with code 3: oops', isError: true,
    exitCode: 3, signal: null, stdout: '', stderr: 'oops', // output as the command's result is: final newline stripped
  });
  const ok = (await call(client, 'cmd.caught', { name: 'text' })).json;
  assert.equal(ok, 'padded', 'a command that succeeds returns its output, not an error');
  const missing = (await call(client, 'cmd.caught', { name: 'missingProgram' })).json;
  assert.equal(missing.name, 'CommandError');
  assert.equal(missing.exitCode, undefined, 'a command that never ran has no exit code');
});
