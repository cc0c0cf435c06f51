// Attacks through argument validation: schemas whose checks are catastrophically slow on crafted arguments
// (a backtracking `pattern`, `uniqueItems` over many objects), triggered by a client or by the extension
// itself through plugins[...]; and `$id`s that collide between extensions. Patterns match on RE2 and
// uniqueItems hashes (schema-ajv.ts), so each such call is decided at once, by the arguments, and the other
// sessions keep answering.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call } from '../helpers.mjs';
import { attack, serve, sources } from './harness.mjs';

const EVIL = `defineTool({ name: 'evil.match', exposeAsTool: true, inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }, handler: ({ args }: any) => args.s.length });
defineTool({ name: 'evil.unique', exposeAsTool: true, inputSchema: { type: 'object', properties: { xs: { type: 'array', uniqueItems: true } } }, handler: ({ args }: any) => args.xs.length });
defineTool({ name: 'evil.self', exposeAsTool: true, handler: () => plugins['evil.match']({ s: 'a'.repeat(40) + 'b' }) });
defineTool({ name: 'evil.props', exposeAsTool: true, inputSchema: { type: 'object', patternProperties: { '^(x+x+)+y$': { type: 'string' } } }, handler: () => 'ok' });`;
const OTHER = `defineTool({ name: 'other.ping', exposeAsTool: true, handler: () => 'pong' });`;

async function servers(t) {
  return serve(t, [sources(t, { 'evil.ts': EVIL, 'other.ts': OTHER })]);
}

/** Run `attack` beside a call in another session: both are answered, the attack with its own result. */
async function otherAnswers(client, attackCall) {
  const [r, ping] = await Promise.all([attackCall(), call(client, 'other.ping', {}, { session: 'bystander' })]);
  assert.equal(ping.json, 'pong');
  return r;
}

attack('schema-catastrophic-pattern', 'a backtracking pattern against 40 a\'s and a b, from a client', async (t) => {
  const { client } = await servers(t);
  const r = await otherAnswers(client, () => call(client, 'evil.match', { s: 'a'.repeat(40) + 'b' }));
  assert.equal(r.isError, true);
  assert.match(r.text, /args\/s must match pattern "\^\(a\+\)\+\$"/);
  assert.equal((await call(client, 'evil.match', { s: 'aaaa' })).json, 4, 'the validator works again afterwards');
});

attack('schema-pattern-via-plugins', 'the extension triggers the slow pattern on itself through plugins[...]', async (t) => {
  const { client } = await servers(t);
  const r = await otherAnswers(client, () => call(client, 'evil.self'));
  assert.equal(r.isError, true);
  assert.match(r.text, /must match pattern/);
});

attack('schema-unique-items', 'uniqueItems over 60,000 distinct objects', async (t) => {
  const { client } = await servers(t);
  const xs = Array.from({ length: 60000 }, (_, i) => ({ i, pad: 'x' }));
  const r = await otherAnswers(client, () => call(client, 'evil.unique', { xs }));
  assert.equal(r.json, 60000, r.text);
});

attack('schema-pattern-properties', 'a backtracking patternProperties key', async (t) => {
  const { client } = await servers(t);
  const r = await otherAnswers(client, () => call(client, 'evil.props', { ['x'.repeat(40) + 'y']: 7 }));
  assert.equal(r.isError, true);
  assert.match(r.text, /must be string/);
});

attack('schema-pattern-flood', 'ten catastrophic-pattern calls at once in ten sessions: each is refused, the server answers throughout', async (t) => {
  const { client } = await servers(t);
  const all = Array.from({ length: 10 }, (_, i) => call(client, 'evil.match', { s: 'a'.repeat(40) + 'b' }, { session: `s${i}` }));
  assert.equal((await call(client, 'other.ping', {}, { session: 'bystander' })).json, 'pong');
  for (const r of await Promise.all(all)) assert.equal(r.isError, true);
});

const ID = 'https://example.test/args.json';
attack('schema-id-collision', 'two extensions declare the same $id with different schemas: each validates with its own', async (t) => {
  const dir = sources(t, {
    'a.ts': `defineTool({ name: 'a.num', exposeAsTool: true, inputSchema: { $id: '${ID}', type: 'object', properties: { v: { type: 'number' } }, required: ['v'] }, handler: ({ args }: any) => args.v });`,
    'b.ts': `defineTool({ name: 'b.str', exposeAsTool: true, inputSchema: { $id: '${ID}', type: 'object', properties: { v: { type: 'string' } }, required: ['v'] }, handler: ({ args }: any) => args.v });`,
  });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'a.num', { v: 1 })).json, 1);
  assert.equal((await call(client, 'b.str', { v: 's' })).json, 's');
  assert.equal((await call(client, 'a.num', { v: 's' })).isError, true);
  assert.equal((await call(client, 'b.str', { v: 1 })).isError, true);
});

attack('schema-deep', 'a 500-deep inputSchema in a source file fails that file alone', async (t) => {
  let s = '{ type: "object" }';
  for (let i = 0; i < 500; i++) s = `{ type: "object", properties: { a: ${s} } }`;
  const dir = sources(t, { 'deep.ts': `defineTool({ name: 'deep.x', exposeAsTool: true, inputSchema: ${s}, handler: () => 1 });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  assert.match((await call(client, 'kiln_extensions')).text, /nests deeper than 64 levels|nests brackets/);
});

attack('schema-huge', 'a 1 MB inputSchema fails that file alone', async (t) => {
  const props = Object.fromEntries(Array.from({ length: 20000 }, (_, i) => [`p${i}`, { type: 'string', description: 'x'.repeat(40) }]));
  const dir = sources(t, { 'huge.ts': `defineTool({ name: 'huge.x', exposeAsTool: true, inputSchema: ${JSON.stringify({ type: 'object', properties: props })}, handler: () => 1 });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  assert.match((await call(client, 'kiln_extensions')).text, /inputSchema is larger than 262144 bytes/);
});
