// The Tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`), server side: a tools/call from a
// client that declares the extension, still running after [mcp] taskAfterMs, is answered with a task handle
// (`resultType: "task"`); the call goes on, and the client follows it with tasks/get, answers its questions
// with tasks/update and stops it with tasks/cancel.
//
// Invariants:
//  - A task belongs to the principal that started it: another principal naming it gets "task not found", the
//    same answer as for an id that never existed. Ids are 128 random bits.
//  - A task's approvals are asked through the task itself (status input_required, its `inputRequests`), waited
//    for as on 2025-11-25 (policy/approvals/gate.ts: [approvals] timeoutMs, the call's clock stopped); every
//    question has a key of its own over the task's life, and an answer to a key that is not outstanding is
//    ignored.
//  - At most MAX_TASKS are held; past it a call is answered when it ends, as without the extension. A task and
//    its result are dropped [mcp] taskTtlMs after it was created (tasks/get then: "task not found"). The
//    results held add up to at most MAX_RESULT_BYTES: past it the oldest finished tasks are dropped first.
//  - Tasks are per process: behind a load balancer, tasks/* requests go to the replica that made the task
//    (routed by their `Mcp-Name` header, the task id: docs/deployment.md).
import { randomBytes } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { Asker, ElicitAnswer, ElicitForm } from '../policy/approvals/gate.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The most tasks a server holds at once. */
export const MAX_TASKS = 1024;
/** What kiln suggests a client waits between two tasks/get. */
export const POLL_INTERVAL_MS = 1000;
/** The most bytes (as JSON) of finished tasks' results a server holds. */
export const MAX_RESULT_BYTES = 128 * 1024 * 1024;

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface Task {
  taskId: string;
  principal: string;
  status: Status;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs: number;
  expires: number;
  result?: CallToolResult;
  /** The result's size as JSON (MAX_RESULT_BYTES). */
  bytes: number;
  error?: { code: number; message: string };
  /** The questions outstanding, by key, with what answers each. */
  questions: Map<string, { form: ElicitForm; answer: (a: ElicitAnswer) => void }>;
  asked: number;
  abort: AbortController;
}

/** A task as tasks/get shows it, or as the handle a tools/call returns. */
function view(t: Task): Record<string, unknown> {
  return {
    taskId: t.taskId, status: t.status, ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}),
    createdAt: t.createdAt, lastUpdatedAt: t.lastUpdatedAt, ttlMs: t.ttlMs, pollIntervalMs: POLL_INTERVAL_MS,
    ...(t.status === 'input_required'
      ? { inputRequests: Object.fromEntries([...t.questions].map(([k, q]) => [k, { method: 'elicitation/create', params: q.form }])) }
      : {}),
    ...(t.status === 'completed' ? { result: t.result } : {}),
    ...(t.status === 'failed' ? { error: t.error } : {}),
  };
}

const notFound = () => new ProtocolError(ProtocolErrorCode.InvalidParams, 'Failed to retrieve task: Task not found');

export class Tasks {
  private readonly tasks = new Map<string, Task>();
  /** The bytes of the results held. */
  private held = 0;

  /** `idPrefix` begins every task id (a replica's name and a dot: a load balancer routes tasks/* by it). */
  constructor(private readonly now: () => number = Date.now, private readonly maxResultBytes = MAX_RESULT_BYTES, private readonly idPrefix = '') {}

  /** A new task of `principal`'s, working, kept `ttlMs`; `abort` stops its call (tasks/cancel). Undefined when
   *  MAX_TASKS are held. */
  create(principal: string, ttlMs: number, abort: AbortController): { task: Task; handle: CallToolResult } | undefined {
    this.sweep();
    if (this.tasks.size >= MAX_TASKS) return undefined;
    const at = new Date(this.now()).toISOString();
    const task: Task = {
      taskId: `${this.idPrefix}${randomBytes(16).toString('base64url')}`, principal, status: 'working', createdAt: at, lastUpdatedAt: at,
      ttlMs, expires: this.now() + ttlMs, questions: new Map(), asked: 0, abort, bytes: 0,
    };
    this.tasks.set(task.taskId, task);
    return { task, handle: { resultType: 'task', ...view(task) } as unknown as CallToolResult };
  }

