// Attacks through argument validation: schemas whose checks are catastrophically slow on crafted arguments
// (a backtracking `pattern`, `uniqueItems` over many objects), triggered by a client or by the extension
// itself through plugins[...]; recursive anyOf/oneOf schemas whose work doubles with each level of nesting
// (counted in steps and refused past SCHEMA_WORK_LIMIT, schema/work.ts); and `$id`s that collide between
// extensions. Patterns match on RE2 and uniqueItems hashes (schema/ajv.ts), so each such call is decided at
// once, by the arguments, and the other sessions keep answering.
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
  // no clock decides it: the bystander waits as long as the attack's own call may (LONG)
  const [r, ping] = await Promise.all([attackCall(), call(client, 'other.ping', {}, { session: 'bystander' }, LONG)]);
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

// Recursive schemas whose alternatives both validate the same subtree: the work doubles at every level of the
// arguments' nesting. `exp.t`'s alternatives are alike (no schema-side fix helps: the work is counted and
// refused past SCHEMA_WORK_LIMIT); `tree.sum` is an honest tree (number, pair or list) whose failing
// alternatives stop at their first failing keyword, so valid trees of any depth validate in linear work.
const RECURSIVE = `defineTool({ name: 'exp.t', exposeAsTool: true, inputSchema: { type: 'object', properties: { x: { $ref: '#/$defs/S' } }, $defs: { S: { anyOf: [ { type: 'array', items: { $ref: '#/$defs/S' } }, { type: 'array', items: { $ref: '#/$defs/S' }, minItems: 0 } ] } } }, handler: () => 'handler ran' });
defineTool({ name: 'tree.sum', exposeAsTool: true, inputSchema: { type: 'object', properties: { tree: { $ref: '#/$defs/Tree' } }, required: ['tree'],
  $defs: { Tree: { oneOf: [ { type: 'number' }, { type: 'array', minItems: 2, maxItems: 2, items: { $ref: '#/$defs/Tree' } }, { type: 'array', minItems: 3, items: { $ref: '#/$defs/Tree' } } ] } } },
  handler: ({ args }: any) => { let n = 0; const todo = [args.tree]; while (todo.length) { const x = todo.pop(); if (Array.isArray(x)) todo.push(...x); else n += x; } return n; } });`;

/** `depth` one-element arrays around 1: matches no alternative that stops early. */
function nested(depth) {
  let x = 1;
  for (let i = 0; i < depth; i++) x = [x];
  return x;
}

attack('schema-anyof-exponential', 'a recursive anyOf of two alike alternatives against arguments nested 20 and 40 deep', async (t) => {
  const { client } = await serve(t, [sources(t, { 'exp.ts': RECURSIVE, 'other.ts': OTHER })]);
  for (const depth of [20, 40]) {
    const r = await otherAnswers(client, () => call(client, 'exp.t', { x: nested(depth) }));
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /the arguments of tool "exp\.t" were refused: validating them against the schema needs more than \d+ steps/);
    assert.doesNotMatch(r.text, /handler ran/, 'the handler never ran');
  }
  assert.equal((await call(client, 'exp.t', { x: [[[[]]]] })).json, 'handler ran', 'the tool works on shallow arguments');
});

attack('schema-oneof-honest-deep', 'an honest recursive oneOf (number, pair, list): a valid 300-deep tree is accepted, a 40-deep invalid one refused', async (t) => {
  const { client } = await serve(t, [sources(t, { 'tree.ts': RECURSIVE, 'other.ts': OTHER })]);
  let tree = [1, 2];
  for (let i = 0; i < 300; i++) tree = [tree, 1];
  const ok = await otherAnswers(client, () => call(client, 'tree.sum', { tree }));
  assert.equal(ok.json, 303, ok.text);
  const bad = await otherAnswers(client, () => call(client, 'tree.sum', { tree: nested(40) }));
  assert.equal(bad.isError, true, bad.text);
  assert.match(bad.text, /args\/tree must be number/);
});

