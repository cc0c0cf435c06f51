// The work of argument validation is counted in the code Ajv generates (host/schema-work.ts): the counted
// validator decides exactly as Ajv's own code does, on chosen and on random values, including schemas whose
// strings look like the code the counting rewrites; the count is the same on every run, grows with the
// arguments (a loop is counted per iteration, a helper by the size of what it reads), and code kiln cannot
// parse is refused rather than run uncounted.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import Ajv2020 from 'ajv/dist/2020.js';
import { Ajv } from 'ajv';
import { AJV_OPTIONS, makeAjv } from '../dist/host/schema/ajv.js';
import { argsValidator, cachedValidator } from '../dist/host/schema/validators.js';
import { DEFAULT_STEPS, instrument, lastSchemaWork, MAX_VALIDATOR_BYTES, POINTER_ESCAPE_STEPS, SCHEMA_WORK_LIMIT, withSchemaBudget } from '../dist/host/schema/work.js';

// Strings that look like what instrument() finds and rewrites, in every place a schema puts a string.
const CODE_LIKE = ['for(const k in data){', '}', '{', 'errors++;', 'Object.keys(data).length', 'vErrors.concat(x)', '/*', '*/', '"', "'", '`', '\\', 'x.replace(/~/g, "~0").replace(/\\//g, "~1")', 'const func0 = scope.func[0];', 'function validate9(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){'];

const SCHEMAS = [
  { type: 'object', properties: Object.fromEntries(CODE_LIKE.map((k, i) => [k, { type: 'string', maxLength: 3 + i, description: k }])), required: [CODE_LIKE[0]], additionalProperties: { type: 'integer' } },
  { type: 'array', items: { enum: [...CODE_LIKE, { [CODE_LIKE[0]]: CODE_LIKE[3] }, [1, '}']] }, minItems: 1, maxItems: 5 },
  { type: 'object', properties: { c: { const: { [CODE_LIKE[1]]: [CODE_LIKE[2], { a: CODE_LIKE[4] }] } } }, minProperties: 1, maxProperties: 3 },
  { anyOf: [{ type: 'array', contains: { const: '}' }, minContains: 2 }, { type: 'object', propertyNames: { maxLength: 4 } }, { type: 'string', minLength: 2 }] },
  { type: 'object', additionalProperties: { oneOf: [{ type: 'number' }, { type: 'array', items: { type: 'string' } }, { type: 'object', required: ['}'] }] } },
  { $ref: '#/$defs/T', $defs: { T: { anyOf: [{ type: 'number' }, { type: 'array', items: { $ref: '#/$defs/T' } }, { type: 'object', additionalProperties: { $ref: '#/$defs/T' } }] } } },
  { type: 'object', dependentRequired: { '{': ['}'] }, if: { required: ['a'] }, then: { properties: { b: { type: 'string' } } }, else: { not: { required: ['b'] } }, unevaluatedProperties: { type: 'boolean' }, properties: { a: {}, b: {}, '{': {}, '}': {} } },
];

const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, fc.constantFrom(...CODE_LIKE), fc.string({ maxLength: 6 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.oneof(fc.constantFrom(...CODE_LIKE, 'a', 'b', 'c'), fc.string({ maxLength: 3 })), tie('value'), { maxKeys: 4 })),
})).value.map((v) => JSON.parse(JSON.stringify(v))); // values as JSON.parse makes them (plain prototypes, no -0)

/** What a validation decided: valid, or where and by which keyword it failed. */
const outcome = (validate, value) => {
  const copy = structuredClone(value);
  const ok = validate(copy);
  return { ok, errors: ok ? [] : validate.errors.map((e) => `${e.instancePath} ${e.keyword} ${e.message}`), value: copy };
};

for (const allErrors of [false, true]) {
  test(`counted validators decide as Ajv's own code does, value for value (allErrors: ${allErrors})`, async () => {
    const kiln = await makeAjv('2020-12', () => {}, { allErrors });
    const plain = new Ajv2020({ ...AJV_OPTIONS, allErrors, logger: false });
    let compared = 0;
    for (const schema of SCHEMAS) {
      const counted = kiln.compile(schema);
      const reference = plain.compile(schema);
      assert.match(String(counted), /self\.kilnWork\(\d+\)/, 'the validator kiln runs is the counted one');
      fc.assert(fc.property(json, (value) => {
        assert.deepEqual(withSchemaBudget(() => outcome(counted, value)), outcome(reference, value), JSON.stringify({ schema, value }));
        compared++;
      }), { numRuns: 300 });
    }
    assert.equal(compared, SCHEMAS.length * 300);
  });
}

test('deep equality (const, enum) is JSON equality, as Ajv\'s', async () => {
  const kiln = await makeAjv('draft-07');
  const plain = new Ajv({ ...AJV_OPTIONS, logger: false });
  fc.assert(fc.property(json, json, (a, b) => {
    for (const schema of [{ const: a }, { enum: [a] }, { items: { const: a } }]) {
      assert.equal(withSchemaBudget(() => kiln.validate(schema, b)), plain.validate(schema, b));
      if (!schema.items) assert.equal(withSchemaBudget(() => kiln.validate(schema, structuredClone(a))), true);
    }
  }), { numRuns: 500 });
});

