// Each shape an operation completes with is defined once, in host/capabilities/shapes.ts; what the guest's API
// makes of it is described in types/kiln.d.ts and types/web.d.ts, and the WIT documents its fields. These tests
// hold the three together: a field added, removed or retyped on one side only fails here.
//  - host ↔ types/*.d.ts: a small TypeScript file that sees both is compiled (tsc --noEmit under the guest preset,
//    types/tsconfig.json); each check is an exact type equality, so it fails in either direction.
//  - host ↔ wit/kiln.wit: the fields the WIT comment of each function lists are the host shape's fields.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { root, tempDir } from '../../helpers.mjs';

const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** The checks, as TypeScript: each `const` compiles only if its two types are exactly equal. `shapes`: the module
 *  of the host's shapes; `guest`: the guest's types (a test swaps one for a variant with one more field). */
function checks(shapes = join(root, 'host/capabilities/shapes.js'), guest = {}) {
  const g = { processStatus: 'GuestProcessStatus', stats: 'GuestStats', response: 'Response', ...guest };
  return `
import type { FetchHead, FsEntryType, FsStat, ProcessStatus } from ${JSON.stringify(shapes)};

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
type KeysWhere<T, V> = { [K in keyof T]-?: T[K] extends V ? K : never }[keyof T];
type Fields<T> = { [K in keyof T]-?: T[K] extends (...args: any[]) => any ? never : K }[keyof T];

// What the guest's API gives, reached through its globals (types/kiln.d.ts keeps its interfaces module-private).
type Ctx = Parameters<NonNullable<Parameters<typeof defineTool>[0]['handler']>>[0];
type GuestProcessStatus = Awaited<ReturnType<Ctx['commands']['status']>>;
type GuestStats = Awaited<ReturnType<Ctx['fs']['stat']>>;
${g.extra ?? ''}

// commands.status: the same fields, the same types.
export const processStatus: Equal<ProcessStatus, ${g.processStatus}> = true;

// fs.stat: the host's numbers are the guest's numbers; each guest Date is a host "*Ms"; each entry type is one
// of the guest's type tests.
export const statNumbers: Equal<Omit<FsStat, 'type'>, Pick<${g.stats}, KeysWhere<${g.stats}, number>>> = true;
export const statDates: Equal<\`\${KeysWhere<${g.stats}, Date> & string}Ms\`, Extract<keyof FsStat, \`\${string}Ms\`>> = true;
const TESTS = {
  file: 'isFile', directory: 'isDirectory', symlink: 'isSymbolicLink', fifo: 'isFIFO', socket: 'isSocket',
  block: 'isBlockDevice', char: 'isCharacterDevice',
} as const;
export const statTypes: Equal<keyof typeof TESTS, Exclude<FsEntryType, ''>> = true;
export const statTests: Equal<(typeof TESTS)[keyof typeof TESTS], KeysWhere<${g.stats}, () => boolean>> = true;

// http.fetch: the guest's Response has the head's fields (its own ok, type and bodyUsed aside), with the
// same types where the head's are plain values.
export const fetchFields: Equal<keyof FetchHead, Exclude<Fields<${g.response}>, 'ok' | 'type' | 'bodyUsed'>> = true;
type Plain = 'status' | 'statusText' | 'url' | 'redirected';
export const fetchTypes: Equal<Readonly<Pick<FetchHead, Plain>>, Pick<${g.response}, Plain>> = true;
`;
}

/** Compile `source` under the guest preset (types/tsconfig.json), with `files` beside it; the compiler's output
 *  ('' when it passes). */
async function compile(t, source, files = {}) {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'checks.ts'), source);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: join(root, 'types/tsconfig.json'), include: ['checks.ts'] }));
  try {
    await promisify(execFile)(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: root });
    return '';
  } catch (e) {
    return e.stdout || e.message;
  }
}

/** The line of `const <name>:` in `source`, 1-based. */
const lineOf = (source, name) => source.split('\n').findIndex((l) => l.includes(`const ${name}:`)) + 1;

test('each host shape has exactly the fields types/*.d.ts gives the guest', async (t) => {
  assert.equal(await compile(t, checks()), '');
});

