// Unit tests of host/capabilities/tools/tools.ts: which tools a tool can reach through plugins[...] (its own
// file's, what allow.tools names, transitively, only loaded ones, cycles included), and checkToolCall: one file
// is one unit of trust, another file's tool needs allow.tools and the operator's grant, scripts call anything.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkToolCall, reachableTools, SCRIPT_HOST_FILE, toolsByFile } from '../../../../dist/host/capabilities/tools/tools.js';
import { grantCheck } from '../../../../dist/host/policy/grants.js';

const tool = (name, tools) => ({ name, allow: { commands: {}, net: [], browser: [], ...(tools ? { tools } : {}) } });
/** name → { manifest, file } from [file, name, allow.tools?] rows. */
const loaded = (rows) => new Map(rows.map(([file, name, tools]) => [name, { manifest: tool(name, tools), file }]));

test('toolsByFile: each file\'s tools, in load order', () => {
  const m = loaded([['/a.ts', 'a.1'], ['/b.ts', 'b.1'], ['/a.ts', 'a.2']]);
  assert.deepEqual([...toolsByFile(m)], [['/a.ts', ['a.1', 'a.2']], ['/b.ts', ['b.1']]]);
});

test('reachableTools: itself, its file\'s tools, what allow.tools names, transitively, with the siblings of every file reached', () => {
  const m = loaded([
    ['/a.ts', 'a.1', ['b.1']], ['/a.ts', 'a.2'],
    ['/b.ts', 'b.1'], ['/b.ts', 'b.2', ['c.1']],
    ['/c.ts', 'c.1', ['a.1']], // a cycle back
    ['/d.ts', 'd.1'],
  ]);
  assert.deepEqual([...reachableTools('a.1', m)].sort(), ['a.1', 'a.2', 'b.1', 'b.2', 'c.1'], 'b.2 is b.1\'s sibling, and it names c.1');
  assert.deepEqual([...reachableTools('d.1', m)], ['d.1']);
  assert.deepEqual([...reachableTools('c.1', m)].sort(), ['a.1', 'a.2', 'b.1', 'b.2', 'c.1']);
  assert.deepEqual([...reachableTools('ghost', m)], ['ghost'], 'an unknown start reaches only itself');
  const named = loaded([['/a.ts', 'a.1', ['not.loaded', 'a.1']]]);
  assert.deepEqual([...reachableTools('a.1', named)], ['a.1'], 'a name that is not loaded is not reached');
  assert.deepEqual([...reachableTools('a.1', m, new Map())].sort(), ['a.1', 'b.1'], 'byFile is what gives the siblings');
});

test('checkToolCall: the same file and scripts always; another file only through allow.tools; an unknown callee is left to the call', () => {
  const caller = tool('a.1', ['b.1']);
  const B = { file: '/b.ts', sha256: 'bb'.repeat(32) };
  assert.doesNotThrow(() => checkToolCall(tool('a.1'), '/a.ts', 'a.2', { file: '/a.ts', sha256: 'aa'.repeat(32) }));
  assert.doesNotThrow(() => checkToolCall(tool('s'), SCRIPT_HOST_FILE, 'b.1', B));
  assert.doesNotThrow(() => checkToolCall(tool('a.1'), '/a.ts', 'nope', undefined));
  assert.doesNotThrow(() => checkToolCall(caller, '/a.ts', 'b.1', B));
  assert.throws(() => checkToolCall(caller, '/a.ts', 'b.2', B), (e) => e.name === 'PermissionError' &&
    e.message === 'tool "a.1" may not call "b.2": it belongs to another extension and is not in allow.tools (b.1); add "b.2" to allow.tools');
  assert.throws(() => checkToolCall(tool('a.1'), '/a.ts', 'b.2', B), /not in allow\.tools \(none\)/);
  // A file named like the scripts' host is not one: only the exact host file is.
  assert.throws(() => checkToolCall(tool('a.1'), `${SCRIPT_HOST_FILE}/x`, 'b.1', B), /not in allow\.tools/);
});

test('checkToolCall under a grant: the refusal names the grant line, and the entry that holds for that file only', () => {
  const caller = tool('a.1', ['b.1']);
  const B = { file: '/b.ts', sha256: 'bb'.repeat(32) };
  const A = { file: '/a.ts', sha256: 'aa'.repeat(32) };
  const grants = (list) => ({ mode: 'granted', extensions: { '/a.ts': { tools: list } }, spelled: { '/a.ts': 'a.ts' }, file: '/kiln.toml' });
  const check = (list) => grantCheck(grants(list), A, 'a.1', 'tools');
  assert.doesNotThrow(() => checkToolCall(caller, '/a.ts', 'b.1', B, check(['b.1'])));
  assert.doesNotThrow(() => checkToolCall(caller, '/a.ts', 'b.1', B, check(['/b.ts#b.1'])));
  assert.throws(() => checkToolCall(caller, '/a.ts', 'b.1', B, check(['/c.ts#b.1']), 'b.ts'), (e) => e.name === 'PermissionError' && e.kind === 'tools' &&
    /add "b\.1" to tools in \[grants\."a\.ts"\] of \/kiln\.toml \(or "b\.ts#b\.1", which holds for that file's tool only\)$/.test(e.message));
  assert.throws(() => checkToolCall(caller, '/a.ts', 'b.1', B, check([])), (e) => /add "b\.1" to tools/.test(e.message) && !/or "/.test(e.message), 'no key: the plain refusal');
  // The grant never widens: a granted tool the caller does not declare is still refused.
  assert.throws(() => checkToolCall(tool('a.1'), '/a.ts', 'b.1', B, check(['b.1'])), /not in allow\.tools/);
});
