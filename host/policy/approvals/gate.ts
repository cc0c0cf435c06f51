// CapabilityContext.approve: the [approvals] verdict for one operation (policy/approvals/rules.ts `decide`), and
// when it is "require", a human asked through the MCP client that made the call, the call waiting for the
// answer: on MCP 2025-11-25 with `elicitation/create` on its connection; on 2026-07-28 as a multi round-trip
// request (mcp/approval-round.ts: the request ends with the question, the call waits for the retry that
// brings the answer, and a retry that reaches a process without the waiting call runs it again with the
// answers it carries, `ApprovalRound`).
//
// Invariants:
//  - Nothing of the operation happens before `approve` resolves: capability code calls it after its own
//    checks and before it acts. A rejection is always a PermissionError naming the op and its safe target.
//  - "deny" never asks, also when mode "ask" puts a use its grant does not list to a human (`forced`): one
//    operation is judged once, by the rules and the grant together, and puts at most one question.
//    "require" with nobody to ask (a client without the elicitation capability, `kiln run`) is refused with
//    the rule the operator would add to allow it.
//  - Floods cost the guest: a call (with the tools it calls through plugins[...]) puts at most [approvals]
//    maxQuestionsPerCall questions, the rest refused without asking; a session has at most
//    maxOpenQuestionsPerSession questions open at once, the rest wait their turn (the call's clock stopped,
//    its cancellation ending the wait), and an answer given meanwhile "for this session" covers them.
//  - The question: its first line is the operation with every guest value shown whole, quoted and escaped
//    (policy/approvals/question.ts `question`: every character outside printable ASCII escaped); the next two are
//    kiln's own (the extension file and sha256, the rule), and nothing the guest controls can add a line or
//    imitate them.
//    A question too long to show whole (QUESTION_MAX_CHARS) is not put: the operation is refused, unasked.
//  - A human's answer: "once" (this operation), "session" (the same op and target in this kiln session),
//    "always" (the same op and target by this artifact's sha256, kept in the operator's store file; offered
//    only when [approvals] store is set). Decline, dismissal, no answer within [approvals] timeoutMs, and the
//    call being cancelled while asking are refusals.
//  - While a human is asked, the call's deadline stands still (sessions/call.ts pauses it); the client can still
//    cancel the call, and that ends the wait at once.
//  - 2026-07-28 asks the same question with the same choices. An answer a retry carries (`ApprovalRound`) covers
//    one occurrence of exactly the operation asked about: its question's text (every value shown), and a digest
//    of the operation as the guest asked for it (`ApprovalSubject.operation`: a request's headers and body, a
//    file's bytes), so a handler run again cannot spend it on another URL, other bytes or another argv. A call
//    puts at most maxQuestionsPerCall questions over all its rounds. "For this session" is offered only where
//    the session outlives the call.
//  - There is no MCP tool, and no guest import, that adds to the session's answers or to the store: only a
//    human's answer to kiln's own question does, and the store is a file only the operator (and kiln) writes.
//  - The audit log gets one line per decision (with the rule), per question and per answer; never argv,
//    query strings or sizes of anything but the operation itself.
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, statSync, writeSync } from 'node:fs';
import { PermissionError } from '../../errors.js';
import type { AuditLog } from '../audit-log.js';
import type { ExtensionIdentity } from '../extension-identity.js';
import { approvalKey, storeKey } from './keys.js';
import { escaped, visible } from './escaping.js';
import { allowHint, describe, question, QUESTION_MAX_CHARS, safeTarget } from './question.js';
import type { ApprovalRequest, DecisionInput } from './request.js';
import { decide } from './rules.js';
import { DEFAULT_APPROVALS, type ApprovalSettings } from './settings.js';
import { writeStderr } from '../../untrusted/terminal.js';

/** An `elicitation/create` form request (the MCP 2025-11-25 shape kiln sends) and the client's answer. */
export interface ElicitForm {
  mode: 'form';
  message: string;
  requestedSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[] };
}
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}
/** Puts one question to the human of the call being served and waits for the answer. `question`: the exact
 *  question's key (`questionKey`), by which a 2026-07-28 retry's answer is matched to it. */
export type Asker = (form: ElicitForm, signal: AbortSignal, question: string) => Promise<ElicitAnswer>;

