// Calling a tool in a session: its arguments checked, its secrets' grants checked, its guest run under the
// call's deadline and CPU budget, its ops performed with the authority of the tool that runs (never of its
// caller), each decision audited, and the guest's failure mapped to the error the client gets.
//
// The catalogue (extensions/registry.ts) says which tools exist and holds the operator's settings in force;
// this module runs them, reading the registry's settings at each check, so a changed config applies to what
// runs (mcp/config-watch.ts). The deadline is the call's own clock: it stands still while a human is asked
// for an approval (CallState.pause), for the call and for its plugins[...] callers. A cancelled call's guest
// is told (ctx.signal) and stopped CANCEL_GRACE_MS later if it has not finished; a call's promise settles only
// once its guest is idle or discarded, so a session never starts another call on a guest still winding down.
import { createHash } from 'node:crypto';
import { operation } from '../capabilities/operations.js';
import { performOp } from '../capabilities/index.js';
import type { WriteCount } from '../capabilities/fs/settings.js';
import { CANCEL_GRACE_MS, type CancelHook } from '../engine/instance.js';
import type { GuestHandle } from '../engine/remote.js';
import { CancelledError, cancelledMessage, CpuLimitError, GuestCrashError, InvalidArgumentsError, InvalidResultError, KilnError, MemoryLimitError, PermissionError, TimeoutError, ToolError } from '../errors.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import type { ToolManifest } from '../extensions/manifest.js';
import type { Registry } from '../extensions/registry.js';
import type { AskVia, CallQuestions } from '../policy/approvals/gate.js';
import { auditTarget } from '../policy/audit-log.js';
import { decidedBy, grantedSecrets, NotGrantedError } from '../policy/grants.js';
import { callTimeout, cpuBudget, guestMemory, type CallerLimits } from '../policy/limits.js';
import { MAX_JSON_DEPTH, valueNestsDeeper } from '../untrusted/json-depth.js';
import type { Session } from './session.js';

/** The longest time limit a call can have: what a Node timer can wait. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** The manifest of the tool an invocation runs: the policy follows the running handler, never its caller. */
function ownManifest(ext: LoadedExtension, tool: string): ToolManifest {
  const m = ext.artifact.manifest.tools.find((t) => t.name === tool);
  if (!m) throw new PermissionError(`tool "${tool}" is not in the manifest of ${ext.file}`);
  return m;
}

/** What a call knows about itself while it runs, for the ops its invocation starts (found through the
 *  CancelHook it passed to invoke: OpExtras.call). */
export interface CallState {
  /** How a human can be asked for approvals in this call (its MCP request), or why nobody can. */
  via?: AskVia;
  /** Stop this call's clock, and its callers' (a plugins[...] caller waits on it): the returned function
   *  starts them again, moving their deadlines later by the time spent stopped. */
  pause(): () => void;
  /** What the call has spent, shared with the tools it calls through plugins[...]: questions put to a human
   *  ([approvals] maxQuestionsPerCall) and bytes written ([fs] maxWriteBytesPerCall). */
  spent: CallQuestions & { written: WriteCount };
  /** Whether this call, or a caller it is part of, has been cancelled: its operations start nothing then. */
  stopped(): boolean;
  /** Whoever made the call at the top (policy/limits.ts): its limits hold for every callee. */
  caller?: CallerLimits;
}

/** The operation exactly as the guest asked for it (its kind, its request, the bytes it carries), as a digest:
 *  what an approval given for it covers (policy/approvals/gate.ts questionKey). */
function operationDigest(kind: string, request: unknown, body: Uint8Array | undefined): string {
  const h = createHash('sha256').update(kind).update('\u0000').update(JSON.stringify(request) ?? 'null').update('\u0000');
  if (body) h.update(body);
  return h.digest('hex');
}

/** The calls running, by the hook they passed to their guest (see CallState). Keyed by objects that live as
 *  long as the call (the hook) and the session, so an entry never outlives what it describes. */
const calls = new WeakMap<CancelHook, CallState>();
/** Bytes each session has written ([fs] maxWriteBytesPerSession). */
const sessionWrites = new WeakMap<Session, WriteCount>();

const cancelled = (name: string) =>
  new CancelledError(`${name === 'run_script' ? 'the script' : `tool "${name}"`} was cancelled; its work was aborted`);

/** Run tool `name` in `session`: arguments validated first, the tool's timeout enforced for every caller.
 *  `via`: how to ask a human for approvals (the MCP request's client), or a CallState of the caller (a
 *  plugins[...] call), whose way to ask and clock the callee shares. */
