// Approvals asked through MCP 2025-11-25: `elicitation/create` to the client of the request being served
// (policy/approvals/gate.ts decides when, and what an answer means; 2026-07-28 asks in rounds instead:
// mcp/approval-round.ts).
import type { Server } from '@modelcontextprotocol/server';
import type { AskVia, ElicitAnswer } from '../policy/approvals/gate.js';

/**
 * How approvals reach a human through `server`'s client for the request `requestId`: an `elicitation/create`
 * sent as a request related to it (over Streamable HTTP it goes on that request's own stream, so on the MCP
 * session that made the call), when the client declared form elicitation on the 2025 protocol; otherwise
 * why it cannot be asked. The wait is bounded by policy/approvals/gate.ts (its signal), not by the SDK's timeout,
 * and ends when `gone` aborts (the connection closed: its answer can never come).
 * There is deliberately no tool that approves or grants anything: only the human's answer to this question.
 */
export function askVia(server: Server, requestId: string | number, gone?: AbortSignal): AskVia {
  const caps = server.getClientCapabilities();
  if (!caps?.elicitation?.form) return { cannotAsk: 'this MCP client cannot be asked (it does not declare the elicitation capability)' };
  const era = (server as unknown as { _wireCodec?: () => { era?: string } })._wireCodec?.()?.era;
  if (era !== undefined && era !== '2025-11-25') return { cannotAsk: `this MCP client cannot be asked on protocol era ${era} (kiln asks with elicitation/create)` };
  return {
    ask: (form, signal) => server.elicitInput(form as Parameters<Server['elicitInput']>[0], {
      relatedRequestId: requestId, signal: gone ? AbortSignal.any([signal, gone]) : signal, timeout: 2 ** 31 - 1,
    }) as Promise<ElicitAnswer>,
  };
}
