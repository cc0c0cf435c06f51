// Steady under load: argument validation decides by the arguments, never by the clock. Patterns and formats
// match on RE2 (linear time), uniqueItems hashes, pattern work is bounded per validation in steps, and a
// pattern RE2 cannot run fails its tool at load. Each attack asserts the outcome and that nothing else
// happened: the handler ran (or did not), the other tools still answer.
import assert from 'node:assert/strict';
import { call } from '../helpers.mjs';
import { attack, serve, sources } from './harness.mjs';

const CATASTROPHIC = '^(a+)+$'; // 2^n steps for a backtracking engine on n a's and a b
const TOOLS = `
defineTool({ name: 'st.any', exposeAsTool: true, inputSchema: { type: 'object', properties: { s: { type: 'string', anyOf: [{ pattern: '${CATASTROPHIC}' }, { maxLength: 100 }] } }, required: ['s'] }, handler: ({ args }: any) => 'ran:' + args.s.length });
defineTool({ name: 'st.props', exposeAsTool: true, inputSchema: { type: 'object', patternProperties: { '^(x+x+)+y$': { type: 'number' } } }, handler: () => 'ran' });
defineTool({ name: 'st.unique', exposeAsTool: true, inputSchema: { type: 'object', properties: { xs: { type: 'array', uniqueItems: true } } }, handler: ({ args }: any) => 'ran:' + args.xs.length });
defineTool({ name: 'st.url', exposeAsTool: true, inputSchema: { type: 'object', properties: { u: { type: 'string', format: 'url' } } }, handler: () => 'ran' });
defineTool({ name: 'st.union', exposeAsTool: true, inputSchema: { type: 'object', properties: { xs: { type: 'array', items: { oneOf: ['a', 'b', 'c', 'd', 'e'].map((k) => ({ type: 'object', properties: { kind: { const: k }, v: { type: 'number' }, note: { type: 'string', maxLength: 200 } }, required: ['kind', 'v'], additionalProperties: false })) } }, o: { type: 'object', minProperties: 1, additionalProperties: { type: 'integer' } }, s: { type: 'string', maxLength: 8000000 } } }, handler: ({ args }: any) => 'ran:' + (args.xs?.length ?? 0) + ':' + Object.keys(args.o ?? {}).length + ':' + (args.s?.length ?? 0) });
defineTool({ name: 'st.big', exposeAsTool: true, inputSchema: { type: 'object', properties: { xs: { type: 'array', items: { type: 'string', pattern: '^(?:[a-z]{1,40}[0-9]{0,40}){1,20}$' } } } }, handler: () => 'ran' });
`;
const OTHER = `defineTool({ name: 'other.ping', exposeAsTool: true, handler: () => 'pong' });`;

const servers = (t) => serve(t, [sources(t, { 'st.ts': TOOLS, 'other.ts': OTHER })]);

attack('steady-pattern-valid-args', 'valid arguments a backtracking pattern would take forever on are accepted, at the first call', async (t) => {
  const { client } = await servers(t);
  const s = 'a'.repeat(40) + 'b'; // fails the catastrophic branch, passes maxLength: the call is valid
  const r = await call(client, 'st.any', { s });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, `ran:${s.length}`);
  assert.equal((await call(client, 'st.any', { s: 'x'.repeat(101) })).isError, true, 'both branches fail: refused');
});

attack('steady-pattern-properties-unmatched', 'a property name that a catastrophic patternProperties key does not match is accepted', async (t) => {
  const { client } = await servers(t);
  const r = await call(client, 'st.props', { ['x'.repeat(40)]: 'not checked: no pattern matches this name' });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, 'ran');
  const bad = await call(client, 'st.props', { xxy: 'not a number' });
  assert.equal(bad.isError, true);
  assert.match(bad.text, /must be number/);
});