export async function callTool(registry: Registry, session: Session, name: string, args: unknown, signal?: AbortSignal, onProgress?: (update: string) => void, via?: AskVia | CallState, caller?: CallerLimits): Promise<unknown> {
  const entry = registry.tools.get(name);
  if (!entry) throw new KilnError(registry.contestedMessage(name) ?? `no tool named "${name}" is loaded`);
  const given = args ?? {}; // validated, with the schema's defaults filled in: the handler gets this object
  if (valueNestsDeeper(given)) throw new InvalidArgumentsError(`arguments for "${name}" nest more than ${MAX_JSON_DEPTH} levels deep; arguments may nest at most ${MAX_JSON_DEPTH}`);
  const mismatch = await entry.validate?.(given);
  if (mismatch) throw new InvalidArgumentsError(`arguments for "${name}" do not match its inputSchema: ${mismatch}`);
  const subject = registry.audit && { session: session.name, extension: entry.extension.file, sha256: entry.extension.artifact.sha256, tool: name };
  if (subject) registry.audit!.write({ ...subject, type: 'call', phase: 'start' });
  const started = performance.now();
  try {
    // A secret it declares that is not granted to its extension, or cannot be used: refused before it runs.
    grantedSecrets(registry.policy.grants, entry.extension.toolIdentity?.(name) ?? { file: entry.extension.file, sha256: entry.extension.artifact.sha256 }, entry.manifest);
    registry.secrets.check(entry.manifest);
    const result = await runInSession(registry, session, entry.extension, name, entry.manifest.timeoutMs, (instance, limit, hook, cpuMs) => instance.invoke(name, given, limit, onProgress, hook, cpuMs), signal, via, caller)
      .finally(() => session.pagesStopped(entry.extension)); // its pages' scripts stopped before it is answered
    const wrong = entry.checkResult && (await (await entry.checkResult())?.(result));
    if (wrong) throw new InvalidResultError(`tool "${name}" returned a result that does not match its outputSchema: ${wrong}`);
    if (subject) registry.audit!.write({ ...subject, type: 'call', phase: 'end', durationMs: Math.round(performance.now() - started), outcome: 'ok' });
    return result;
  } catch (e) {
    if (subject) registry.audit!.write({ ...subject, type: 'call', phase: 'end', durationMs: Math.round(performance.now() - started), outcome: 'error', error: (e as Error)?.name ?? 'Error' });
    throw e;
  }
}

/** `op`, with its decision in the audit log when there is one: denied when it fails with a PermissionError
 *  (a capability check refused it), allowed otherwise. */
async function audited(registry: Registry, session: Session, ext: LoadedExtension, tool: string, kind: string, request: unknown, call: object | undefined, op: () => Promise<unknown>): Promise<unknown> {
  if (!registry.audit || operation(kind)?.audit === null) return op(); // capabilities/operations.ts: not audited
  const started = performance.now();
  const record = (verdict: 'allow' | 'deny', by: string, reason?: string) => registry.audit!.decision(call, {
    session: session.name, extension: ext.file, sha256: ext.artifact.sha256, tool, type: 'decision', op: kind,
    target: auditTarget(kind, request), verdict, by, ...(reason ? { reason: reason.slice(0, 500) } : {}), durationMs: Math.round(performance.now() - started),
  });
  try {
    const value = await op();
    record('allow', decidedBy(registry.policy.grants, { file: ext.file, sha256: ext.artifact.sha256 }, kind));
    return value;
  } catch (e) {
    if (e instanceof NotGrantedError) record('deny', decidedBy(registry.policy.grants, { file: ext.file, sha256: ext.artifact.sha256 }, kind, true), e.message);
    else if (e instanceof PermissionError) record('deny', 'manifest or operator setting', e.message);
    else record('allow', decidedBy(registry.policy.grants, { file: ext.file, sha256: ext.artifact.sha256 }, kind));
    throw e;
  }
}

/**
 * Run something in `ext`'s guest in `session` under a deadline: `timeoutMs`, or the server's default.
 * Code still running at the deadline is interrupted (see engine/instance.ts); a wait that outlasts it is
 * caught by a timer. Either way the guest is discarded and the call fails with a TimeoutError. When `signal`
 * aborts (the client cancelled the call, or went away), the call's commands are killed and its requests
 * aborted, the guest sees an AbortError (ctx.signal, and what it awaits), and the call fails with a
 * CancelledError. A guest that has not finished CANCEL_GRACE_MS later (it ignores the signal, or spins) is
 * stopped and discarded. The returned promise settles only then, so the guest's queue (sessions/sessions.ts) never
 * starts another call on a guest still winding down; the MCP layer answers the client at once.
 */
