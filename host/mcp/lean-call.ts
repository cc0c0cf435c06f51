// The lean path of `tools/call` over stdio: a plain call (a tool name, an arguments object, at most a
// `_meta.session`) on a connection speaking the 2025 protocol is answered without the SDK's per-request
// machinery (its schema parsing of request and result, its request context), which cost about as much as
// kiln's own work. Everything else — progress tokens, other `_meta`, the 2026 protocol era, malformed params,
// every other method — goes through the SDK unchanged.
//
// Invariants:
//  - The answer is what the SDK would send: {jsonrpc, id, result: CallToolResult}; McpHost.callTool never
//    throws (a failure is an error result), so there is no JSON-RPC error to build.
//  - A call the client cancels (`notifications/cancelled` naming its id) or abandons (the connection closes)
//    is aborted like an SDK request, and gets no answer.
import type { Server } from '@modelcontextprotocol/server';
import type { McpHost } from './server.js';

type Message = { jsonrpc?: string; id?: string | number; method?: string; params?: Record<string, unknown> };
interface Transport {
  onmessage?: (message: any, extra?: any) => void;
  onclose?: () => void;
  send(message: unknown): Promise<void>;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A `tools/call` request the lean path may answer, or undefined. */
function plainCall(m: Message): { id: string | number; name: string; args?: Record<string, unknown>; session?: string } | undefined {
  if (m.method !== 'tools/call' || m.jsonrpc !== '2.0' || (typeof m.id !== 'string' && typeof m.id !== 'number')) return undefined;
  const p = m.params;
  if (!isRecord(p) || typeof p.name !== 'string') return undefined;
  for (const k in p) if (k !== 'name' && k !== 'arguments' && k !== '_meta') return undefined;
  if (p.arguments !== undefined && !isRecord(p.arguments)) return undefined;
  let session: string | undefined;
  if (p._meta !== undefined) {
    if (!isRecord(p._meta)) return undefined;
    for (const k in p._meta) if (k !== 'session') return undefined;
    if (p._meta.session !== undefined && typeof p._meta.session !== 'string') return undefined;
    session = p._meta.session as string | undefined;
  }
  return { id: m.id, name: p.name, args: p.arguments as Record<string, unknown> | undefined, session };
}

/** Whether `server` speaks the 2025 protocol era on this connection (the one whose CallToolResult the lean
 *  path builds). Read through the SDK's accessor for subclasses; without it, never. */
function legacyEra(server: Server): boolean {
  const codec = (server as unknown as { _wireCodec?: () => { era?: string } })._wireCodec?.();
  return codec?.era === '2025-11-25';
}

/** Install the lean path on a connected `server`'s `transport` (after `server.connect`). */
export function leanToolCalls(server: Server, transport: Transport, host: McpHost): void {
  const sdk = transport.onmessage;
  const sdkClose = transport.onclose;
  if (!sdk) return;
  const calls = new Map<string | number, AbortController>();
  transport.onmessage = (message: Message, extra?: { classification?: unknown }) => {
    const call = extra?.classification === undefined && isRecord(message) ? plainCall(message) : undefined;
    if (call && !calls.has(call.id) && legacyEra(server)) return void answer(call);
    if (message?.method === 'notifications/cancelled' && isRecord(message.params)) {
      const c = calls.get(message.params.requestId as string | number);
      if (c) {
        calls.delete(message.params.requestId as string | number);
        return c.abort(message.params.reason);
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
    const result = await host.callTool(call.name, call.args, call.session === undefined ? undefined : { session: call.session }, abort.signal);
    if (calls.get(call.id) !== abort) return; // cancelled, or the connection closed: no answer
    calls.delete(call.id);
    await transport.send({ jsonrpc: '2.0', id: call.id, result }).catch(() => {});
  }
}
