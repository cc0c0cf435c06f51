// Unit tests of fs's own concurrency slot (host/capabilities/fs/turns.ts FsTurns): at most MAX_FS_IN_FLIGHT
// operations of one (session, extension) at once, the rest in order, a waiter whose call ends leaves the queue.
// No timers: each step is awaited through the promises themselves.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FsTurns, MAX_FS_IN_FLIGHT } from '../../../../dist/host/capabilities/fs/turns.js';

const settled = async (p) => {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
};

test('at most MAX_FS_IN_FLIGHT turns at once; a release passes the turn to the first waiter, once', async () => {
  const turns = new FsTurns();
  const signal = new AbortController().signal;
  const held = [];
  for (let i = 0; i < MAX_FS_IN_FLIGHT; i++) held.push(await turns.take(signal));
  const first = turns.take(signal);
  const second = turns.take(signal);
  assert.equal(await settled(first), false, 'the 17th waits');
  held[0]();
  held[0](); // a second release of the same turn counts for nothing
  const release = await first;
  assert.equal(await settled(second), false, 'one release, one turn passed on');
  release();
  (await second)();
  for (const r of held.slice(1)) r();
  // All free again: MAX_FS_IN_FLIGHT turns are taken at once, no more.
  const again = [];
  for (let i = 0; i < MAX_FS_IN_FLIGHT; i++) again.push(await turns.take(signal));
  assert.equal(await settled(turns.take(signal)), false);
});

test('each (session, extension) has its own: one full FsTurns holds up no other', async () => {
  const signal = new AbortController().signal;
  const a = new FsTurns();
  for (let i = 0; i < MAX_FS_IN_FLIGHT; i++) await a.take(signal);
  assert.equal(await settled(new FsTurns().take(signal)), true);
});

test('a waiter whose call ends fails and leaves the queue; one already ended takes no one else\'s place', async () => {
  const turns = new FsTurns();
  const live = new AbortController().signal;
  const held = [];
  for (let i = 0; i < MAX_FS_IN_FLIGHT; i++) held.push(await turns.take(live));
  const cancel = new AbortController();
  const cancelled = turns.take(cancel.signal);
  const waiting = turns.take(live);
  cancel.abort();
  await assert.rejects(cancelled, /the fs operation was cancelled while it waited: its call had ended/);
  const ended = new AbortController();
  ended.abort();
  await assert.rejects(turns.take(ended.signal), /cancelled while it waited/);
  held[0]();
  assert.equal(await settled(waiting), true, 'the live waiter got the turn');
});