export async function runInSession(
  registry: Registry, session: Session, ext: LoadedExtension, name: string, timeoutMs: number | undefined,
  start: (instance: GuestHandle, limit: number, hook: CancelHook, cpuMs?: number) => Promise<unknown>, signal?: AbortSignal, via?: AskVia | CallState,
  caller?: CallerLimits,
): Promise<unknown> {
  if (signal?.aborted) throw cancelled(name);
  const instance = await session.instanceFor(ext, (inv, kind, request, extras) => {
    // A cancelled call starts nothing more, its plugins[...] callees included, even before their guests (on
    // another thread) hear of it.
    if (extras.call && calls.get(extras.call)?.stopped()) return Promise.reject(new CancelledError(`${kind} refused: the call it belongs to was cancelled`));
    return audited(registry, session, ext, inv.tool, kind, request, extras.call, () => {
      const call = extras.call && calls.get(extras.call);
      let sessionWritten = sessionWrites.get(session);
      if (!sessionWritten) sessionWrites.set(session, (sessionWritten = { bytes: 0 }));
      // An op outside any call (none should reach here) spends from a budget of its own that allows nothing more
      // than one call would.
      const spent = call?.spent ?? { questions: 0, written: { bytes: 0 } };
      const policy = registry.policy;
      return performOp(kind, inv, request, extras, {
        tool: ownManifest(ext, inv.tool),
        extension: ext.toolIdentity?.(inv.tool) ?? { file: ext.file, sha256: ext.artifact.sha256 },
        owner: ext.file,
        // Read when a check asks, not when the op starts: a config changed while the op waited (for a human's
        // approval, say) is what the check after the wait sees.
        get ceiling() { return policy.commands; },
        get grants() { return policy.grants; },
        processes: session.processes,
        http: session.httpFor(ext),
        fsTurns: session.fsTurnsFor(ext),
        secrets: registry.secrets,
        browser: session.browserFor(ext),
        // Each request a page makes is a decision of its own (capabilities/browser/gate.ts), logged like fetch's.
        recordPage: registry.audit && ((d) => registry.audit!.write({
          session: session.name, extension: ext.file, sha256: ext.artifact.sha256, tool: inv.tool, type: 'decision', op: 'browser.request',
          target: auditTarget('browser.request', d), verdict: d.verdict,
          by: d.by === 'grant' ? decidedBy(registry.policy.grants, ext.toolIdentity?.(inv.tool) ?? { file: ext.file, sha256: ext.artifact.sha256 }, 'browser.call', d.verdict === 'deny') : 'manifest or operator setting',
          ...(d.reason ? { reason: d.reason.slice(0, 500) } : {}), durationMs: 0,
        })),
        // A page is bounded like its guest: the guest's memory limit, the call's CPU budget (policy/limits.ts).
        pageLimits: () => ({ memory: guestMemory(registry.policy, ext.toolIdentity?.(inv.tool) ?? { file: ext.file, sha256: ext.artifact.sha256 }, ext.artifact.manifest.tools), cpu: cpuBudget(registry.policy, ownManifest(ext, inv.tool)) }),
        // The callee is part of its caller's call: cancelled with it, or when the caller's call ends; it asks
        // for approvals through its caller's client, and stops its caller's clock while it does.
        // A script is its caller's own code: it calls only the tools its caller may (a principal's tools list).
        callTool: (callee, calleeArgs, signal) => {
          const top = call ? call.caller : undefined;
          if (ext.hostKind === 'script' && top?.mayCall && !top.mayCall(callee)) {
            return Promise.reject(new PermissionError(`plugins["${callee}"]: the script's caller may not call it (${top.mayCallSetting ?? top.setting} does not list it)`));
          }
          return callTool(registry, session, callee, calleeArgs, signal, undefined, call, top);
        },
        extensionOf: (callee) => {
          const e = registry.tools.get(callee);
          return e && { file: e.extension.file, sha256: e.extension.artifact.sha256 };
        },
        approve: (request, forced) => registry.approvals.approve(request, {
          session: session.name, sessionKey: session, extension: ext.toolIdentity?.(inv.tool) ?? { file: ext.file, sha256: ext.artifact.sha256 }, tool: inv.tool,
          signal: extras.signal, via: call?.via, pause: call && (() => call.pause()), call: spent, operation: operationDigest(kind, request, extras.body),
          ...(call && call.caller?.principal !== undefined ? { principal: call.caller.principal } : {}),
        }, forced),
        judgesPaths: !registry.approvals.off,
        written: { call: spent.written, session: sessionWritten },
        fs: registry.policy.fs,
        protectedFiles: () => registry.protectedFiles(), // made only when a file operation asks
        buildInputs: () => registry.buildInputs(),
        guestWrote: (paths) => {
          const by = { extension: ext.toolIdentity?.(inv.tool)?.file ?? ext.file, tool: inv.tool };
          for (const p of paths) registry.guestWrites.record(p, by);
        },
      });
    });
  });
  if (signal?.aborted) throw cancelled(name); // cancelled while its guest was being made: it never starts
  // setTimeout takes at most 2^31-1 ms (24.8 days); a larger value would fire at once and fail every call.
  const { ms: limit, setting } = callTimeout(registry.policy, timeoutMs, caller, MAX_TIMEOUT_MS);
  const what = name === 'run_script' ? 'the script' : `tool "${name}"`;
  const timedOut = () => new TimeoutError(`${what} did not finish within ${setting} (${limit} ms); the session's guest was reset`);
  const hook: CancelHook = {};
  // The call's clock: `due` moves later by the time the call spends paused (waiting for a human's approval),
  // and its guest's deadline with it (hook.extend); a caller through plugins[...] is paused along with it.
  const parent = via && 'pause' in via ? via : undefined;
  let due = performance.now() + limit;
  let pauses = 0;
  let pausedSince = 0;
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  let fire: () => void = () => {};
  const arm = () => {
    clearTimeout(timer);
    if (!ended && pauses === 0) timer = setTimeout(() => (performance.now() >= due - 1 ? fire() : arm()), Math.max(0, due - performance.now()));
  };
  calls.set(hook, {
    via: parent ? parent.via : (via as AskVia | undefined),
    spent: parent ? parent.spent : { questions: 0, written: { bytes: 0 } },
    stopped: () => signal?.aborted === true || parent?.stopped() === true,
    caller: parent ? parent.caller : caller,
    pause: () => {
      const resumeParent = parent?.pause();
      if (pauses++ === 0) {
        pausedSince = performance.now();
        clearTimeout(timer);
      }
      let resumed = false;
      return () => {
        if (resumed) return;
        resumed = true;
        const now = performance.now();
        const credit = now - pausedSince; // time stopped since the last resume: overlapping pauses count once
        pausedSince = now;
        due += credit;
        hook.extend?.(credit);
        if (--pauses === 0) arm();
        resumeParent?.();
      };
    },
  });
  // CPU time (policy/limits.ts): the lower of the tool's cpuMs and [limits] cpuMs; counted by the guest's instance.
  const cpu = cpuBudget(registry.policy, ext.artifact.manifest.tools.find((t) => t.name === name), caller);
  // With a shared store, the guest sees its session's vars as they are now, wherever they were last written.
  const mapped = session.withVars(ext, () => start(instance, limit, hook, cpu?.ms)).catch(async (e) => {
    // The guest is gone (stopped at its deadline or CPU budget, out of memory, crashed): nobody can read its
    // open response bodies any more, and they hold connections and slots. Cookies and vars stay.
    if (e instanceof TimeoutError || e instanceof CpuLimitError || e instanceof MemoryLimitError || e instanceof GuestCrashError) session.httpFor(ext).releaseBodies();
    if (e instanceof TimeoutError) throw timedOut(); // stopped mid-run by the interrupt
    if (e instanceof CpuLimitError) {
      throw new CpuLimitError(`${what} used more than ${cpu?.ms} ms of CPU time (${cpu?.setting ?? 'cpuMs'}); it was stopped and the session's guest was reset`);
    }
    if (e instanceof MemoryLimitError) {
      const m = guestMemory(registry.policy, { file: ext.file, sha256: ext.artifact.sha256 }, ext.artifact.manifest.tools);
      throw new MemoryLimitError(`${e.message} (the limit: ${m.bytes} bytes, ${m.setting})`);
    }
    const m = e instanceof ToolError ? await ext.artifact.mapper() : undefined;
    if (m) throw new ToolError(m.rewrite(e.message), m.rewrite(e.detail));
    throw e;
  });
  // A handler waiting on a promise that never settles is not running code: the clock catches it.
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<never>((_, reject) => {
    fire = () => {
      ended = true;
      session.discard(ext, `${what} exceeded its time limit`); // releases its bodies too
      void session.unstick();
      reject(timedOut());
    };
    arm();
    onAbort = () => {
      ended = true;
      clearTimeout(timer);
      hook.cancel?.(cancelledMessage(what, signal!.reason));
      const grace = setTimeout(() => {
        session.discard(ext, `${what} was cancelled and did not stop`); // stops it mid-run
        reject(cancelled(name));
      }, CANCEL_GRACE_MS);
      const wound = () => {
        clearTimeout(grace);
        reject(cancelled(name));
      };
      mapped.then(wound, wound);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    const value = await Promise.race([mapped, timeout]);
    if (signal?.aborted) throw cancelled(name); // it finished after the cancel: the caller no longer wants it
    return value;
  } catch (e) {
    throw signal?.aborted ? cancelled(name) : e;
  } finally {
    ended = true;
    clearTimeout(timer);
    calls.delete(hook);
    registry.audit?.endCall(hook); // what its decisions counted, not written (policy/audit-log.ts)
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}
