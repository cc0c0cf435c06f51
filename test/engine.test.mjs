// The engine itself: QuickJS semantics inside the component, and the sandbox around it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { call, fixtures, mcp } from './helpers.mjs';

test('number formatting rounds like V8 (ties away from zero, exact decimal expansion)', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const values = [2.5, -2.5, 0.5, -0.5, 1.005, 1.45, 1.25, 1.35, 8.345, 0.000001, 123.456, 1e21, 9.995, -9.995, 99.5, 0, -0, 1 / 3, 2 ** 53, 5e-7];
  const digits = [0, 1, 2, 3, 5, 10, 20];
  const { isError, json } = await call(client, 'probe.format', { values, digits });
  assert.equal(isError, false);
  const expected = values.map((v) => digits.map((d) => [v.toFixed(d), v.toPrecision(d + 1), v.toExponential(d)]));
  assert.deepEqual(json, expected);
  assert.equal(json[0][0][0], '3', '(2.5).toFixed(0) must be "3"');
});

test('deep recursion is a catchable RangeError, not a crash', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const { isError, json } = await call(client, 'probe.recurse');
  assert.equal(isError, false);
  assert.equal(json.caught, 'RangeError');
  // and the guest is still usable afterwards
  assert.equal((await call(client, 'probe.state')).isError, false);
});

test('the guest sees no Node globals and no bridge internals; host is reported', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const { json } = await call(client, 'probe.globals');
  assert.equal(json.process, 'object', 'the sandboxed process shim');
  assert.equal(json.processNode, null, 'process.versions is honest: no node');
  assert.equal(json.processBinding, 'undefined');
  assert.equal(json.require, 'undefined');
  assert.deepEqual(json.native, []);
  assert.equal(json.host, 'mcp');
  assert.equal(json.ferridriverHost, 'mcp');
  assert.ok(Math.abs(json.now - Date.now()) < 60_000, 'Date.now() is the real time');
});

test('Promise.all over two host operations runs them concurrently', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  const { isError, json, text } = await call(client, 'probe.parallel');
  assert.equal(isError, false, text);
  assert.deepEqual(json.met, [true, true], 'each callee saw the other while it was still running');
});

test('a timed-out handler resets the guest globals but not vars, and the server keeps answering', async (t) => {
  const { client } = await mcp(t, [`${fixtures}/good/probe.ts`]);
  assert.equal((await call(client, 'probe.state')).json.calls, 1);
  assert.equal((await call(client, 'probe.state')).json.calls, 2);
  assert.equal((await call(client, 'probe.counted', { n: 1 })).json.count, 1);
  const timedOut = await call(client, 'probe.loop');
  assert.equal(timedOut.isError, true);
  assert.match(timedOut.text, /^TimeoutError: tool "probe.loop" did not finish within its timeoutMs \(200 ms\)/);
  assert.equal((await call(client, 'probe.state')).json.calls, 1, 'globalThis was reset');
  assert.equal((await call(client, 'probe.count')).json.count, 1, 'vars survived the reset');
});