/** The answers a 2026-07-28 retry carries, for a call run again from the top (in a process that does not hold
 *  the call that asked). */
export interface ApprovalRound {
  /** The answer this retry carries for the next occurrence of the exact question `question` (`questionKey`),
   *  taken by this call: an accepted answer's kind, or why it is a refusal; undefined when it carries none. */
  answered(question: string): AnswerKind | 'decline' | 'cancel' | 'invalid' | undefined;
  /** Questions the call's earlier rounds put. */
  readonly asked: number;
}

/** What an MCP call brings to approvals: how to ask its client, or why it cannot be asked. */
export interface AskVia {
  /** Ask and wait for the answer (2025-11-25 elicitation; 2026-07-28 round trips; a task's input). */
  ask?: Asker;
  /** The answers of earlier rounds, when a 2026-07-28 retry runs the call again. */
  round?: ApprovalRound;
  /** Questions are asked, and answered, as 2026-07-28 rounds (the audit log says so). */
  rounds?: boolean;
  /** Why nobody can be asked (shown in the refusal). */
  cannotAsk?: string;
  /** False when the call's session ends with the call (a 2026-07-28 HTTP call naming no session): "for this
   *  session" is then not offered. */
  sessionOutlivesCall?: boolean;
}

/** The key of one exact question: the operation's approval key (what a remembered answer covers), the question's
 *  text (every value shown) and the digest of the operation as the guest asked for it. */
export function questionKey(key: string, text: string, operation: string | undefined): string {
  return createHash('sha256').update(JSON.stringify([key, text, operation ?? ''])).digest('hex');
}

/** What one call has spent (shared with the tools it calls through plugins[...]). */
export interface CallQuestions {
  questions: number;
}

/** One operation's asker: its call's way to ask, and its call's clock. */
export interface ApprovalSubject {
  /** The kiln session's name (audit) and an object that lives as long as the session ("session" answers). */
  session: string;
  sessionKey: object;
  extension: ExtensionIdentity;
  tool: string;
  /** The op's signal: the call was cancelled, or its guest is gone. */
  signal: AbortSignal;
  via?: AskVia;
  /** Stop the call's clock while a human is asked; the returned function starts it again. */
  pause?: () => () => void;
  /** The call's count of questions ([approvals] maxQuestionsPerCall); none: the operation is its own call. */
  call?: CallQuestions;
  /** A digest of the operation exactly as the guest asked for it (its request and the bytes it carries). */
  operation?: string;
  /** The principal whose call this is (over HTTP): its "always" answers are its own (keys.ts storeKey). */
  principal?: string;
}

export type AnswerKind = 'once' | 'session' | 'always';

const NOBODY = 'nobody can be asked here (no MCP client: kiln run)';

/** Whether `s` asks for nothing: the permissive preset, no rules, default allow (no [approvals] section). */
export function approvalsOff(s: ApprovalSettings): boolean {
  return s.preset === 'permissive' && s.rules.length === 0 && s.default === 'allow';
}

/** The "always" answers, in the operator's file: JSON, one entry per (artifact sha256, tool, op, target),
 *  each keyed by a hash of those (policy/approvals/keys.ts approvalKey) so no argument value is written. Read again
 *  whenever the file changes (the operator may delete entries to revoke them); written whole, through a
 *  temporary file renamed into place, mode 0600. */
export class AlwaysStore {
  private keys = new Set<string>();
  private seen = '';
  private broken: string | undefined;

  constructor(readonly path: string, private readonly warn: (line: string) => void) {}

  private refresh(): void {
    const st = statSync(this.path, { throwIfNoEntry: false });
    const stamp = st ? `${st.mtimeMs}:${st.size}:${st.ino}` : 'none';
    if (stamp === this.seen) return;
    this.seen = stamp;
    this.keys = new Set();
    this.broken = undefined;
    if (!st) return;
    try {
      const doc = JSON.parse(readFileSync(this.path, 'utf8'));
      if (!Array.isArray(doc?.approvals)) throw new Error('no "approvals" list');
      for (const e of doc.approvals) if (typeof e?.key === 'string') this.keys.add(e.key);
    } catch (e) {
      this.broken = (e as Error).message;
      this.warn(`kiln: the approvals store ${this.path} cannot be read (${this.broken}); its "always" answers are ignored until it is fixed`);
    }
  }

