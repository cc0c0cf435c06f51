// kiln as a user gets it: the tarball `npm pack` makes from this checkout, installed into an empty directory
// with nothing but Node and npm (a PATH with no C compiler), run from another working directory the way an
// MCP client's configuration runs it (command + args, pipes, no TTY).
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { root, tempDir, waitUntil } from './helpers.mjs';

const COMPILERS = /^(cc|c89|c99|c\+\+|cpp|gcc|g\+\+|clang|clang\+\+|tcc|ld|lld|wasm-ld)([-.][\w.-]*)?$|-(gcc|g\+\+|cc)(-[\d.]+)?$/;

/** A directory of links to every program on PATH except the C compilers and linkers, plus node. */
function pathWithoutCompilers(t) {
  const dir = tempDir(t);
  for (const d of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    let names;
    try {
      names = readdirSync(d);
    } catch {
      continue;
    }
    for (const n of names) {
      if (COMPILERS.test(n)) continue;
      try {
        symlinkSync(join(d, n), join(dir, n));
      } catch {
        // an earlier PATH entry has this name
      }
    }
  }
  try {
    symlinkSync(process.execPath, join(dir, 'node'));
  } catch {
    // already linked from PATH
  }
  return dir;
}

function run(file, args, opts) {
  return new Promise((resolve) => {
    const child = execFile(file, args, { maxBuffer: 1 << 26, timeout: 300_000, ...opts }, (err, stdout, stderr) =>
      resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }));
    child.stdin?.end();
  });
}

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

function dirSize(p) {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st || st.isSymbolicLink()) return 0;
  if (!st.isDirectory()) return st.size;
  return readdirSync(p).reduce((n, e) => n + dirSize(join(p, e)), 0);
}

