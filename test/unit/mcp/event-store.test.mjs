// Unit tests of host/mcp/event-store.ts: ids name their stream and order; a replay sends what its stream sent
// after the id, nothing of another stream, no priming event; the store is bounded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_EVENTS, SessionEvents } from '../../../dist/host/mcp/event-store.js';

test('replay after an id: that stream\'s later events, in order; bounded', async () => {
  const store = new SessionEvents();
  const prime = await store.storeEvent('s1', {});
  const a = await store.storeEvent('s1', { jsonrpc: '2.0', method: 'n', params: { i: 1 } });
  await store.storeEvent('s2', { jsonrpc: '2.0', method: 'n', params: { i: 'other' } });
  await store.storeEvent('s1', { jsonrpc: '2.0', id: 7, result: {} });
  assert.equal(await store.getStreamIdForEventId(a), 's1');
  const sent = [];
  assert.equal(await store.replayEventsAfter(prime, { send: async (id, m) => sent.push([id, m]) }), 's1');
  assert.deepEqual(sent.map(([, m]) => m.params?.i ?? m.id), [1, 7]);
  assert.ok(sent.every(([id]) => id.startsWith('s1.')));
  await assert.rejects(store.replayEventsAfter('nonsense', { send: async () => {} }));
  // A request's stream this store never streamed (another process's) is refused; the GET stream resumes.
  assert.equal(await store.getStreamIdForEventId('elsewhere.3'), undefined);
  await assert.rejects(store.replayEventsAfter('elsewhere.3', { send: async () => {} }));
  assert.equal(await store.replayEventsAfter('_GET_stream.99', { send: async () => assert.fail('nothing to replay') }), '_GET_stream');
  for (let i = 0; i < MAX_EVENTS + 10; i++) await store.storeEvent('s3', { jsonrpc: '2.0', method: 'n' });
  const kept = [];
  await store.replayEventsAfter('s3.0', { send: async (id) => kept.push(id) });
  assert.equal(kept.length, MAX_EVENTS);
});