test('the count is the same on every run and grows with the arguments: per loop iteration, per character read', async () => {
  const items = await argsValidator({ name: 't', inputSchema: { type: 'object', properties: { xs: { type: 'array', items: { allOf: [{ minimum: 0 }, { maximum: 9 }] } } } } });
  const steps = async (args) => {
    assert.equal(await items(args), undefined);
    return lastSchemaWork();
  };
  const s100 = await steps({ xs: new Array(100).fill(1) });
  assert.equal(await steps({ xs: new Array(100).fill(1) }), s100, 'the same arguments, the same count');
  const s200 = await steps({ xs: new Array(200).fill(1) });
  const perItem = (s200 - s100) / 100;
  assert.ok(perItem > 20, `each item's checks are counted (${perItem} steps an item)`);
  assert.equal(await steps({ xs: new Array(300).fill(1) }) - s200, s200 - s100, 'linear in the items');

  const strings = await argsValidator({ name: 't', inputSchema: { type: 'object', properties: { s: { type: 'string', maxLength: 1e9 } } } });
  await strings({ s: 'a' });
  const short = lastSchemaWork();
  await strings({ s: 'a'.repeat(100_001) });
  assert.equal(lastSchemaWork() - short, 100_000 * 8, 'maxLength reads the string: 8 steps a character');
});

test('past the limit the arguments are refused, the same arguments every time; the one-shot validator counts too', async () => {
  const inputSchema = { type: 'object', properties: { xs: { type: 'array', items: { allOf: Array.from({ length: 200 }, () => ({ minimum: -1 })) } } } };
  const args = { xs: new Array(400_000).fill(0) };
  for (const validate of [await argsValidator({ name: 'wide', inputSchema }), await cachedValidator({ name: 'wide', inputSchema })]) {
    for (let i = 0; i < 2; i++) {
      await assert.rejects(async () => validate(args), (e) => e.name === 'InvalidArgumentsError' && e.message.includes(`needs more than ${SCHEMA_WORK_LIMIT} steps`) && e.message.includes('tool "wide"'));
    }
    assert.equal(await validate({ xs: [1, 2, 3] }), undefined, 'small arguments pass');
  }
});

test('code kiln cannot parse is refused, never run uncounted', () => {
  assert.throws(() => instrument('return function f(x){return x}'), /unknown function head/);
  const head = 'function validate1(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){';
  assert.throws(() => instrument(`return ${head}if(x){`), /unbalanced brace/);
  assert.throws(() => instrument(`return ${head}for(const a of b.c()){};}`), /the loop/);
  assert.match(instrument(`return ${head}for(const v0 of schema1.enum){a();}}`), /kilnWork\(6\);a\(\)/, 'a loop over a list in the schema is counted per item');
  assert.throws(() => instrument(`return ${head}"unterminated;}`), /unterminated string/);
  assert.match(instrument(`return ${head}const s = "}{for(x){";for(let i=0; i<n; i++){a();}}`), /^return function validate1\(.*?\)\{self\.kilnWork\(\d+\);const s = "\}\{for\(x\)\{";for\(let i=0; i<n; i\+\+\)\{self\.kilnWork\(6\);a\(\);\}\}$/);
});

test('what compiling may not do: a comment other than the $id\'s sourceURL, an $async validator, more code than MAX_VALIDATOR_BYTES', () => {
  const head = 'function validate1(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){';
  assert.match(instrument(`return ${head}/*# sourceURL="http://x.example/s" */;return true;}`), /kilnWork/);
  assert.throws(() => instrument(`return ${head}/*# sourceURL="http://x.example/s#*/evil();/*" */;return true;}`), /a comment that is not its sourceURL/);
  assert.throws(() => instrument(`return async ${head}return true;}`), /asynchronous schemas \(\$async\) are not supported/);
  assert.throws(() => instrument(`return ${head}const s = "${'x'.repeat(MAX_VALIDATOR_BYTES)}";}`), /bytes of validator code, more than/);
});

test('a default is counted by the size of what it writes, a property name\'s pointer by its escapes', async () => {
  const steps = async (inputSchema, args) => {
    const v = await argsValidator({ name: 't', inputSchema });
    assert.equal(await v(args), undefined);
    return lastSchemaWork();
  };
  const withDefault = (n) => ({ type: 'object', properties: { a: { default: 'x'.repeat(n) } } });
  assert.equal(await steps(withDefault(1002), {}) - await steps(withDefault(2), {}), 1000 * DEFAULT_STEPS + 1000, 'its copy, and its bytes of code');
  assert.equal(await steps(withDefault(1002), { a: 'given' }), await steps(withDefault(2), { a: 'given' }) + 1000, 'a default not written costs only its code');
  const ref = { type: 'object', definitions: { d: { type: 'number' } }, additionalProperties: { $ref: '#/definitions/d' } };
  const plain = await steps(ref, { ['a'.repeat(1000)]: 1 });
  assert.equal(await steps(ref, { ['~/'.repeat(500)]: 1 }) - plain, 1000 * POINTER_ESCAPE_STEPS);
});

