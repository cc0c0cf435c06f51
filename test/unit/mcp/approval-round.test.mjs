// Unit tests of host/mcp/approval-round.ts: what a retry's answer means (only an offered choice approves; no
// answer at all is an error, not a refusal), and that each answer a re-run carries covers one occurrence of
// its exact question.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answerOf, APPROVAL_INPUT, Round } from '../../../dist/host/mcp/approval-round.js';

const ask = { key: 'q', offered: ['once', 'session'] };
const of = (r) => answerOf({ [APPROVAL_INPUT]: r }, ask);

test('an answer approves only as one of the choices offered', () => {
  assert.deepEqual(of({ action: 'accept', content: { allow: 'session' } }).answer, 'session');
  assert.deepEqual(of({ action: 'accept' }).answer, 'once', 'an accept with no choice means the least');
  assert.deepEqual(of({ action: 'accept', content: { allow: 'always' } }).answer, 'invalid', 'not offered');
  assert.deepEqual(of({ action: 'accept', content: { allow: ['once'] } }).answer, 'invalid');
  assert.deepEqual(of({ action: 'decline' }).answer, 'decline');
  assert.deepEqual(of({ action: 'cancel', content: { allow: 'once' } }), { elicit: { action: 'cancel' }, answer: 'cancel' });
  for (const bad of [undefined, null, 'accept', { action: 'ACCEPT' }, [], { content: { allow: 'once' } }]) {
    assert.throws(() => of(bad), (e) => e.code === -32602 && /inputResponses\["kiln\.approval"\]/.test(e.message), JSON.stringify(bad));
  }
  assert.throws(() => answerOf(undefined, ask), (e) => e.code === -32602);
});

test('a re-run\'s answers cover one occurrence each of their own question', () => {
  const r = new Round([['a', 'once'], ['b', 'decline'], ['a', 'session']]);
  assert.equal(r.asked, 3);
  assert.equal(r.answered('c'), undefined);
  assert.equal(r.answered('a'), 'once');
  assert.equal(r.answered('a'), 'session');
  assert.equal(r.answered('a'), undefined, 'a third occurrence is asked again');
  assert.equal(r.answered('b'), 'decline');
});