// Schemas whose checks are inline (no `$ref`: one compiled function) but run once per item or property of the
// arguments, or call helpers whose cost grows with the value they look at. Each validation is counted in
// steps (bytes of validator code run, characters and properties looked at, errors collected) and refused
// past SCHEMA_WORK_LIMIT (schema/work.ts), the same on any machine; the handler never runs, and the other
// session is answered.
const wide = (n, leaf) => ({ allOf: Array.from({ length: n / 1000 }, () => ({ allOf: Array.from({ length: 1000 }, () => leaf) })) });
const anyOf = (leaf) => ({ anyOf: Array.from({ length: 1000 }, () => leaf) });
const tool = (name, properties) =>
  `defineTool({ name: '${name}', exposeAsTool: true, inputSchema: ${JSON.stringify({ type: 'object', properties })}, handler: () => 'handler ran' });`;
const WIDE = [
  tool('wide.items', { x: { type: 'array', items: wide(4000, { minimum: -1 }) } }),
  tool('wide.length', { s: wide(1000, { maxLength: 1e9 }) }),
  tool('wide.keys', { o: anyOf({ minProperties: 1e9 }) }),
  tool('wide.closed', { o: anyOf({ additionalProperties: false }) }),
  tool('wide.const', { o: anyOf({ const: { a: 1 } }) }),
  tool('wide.contains', { x: { type: 'array', contains: { type: 'string' } } }),
].join('\n');
const LONG = { timeout: 10 * 60_000 };
const manyKeys = () => Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 0]));

async function refusedByWork(client, tool, args) {
  const r = await otherAnswers(client, () => call(client, tool, args, undefined, LONG));
  assert.equal(r.isError, true, r.text);
  assert.match(r.text, new RegExp(`the arguments of tool "${tool.replace('.', '\\.')}" were refused: validating them against the schema needs more than \\d+ steps`));
  assert.doesNotMatch(r.text, /handler ran/, 'the handler never ran');
}

attack('schema-inline-items', '4,000 inline checks (no $ref) run on each of 200,000 array items', async (t) => {
  const { client } = await serve(t, [sources(t, { 'wide.ts': WIDE, 'other.ts': OTHER })]);
  await refusedByWork(client, 'wide.items', { x: new Array(200_000).fill(0) });
  assert.equal((await call(client, 'wide.items', { x: [0, 1, 2] })).json, 'handler ran', 'the tool works on small arguments');
}, { timeout: 600_000 });

attack('schema-helpers-on-large-values', 'a thousand maxLength on a 2 MB string; a thousand minProperties, additionalProperties:false and object consts on 100,000 properties', async (t) => {
  const { client } = await serve(t, [sources(t, { 'wide.ts': WIDE, 'other.ts': OTHER })]);
  await refusedByWork(client, 'wide.length', { s: 'a'.repeat(2_000_000) });
  for (const name of ['wide.keys', 'wide.closed', 'wide.const']) await refusedByWork(client, name, { o: manyKeys() });
  assert.equal((await call(client, 'wide.length', { s: 'abc' })).json, 'handler ran', 'the tool works on small arguments');
}, { timeout: 600_000 });

attack('schema-contains-errors', 'contains over 2,000,000 items that all fail it (an error collected for each)', async (t) => {
  const { client } = await serve(t, [sources(t, { 'wide.ts': WIDE, 'other.ts': OTHER })]);
  await refusedByWork(client, 'wide.contains', { x: new Array(2_000_000).fill(0) });
  assert.equal((await call(client, 'wide.contains', { x: [0, 'a'] })).json, 'handler ran');
}, { timeout: 600_000 });

// What compiling a schema may do and cost. Ajv writes each `$id` into a comment of the code it generates; a
// `$id` holding "*/" would end the comment and run the rest as the server's own code, at build, at load and on
// every call. `$async` would make the validator a promise, taken for "valid". A `$ref` is compiled as a call,
// never a copy (R references to D checks would be R × D checks of code), an enum or required list of 200 and
// more is a loop Ajv writes differently, and a `default` is a fresh copy of its JSON each time it is written:
// each is refused, compiled, or counted — extensions/manifest.ts, schema/work.ts.
const MARKER = (t) => join(sources(t, {}), 'pwned');
const injected = (marker) => `http://x.example/s#*/process.getBuiltinModule('fs').writeFileSync(decodeURIComponent('${encodeURIComponent(marker)}'),'pwned');/*`;