test('a schema holds at most MAX_SCHEMA_NODES objects and arrays, and no $id with "*/" in it', async () => {
  const { parseTools, MAX_SCHEMA_NODES } = await import('../dist/host/extensions/manifest.js');
  const tool = (inputSchema) => [{ name: 't', inputSchema }];
  const props = (n) => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, {}])) });
  assert.equal(parseTools(tool(props(MAX_SCHEMA_NODES - 2))).length, 1, 'the root, its properties and each property: exactly the bound');
  assert.throws(() => parseTools(tool(props(MAX_SCHEMA_NODES - 1))), /tool "t": inputSchema holds more than 4096 objects, arrays and booleans/);
  assert.throws(() => parseTools(tool({ type: 'object', properties: { a: { $id: 'http://x/#*/evil()/*' } } })), /tool "t": inputSchema has a \$id with "\*\/" in it/);
  assert.equal(parseTools(tool({ type: 'object', $id: 'http://x.example/a*b/c' })).length, 1, 'a * or a / alone is fine');
});

test('what a schema may hold: booleans count as subschemas, and the paths Ajv writes into its code are bounded', async () => {
  const { parseTools, MAX_SCHEMA_NODES } = await import('../dist/host/extensions/manifest.js');
  const tool = (inputSchema) => [{ name: 't', inputSchema }];
  assert.throws(() => parseTools(tool({ type: 'object', allOf: new Array(MAX_SCHEMA_NODES).fill(true) })), /holds more than 4096 objects, arrays and booleans/);
  const long = { type: 'object', properties: { ['p'.repeat(20_000)]: { allOf: Array.from({ length: 200 }, () => ({ minimum: 0 })) } } };
  assert.throws(() => parseTools(tool(long)), /has paths too long: their lengths from the root add up to more than 2097152 characters/);
  assert.equal(parseTools(tool({ type: 'object', properties: { ['p'.repeat(2000)]: { minimum: 0 } } })).length, 1, 'a long name on its own is fine');
});

test('lists Ajv loops over are found by any path (quoted names, alternatives); deep equality counts the strings it compares', async () => {
  const codes = Array.from({ length: 250 }, (_, i) => `C${i}`);
  const plain = new Ajv2020({ ...AJV_OPTIONS, allErrors: false, logger: false });
  for (const inputSchema of [
    { type: 'object', properties: { 'country-code': { type: 'string', enum: codes } } },
    { type: 'object', properties: { 'billing-address': { type: 'object', required: codes } } },
    { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { c: { anyOf: [{ enum: codes }, { type: 'null' }] } } },
  ]) {
    const v = await argsValidator({ name: 't', inputSchema });
    const reference = plain.compile(inputSchema);
    for (const args of [{ 'country-code': 'C249' }, { 'country-code': 'XX' }, { 'billing-address': Object.fromEntries(codes.map((c) => [c, 1])) }, { 'billing-address': {} }, { c: 'C3' }, { c: null }, { c: 'X' }]) {
      assert.equal((await v(structuredClone(args))) === undefined, reference(structuredClone(args)), JSON.stringify({ inputSchema: Object.keys(inputSchema.properties), args }));
    }
  }
  const cmp = await argsValidator({ name: 't', inputSchema: { type: 'object', properties: { o: { const: { s: 'x'.repeat(100_000) } } } } });
  await cmp({ o: { s: 'y'.repeat(10) } });
  const short = lastSchemaWork();
  await cmp({ o: { s: 'y'.repeat(100_000) } });
  assert.ok(lastSchemaWork() - short >= 100_000, 'strings of one length are compared character by character, and counted so');
});

test('uniqueItems tells Infinity, -Infinity and null apart (JSON.parse reads 1e400 as Infinity), as Ajv does', async () => {
  const v = await argsValidator({ name: 't', inputSchema: { type: 'object', properties: { u: { type: 'array', uniqueItems: true } } } });
  const plain = new Ajv({ ...AJV_OPTIONS, logger: false }).compile({ type: 'object', properties: { u: { type: 'array', uniqueItems: true } } });
  for (const text of ['{"u":[1e400,null]}', '{"u":[1e400,-1e400]}', '{"u":[[1e400],[null]]}', '{"u":[{"a":1e400},{"a":null}]}', '{"u":[1e400,1e400]}', '{"u":[[null,1e400],[null,1e400]]}', '{"u":[null,null]}']) {
    assert.equal((await v(JSON.parse(text))) === undefined, plain(JSON.parse(text)), text);
  }
});

test('text that looks like an error\'s code inside a string is counted as the bytes it is', () => {
  const head = 'function validate1(data, {instancePath="", parentData, parentDataProperty, rootData=data}={}){';
  const body = '{const s = "const err1 = {instancePath};if(vErrors === null){vErrors = [err1];}else {vErrors.push(err1);}errors++;";}';
  assert.equal(/self\.kilnWork\((\d+)\)/.exec(instrument(`return ${head}${body.slice(1)}`))[1], String(body.length));
});
