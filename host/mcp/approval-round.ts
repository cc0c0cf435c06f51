// Approvals on MCP 2026-07-28, as multi round-trip requests: a call that needs a human answers its request with
// `resultType: "input_required"`, carrying the question as an `elicitation/create` input request (the same text
// and choices as 2025-11-25's elicitation) and a signed `requestState` (mcp/request-state.ts); the client
// calls again with the answer and the state.
//
// The call itself waits for the answer, as on 2025 (`LiveCall`: the question is the gate's ordinary wait, its
// deadline stopped, bounded by [approvals] timeoutMs): the retry that brings the answer resumes it where it
// stopped, and is answered with what it does next (its result, or its next question). So nothing the handler
// did runs twice, and "allow once" is once. Only a retry that reaches a process that does not hold the
// waiting call (another replica, a restart) runs the handler again from the top, with the answers of every
// earlier round (`Round`), each covering one occurrence of exactly the operation asked about.
//
// Invariants:
//  - Nothing is approved without a state kiln minted for this call: `inputResponses` without a state mean
//    nothing, and a state that does not open (altered, expired, replayed, foreign, bound to another call) is
//    refused with the SDK's one error for it (-32602 "Invalid or expired requestState"), its reason audited.
//  - A retry must answer the question its state goes with; an answer that is not one of the choices offered
//    is a refusal of that operation, never an approval.
//  - A waiting call is resumed only by the retry whose state names its question (a state opens once), and
//    is found by that id alone: who may retry is decided by the state's binding (principal, session, tool,
//    arguments). A retry that comes back to the process that asked after its call stopped waiting (the
//    question timed out, the call was cancelled, its session closed) is refused: a call is never run again
//    where it ran. Its state expires when the wait for its question ends.
//  - At most [mcp] maxWaitingCalls of one principal's calls wait at once (each holds its guest); a question
//    past that is refused, unasked.
import { randomBytes } from 'node:crypto';
import { ProtocolError, ProtocolErrorCode, type CallToolResult } from '@modelcontextprotocol/server';
import type { AnswerKind, ApprovalRound, ElicitAnswer, ElicitForm } from '../policy/approvals/gate.js';
import type { RequestStates, StateAnswer, StateBinding, StatePayload } from './request-state.js';

/** How many of one client's calls may wait for an answer at once ([mcp] maxWaitingCalls). */
export const DEFAULT_MAX_WAITING = 16;

/** The key of kiln's question among a result's `inputRequests`. */
export const APPROVAL_INPUT = 'kiln.approval';