attack('schema-id-comment-injection', 'a $id that ends Ajv\'s comment and writes a file from the server, at build, at load and at a call', async (t) => {
  const marker = MARKER(t);
  const evil = (id) => `defineTool({ name: 'evil.id', exposeAsTool: true, inputSchema: ${JSON.stringify({ $id: id, type: 'object', properties: { n: { type: 'number' } } })}, handler: () => 'handler ran' });`;
  const atCompile = `http://x.example/s#*/},process.getBuiltinModule('fs').writeFileSync(decodeURIComponent('${encodeURIComponent(marker)}'),'pwned'),function zz(){/*`;
  const dir = sources(t, { 'evil.ts': evil(injected(marker)), 'early.ts': evil(atCompile).replace("'evil.id'", "'evil.early'"), 'other.ts': OTHER });
  const built = await (await import('../helpers.mjs')).kiln(['build', join(dir, 'early.ts'), '-o', join(dir, 'early.wasm')]);
  assert.notEqual(built.code, 0, 'the build was refused');
  assert.match(built.stderr, /inputSchema has a \$id with "\*\/" in it/);
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  const listed = (await call(client, 'kiln_extensions')).text;
  assert.match(listed, /evil\.ts[^]*inputSchema has a \$id with/);
  const r = await call(client, 'evil.id', { n: 1 });
  assert.equal(r.isError, true);
  assert.doesNotMatch(r.text, /handler ran/);
  assert.equal((await import('node:fs')).existsSync(marker), false, 'the injected code ran');
}, { timeout: 600_000 });