test('a field added on one side only fails the check, whichever side', async (t) => {
  // The host's side: a copy of shapes.ts with one more field in each shape; each shape's check fails.
  const shapes = readFileSync(join(root, 'host/capabilities/shapes.ts'), 'utf8');
  let variant = shapes;
  const added = { ProcessStatus: ['signal: string | null;', 'processStatus'], FsStat: ['blocks: number;', 'statNumbers'], FetchHead: ['trailers: string;', 'fetchFields'] };
  for (const [iface, [field]] of Object.entries(added)) variant = variant.replace(new RegExp(`(export interface ${iface} \\{\\n)`), `$1  ${field}\n`);
  for (const [field] of Object.values(added)) assert.ok(variant.includes(field), field);
  const hostSide = checks('./shapes.js');
  const hostOut = await compile(t, hostSide, { 'shapes.ts': variant });
  for (const [iface, [field, check]] of Object.entries(added)) {
    assert.match(hostOut, new RegExp(`checks\\.ts\\(${lineOf(hostSide, check)},\\d+\\): error TS2322`), `${iface} + ${field}:\n${hostOut}`);
  }
  // The guest's side: each guest type with one more field; each shape's check fails.
  const guestSide = checks(undefined, {
    processStatus: 'StatusPlus', stats: 'StatsPlus', response: 'ResponsePlus',
    extra: [
      'interface StatusPlus extends GuestProcessStatus { signal: string | null }',
      'interface StatsPlus extends GuestStats { blocks: number }',
      'interface ResponsePlus extends Response { readonly trailers: string }',
    ].join('\n'),
  });
  const guestOut = await compile(t, guestSide);
  for (const check of ['processStatus', 'statNumbers', 'fetchFields']) {
    assert.match(guestOut, new RegExp(`checks\\.ts\\(${lineOf(guestSide, check)},\\d+\\): error TS2322`), `${check}:\n${guestOut}`);
  }
});

/** The top-level fields of the object the WIT comment above `<fn>: func` says the function completes with. */
function witFields(wit, iface, fn) {
  const body = wit.slice(wit.indexOf(`\ninterface ${iface} {`));
  const lines = body.split('\n');
  const at = lines.findIndex((l) => l.trim().startsWith(`${fn}: func(`));
  assert.ok(at > 0, `${iface}.${fn} is in the WIT`);
  let start = at;
  while (lines[start - 1].trim().startsWith('///')) start--;
  const doc = lines.slice(start, at).map((l) => l.trim().replace(/^\/\/\/\s?/, '')).join(' ');
  const from = doc.indexOf('{', doc.indexOf('Completes with'));
  assert.ok(from > 0, `${iface}.${fn}'s comment says what it completes with`);
  const fields = [];
  let depth = 0;
  let piece = '';
  for (const c of doc.slice(from)) {
    if (c === '{' || c === '[') depth++;
    if (c === '}' || c === ']') depth--;
    if ((c === ',' && depth === 1) || depth === 0) {
      fields.push(piece.replace(/^[{\s]+/, '').match(/^"?(\w+)/)[1]);
      piece = '';
      if (depth === 0) break;
    } else piece += c;
  }
  return fields;
}

/** The fields of `export interface <name>` in host/capabilities/shapes.ts. */
function hostFields(name) {
  const text = readFileSync(join(root, 'host/capabilities/shapes.ts'), 'utf8');
  const body = text.match(new RegExp(`export interface ${name} \\{\\n([^}]*)\\n\\}`))[1];
  return [...body.matchAll(/^\s+(\w+)\??:/gm)].map((m) => m[1]);
}

test('the WIT lists the fields of each host shape', () => {
  const wit = readFileSync(join(root, 'wit/kiln.wit'), 'utf8');
  assert.deepEqual(witFields(wit, 'commands', 'status').sort(), hostFields('ProcessStatus').sort());
  assert.deepEqual(witFields(wit, 'fs', 'stat').sort(), hostFields('FsStat').sort());
  assert.deepEqual(witFields(wit, 'http', 'fetch').sort(), hostFields('FetchHead').sort());
  assert.deepEqual(hostFields('ProcessStatus'), ['running', 'pid', 'exitCode', 'uptimeMs', 'stdout', 'stderr']); // the parser reads fields
});
