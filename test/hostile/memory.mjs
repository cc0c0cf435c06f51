// Memory: a guest's heap limit holds for every way of allocating, a guest that hits it is discarded (its next
// call gets fresh globals), and the server's resident memory stays bounded however many sessions try.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call } from '../helpers.mjs';
import { attack, rss, serve, serverPid, sources } from './harness.mjs';

const MiB = 1024 * 1024;
const LIMIT = 16 * MiB;
const TOML = `[limits]\nmemoryLimitBytes = ${LIMIT}\n`;

// Each hog keeps what it allocates reachable from globalThis, counting bytes in g.kept, until it fails.
const HOGS = {
  strings: `g.keep = []; for (;;) { g.keep.push('x'.repeat(1 << 16) + g.keep.length); g.kept = (g.kept ?? 0) + 65536; }`,
  arrayBuffers: `g.keep = []; for (;;) { g.keep.push(new ArrayBuffer(1 << 20)); g.kept = (g.kept ?? 0) + (1 << 20); }`,
  typedArrays: `g.keep = []; for (;;) { g.keep.push(new Float64Array(1 << 16).fill(1)); g.kept = (g.kept ?? 0) + (1 << 19); }`,
  objects: `g.keep = []; for (;;) { const o = {}; for (let i = 0; i < 64; i++) o['k' + i] = i; g.keep.push(o); g.kept = (g.kept ?? 0) + 1024; }`,
  mapEntries: `g.keep = new Map(); for (let i = 0; ; i++) { g.keep.set(i, [i, i + 1, i + 2]); g.kept = (g.kept ?? 0) + 64; }`,
  closures: `g.keep = []; for (let i = 0; ; i++) { const a = [i, i, i, i]; g.keep.push(() => a); g.kept = (g.kept ?? 0) + 96; }`,
  // quickjs-ng concatenates into ropes (as V8 does): indexOf makes each one a flat string that takes memory.
  doubling: `let s = 'ab'; g.keep = []; for (;;) { s = s + s; s.indexOf('z'); g.keep.push(s); g.kept = s.length; }`,
  arrayGrowth: `g.keep = []; for (let i = 0; ; i++) { g.keep.push(i * 1.5); g.kept = i * 8; }`,
};

const source = Object.entries(HOGS).map(([name, body]) =>
  `defineTool({ name: 'hog.${name}', exposeAsTool: true, timeoutMs: 20000, handler: () => { ${body} } });`).join('\n');

const extension = (t) => join(sources(t, { 'hog.ts': `const g = globalThis as any;\n${source}
defineTool({ name: 'hog.kept', exposeAsTool: true, handler: () => g.kept ?? 0 });
defineTool({ name: 'hog.legit', exposeAsTool: true, handler: () => { const a = []; for (let i = 0; i < 12; i++) a.push(new Uint8Array(1 << 20).fill(i)); return a.reduce((n, x) => n + x.length, 0); } });
defineTool({ name: 'hog.catching', exposeAsTool: true, timeoutMs: 20000, handler: () => {
  let caught = 0; g.keep = [];
  while (caught < 50) { try { for (;;) g.keep.push(new ArrayBuffer(1 << 20)); } catch { caught++; g.keep.length = Math.max(0, g.keep.length - 1); } }
  return caught;
} });
defineTool({ name: 'ping', exposeAsTool: true, handler: () => 'pong' });` }), 'hog.ts');

for (const name of Object.keys(HOGS)) {
  attack(`mem-${name}`, `a guest keeping ${name} under a 16 MiB limit is stopped, and its next call starts fresh`, async (t) => {
    const { client, transport } = await serve(t, [extension(t)], { toml: TOML });
    const r = await call(client, `hog.${name}`);
    assert.equal(r.isError, true, r.text.slice(0, 200));
    assert.match(r.text, /MemoryLimitError|out of memory/);
    assert.equal((await call(client, 'hog.kept')).json, 0, 'the guest was discarded: fresh globals');
    assert.ok(rss(serverPid(transport)) < 600 * MiB, `server RSS ${rss(serverPid(transport))}`);
  });
}

attack('mem-five-sessions', 'five sessions each try to keep 400 MiB under 16 MiB: the server stays small and answers', async (t) => {
  const { client, transport } = await serve(t, [extension(t)], { toml: TOML });
  const pid = serverPid(transport);
  const base = rss(pid);
  const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((s) => call(client, 'hog.arrayBuffers', {}, { session: s })));
  for (const r of results) assert.match(r.text, /MemoryLimitError|out of memory/);
  // Five guests of at most 16 MiB heap + 32 MiB slack each, plus the workers' own memory: far below the
  // 2.4 GB this took before accounting was real.
  const grown = rss(pid) - base;
  assert.ok(grown < 5 * 48 * MiB + 100 * MiB, `the server grew by ${Math.round(grown / MiB)} MiB`);
  assert.equal((await call(client, 'ping', {}, { session: 'f' })).json, 'pong');
});

attack('mem-catch-and-continue', 'a guest that catches out-of-memory and keeps allocating stays within its limit', async (t) => {
  const { client, transport } = await serve(t, [extension(t)], { toml: TOML });
  const pid = serverPid(transport);
  const base = rss(pid);
  const r = await call(client, 'hog.catching');
  if (!r.isError) assert.equal(r.json, 50);
  else assert.match(r.text, /MemoryLimitError|out of memory/);
  assert.ok(rss(pid) - base < 100 * MiB, `the server grew by ${Math.round((rss(pid) - base) / MiB)} MiB`);
  assert.equal((await call(client, 'ping')).json, 'pong');
});

attack('mem-legit-not-overcounted', 'a guest using 12 MiB under a 16 MiB limit succeeds (the accounting does not over-count)', async (t) => {
  const { client } = await serve(t, [extension(t)], { toml: TOML });
  const r = await call(client, 'hog.legit');
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, 12 * MiB);
});

const WAIT = `defineTool({ name: 'w.wait', exposeAsTool: true, handler: async () => { await new Promise((r) => setTimeout(r, 1500)); return 'done'; } });
defineTool({ name: 'w.ping', exposeAsTool: true, handler: () => 'pong' });`;
const CEILING = `[limits]\nmemoryLimitBytes = ${LIMIT}\ntotalMemoryBytes = ${3 * (LIMIT + 8 * MiB)}\n`;

attack('mem-total-ceiling', 'more guests than [limits] totalMemoryBytes allows, all busy: the next is refused, the others finish', async (t) => {
  const { client } = await serve(t, [join(sources(t, { 'w.ts': WAIT }), 'w.ts')], { toml: CEILING });
  const busy = ['a', 'b', 'c'].map((s) => call(client, 'w.wait', {}, { session: s }));
  await new Promise((r) => setTimeout(r, 400));
  const refused = await call(client, 'w.ping', {}, { session: 'd' });
  assert.equal(refused.isError, true, refused.text);
  assert.match(refused.text, /^MemoryBudgetError: no room for another guest: .*\[limits\] totalMemoryBytes/);
  for (const r of await Promise.all(busy)) assert.equal(r.json, 'done');
  assert.equal((await call(client, 'w.ping', {}, { session: 'd' })).json, 'pong', 'room again once the others are idle');
});

attack('mem-total-reclaim', 'twenty sessions one after another under a ceiling of three guests: idle guests are reclaimed', async (t) => {
  const { client } = await serve(t, [join(sources(t, { 'w.ts': WAIT }), 'w.ts')], { toml: CEILING });
  for (let i = 0; i < 20; i++) assert.equal((await call(client, 'w.ping', {}, { session: `s${i}` })).json, 'pong', `session ${i}`);
});