attack('steady-unique-items-linear', 'uniqueItems over 60,000 distinct objects is accepted; equal objects in another key order are caught', async (t) => {
  const { client } = await servers(t);
  const xs = Array.from({ length: 60000 }, (_, i) => ({ i, pad: 'x' }));
  const r = await call(client, 'st.unique', { xs });
  assert.equal(r.isError, false, r.text);
  assert.equal(r.json, 'ran:60000');
  const dup = await call(client, 'st.unique', { xs: [{ a: 1, b: [1, { c: 2, d: 3 }] }, 7, { b: [1, { d: 3, c: 2 }], a: 1 }] });
  assert.equal(dup.isError, true);
  assert.match(dup.text, /must NOT have duplicate items \(items ## 2 and 0 are identical\)/);
  assert.doesNotMatch(dup.text, /^ran/);
});

attack('steady-large-valid-arguments', 'valid arguments of megabytes are accepted under the step count: 60,000 items of a five-way oneOf (2 MB), 100,000 properties, a 3 MB string', async (t) => {
  const { client } = await servers(t);
  const xs = Array.from({ length: 60_000 }, (_, i) => ({ kind: 'abcde'[i % 5], v: i, note: 'n'.repeat(i % 7) }));
  const LONG = { timeout: 10 * 60_000 };
  const r = await call(client, 'st.union', { xs }, undefined, LONG);
  assert.equal(r.json, 'ran:60000:0:0', r.text);
  const o = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
  assert.equal((await call(client, 'st.union', { o }, undefined, LONG)).json, 'ran:0:100000:0');
  assert.equal((await call(client, 'st.union', { s: 'é'.repeat(3_000_000) }, undefined, LONG)).json, 'ran:0:0:3000000');
  const bad = await call(client, 'st.union', { xs: [...xs.slice(0, 59_999), { kind: 'f', v: 1 }] }, undefined, LONG);
  assert.equal(bad.isError, true);
  assert.match(bad.text, /args\/xs\/59999 must match exactly one schema in oneOf/, "a refusal of large arguments is still explained");
}, { timeout: 600_000 });

attack('steady-long-lists', 'an enum of 250 values and a required list of 250 names (Ajv loops over them) load and decide as Ajv does', async (t) => {
  const codes = Array.from({ length: 250 }, (_, i) => `C${i}`);
  const schema = { type: 'object', properties: { country: { type: 'string', enum: codes }, o: { type: 'object', required: codes } } };
  const dir = sources(t, { 'lists.ts': `defineTool({ name: 'lists.t', exposeAsTool: true, inputSchema: ${JSON.stringify(schema)}, handler: () => 'ran' });`, 'other.ts': OTHER });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'lists.t', { country: 'C249', o: Object.fromEntries(codes.map((c) => [c, 1])) })).json, 'ran');
  const bad = await call(client, 'lists.t', { country: 'XX' });
  assert.equal(bad.isError, true);
  assert.match(bad.text, /args\/country must be equal to one of the allowed values/);
  const missing = await call(client, 'lists.t', { o: Object.fromEntries(codes.slice(1).map((c) => [c, 1])) });
  assert.match(missing.text, /args\/o must have required property 'C0'/);
});

attack('steady-format-url-quadratic', 'a 400,000-character url that is quadratic for the native url expression is refused at once, as not a url', async (t) => {
  const { client } = await servers(t);
  const r = await call(client, 'st.url', { u: 'http://' + ':'.repeat(400000) + ' ' });
  assert.equal(r.isError, true);
  assert.match(r.text, /must match format "url"/);
  assert.equal((await call(client, 'st.url', { u: 'https://example.com/a?b=c' })).json, 'ran');
  assert.equal((await call(client, 'st.url', { u: 'http://10.0.0.1/' })).isError, true, 'a private address is still no url');
  assert.equal((await call(client, 'other.ping')).json, 'pong');
});

