// types/kiln.d.ts describes the guest's globals: the examples type-check against it, and misuse does not.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { kiln, root, tempDir } from './helpers.mjs';

const tsc = join(root, 'node_modules/typescript/bin/tsc');
const run = (args) => promisify(execFile)(process.execPath, [tsc, ...args], { cwd: root }).then(() => ({ code: 0, out: '' }), (e) => ({ code: e.code, out: e.stdout }));

test('the example extensions type-check against types/kiln.d.ts', async () => {
  const r = await run(['-p', 'extensions/tsconfig.json']);
  assert.equal(r.code, 0, r.out);
});

test('misusing the extension API is a type error', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'bad.ts'), [
    "defineTool({ description: 'no name', handler: () => 1 });",
    "defineTool({ name: 'x', allow: { net: 'api.box.com' }, handler: () => 1 });",
    "defineTool({ name: 'y', handler: async ({ commands }) => commands.run('a', { v: { nested: true } }) });",
    "vars.set('k', 42);",
  ].join('\n'));
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['bad.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.notEqual(r.code, 0);
  for (const line of [1, 2, 3, 4]) assert.match(r.out, new RegExp(`bad\\.ts\\(${line},`), `line ${line} should be an error:\n${r.out}`);
});

test('the preset types/tsconfig.json declares exactly the globals a guest has', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'names.js'), 'Object.getOwnPropertyNames(globalThis)');
  const listed = await kiln(['run', join(dir, 'names.js')]);
  assert.equal(listed.code, 0, listed.stderr);
  const guest = JSON.parse(listed.stdout);
  assert.ok(guest.includes('fetch') && guest.includes('defineTool') && guest.includes('structuredClone'));
  // every global of the guest is known to the preset...
  writeFileSync(join(dir, 'uses.ts'), guest.map((n) => `void typeof ${n};`).join('\n') + '\n');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['uses.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.equal(r.code, 0, `globals of the guest the types do not declare:\n${r.out}`);
  // ...and every value the types declare exists in the guest
  const declared = ['kiln.d.ts', 'web.d.ts'].flatMap((f) =>
    [...readFileSync(join(root, 'types', f), 'utf8').matchAll(/^ {2}(?:var|const|function|class) (\w+)/gm)].map((m) => m[1]));
  assert.ok(declared.length > 40, `only ${declared.length} declarations found`);
  // Buffer is no global of the engine: the bundler imports it into each module that names it.
  const bundled = ['Buffer'];
  assert.deepEqual([...new Set(declared.filter((n) => !guest.includes(n) && !bundled.includes(n)))], [], 'declared but missing in a guest');
});

test('DOM-only and Node-only globals do not type-check under the preset (they do not exist in a guest); Buffer does', async (t) => {
  const dir = tempDir(t);
  const lines = ["document.title = 'x';", "require('fs');", "localStorage.getItem('a');", 'window.alert(1);', "new XMLHttpRequest();"];
  writeFileSync(join(dir, 'dom.ts'), lines.join('\n') + '\n');
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['dom.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  for (let i = 1; i <= lines.length; i++) assert.match(r.out, new RegExp(`dom\\.ts\\(${i},`), `line ${i} should be an error:\n${r.out}`);
  // Buffer is Node's, as the bundler gives it to a module that names it: typed, and not an error
  writeFileSync(join(dir, 'buffer.ts'), "const b: Buffer = Buffer.from('kiln');\nexport const hex: string = b.toString('hex') + Buffer.byteLength('x');\n");
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['buffer.ts'] }));
  const typed = await run(['-p', join(dir, 'tsconfig.json')]);
  assert.equal(typed.code, 0, typed.out);
});

test('schemas type args and results: zod, valibot and a JSON Schema literal infer; a typo or a wrong result is an error', async (t) => {
  const dir = tempDir(t);
  const ok = [
    "import { z } from 'zod';",
    "import * as v from 'valibot';",
    "import { toStandardJsonSchema } from '@valibot/to-json-schema';",
    "const json = { type: 'object', properties: { text: { type: 'string' }, n: { type: ['integer', 'null'], default: null }, k: { enum: ['a', 'b'] } }, required: ['text'], additionalProperties: false } as const;",
    "defineTool({ name: 'z', inputSchema: z.object({ text: z.string().transform((s) => s.length) }), outputSchema: z.object({ n: z.number() }), handler: ({ args }) => ({ n: args.text + 1 }) });",
    "defineTool({ name: 'v', inputSchema: toStandardJsonSchema(v.object({ text: v.string() })), handler: ({ args }) => args.text.toUpperCase() });",
    "defineTool({ name: 'j', inputSchema: json, handler: ({ args }) => { const k: 'a' | 'b' | undefined = args.k; const n: number | null = args.n; return args.text.length + String(k); } });",
    "defineTool({ name: 'i', inputSchema: { type: 'object', properties: { m: { type: 'number' } }, required: ['m'] }, outputSchema: { type: 'object', properties: { m: { type: 'number' } } } }, async ({ args }) => ({ m: args.m * 2 }));",
    "defineTool({ name: 'a', inputSchema: {} as Record<string, unknown>, handler: ({ args }) => args.anything.goes });",
    "defineTool({ name: 'n', handler: ({ args }) => args.anything.goes });",
  ];
  const bad = [
    "defineTool({ name: 'b1', inputSchema: z.object({ text: z.string() }), handler: ({ args }) => args.txet });",
    "defineTool({ name: 'b2', inputSchema: json, handler: ({ args }) => args.txet });",
    "defineTool({ name: 'b3', inputSchema: toStandardJsonSchema(v.object({ text: v.string() })), handler: ({ args }) => args.txet });",
    "defineTool({ name: 'b4', outputSchema: z.object({ n: z.number() }), handler: () => ({ n: 'one' }) });",
    "defineTool({ name: 'b5', outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] }, handler: async () => ({ m: 1 }) });",
    "defineTool({ name: 'b6', inputSchema: z.object({ text: z.string().transform((s) => s.length) }), handler: ({ args }) => args.text.toUpperCase() });",
  ];
  writeFileSync(join(dir, 'typed.ts'), [...ok, ...bad].join('\n') + '\n');
  const paths = Object.fromEntries(['zod', 'valibot', '@valibot/to-json-schema'].map((p) => [p, [join(root, 'node_modules', p)]]));
  // skipLibCheck: zod's and valibot's own declarations are theirs to check (kiln.d.ts is checked by the tests above).
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), compilerOptions: { paths, skipLibCheck: true }, include: ['typed.ts'] }));
  const r = await run(['-p', join(dir, 'tsconfig.json')]);
  const lines = new Set([...r.out.matchAll(/typed\.ts\((\d+),/g)].map((m) => Number(m[1])));
  assert.deepEqual([...lines].sort((a, b) => a - b), bad.map((_, i) => ok.length + i + 1), r.out);
  assert.match(r.out, /Property 'txet' does not exist on type '\{ text: string; \}'/);
});
