// The lean path of `tools/call` over stdio: a well-formed call (a tool name, an arguments object, a `_meta`
// object whose progressToken, if any, is a string or a number) on a connection speaking the 2025 protocol is
// answered without the SDK's per-request machinery (its schema parsing of request and result, its request
// context), which cost about as much as kiln's own work. Everything else — malformed params (the SDK answers
// them with its JSON-RPC error), other params keys, the 2026 protocol era, every other method — goes through
// the SDK unchanged.
//
// Invariants:
//  - The answer is byte for byte what the SDK would send: {"result": CallToolResult with its keys in the
//    schema's order, "jsonrpc", "id"}; McpHost.callTool never throws (a failure is an error result), so there
//    is no JSON-RPC error to build. Like the SDK, a top-level "__proto__" key of the arguments is dropped.
//  - Every well-formed call takes this path, so calls enter their session's queues in arrival order (a call
//    left to the SDK would reach its queue a few promise turns later than a lean one sent after it).
//  - A call the client cancels (`notifications/cancelled` naming its id, with a string reason or none) or
//    abandons (the connection closes) is aborted like an SDK request, and gets no answer.
import type { Server } from '@modelcontextprotocol/server';
import type { McpHost } from './host.js';
import { askVia } from './elicit.js';

type Message = { jsonrpc?: string; id?: string | number; method?: string; params?: Record<string, unknown> };
interface Transport {
  onmessage?: (message: any, extra?: any) => void;
  onclose?: () => void;
  send(message: unknown): Promise<void>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A `tools/call` request the lean path may answer, or undefined. */
function plainCall(m: Message): { id: string | number; name: string; args?: Record<string, unknown>; meta?: Record<string, unknown> } | undefined {
  if (m.method !== 'tools/call' || m.jsonrpc !== '2.0' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return undefined;
  const p = m.params;
  if (!isRecord(p) || typeof p.name !== 'string') return undefined;
  for (const k in p) if (k !== 'name' && k !== 'arguments' && k !== '_meta') return undefined;
  if (p.arguments !== undefined && !isRecord(p.arguments)) return undefined;
  if (p._meta !== undefined) {
    if (!isRecord(p._meta)) return undefined;
    const token = p._meta.progressToken;
    if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') return undefined;
  }
  let args = p.arguments as Record<string, unknown> | undefined;
  if (args && Object.hasOwn(args, '__proto__')) {
    args = { ...args };
    delete args.__proto__; // an own "__proto__" from JSON.parse: the SDK's parsing drops it
  }
  return { id: m.id, name: p.name, args, meta: p._meta as Record<string, unknown> | undefined };
}

/** Whether `server` speaks the 2025 protocol era on this connection (the one whose CallToolResult the lean
 *  path builds). Read through the SDK's accessor for subclasses; without it, never. */
function legacyEra(server: Server): boolean {
  const codec = (server as unknown as { _wireCodec?: () => { era?: string } })._wireCodec?.();
  return codec?.era === '2025-11-25';
}

/** A CallToolResult with its keys in the order the SDK's schema parsing leaves them. */
function inSchemaOrder(r: Record<string, unknown>): Record<string, unknown> {
  const { _meta, content, structuredContent, isError, ...rest } = r;
  return {
    ...(_meta !== undefined ? { _meta } : {}), content, ...(structuredContent !== undefined ? { structuredContent } : {}),
    ...(isError !== undefined ? { isError } : {}), ...rest,
  };
}

/** Install the lean path on a connected `server`'s `transport` (after `server.connect`). `gone`: aborted when
 *  the connection's input ends (a question to its client can no longer be answered). */
export function leanToolCalls(server: Server, transport: Transport, host: McpHost, gone?: AbortSignal): void {
  const sdk = transport.onmessage;
  const sdkClose = transport.onclose;
  if (!sdk) return;
  const calls = new Map<string | number, AbortController>();
  transport.onmessage = (message: Message, extra?: { classification?: unknown }) => {
    const call = extra?.classification === undefined && isRecord(message) ? plainCall(message) : undefined;
    if (call && !calls.has(call.id) && legacyEra(server)) return void answer(call);
    const cancel = message?.method === 'notifications/cancelled' && isRecord(message.params) ? message.params : undefined;
    if (cancel && (cancel.reason === undefined || typeof cancel.reason === 'string')) {
      const c = calls.get(cancel.requestId as string | number);
      if (c) {
        calls.delete(cancel.requestId as string | number);
        return c.abort(cancel.reason);
      }
    }
    sdk(message, extra);
  };
  transport.onclose = () => {
    for (const c of calls.values()) c.abort(new Error('Connection closed'));
    calls.clear();
    sdkClose?.();
  };

  async function answer(call: NonNullable<ReturnType<typeof plainCall>>): Promise<void> {
    const abort = new AbortController();
    calls.set(call.id, abort);
    const notify = (n: { method: string; params: unknown }) => (calls.get(call.id) === abort ? transport.send({ jsonrpc: '2.0', ...n }) : Promise.resolve());
    const result = await host.callTool(call.name, call.args, call.meta, { signal: abort.signal, notify: notify as never, via: askVia(server, call.id, gone) });
    if (calls.get(call.id) !== abort) return; // cancelled, or the connection closed: no answer
    calls.delete(call.id);
    await transport.send({ result: inSchemaOrder(result), jsonrpc: '2.0', id: call.id }).catch(() => {});
  }
}