attack('steady-pattern-work-bound', 'a large pattern against 200 strings that each match it is refused by its step count, the same on any machine; the handler never runs', async (t) => {
  const { client } = await servers(t);
  // each string matches (validation stops at the first failing one), together they cost past the bound
  const xs = Array.from({ length: 200 }, () => 'a'.repeat(800));
  const r = await call(client, 'st.big', { xs });
  assert.equal(r.isError, true);
  assert.match(r.text, /^InvalidArgumentsError: the arguments of tool "st\.big" were refused: matching the arguments against the schema's patterns needs more than 33554432 steps/);
  assert.equal((await call(client, 'st.big', { xs: ['abc123', 'z'] })).json, 'ran', 'small arguments pass');
  assert.equal((await call(client, 'other.ping')).json, 'pong');
});

attack('steady-pattern-unsupported', 'a lookahead or a backreference fails its tool at load, naming the tool and the pattern; other files serve', async (t) => {
  const dir = sources(t, {
    'look.ts': `defineTool({ name: 'look.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(?=a)a$' } } }, handler: () => 1 });`,
    'back.ts': `defineTool({ name: 'back.x', exposeAsTool: true, inputSchema: { type: 'object', patternProperties: { '^(a)\\\\1$': { type: 'string' } } }, handler: () => 1 });`,
    'out.ts': `defineTool({ name: 'out.x', exposeAsTool: true, outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '(?<!a)b' } } }, handler: () => ({ s: 'b' }) });`,
    'other.ts': OTHER,
  });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(!names.includes('look.x') && !names.includes('back.x') && !names.includes('out.x'), names.join(' '));
  const ext = (await call(client, 'kiln_extensions')).text;
  assert.match(ext, /tool \\?"look\.x\\?": inputSchema cannot be compiled: pattern \\?"\^\(\?=a\)a\$\\?" cannot be used: lookahead and lookbehind/);
  assert.match(ext, /tool \\?"back\.x\\?": inputSchema cannot be compiled: pattern .*cannot be used: backreferences/);
  assert.match(ext, /tool \\?"out\.x\\?": outputSchema is not a valid JSON Schema: pattern .*cannot be used: lookahead and lookbehind/);
});

attack('steady-pattern-program-bound', 'patterns whose RE2 programs exceed the per-extension size fail their file at load, before RE2 builds them', async (t) => {
  const huge = 'a{1000}'.repeat(200); // 1,400 bytes of pattern, 200,000 RE2 instructions (about 100 MB and seconds to build)
  const many = Array.from({ length: 30 }, (_, i) => `p${i}: { type: 'string', pattern: '^${'b{1000}'.repeat(4)}${i}$' }`).join(', ');
  const dir = sources(t, {
    'huge.ts': `defineTool({ name: 'huge.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '${huge}' } } }, handler: () => 'ran' });`,
    'many.ts': `defineTool({ name: 'many.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { ${many} } }, handler: () => 'ran' });`,
    'ok.ts': `defineTool({ name: 'ok.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^[a-z]{1,64}$' } } }, handler: ({ args }: any) => 'ran:' + args.s });`,
    'other.ts': OTHER,
  });
  const { client } = await serve(t, [dir]);
  const names = (await client.listTools()).tools.map((x) => x.name);
  assert.ok(!names.includes('huge.x') && !names.includes('many.x'), names.join(' '));
  const ext = (await call(client, 'kiln_extensions')).text;
  assert.match(ext, /tool \\?"huge\.x\\?": inputSchema cannot be compiled: pattern .*cannot be used: .*more than 100000 RE2 instructions \(this one to 200000/);
  assert.match(ext, /tool \\?"many\.x\\?": inputSchema cannot be compiled: pattern .*cannot be used: .*more than 100000 RE2 instructions/);
  assert.equal((await call(client, 'ok.x', { s: 'abc' })).json, 'ran:abc', 'an ordinary pattern in the same directory serves');
  assert.equal((await call(client, 'other.ping')).json, 'pong');
});

attack('steady-matching-properties-at-load', 'a property name a catastrophic patternProperties key would backtrack on does not hang the server at load', async (t) => {
  const dir = sources(t, {
    'hang.ts': `defineTool({ name: 'hang.x', exposeAsTool: true, inputSchema: { type: 'object', properties: { ${'x'.repeat(40)}: { type: 'string' } }, patternProperties: { '^(x+x+)+y$': { type: 'string' } } }, handler: () => 'ran' });`,
    'other.ts': OTHER,
  });
  const { client } = await serve(t, [dir]);
  assert.equal((await call(client, 'other.ping')).json, 'pong');
  assert.equal((await call(client, 'hang.x', { ['x'.repeat(40)]: 's' })).json, 'ran');
});
