// Unit tests of host/mcp/tasks.ts: a task is its principal's alone; a finished task's result is a complete
// 2026 CallToolResult; the results held are bounded (the oldest finished go first); expired tasks are stopped
// and forgotten; an answer reaches only a question the task has open.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Tasks } from '../../../dist/host/mcp/tasks.js';

const result = (bytes) => ({ content: [{ type: 'text', text: 'x'.repeat(bytes) }] });

test('a task is found by its principal only, and completes with a complete result', () => {
  const tasks = new Tasks();
  const { task, handle } = tasks.create('alice', 60_000, new AbortController());
  assert.equal(handle.resultType, 'task');
  assert.equal(tasks.get(task.taskId, 'alice').status, 'working');
  assert.throws(() => tasks.get(task.taskId, 'bob'), /Task not found/);
  assert.throws(() => tasks.cancel(task.taskId, 'bob'), /Task not found/);
  tasks.settle(task, { result: result(3) });
  const done = tasks.get(task.taskId, 'alice');
  assert.equal(done.status, 'completed');
  assert.equal(done.result.resultType, 'complete');
});

test('results held are bounded: the oldest finished tasks are dropped first', () => {
  const tasks = new Tasks(Date.now, 1000);
  const made = Array.from({ length: 5 }, () => tasks.create('p', 60_000, new AbortController()).task);
  for (const t of made) tasks.settle(t, { result: result(300) });
  const alive = made.filter((t) => { try { tasks.get(t.taskId, 'p'); return true; } catch { return false; } });
  assert.deepEqual(alive.map((t) => made.indexOf(t)), [3, 4], 'the newest that fit');
  const running = tasks.create('p', 60_000, new AbortController()).task;
  assert.equal(tasks.get(running.taskId, 'p').status, 'working', 'a running task holds no result');
});

test('an expired task is stopped and forgotten; tasks/cancel stops a running one', () => {
  let now = 0;
  const tasks = new Tasks(() => now);
  const stop = new AbortController();
  const { task } = tasks.create('p', 1000, stop);
  const other = new AbortController();
  const { task: t2 } = tasks.create('p', 60_000, other);
  tasks.cancel(t2.taskId, 'p');
  assert.ok(other.signal.aborted);
  tasks.settle(t2, { error: new Error('stopped') });
  assert.equal(tasks.get(t2.taskId, 'p').status, 'cancelled');
  now = 1001;
  assert.throws(() => tasks.get(task.taskId, 'p'), /Task not found/);
  assert.ok(stop.signal.aborted, 'its call was stopped');
});

test('a question waits for tasks/update; answers to keys not open are ignored', async () => {
  const tasks = new Tasks();
  const { task } = tasks.create('p', 60_000, new AbortController());
  const form = { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } };
  const asked = tasks.asker(task)(form, new AbortController().signal, 'k');
  const view = tasks.get(task.taskId, 'p');
  assert.equal(view.status, 'input_required');
  assert.deepEqual(Object.keys(view.inputRequests), ['kiln.approval.1']);
  tasks.update(task.taskId, 'p', { 'kiln.approval.9': { action: 'accept' }, 'kiln.approval.1': { action: 'bogus' } });
  assert.equal(tasks.get(task.taskId, 'p').status, 'input_required', 'nothing it could take');
  tasks.update(task.taskId, 'p', { 'kiln.approval.1': { action: 'decline' } });
  assert.deepEqual(await asked, { action: 'decline' });
  assert.equal(tasks.get(task.taskId, 'p').status, 'working');
});