attack('schema-async', 'an $async schema, whose promise would pass any arguments and crash the server when it rejects', async (t) => {
  const dir = sources(t, { 'a.ts': `defineTool({ name: 'async.t', exposeAsTool: true, inputSchema: { $async: true, type: 'object', properties: { n: { type: 'number' } } }, handler: () => 'handler ran' });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  assert.match((await call(client, 'kiln_extensions')).text, /asynchronous schemas \(\$async\) are not supported/);
  const r = await call(client, 'async.t', { n: 'not a number' });
  assert.equal(r.isError, true);
  assert.doesNotMatch(r.text, /handler ran/);
  assert.equal((await call(client, 'other.ping')).json, 'pong', 'the server is alive');
}, { timeout: 600_000 });

attack('schema-ref-amplified', 'an outputSchema of 300 references to a definition of 300 checks (16 KB; 39 MB of code if inlined)', async (t) => {
  const A = { type: 'object', properties: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, { minimum: 0 }])) };
  const out = { type: 'object', definitions: { A }, properties: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`q${i}`, { $ref: '#/definitions/A' }])) };
  const dir = sources(t, { 'refs.ts': `defineTool({ name: 'refs.t', exposeAsTool: true, outputSchema: ${JSON.stringify(out)}, handler: ({ args }: any) => args.bad ? { q0: { p0: -1 } } : { q0: { p0: 1 }, q299: {} } });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  const ok = await otherAnswers(client, () => call(client, 'refs.t', {}, undefined, LONG));
  assert.equal(ok.isError, false, ok.text);
  const bad = await call(client, 'refs.t', { bad: true }, undefined, LONG);
  assert.equal(bad.isError, true);
  assert.match(bad.text, /result\/q0\/p0 must be >= 0/);
}, { timeout: 600_000 });

attack('schema-defaults-amplified', 'a default of 4,000 objects written into each of 100,000 array items', async (t) => {
  const schema = { type: 'object', properties: { x: { type: 'array', items: { type: 'object', properties: { a: { default: Array.from({ length: 4000 }, () => ({})) } } } } } };
  const dir = sources(t, { 'd.ts': `defineTool({ name: 'defaults.t', exposeAsTool: true, inputSchema: ${JSON.stringify(schema)}, handler: ({ args }: any) => 'handler ran ' + args.x.length });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  await refusedByWork(client, 'defaults.t', { x: Array.from({ length: 100_000 }, () => ({})) });
  assert.equal((await call(client, 'defaults.t', { x: [{}, {}] })).json, 'handler ran 2', 'a few items get their default');
}, { timeout: 600_000 });

attack('schema-formats-weighted', 'three uri-template formats on a 3 MB string; a 1 MB string of "(?:)" as a regex; property names of "~/" through four references', async (t) => {
  const tools = [
    tool('fmt.uri', { r: { type: 'string', allOf: [{ format: 'uri-template' }, { format: 'uri-template' }, { format: 'uri-template' }] } }),
    tool('fmt.regex', { r: { type: 'string', format: 'regex' } }),
    `defineTool({ name: 'fmt.pointer', exposeAsTool: true, inputSchema: ${JSON.stringify({ type: 'object', definitions: { d: { type: ['number', 'object'], properties: { r: { $ref: '#/definitions/d' } } } }, properties: { o: { type: 'object', additionalProperties: { allOf: Array.from({ length: 4 }, () => ({ $ref: '#/definitions/d' })) } } } })}, handler: () => 'handler ran' });`,
  ].join('\n');
  const { client } = await serve(t, [sources(t, { 'fmt.ts': tools, 'other.ts': OTHER })]);
  await refusedByWork(client, 'fmt.uri', { r: '1'.repeat(3_000_000) });
  const re = await otherAnswers(client, () => call(client, 'fmt.regex', { r: '(?:)'.repeat(250_000) }, undefined, LONG));
  assert.equal(re.isError, true);
  assert.match(re.text, /args\/r must match format "regex"/);
  assert.equal((await call(client, 'fmt.regex', { r: '^(?:a|b)+$' })).json, 'handler ran', 'a pattern of ordinary size is a regex');
  await refusedByWork(client, 'fmt.pointer', { o: { ['~/'.repeat(1_000_000)]: 1 } });
  assert.equal((await call(client, 'fmt.pointer', { o: { 'a/b': { r: 1 } } })).json, 'handler ran');
}, { timeout: 600_000 });

attack('schema-merge-and-compare', 'unevaluatedProperties merging 100,000 names through 50 levels of $ref; an object const of a 200,000-character string compared 216,000 times', async (t) => {
  const defs = { L0: { patternProperties: { '^k': true } }, S: { anyOf: [{ properties: { x: true } }, true] } };
  for (let i = 1; i <= 50; i++) defs[`L${i}`] = { allOf: [{ $ref: '#/$defs/S' }, { $ref: `#/$defs/L${i - 1}` }] };
  const merge = { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', $defs: defs, properties: { o: { type: 'object', allOf: [{ $ref: '#/$defs/L50' }], unevaluatedProperties: false } } };
  const S = 'a'.repeat(199_999) + 'b';
  const refs = (n, to) => ({ allOf: Array.from({ length: n }, () => ({ $ref: `#/definitions/${to}` })) });
  const compare = { type: 'object', definitions: { c: { const: { k: S } }, A1: refs(60, 'c'), A2: refs(60, 'A1'), A3: refs(60, 'A2') }, properties: { x: { type: 'array', items: { $ref: '#/definitions/A3' } } } };
  const dir = sources(t, {
    'm.ts': `defineTool({ name: 'merge.t', exposeAsTool: true, inputSchema: ${JSON.stringify(merge)}, handler: () => 'handler ran' });\ndefineTool({ name: 'compare.t', exposeAsTool: true, inputSchema: ${JSON.stringify(compare)}, handler: () => 'handler ran' });`,
    'other.ts': OTHER,
  });
  const { client } = await serve(t, [dir]);
  await refusedByWork(client, 'merge.t', { o: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 0])) });
  await refusedByWork(client, 'compare.t', { x: [{ k: S }, { k: S }] });
  assert.equal((await call(client, 'merge.t', { o: { k0: 0, x: 1 } })).json, 'handler ran', 'small arguments pass');
  assert.equal((await call(client, 'compare.t', { x: [] })).json, 'handler ran');
}, { timeout: 600_000 });

attack('schema-long-paths', 'a 100,000-character property name over 1,000 checks (200 MB of generated code) and 5,000 boolean subschemas', async (t) => {
  const long = { type: 'object', properties: { ['p'.repeat(100_000)]: { allOf: Array.from({ length: 1000 }, () => ({ minimum: 0 })) } } };
  const dir = sources(t, {
    'long.ts': `defineTool({ name: 'long.t', exposeAsTool: true, inputSchema: ${JSON.stringify(long)}, handler: () => 'handler ran' });`,
    'bools.ts': `defineTool({ name: 'bools.t', exposeAsTool: true, inputSchema: ${JSON.stringify({ type: 'object', allOf: new Array(5000).fill(true) })}, handler: () => 'handler ran' });`,
    'other.ts': OTHER,
  });
  const { client } = await serve(t, [dir]);
  const listed = (await call(client, 'kiln_extensions')).text;
  assert.match(listed, /long\.ts[^]*has paths too long/);
  assert.match(listed, /bools\.ts[^]*holds more than 4096 objects, arrays and booleans/);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  assert.doesNotMatch((await call(client, 'long.t')).text, /handler ran/);
}, { timeout: 600_000 });
