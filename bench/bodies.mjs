#!/usr/bin/env node
// Reading large response bodies in a guest: `text()` and `json()` of 10 MiB fetched from 127.0.0.1, and
// TextDecoder over 10 MiB made in the guest, each timed inside the guest (what a handler waits for), next to
// Node doing the same fetch in this process. Part of `npm run bench`; prints one JSON line.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'build/bench');
mkdirSync(out, { recursive: true });
const RUNS = 5;
const MIB = 1024 * 1024;

const text = ('kiln é € 😀 ' + 'x'.repeat(100) + '\n').repeat(Math.ceil(10 * MIB / 120)).slice(0, 10 * MIB);
const items = [];
for (let i = 0, n = 0; n < 10 * MIB; i++) { const s = JSON.stringify({ id: i, name: `item ${i}`, tags: ['a', 'b'], ok: true }); items.push(s); n += s.length + 1; }
const json = `[${items.join(',')}]`;
const server = createServer((req, res) => {
  const body = req.url === '/json' ? json : text;
  res.writeHead(200, { 'content-type': req.url === '/json' ? 'application/json' : 'text/plain; charset=utf-8' });
  res.end(body);
});
// Idle keep-alive connections stay open for the whole run: closed at Node's 5 s default, one could close just
// as the guest's next request went out on it (on a loaded machine: "other side closed"), failing the section.
server.keepAliveTimeout = 600_000;
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const ext = join(out, 'bodies.ts');
writeFileSync(ext, `
const timed = async (fn: () => Promise<number>) => { const t = performance.now(); const size = await fn(); return { ms: performance.now() - t, size }; };
defineTool({ name: 'bodies.text', allow: { net: ['127.0.0.1'] }, handler: ({ args }: any) => timed(async () => (await (await fetch(args.url)).text()).length) });
defineTool({ name: 'bodies.json', allow: { net: ['127.0.0.1'] }, handler: ({ args }: any) => timed(async () => (await (await fetch(args.url)).json()).length) });
defineTool({ name: 'bodies.decode', handler: () => timed(async () => {
  const bytes = new TextEncoder().encode(('kiln é € 😀 ' + 'x'.repeat(100) + '\\n').repeat(${Math.ceil(10 * MIB / 120)}));
  return new TextDecoder().decode(bytes).length;
}) });
`);
const artifact = join(out, 'bodies.wasm');
const kiln = join(root, 'bin/kiln.js');
execFileSync(process.execPath, [kiln, 'build', ext, '-o', artifact], { stdio: 'ignore' });
const config = join(out, 'bodies.toml');
writeFileSync(config, `extensions = ["${artifact}"]\n[limits]\nmemoryLimitBytes = 268435456\nmaxResultBytes = 1048576\ntimeoutMs = 120000\n`);
const script = join(out, 'bodies.js');
writeFileSync(script, `
const r = { text: [], json: [], decode: [] };
for (let i = 0; i < ${RUNS}; i++) {
  r.text.push(await plugins['bodies.text']({ url: '${base}/text' }));
  r.json.push(await plugins['bodies.json']({ url: '${base}/json' }));
  r.decode.push(await plugins['bodies.decode']({}));
}
r
`);
const guest = await new Promise((ok, fail) => {
  import('node:child_process').then(({ execFile }) => execFile(process.execPath, [kiln, 'run', script, '--config', config, '--timeout-ms', '600000'],
    { maxBuffer: 1 << 24 }, (err, stdout, stderr) => (err ? fail(new Error(stderr)) : ok(JSON.parse(stdout)))));
});
const node = { text: [], json: [] };
for (let i = 0; i < RUNS; i++) {
  for (const kind of ['text', 'json']) {
    const t = performance.now();
    const v = await (await fetch(`${base}/${kind}`))[kind]();
    node[kind].push({ ms: performance.now() - t, size: v.length });
  }
}
server.close();
const median = (xs) => [...xs].map((x) => x.ms).sort((a, b) => a - b)[Math.floor(xs.length / 2)];
process.stdout.write(JSON.stringify({
  bytes: { text: Buffer.byteLength(text), json: json.length },
  kiln: { text: median(guest.text), json: median(guest.json), decode: median(guest.decode) },
  node: { text: median(node.text), json: median(node.json) },
  sizesAgree: guest.text[0].size === node.text[0].size && guest.json[0].size === node.json[0].size,
}) + '\n');
