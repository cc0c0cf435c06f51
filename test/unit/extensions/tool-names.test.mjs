// Unit tests of host/extensions/tool-names.ts: the names MCP clients see. Every portable name matches what model
// APIs accept; the mapping is one to one or not at all (names that would share an advertised name are served
// by none, whatever their order); "declared" changes nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { advertisedNames, PORTABLE_NAME, portableName } from '../../../dist/host/extensions/tool-names.js';
import { TOOL_NAME } from '../../../dist/host/extensions/manifest.js';

const toolName = fc.stringMatching(/^[A-Za-z0-9_.-]{1,64}$/);

test('every manifest tool name has a portable name a model API takes', () => {
  fc.assert(fc.property(toolName, (n) => {
    assert.ok(TOOL_NAME.test(n));
    assert.match(portableName(n), PORTABLE_NAME);
    assert.equal(portableName(n).length, n.length);
  }));
  assert.equal(portableName('hello.greet'), 'hello_greet');
  assert.equal(portableName('a_b-c'), 'a_b-c');
});

test('advertised names stand for one tool each; a shared one for none, in any order', () => {
  fc.assert(fc.property(fc.uniqueArray(toolName, { maxLength: 30 }), (names) => {
    for (const naming of ['declared', 'portable']) {
      const shuffled = [...names].reverse();
      const a = advertisedNames(names, naming);
      const b = advertisedNames(shuffled, naming);
      assert.deepEqual([...a.toTool].sort(), [...b.toTool].sort(), 'order decides nothing');
      const tools = [...a.toTool.values()];
      assert.equal(new Set(tools).size, tools.length, 'one tool per advertised name');
      for (const [shown, tool] of a.toTool) assert.equal(naming === 'portable' ? portableName(tool) : tool, shown);
      for (const [shown, clash] of a.collisions) {
        assert.ok(clash.length > 1 && !a.toTool.has(shown));
        for (const n of clash) assert.ok(!tools.includes(n), `${n} is served by none`);
      }
      if (naming === 'declared') assert.equal(a.collisions.size, 0);
      assert.equal(a.toTool.size + [...a.collisions.values()].flat().length, names.length, 'every name is accounted for');
    }
  }));
  const { toTool, collisions } = advertisedNames(['notes.save', 'notes_save', 'notes.add'], 'portable');
  assert.deepEqual([...toTool], [['notes_add', 'notes.add']]);
  assert.deepEqual([...collisions], [['notes_save', ['notes.save', 'notes_save']]]);
});