test('the packed package installs without a compiler and runs build, inspect, run and mcp from anywhere', { timeout: 600_000 }, async (t) => {
  // Pack what `npm test`'s setup just built (--ignore-scripts: prepack would rebuild dist/ under the tests
  // that are running from it).
  const packDir = tempDir(t);
  const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', packDir], { cwd: root });
  assert.equal(pack.code, 0, pack.stderr);
  const [info] = JSON.parse(pack.stdout);
  const files = info.files.map((f) => f.path);

  // Exactly what runs: no tests, bench, build scripts, TypeScript sources or dependencies.
  const outside = files.filter((f) => /^(test|bench|scripts|host|extensions|node_modules|\.ci|dist\/host)\//.test(f) || f.endsWith('.map') || f.includes('/node_modules/'));
  assert.deepEqual(outside, [], 'files outside the package list\'s intent');
  for (const f of ['bin/kiln.js', 'dist/cli/cli.js', 'dist/cli/worker.js', 'build/engine/engine.wasm', 'build/engine/engine.json',
    'build/engine/bindings/engine.cjs', 'build/kiln-reaper', 'guest/bdd/runtime.js', 'wit/kiln.wit', 'types/kiln.d.ts',
    'types/tsconfig.json', 'README.md', 'LICENSE', 'docs/security.md']) {
    assert.ok(files.includes(f), `${f} is not in the package`);
  }
  process.stderr.write(`[package] tarball ${(info.size / 1e6).toFixed(2)} MB, ${files.length} files, unpacked ${(info.unpackedSize / 1e6).toFixed(2)} MB\n`);

  // Installed the way a user installs it: into an empty project, with no C compiler on PATH.
  const PATH = pathWithoutCompilers(t);
  const env = { ...process.env, PATH, XDG_CACHE_HOME: join(tempDir(t), 'cache') };
  for (const c of ['cc', 'gcc', 'clang']) assert.notEqual((await run('sh', ['-c', `command -v ${c}`], { env })).code, 0, `${c} is on the test's PATH`);
  const project = tempDir(t);
  writeFileSync(join(project, 'package.json'), '{ "name": "user-project", "private": true }\n');
  const started = process.hrtime.bigint();
  const install = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(packDir, info.filename)], { cwd: project, env });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  assert.equal(install.code, 0, install.stderr);
  const pkg = join(project, 'node_modules', 'kiln-mcp');
  process.stderr.write(`[package] npm install ${seconds.toFixed(1)} s, node_modules ${(dirSize(join(project, 'node_modules')) / 1e6).toFixed(1)} MB\n`);

  // The shipped engine is the reproducible build: the bytes engine.json records, and this checkout's.
  const shipped = readFileSync(join(pkg, 'build/engine/engine.wasm'));
  const recorded = JSON.parse(readFileSync(join(pkg, 'build/engine/engine.json'), 'utf8')).componentSha256;
  assert.equal(sha256(shipped), recorded);
  assert.equal(sha256(shipped), sha256(readFileSync(join(root, 'build/engine/engine.wasm'))));

  // From another directory, the bin as npm links it.
  const work = tempDir(t);
  const bin = join(project, 'node_modules', '.bin', 'kiln-mcp');
  writeFileSync(join(work, 'hello.ts'), `defineTool({
    name: 'hello_greet', exposeAsTool: true,
    inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    allow: { commands: { say: { run: ['echo', 'hello \${who}'] } } },
    handler: async ({ args, commands }) => commands.run('say', { who: args.who }),
  });\n`);
  writeFileSync(join(work, 'script.ts'), 'const r = await plugins["hello_greet"]({ who: "script" });\nr;\n');
  const help = await run(bin, ['--help'], { cwd: '/', env });
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /kiln mcp/);
  const build = await run(bin, ['build', 'hello.ts', '-o', 'hello.wasm'], { cwd: work, env });
  assert.equal(build.code, 0, build.stderr);
  assert.match(build.stdout, /^[0-9a-f]{64} {2}hello\.wasm/);
  const inspect = await run(bin, ['inspect', 'hello.wasm'], { cwd: work, env });
  assert.equal(inspect.code, 0, inspect.stderr);
  assert.match(inspect.stdout, /matches this host/);
  const script = await run(bin, ['run', 'script.ts', 'hello.wasm'], { cwd: work, env });
  assert.equal(script.code, 0, script.stderr);
  assert.equal(script.stdout.trim(), '"hello script"');
  assert.doesNotMatch(script.stderr, /reaper/, 'the shipped reaper runs the command');

  // As a client's configuration runs it: `npx` with the package's name, another working directory, pipes.
  const client = new Client({ name: 'package-test', version: '0.0.0' });
  await client.connect(new StdioClientTransport({
    command: 'npx', args: ['--prefix', project, '--no-install', 'kiln-mcp', 'mcp', join(work, 'hello.ts')], cwd: '/', env, stderr: 'pipe',
  }));
  t.after(() => client.close());
  const { tools } = await client.listTools();
  assert.ok(tools.some((x) => x.name === 'hello_greet'));
  const res = await client.callTool({ name: 'hello_greet', arguments: { who: 'mcp' } });
  assert.equal(res.isError, undefined, JSON.stringify(res));
  assert.equal(res.content[0].text, 'hello mcp');

  // Over Streamable HTTP too.
  const token = 'package-test-token-0123456789';
  const server = spawn(bin, ['mcp', '--http', '127.0.0.1:0', join(work, 'hello.ts')], { cwd: '/', env: { ...env, KILN_TOKEN: token }, stdio: ['ignore', 'ignore', 'pipe'] });
  t.after(() => server.kill('SIGKILL'));
  let serverErr = '';
  server.stderr.on('data', (d) => (serverErr += d));
  assert.ok(await waitUntil(() => /at (http:\/\/\S+\/mcp)/.test(serverErr) || server.exitCode !== null, 120_000), serverErr);
  const url = /at (http:\/\/\S+\/mcp)/.exec(serverErr)?.[1];
  assert.ok(url, serverErr);
  const http = new Client({ name: 'package-test', version: '0.0.0' });
  await http.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  t.after(() => http.close());
  assert.equal((await http.callTool({ name: 'hello_greet', arguments: { who: 'http' } })).content[0].text, 'hello http');

  // kiln bdd, with the step runtime the package ships.
  cpSync(join(root, 'extensions/features'), join(work, 'features'), { recursive: true });
  cpSync(join(root, 'extensions/greeter.ts'), join(work, 'greeter.ts'));
  writeFileSync(join(work, 'bdd.toml'), 'extensions = ["greeter.ts"]\n');
  const bdd = await run(bin, ['bdd', 'features', '--config', 'bdd.toml'], { cwd: work, env });
  assert.equal(bdd.code, 0, bdd.stdout + bdd.stderr);
  assert.match(bdd.stdout, /3 scenarios \(3 passed\)/);

  // Started with nothing to serve, it says so to the client.
  const empty = tempDir(t);
  const bare = new Client({ name: 'package-test', version: '0.0.0' });
  await bare.connect(new StdioClientTransport({ command: bin, args: ['mcp'], cwd: empty, env, stderr: 'pipe' }));
  t.after(() => bare.close());
  assert.match(bare.getInstructions() ?? '', /no extensions to serve: name extension files or directories/);

  // Authors: the preset resolves from the installed package, and an author's own "files" keeps the globals.
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ extends: 'kiln-mcp/tsconfig', files: ['hello.ts'] }));
  mkdirSync(join(work, 'node_modules'));
  symlinkSync(pkg, join(work, 'node_modules', 'kiln-mcp'));
  const tsc = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(work, 'tsconfig.json')], { cwd: work, env });
  assert.equal(tsc.code, 0, tsc.stdout + tsc.stderr);
  writeFileSync(join(work, 'bad.ts'), 'defineTool({ name: 1 });\n');
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ extends: 'kiln-mcp/tsconfig', files: ['bad.ts'] }));
  const bad = await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(work, 'tsconfig.json')], { cwd: work, env });
  assert.match(bad.stdout, /bad\.ts\(1,/, 'the preset type-checks against kiln\'s globals');
});
