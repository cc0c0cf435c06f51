// Attacks on allow.commands through real extensions: argument injection through adjacent placeholders (with a
// real git), and every walk-around of the re-evaluation check, declared in a manifest. Each must fail — the
// call refused, or the file refused at build and at load — and the marker file must not exist.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { call, kiln, tempDir } from '../helpers.mjs';
import { attack, serve, sources } from './harness.mjs';

const tool = (run) => `defineTool({ name: 'cmd.attack', exposeAsTool: true, allow: { commands: { c: ${JSON.stringify(Array.isArray(run) ? { run } : run)} } },
  handler: ({ args, commands }: any) => commands.run('c', args.vars) });
defineTool({ name: 'cmd.ping', exposeAsTool: true, handler: () => 'pong' });`;

for (const [id, run] of [['argv', ['git', 'clone', '${base}${repo}', '${dest}']], ['shell', 'git clone ${base}${repo} ${dest}']]) {
  attack(`cmd-adjacent-${id}`, `git clone \${base}\${repo} with base="" and repo="--upload-pack=…" (${id} form)`, async (t) => {
    const dir = tempDir(t);
    const marker = join(dir, 'M');
    const { client } = await serve(t, [join(sources(t, { 'a.ts': tool(run) }), 'a.ts')]);
    const r = await call(client, 'cmd.attack', { vars: { base: '', repo: `--upload-pack=touch ${marker};git-upload-pack`, dest: join(dir, 'clone') } });
    assert.equal(r.isError, true);
    assert.match(r.text, /^PermissionError: value for \$\{repo\} starts an argument with "-"/);
    assert.equal(existsSync(marker), false, 'git ran the upload-pack command');
    assert.equal(existsSync(join(dir, 'clone')), false, 'git ran at all');
  });
}

attack('cmd-adjacent-empty-expansion', 'an empty shell variable before the value: git clone $EMPTY${repo} (refused at load)', async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, 'M');
  const { client } = await serve(t, [join(sources(t, { 'a.ts': tool('git clone $EMPTY${repo} ${dest}') }), 'a.ts')]);
  const r = await call(client, 'cmd.attack', { vars: { repo: `--upload-pack=touch ${marker};git-upload-pack`, dest: join(dir, 'clone') } });
  // Refused at load (an unquoted expansion in a git command that takes a value), so the tool never exists.
  assert.equal(r.isError, true);
  assert.match(r.text, /no tool named "cmd.attack"/);
  assert.equal(existsSync(marker), false);
});

// Each of these, declared by an extension, must fail the file at build time (and so never run).
const WALKAROUNDS = {
  'sh-ec': 'sh -ec ${x}',
  'bash-c-dashdash': 'bash -c -- ${x}',
  'env-sh': 'env sh -c ${x}',
  'timeout-sh': 'timeout 5 sh -c ${x}',
  'nohup-eval': 'nohup eval ${x}',
  'exec-sh': 'exec sh -c ${x}',
  'command-eval': 'command eval ${x}',
  'backslash': 'echo \\${x}',
  'heredoc': 'cat <<EOF\n${x}\nEOF',
  'env-program': 'env ${x}',
  'positional-eval': "sh -c 'eval \"$1\"' _ ${x}",
  'vanishing-script': 'sh -c $EMPTY ${x}',
  'argv-timeout-sh': ['timeout', '5', 'sh', '-c', '${x}'],
  'argv-sh-ec': ['sh', '-ec', '${x}'],
  'git-config': ['git', '-c', 'core.sshCommand=${x}', 'fetch', 'origin'],
};

for (const [id, run] of Object.entries(WALKAROUNDS)) {
  attack(`cmd-walkaround-${id}`, `a template that re-evaluates a value is refused at build: ${JSON.stringify(run)}`, async (t) => {
    const dir = sources(t, { 'bad.ts': tool(run) });
    const out = join(tempDir(t), 'bad.wasm');
    const r = await kiln(['build', join(dir, 'bad.ts'), '-o', out]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /allow\.commands\.c: .*Use argv form/);
    assert.equal(existsSync(out), false, 'no artifact was written');
  });
}

attack('cmd-walkaround-served', 'kiln mcp serves a good file beside one with a re-evaluating template, which fails alone and never runs', async (t) => {
  const dir = tempDir(t);
  const marker = join(dir, 'M');
  const src = sources(t, { 'bad.ts': tool('timeout 5 sh -c ${x}'), 'good.ts': `defineTool({ name: 'good.ping', exposeAsTool: true, handler: () => 'pong' });` });
  const { client, stderr } = await serve(t, [src]);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(names.includes('good.ping'));
  assert.ok(!names.includes('cmd.attack'));
  assert.equal((await call(client, 'good.ping')).json, 'pong');
  const r = await call(client, 'cmd.attack', { vars: { x: `touch ${marker}` } });
  assert.equal(r.isError, true);
  const audit = (await call(client, 'kiln_extensions')).json;
  assert.ok(audit.failures.some((f) => /bad\.ts/.test(f.file) && /is the script of a shell's -c/.test(f.error)), JSON.stringify(audit.failures));
  assert.match(stderr(), /not loaded: .*bad\.ts/);
  assert.equal(existsSync(marker), false);
});
