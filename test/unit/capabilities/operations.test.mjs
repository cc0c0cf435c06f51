// capabilities/operations.ts is the one list of operations: what derives from it says what the table says.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approvalKindsOf, OP_KINDS, OPERATIONS, opsOfInterface } from '../../../dist/host/capabilities/operations.js';
import { GRANT_KINDS, grantKindOf } from '../../../dist/host/policy/grants.js';
import { APPROVAL_OPS } from '../../../dist/host/policy/approvals/request.js';
import { auditTarget } from '../../../dist/host/policy/audit-log.js';

test('grant and approval kinds derive from the table, in its order', () => {
  assert.deepEqual(GRANT_KINDS, ['commands', 'net', 'browser', 'tools', 'fs.read', 'fs.write', 'env', 'secrets']);
  assert.deepEqual(APPROVAL_OPS, ['command', 'net', 'browser.navigate', 'fs.read', 'fs.write', 'fs.delete', 'fs.rename']);
  for (const k of OP_KINDS) assert.equal(grantKindOf(k), OPERATIONS[k].grant ?? undefined, k);
  assert.equal(grantKindOf('browser.request'), undefined);
  assert.equal(grantKindOf('http.read'), undefined);
  assert.deepEqual(approvalKindsOf('fs'), ['fs.read', 'fs.write', 'fs.delete', 'fs.rename']);
});

test('every WIT capability function is a row, named as the WIT names it', () => {
  assert.deepEqual(opsOfInterface('commands'), ['commands.run', 'commands.start', 'commands.status', 'commands.stop']);
  assert.deepEqual(opsOfInterface('fs').map((k) => OPERATIONS[k].fn), ['readFile', 'writeFile', 'appendFile', 'readdir', 'stat', 'mkdir', 'rm', 'rename']);
  for (const k of OP_KINDS) assert.equal(k.split('.')[1], OPERATIONS[k].fn, k);
});

test('the audit target of each operation is the part of its request its audit column names', () => {
  assert.equal(auditTarget('commands.run', { name: 'say', vars: { secret: 'x' } }), 'say');
  assert.equal(auditTarget('http.fetch', { url: 'http://h.test/p?token=1', method: 'POST' }), 'POST http://h.test/p');
  assert.equal(auditTarget('browser.request', { url: 'http://h.test/p#f' }), 'GET http://h.test/p');
  assert.equal(auditTarget('browser.call', { target: 'page', method: 'goto', args: ['http://h.test/x?q'] }), 'page.goto http://h.test/x');
  assert.equal(auditTarget('plugins.call', { tool: 'other', args: { a: 1 } }), 'other');
  assert.equal(auditTarget('fs.writeFile', { path: 'out/a.txt' }), 'out/a.txt');
  assert.equal(auditTarget('fs.rename', { from: 'a', to: 'b' }), 'a -> b');
  assert.deepEqual(OP_KINDS.filter((k) => OPERATIONS[k].audit === null), ['http.read']); // no decision line of its own
});
