// Approvals on MCP 2026-07-28, as multi round-trip requests (policy/approvals/gate.ts `ApprovalRound`): a call
// that needs a human ends with `resultType: "input_required"`, carrying the question as an `elicitation/create`
// input request (the same text and choices as 2025-11-25's elicitation) and a signed `requestState`
// (mcp/request-state.ts); the client calls again with the answer and the state, and the handler runs again
// from the top with the answers of every earlier round.
//
// Invariants:
//  - Nothing is approved without a state kiln minted for this call: `inputResponses` without a state mean
//    nothing, and a state that does not open (altered, expired, replayed, foreign, bound to another call) is
//    refused with the SDK's one error for it (-32602 "Invalid or expired requestState"), its reason audited.
//  - A retry must answer the question its state goes with; an answer that is not one of the choices offered
//    is a refusal of that operation, never an approval.
//  - A round asks one question and stops its call at once (`stop`): the operation asked about, and everything
//    after it in the handler, happen only in a later round.
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { AnswerKind, ApprovalRound, ElicitForm } from '../policy/approvals/gate.js';
import type { RequestStates, StateAnswer, StateBinding, StatePayload } from './request-state.js';

/** The key of kiln's question among a result's `inputRequests`. */
export const APPROVAL_INPUT = 'kiln.approval';

/** What the SDK answers for every state it or kiln refuses (its frozen error). */
export function invalidState(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', { reason: 'invalid_request_state' });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The answer `responses` carry to the question `ask` (an ElicitResult under APPROVAL_INPUT): an accepted kind
 *  when it is one of those offered ("once" for an accept with no choice: the least it can mean), decline or
 *  cancel, "invalid" for anything else; an InvalidParams error when there is no answer at all. */
export function answerOf(responses: Record<string, unknown> | undefined, ask: StatePayload['ask']): StateAnswer {
  const r = responses?.[APPROVAL_INPUT];
  if (!isRecord(r) || (r.action !== 'accept' && r.action !== 'decline' && r.action !== 'cancel')) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `a retry with kiln's requestState answers its question: inputResponses["${APPROVAL_INPUT}"] is an elicitation result ({ action, content })`);
  }
  if (r.action !== 'accept') return r.action;
  const allow = isRecord(r.content) ? r.content.allow : undefined;
  if (allow === undefined) return 'once';
  return ask.offered.includes(allow as AnswerKind) ? (allow as AnswerKind) : 'invalid';
}

/** One call's round: the answers it carries, and the question it ends with, if any. */
export class Round implements ApprovalRound {
  /** The question this call ended with. */
  pending?: { key: string; form: ElicitForm; offered: AnswerKind[] };
  private readonly left = new Map<string, StateAnswer[]>();

  /** `answers`: of every earlier round, in order; `stop`: ends the call (its guest sees an AbortError). */
  constructor(private readonly answers: [string, StateAnswer][], private readonly stop: () => void) {
    for (const [key, a] of answers) {
      const list = this.left.get(key);
      if (list) list.push(a);
      else this.left.set(key, [a]);
    }
  }

  get asked(): number {
    return this.answers.length;
  }

  answered(key: string): StateAnswer | undefined {
    return this.left.get(key)?.shift();
  }

  ask(key: string, form: ElicitForm, offered: AnswerKind[]): void {
    if (this.pending) return; // one question a round: the call is already stopping
    this.pending = { key, form, offered };
    this.stop();
  }

  /** The result that ends the call with its question, and the state its retry must bring back. */
  result(states: RequestStates, binding: StateBinding, ttlMs: number): CallToolResult {
    const p = this.pending!;
    const requestState = states.mint({
      pr: binding.principal, ss: binding.session, tool: binding.tool, args: binding.args,
      ok: this.answers, ask: { key: p.key, offered: p.offered },
    }, ttlMs);
    return {
      resultType: 'input_required',
      inputRequests: { [APPROVAL_INPUT]: { method: 'elicitation/create', params: p.form } },
      requestState,
    } as unknown as CallToolResult;
  }
}