  /** How the task's call asks a human: the question becomes one of the task's inputRequests. */
  asker(task: Task): Asker {
    return (form, signal) => new Promise<ElicitAnswer>((resolve, reject) => {
      const key = `kiln.approval.${++task.asked}`;
      const done = () => {
        task.questions.delete(key);
        signal.removeEventListener('abort', onAbort);
        if (task.questions.size === 0 && task.status === 'input_required') this.set(task, 'working');
      };
      const onAbort = () => {
        done();
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      task.questions.set(key, { form, answer: (a) => (done(), resolve(a)) });
      signal.addEventListener('abort', onAbort, { once: true });
      this.set(task, 'input_required');
    });
  }

  /** The call ended: its result, a protocol error, or cancelled by tasks/cancel. */
  settle(task: Task, outcome: { result: CallToolResult } | { error: unknown }): void {
    if (task.abort.signal.aborted) return this.set(task, 'cancelled');
    if ('result' in outcome) {
      // A 2026-07-28 CallToolResult, as the call itself would have been answered.
      task.result = { ...outcome.result, resultType: 'complete' } as CallToolResult;
      task.bytes = JSON.stringify(task.result).length;
      this.held += task.bytes;
      this.set(task, 'completed');
      return this.trim();
    }
    const e = outcome.error as { code?: unknown; message?: unknown };
    task.error = { code: typeof e?.code === 'number' ? e.code : ProtocolErrorCode.InternalError, message: String(e?.message ?? e).slice(0, 4096) };
    task.statusMessage = task.error.message.slice(0, 500);
    this.set(task, 'failed');
  }

  /** tasks/get. */
  get(taskId: unknown, principal: string): Record<string, unknown> {
    return view(this.own(taskId, principal));
  }

  /** tasks/update: answers to outstanding questions (others ignored). */
  update(taskId: unknown, principal: string, responses: Record<string, unknown> | undefined): Record<string, never> {
    const task = this.own(taskId, principal);
    for (const [key, r] of Object.entries(responses ?? {})) {
      const q = task.questions.get(key);
      const a = r as Partial<ElicitAnswer> | null;
      if (!q || typeof a !== 'object' || a === null || (a.action !== 'accept' && a.action !== 'decline' && a.action !== 'cancel')) continue;
      q.answer({ action: a.action, ...(typeof a.content === 'object' && a.content !== null ? { content: a.content } : {}) });
    }
    return {};
  }

  /** tasks/cancel: the task's call is stopped; the task ends cancelled. */
  cancel(taskId: unknown, principal: string): Record<string, never> {
    const task = this.own(taskId, principal);
    if (task.status === 'working' || task.status === 'input_required') task.abort.abort(new Error('the task was cancelled (tasks/cancel)'));
    return {};
  }

  /** Stop every task's call (the server stops). */
  closeAll(): void {
    for (const t of this.tasks.values()) t.abort.abort(new Error('the server stopped'));
  }

  private own(taskId: unknown, principal: string): Task {
    this.sweep();
    const task = typeof taskId === 'string' ? this.tasks.get(taskId) : undefined;
    if (!task || task.principal !== principal) throw notFound();
    return task;
  }

  private set(task: Task, status: Status): void {
    task.status = status;
    task.lastUpdatedAt = new Date(this.now()).toISOString();
  }

  /** Drop expired tasks (a running one is stopped first). */
  private sweep(): void {
    const now = this.now();
    for (const [id, t] of this.tasks) if (t.expires <= now) this.drop(id, t, 'the task expired ([mcp] taskTtlMs)');
  }

  /** Drop the oldest finished tasks while their results hold more than MAX_RESULT_BYTES. */
  private trim(): void {
    for (const [id, t] of this.tasks) {
      if (this.held <= this.maxResultBytes) return;
      if (t.bytes > 0) this.drop(id, t, 'dropped');
    }
  }

  private drop(id: string, t: Task, why: string): void {
    t.abort.abort(new Error(why));
    this.held -= t.bytes;
    this.tasks.delete(id);
  }
}
