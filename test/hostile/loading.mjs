// Attacks on loading through a crafted artifact's manifest, which the build would never have written: a root
// schema that is not an object (an MCP client then rejects the whole tools/list, every extension's tools
// with it), keys kiln does not know (a typo, or a key meant to mean something to a later kiln), a
// non-boolean exposeAsTool, a `__proto__` key, a $schema kiln cannot validate. Each file fails alone at load
// with its reason; the official SDK client still lists and calls the others.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { concat, customSection, readCustomSections, stripCustomSections } from '../../dist/host/engine/wasm-binary.js';
import { call, kiln, tempDir } from '../helpers.mjs';
import { attack, serve, sources } from './harness.mjs';

const GOOD = "defineTool({ name: 'good.ping', exposeAsTool: true, handler: () => 'pong' });";
const EVIL = "defineTool({ name: 'evil.x', exposeAsTool: true, inputSchema: { type: 'object' }, handler: () => 'evil' });";

async function build(t, dir, name, source) {
  const src = join(sources(t, { [`${name}.ts`]: source }), `${name}.ts`);
  const out = join(dir, `${name}.wasm`);
  const r = await kiln(['build', src, '-o', out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

/** Replace the artifact's manifest with `edit(manifest)` (a string is written as the section's JSON as is). */
function craft(file, edit) {
  const bytes = new Uint8Array(readFileSync(file));
  const manifest = JSON.parse(new TextDecoder().decode(readCustomSections(bytes, 'kiln-manifest')[0]));
  const next = edit(manifest);
  const payload = new TextEncoder().encode(typeof next === 'string' ? next : JSON.stringify(next));
  writeFileSync(file, concat([stripCustomSections(bytes, 'kiln-manifest'), customSection('kiln-manifest', payload)]));
}

const tool = (m, patch) => ({ ...m, tools: [{ ...m.tools[0], ...patch }] });

const CRAFTED = {
  'root-string': [(m) => tool(m, { inputSchema: { type: 'string' } }), /tool "evil\.x": inputSchema must describe an object: its root needs "type": "object" .*found "string"/],
  'root-list': [(m) => tool(m, { inputSchema: { type: ['object', 'null'] } }), /root needs "type": "object" .*found \["object","null"\]/],
  'root-ref': [(m) => tool(m, { inputSchema: { $ref: '#/$defs/a', $defs: { a: { type: 'object' } } } }), /root needs "type": "object" .*found null/],
  'root-missing': [(m) => tool(m, { inputSchema: { properties: {} } }), /root needs "type": "object" .*found null/],
  'typo-expose': [(m) => ({ ...m, tools: [{ name: 'evil.x', exposeAsToool: true }] }), /tool "evil\.x" has an unknown key "exposeAsToool" \(did you mean "exposeAsTool"\?\)/],
  'typo-timeout': [(m) => tool(m, { timeoutMS: 1 }), /tool "evil\.x" has an unknown key "timeoutMS" \(did you mean "timeoutMs"\?\)/],
  'future-key': [(m) => tool(m, { icons: [{ src: 'https://evil.test/x.png' }] }), /tool "evil\.x" has an unknown key "icons" \(known: name, title, description, inputSchema, outputSchema, annotations, exposeAsTool, timeoutMs, cpuMs, memoryLimitBytes, allow\)$/],
  'handler-key': [(m) => tool(m, { handler: 'function () {}' }), /tool "evil\.x" has an unknown key "handler"/],
  'allow-typo': [(m) => tool(m, { allow: { nett: ['example.com'] } }), /tool "evil\.x": allow\.nett is not a capability kiln knows \(did you mean "net"\?\)/],
  'command-typo': [(m) => tool(m, { allow: { commands: { ls: { run: ['ls'], persistant: true } } } }), /allow\.commands\.ls has an unknown key "persistant" \(did you mean "persistent"\?\)/],
  'expose-string': [(m) => tool(m, { exposeAsTool: 'yes' }), /tool "evil\.x": exposeAsTool must be true or false/],
  // JSON.parse makes "__proto__" an own key: it is a key like any other, and unknown
  'proto-key': [(m) => JSON.stringify(m).replace('"name":"evil.x"', '"name":"evil.x","__proto__":{"exposeAsTool":true}'), /tool "evil\.x" has an unknown key "__proto__"/],
  'long-key': [(m) => tool(m, { ['k'.repeat(100_000)]: 1 }), /has an unknown key "k{64}" \(known: /],
  'schema-dialect': [(m) => tool(m, { inputSchema: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' } }), /\$schema "http:\/\/json-schema\.org\/draft-04\/schema#" is not a JSON Schema draft kiln validates/],
  'schema-invalid-2020': [(m) => tool(m, { inputSchema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { a: { items: [{}] } } } }), /inputSchema is not a valid JSON Schema/],
};

for (const [id, [edit, error]] of Object.entries(CRAFTED)) {
  attack(`load-${id}`, `a crafted manifest (${id}) fails its file at load; the SDK client still lists and calls the others`, async (t) => {
    const dir = tempDir(t);
    await build(t, dir, 'good', GOOD);
    const evil = await build(t, dir, 'evil', EVIL);
    craft(evil, edit);
    const { client } = await serve(t, [dir]);
    const { tools } = await client.listTools(); // the SDK client validates every tool in the list
    assert.ok(tools.some((x) => x.name === 'good.ping'));
    assert.ok(!tools.some((x) => x.name === 'evil.x'));
    assert.equal((await call(client, 'good.ping')).json, 'pong');
    assert.equal((await call(client, 'evil.x')).isError, true);
    const { failures } = (await call(client, 'kiln_extensions')).json;
    assert.equal(failures.length, 1, JSON.stringify(failures));
    assert.equal(failures[0].file, evil);
    assert.match(failures[0].error, error);
  });
}