  has(key: string): boolean {
    this.refresh();
    return this.keys.has(key);
  }

  /** Keep an answer; false when the file cannot be written (or is broken: it is never overwritten then). */
  add(entry: { key: string; sha256: string; extension: string; tool: string; op: string; target: string; principal?: string }): boolean {
    this.refresh();
    if (this.broken !== undefined) return false;
    try {
      let doc: { kiln: string; version: number; approvals: unknown[] } = { kiln: 'approvals', version: 1, approvals: [] };
      const st = statSync(this.path, { throwIfNoEntry: false });
      if (st) doc = JSON.parse(readFileSync(this.path, 'utf8'));
      doc.approvals.push({ ...entry, time: new Date().toISOString() });
      const tmp = `${this.path}.${process.pid}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(doc, null, 2) + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.path);
      this.keys.add(entry.key);
      return true;
    } catch (e) {
      this.warn(`kiln: the approvals store ${this.path} cannot be written: ${(e as Error).message}`);
      return false;
    }
  }
}

export class ApprovalGate {
  readonly settings: ApprovalSettings;
  private readonly store?: AlwaysStore;
  /** "session" answers, by the session they were given in (gone with it). */
  private readonly sessions = new WeakMap<object, Set<string>>();
  /** Questions open per session, and those waiting for a turn ([approvals] maxOpenQuestionsPerSession). */
  private readonly open = new WeakMap<object, { open: number; waiting: (() => void)[] }>();

  constructor(settings: ApprovalSettings | undefined, private readonly audit?: AuditLog, private readonly warn: (line: string) => void = writeStderr) {
    this.settings = settings ?? DEFAULT_APPROVALS;
    if (this.settings.store) this.store = new AlwaysStore(this.settings.store, warn);
  }

  get off(): boolean {
    return approvalsOff(this.settings);
  }

  /** Resolves when `request` may go ahead; rejects with a PermissionError when it may not. */
  /** `forced`: [policy] mode "ask" (policy/grants.ts): a use the tool declares and its grant does not list is put to a
   *  human whatever the rules say; with nobody to ask it is refused with the grant's own line to add. */
  async approve(request: ApprovalRequest, s: ApprovalSubject, forced?: { rule: string; hint: string }): Promise<void> {
    if (this.off && !forced) return;
    const input: DecisionInput = { ...request, tool: s.tool, extension: s.extension };
    // The rules first: a deny holds whatever the grant's question would be; else a forced use is asked once.
    const ruled = this.off ? undefined : decide(input, this.settings);
    const decided = forced && ruled?.verdict !== 'deny' ? { verdict: 'require' as const, rule: forced.rule } : ruled!;
    const target = safeTarget(request);
    const record = (fields: Record<string, unknown>) => this.audit?.write({
      session: s.session, extension: s.extension.file, sha256: s.extension.sha256, tool: s.tool,
      type: 'approval', op: request.op, target, ...fields,
    } as Parameters<AuditLog['write']>[0]);
    record({ event: 'decision', verdict: decided.verdict, rule: decided.rule });
    const what = `tool "${s.tool}" may not ${describe(request)}`;
    if (decided.verdict === 'allow') return;
    if (decided.verdict === 'deny') throw new PermissionError(`${what}: the operator's ${decided.rule} denies it (kiln.toml [approvals])`);

    const key = approvalKey(request, s.tool, s.extension.sha256);
    const remembered = (): boolean => {
      if (this.sessions.get(s.sessionKey)?.has(key)) return void record({ event: 'remembered', answer: 'session' }), true;
      if (this.store?.has(storeKey(key, s.principal))) return void record({ event: 'remembered', answer: 'always' }), true;
      return false;
    };
    if (remembered()) return;

    // A question shows its whole target or is not put: one too long to show is refused, the limit named.
    const asked = question(s.tool, request);
    if ('tooLong' in asked) {
      record({ event: 'unasked', rule: 'question too long' });
      throw new PermissionError(
        `${what} without a human's approval (${decided.rule} requires it), and the question would be ${asked.tooLong} characters long, ` +
        `more than the ${QUESTION_MAX_CHARS} kiln shows whole (it never asks about a target it cannot show in full); ${forced ? forced.hint : allowHint(input, this.settings, decided)}`,
      );
    }
    // An answer a 2026-07-28 retry carries for exactly this question, when it runs the call again.
    const exact = questionKey(key, asked.text, s.operation);
    const round = s.via?.round;
    const answer = round?.answered(exact);
    if (answer !== undefined) {
      record({ event: 'answered', answer, round: true });
      if (answer === 'decline' || answer === 'cancel' || answer === 'invalid') throw new PermissionError(`${what}: ${refusalText(answer)}`);
      return this.remember(answer, key, request, s, target);
    }
    const ask = s.via?.ask;
    if (!ask) {
      record({ event: 'unasked', rule: decided.rule });
      throw new PermissionError(
        `${what} without a human's approval (${decided.rule} requires it), and ${s.via?.cannotAsk ?? NOBODY}; ${forced ? forced.hint : allowHint(input, this.settings, decided)}`,
      );
    }
    if (s.signal.aborted) throw new PermissionError(`${what}: the call was cancelled before a human could be asked`);
    const max = this.settings.maxQuestionsPerCall;
    if ((s.call?.questions ?? 0) + (round?.asked ?? 0) >= max) {
      record({ event: 'unasked', rule: '[approvals] maxQuestionsPerCall' });
      throw new PermissionError(
        `${what} without a human's approval (${decided.rule} requires it), and this call has already put ${max} questions to a human, ` +
        `the most [approvals] maxQuestionsPerCall allows; to allow more, set maxQuestionsPerCall = ${Math.min(max * 2, 10_000)} under [approvals] in kiln.toml`,
      );
    }
    if (s.call) s.call.questions++;
    // A turn among the session's open questions; the call's clock stands still while it waits.
    const waitResume = s.pause?.();
    let release: () => void;
    try {
      release = await this.turn(s.sessionKey, s.signal);
    } catch {
      throw new PermissionError(`${what}: the call was cancelled before a human could be asked`);
    } finally {
      waitResume?.();
    }
    try {
      if (remembered()) { // answered "for this session" (or "always") while this one waited: not asked
        if (s.call) s.call.questions--;
        return;
      }
      await this.ask(asked.text, request, s, decided, what, key, target, record, exact);
    } finally {
      release();
    }
  }

  /** A turn to ask in `session`: resolves (with the function that ends it) when fewer than
   *  maxOpenQuestionsPerSession of its questions are open; rejects when `signal` aborts first. */
  private turn(session: object, signal: AbortSignal): Promise<() => void> {
    let q = this.open.get(session);
    if (!q) this.open.set(session, (q = { open: 0, waiting: [] }));
    const queue = q;
    let done = false;
    const release = () => {
      if (done) return;
      done = true;
      const next = queue.waiting.shift();
      if (next) next(); // the turn passes on: `open` stays
      else queue.open--;
    };
    if (queue.open < this.settings.maxOpenQuestionsPerSession) {
      queue.open++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', onAbort);
        resolve(release);
      };
      const onAbort = () => {
        const i = queue.waiting.indexOf(go);
        if (i >= 0) queue.waiting.splice(i, 1);
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      queue.waiting.push(go);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Put the question to the human and act on the answer (remember it, or throw the refusal). */
  private async ask(
    text: string, request: ApprovalRequest, s: ApprovalSubject, decided: { rule: string }, what: string, key: string, target: string,
    record: (fields: Record<string, unknown>) => void, exact: string,
  ): Promise<void> {
    const ask = s.via!.ask!;
    if (s.signal.aborted) throw new PermissionError(`${what}: the call was cancelled before a human could be asked`);
    const offered = this.offered(s);
    const form = approvalForm(text, s, decided.rule, offered);

    // The wait: bounded by [approvals] timeoutMs, ended by the call's cancellation; the call's clock stops.
    const wait = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      wait.abort(new Error('no answer'));
    }, this.settings.timeoutMs);
    const onCancel = () => wait.abort(s.signal.reason);
    s.signal.addEventListener('abort', onCancel, { once: true });
    const resume = s.pause?.();
    const rounds = s.via?.rounds ? { round: true } : {};
    record({ event: 'asked', rule: decided.rule, ...rounds });
    const started = performance.now();
    let answer: ElicitAnswer | undefined;
    let failure: unknown;
    try {
      answer = await ask(form, wait.signal, exact);
    } catch (e) {
      failure = e;
    } finally {
      clearTimeout(timer);
      s.signal.removeEventListener('abort', onCancel);
      resume?.();
    }
    const durationMs = Math.round(performance.now() - started);
    const kind = answer?.action === 'accept' ? acceptedKind(answer.content, offered) : undefined;
    const answered = kind ?? (answer ? (answer.action === 'accept' ? 'invalid' : answer.action) : s.signal.aborted ? 'cancelled' : timedOut ? 'timeout' : 'error');
    record({ event: 'answered', answer: answered, durationMs, ...rounds });
    if (s.signal.aborted) throw new PermissionError(`${what}: the call was cancelled while a human was asked`);
    if (!kind) {
      const why = answered === 'timeout' ? `no answer came within ${this.settings.timeoutMs} ms ([approvals] timeoutMs)`
        : answered === 'error' ? `the client could not be asked (${String((failure as Error)?.message ?? failure).slice(0, 300)})`
        : refusalText(answered as 'decline' | 'cancel' | 'invalid');
      throw new PermissionError(`${what}: ${why}`);
    }
    this.remember(kind, key, request, s, target);
  }

  /** The answers a question offers: "for this session" where the session outlives the call, "always" when the
   *  operator keeps a store. */
  private offered(s: ApprovalSubject): AnswerKind[] {
    return ['once', ...(s.via?.sessionOutlivesCall === false ? [] : ['session' as const]), ...(this.store ? ['always' as const] : [])];
  }

  /** Keep what an accepted answer covers beyond this operation: the session's answers, the operator's store. */
  private remember(kind: AnswerKind, key: string, request: ApprovalRequest, s: ApprovalSubject, target: string): void {
    if (kind === 'session' || kind === 'always') {
      let set = this.sessions.get(s.sessionKey);
      if (!set) this.sessions.set(s.sessionKey, (set = new Set()));
      set.add(key);
    }
    if (kind === 'always') {
      this.store!.add({ key: storeKey(key, s.principal), sha256: s.extension.sha256, extension: s.extension.file, tool: s.tool, op: request.op, target, ...(s.principal !== undefined ? { principal: s.principal } : {}) });
    }
  }
}

/** Why an answer that is not a clear yes refuses the operation. */
function refusalText(answer: 'decline' | 'cancel' | 'invalid'): string {
  return answer === 'decline' ? 'the human declined' : answer === 'cancel' ? 'the human dismissed the question' : 'the answer was not one of those offered';
}

/** The form a human is asked with, the same on every protocol revision: the question (policy/approvals/question.ts),
 *  kiln's own two lines (the extension and the rule), and the answers offered. */
function approvalForm(text: string, s: ApprovalSubject, rule: string, offered: AnswerKind[]): ElicitForm {
  const titles: Record<AnswerKind, string> = {
    once: 'Allow once',
    session: 'Allow for this session',
    always: `Always allow for this build of the extension (sha256 ${s.extension.sha256.slice(0, 12)}…)`,
  };
  const lines = [
    text,
    `Extension: ${escaped(s.extension.file)} (sha256 ${s.extension.sha256.slice(0, 12)}…)`,
    `Asked because of kiln's ${visible(rule)}. Decline to refuse it.`,
  ];
  return {
    mode: 'form',
    message: lines.join('\n'),
    requestedSchema: {
      type: 'object',
      properties: { allow: { type: 'string', title: 'Allow?', oneOf: offered.map((k) => ({ const: k, title: titles[k] })), default: 'once' } },
      required: ['allow'],
    },
  };
}

/** The answer kind an accepted form carries: its `allow` value when offered; "once" when the client sent no
 *  content (the least it can mean); undefined for anything else. */
function acceptedKind(content: Record<string, unknown> | undefined, offered: AnswerKind[]): AnswerKind | undefined {
  if (content === undefined || content.allow === undefined) return 'once';
  return offered.includes(content.allow as AnswerKind) ? (content.allow as AnswerKind) : undefined;
}