/** What the SDK answers for every state it or kiln refuses (its frozen error). */
export function invalidState(): ProtocolError {
  return new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid or expired requestState', { reason: 'invalid_request_state' });
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The answer `responses` carry to the question `ask` (an ElicitResult under APPROVAL_INPUT): as the gate takes it
 *  (`elicit`), and as a state records it (`answer`: an accepted kind when it is one of those offered, "once" for
 *  an accept with no choice, the least it can mean; decline or cancel; "invalid" for anything else). An
 *  InvalidParams error when there is no answer at all. */
export function answerOf(responses: Record<string, unknown> | undefined, ask: StatePayload['ask']): { elicit: ElicitAnswer; answer: StateAnswer } {
  const r = responses?.[APPROVAL_INPUT];
  if (!isRecord(r) || (r.action !== 'accept' && r.action !== 'decline' && r.action !== 'cancel')) {
    throw new ProtocolError(ProtocolErrorCode.InvalidParams, `a retry with kiln's requestState answers its question: inputResponses["${APPROVAL_INPUT}"] is an elicitation result ({ action, content })`);
  }
  if (r.action !== 'accept') return { elicit: { action: r.action }, answer: r.action };
  const allow = isRecord(r.content) ? r.content.allow : undefined;
  const answer: StateAnswer = allow === undefined ? 'once' : ask.offered.includes(allow as AnswerKind) ? (allow as AnswerKind) : 'invalid';
  return { elicit: { action: 'accept', content: { allow: answer === 'invalid' ? String(allow).slice(0, 64) : answer } }, answer };
}

/** The answers a retry carries, for a call run again from the top. */
export class Round implements ApprovalRound {
  private readonly left = new Map<string, StateAnswer[]>();

  constructor(readonly answers: [string, StateAnswer][]) {
    for (const [key, a] of answers) {
      const list = this.left.get(key);
      if (list) list.push(a);
      else this.left.set(key, [a]);
    }
  }

  get asked(): number {
    return this.answers.length;
  }

  answered(question: string): StateAnswer | undefined {
    return this.left.get(question)?.shift();
  }
}

/** A question a call waits on. */
interface Question {
  id: string;
  key: string;
  form: ElicitForm;
  offered: AnswerKind[];
  /** When it was put (its state expires when the wait for it ends: [approvals] timeoutMs later). */
  askedAt: number;
  answer: (a: ElicitAnswer) => void;
}

/** The offered answers of a form (its `allow` property's choices). */
const offeredOf = (form: ElicitForm): AnswerKind[] =>
  ((form.requestedSchema.properties.allow as { oneOf?: { const: AnswerKind }[] })?.oneOf ?? []).map((o) => o.const);

/** The requests being served for one call, in turn: the first, then each retry that resumes it. */
export interface Leg {
  /** What the call sends meanwhile (progress, logs) goes to the leg waiting on it; none while none waits. */
  notify?: (n: unknown) => Promise<void>;
  log?: (source: string, level: string, message: string) => void;
}

/** One 2026-07-28 call that may wait for answers across requests. */
export class LiveCall {
  /** Every answer given so far, by question (for a retry that must run the call again elsewhere). */
  readonly answers: [string, StateAnswer][] = [];
  /** The request serving this call now (between a question and its retry, none). */
  leg: Leg | undefined;
  private readonly questions: Question[] = [];
  private wake?: () => void;
  private result?: Promise<CallToolResult>;

  /** `principal`: whose call it is (at most WaitingCalls' `max` of a principal's calls wait at once). */
  constructor(private readonly waiting: WaitingCalls, readonly stop: AbortController, private readonly principal: string) {}

  /** The gate's asker (policy/approvals/gate.ts Asker): the question waits here until a retry answers it. */
  readonly ask = (form: ElicitForm, signal: AbortSignal, key: string): Promise<ElicitAnswer> => new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const release = this.waiting.admit(this.principal);
    if (!release) {
      return reject(new Error(`${this.waiting.max} calls of this client already wait for a human's answer ([mcp] maxWaitingCalls); answer them first`));
    }
    const q: Question = {
      id: randomBytes(16).toString('base64url'), key, form, offered: offeredOf(form), askedAt: Date.now(),
      answer: (a) => {
        signal.removeEventListener('abort', onAbort);
        release();
        resolve(a);
      },
    };
    const onAbort = () => {
      const i = this.questions.indexOf(q);
      if (i >= 0) this.questions.splice(i, 1);
      this.waiting.drop(q.id);
      release();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.questions.push(q);
    this.wake?.();
  });

  /** Serve the call until it ends or waits for a human: its result, or its question with the state a retry brings
   *  back. */
  async next(call: Promise<CallToolResult> | undefined, states: RequestStates, binding: StateBinding, ttlMs: number): Promise<CallToolResult> {
    this.result ??= call;
    for (;;) {
      const q = this.questions.find((x) => !this.waiting.holds(x.id));
      if (q) {
        this.leg = undefined;
        this.waiting.hold(q.id, this, q);
        const requestState = states.mint({
          pr: binding.principal, ss: binding.session, tool: binding.tool, args: binding.args,
          ok: this.answers, ask: { key: q.key, offered: q.offered }, jti: q.id,
        }, Math.max(0, ttlMs - (Date.now() - q.askedAt)));
        return {
          resultType: 'input_required',
          inputRequests: { [APPROVAL_INPUT]: { method: 'elicitation/create', params: q.form } },
          requestState,
        } as unknown as CallToolResult;
      }
      const asked = new Promise<'asked'>((resolve) => (this.wake = () => resolve('asked')));
      const first = await Promise.race([this.result!, asked]);
      this.wake = undefined;
      if (first !== 'asked') return first;
    }
  }

  /** Whether the call waits on a question now. */
  asking(): boolean {
    return this.questions.length > 0;
  }

  /** A retry's answer to question `id`, which this call waits on. */
  answer(q: Question, elicit: ElicitAnswer, answer: StateAnswer): void {
    const i = this.questions.indexOf(q);
    if (i >= 0) this.questions.splice(i, 1);
    this.answers.push([q.key, answer]);
    q.answer(elicit);
  }
}

/** The calls of this process waiting for a retry, by the id of the question (the state's id); at most `max` of
 *  one principal's questions open at once (each call holds its guest while it waits). */
export class WaitingCalls {
  private readonly byQuestion = new Map<string, { call: LiveCall; question: Question }>();
  private readonly open = new Map<string, number>();

  constructor(private readonly limit: () => number = () => DEFAULT_MAX_WAITING) {}

  get max(): number {
    return this.limit();
  }

  /** A place for one more of `principal`'s questions, and the function that gives it back; undefined when full. */
  admit(principal: string): (() => void) | undefined {
    const n = this.open.get(principal) ?? 0;
    if (n >= this.max) return undefined;
    this.open.set(principal, n + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.open.get(principal) ?? 1) - 1;
      if (left > 0) this.open.set(principal, left);
      else this.open.delete(principal);
    };
  }

  hold(id: string, call: LiveCall, question: Question): void {
    this.byQuestion.set(id, { call, question });
  }

  holds(id: string): boolean {
    return this.byQuestion.has(id);
  }

  drop(id: string): void {
    this.byQuestion.delete(id);
  }

  /** The waiting call and question a state's id names, taken (a state opens once). */
  take(id: string): { call: LiveCall; question: Question } | undefined {
    const w = this.byQuestion.get(id);
    this.byQuestion.delete(id);
    return w;
  }
}
