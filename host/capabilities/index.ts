// Routing a guest's capability call to the one place that checks and performs it: the operation's `allow` key in
// capabilities/operations.ts picks its capability's performer below (one per allow.* key, each taking exactly
// its own operations), so a new operation is a row there and a case in its performer, checked by the compiler.
import { KilnError, UnavailableError } from '../errors.js';
import type { Invocation, OpExtras } from '../engine/instance.js';
import { OPERATIONS, type OpAllowKey, type OpKind, type OpsOf } from './operations.js';
import type { ToolManifest } from '../extensions/manifest.js';
import type { ExtensionIdentity } from '../policy/extension-identity.js';
import type { ApprovalRequest } from '../policy/approvals/request.js';
import type { PageLimits } from './browser/bounds.js';
import type { SessionBrowser } from './browser/context.js';
import type { BrowserRequest } from './browser/page.js';
import type { PageDecision } from './browser/gate.js';
import { commandGrant, substitute, type CommandCeiling, type CommandVerb } from './commands/commands.js';
import type { CommandSpec } from '../extensions/manifest.js';
import { listBelow, performFs, type FsRuntime } from './fs/operations.js';
import { decideFs } from './fs/policy.js';
import { DEFAULT_FS, type FsSettings, type WriteCount } from './fs/settings.js';
import type { FsTurns } from './fs/turns.js';
import { resolve } from 'node:path';
import { checkToolCall } from './tools/tools.js';
import { askFor, grantCheck, grantedSecrets, keyFor, NotGrantedError, type GrantAsker, type Grants } from '../policy/grants.js';
import type { HttpSession } from './net/http.js';
import type { SecretStore } from './secrets/secrets.js';
import { loadProcessSupport, runOnce, type ProcessTable } from './commands/processes.js';

export { UnavailableError };

export interface CapabilityContext {
  /** The manifest of the tool whose handler made the call. */
  tool: ToolManifest;
  /** The extension as the operator's policy names it: the file kiln loaded and its artifact's sha256. */
  extension: ExtensionIdentity;
  /** The extension's file: owner of its persistent processes. */
  owner: string;
  ceiling: CommandCeiling;
  /** The operator's grants ([policy] mode, [grants]), read at the call: a changed config applies at once. */
  grants: Grants;
  processes: ProcessTable;
  http: HttpSession;
  /** The (session, extension)'s turns of file operations (capabilities/fs/turns.ts): fs's own concurrency slot. */
  fsTurns: FsTurns;
  /** The operator's secrets: a request carries those its tool declares and its extension is granted, to their
   *  hosts only (secrets.ts, policy/grants.ts grantedSecrets). */
  secrets?: SecretStore;
  /** The extension's browser context in this session (allow.browser); none for scripts. */
  browser?: SessionBrowser;
  /** The audit log's line for one decision on a request a page made (browser/gate.ts); absent: no audit log. */
  recordPage?(d: PageDecision): void;
  /** The bounds of this call's pages (browser/bounds.ts): the guest's memory limit and the call's CPU budget. */
  pageLimits?: () => PageLimits;
  /** Call another loaded tool in the same session (plugins[name](args)); it runs with its own manifest. */
  callTool(name: string, args: unknown, signal: AbortSignal): Promise<unknown>;
  /** The extension a served tool belongs to (for allow.tools and the grant's tools), undefined when none is
   *  served by that name. */
  extensionOf(name: string): ExtensionIdentity | undefined;
  /** [fs]: the workspace root and caps (allow.fs); absent: the defaults. */
  fs?: FsSettings;
  /** The operator's files no tool may read or write through allow.fs (capabilities/fs/policy.ts). */
  protectedFiles?: () => string[];
  /** The files loaded extensions' builds read (real paths) → the extension file: no tool may write them. */
  buildInputs?: () => ReadonlyMap<string, string>;
  /** Told the real paths an allowed fs operation is about to write, before it runs (build/guest-writes.ts). */
  guestWrote?: (paths: string[]) => void;
  /**
   * The operator's [approvals] verdict on one operation of this tool (policy/approvals/rules.ts), asking a human
   * when it is "require". Call it after the capability's own checks passed and before anything of the operation
   * happens: it resolves when the operation may go ahead, and rejects with a PermissionError naming the op
   * and its target when it may not (denied, declined, unanswered, or nobody to ask). While a human is asked,
   * the call's deadline stands still; a cancelled call ends the wait.
   */
  approve(request: ApprovalRequest, forced?: { rule: string; hint: string }): Promise<void>;
  /** Whether [approvals] judges anything (capabilities/fs/policy.ts lists what rm -r and rename take with them only then). */
  judgesPaths?: boolean;
  /** Bytes written by this call (with its plugins[...] callees) and by its session ([fs] maxWriteBytesPerCall,
   *  maxWriteBytesPerSession). */
  written?: { call: WriteCount; session: WriteCount };
}

/** [policy] mode "ask": a declared use the grant does not list goes to a human (policy/grants.ts askFor). */
const asker = (ctx: CapabilityContext): GrantAsker => (refusal, request) => ctx.approve(request, askFor(refusal));

/** A command's spec under the grants; in mode "ask", one the grant does not list is first put to a human, and
 *  `asked` says so: that question (judged with the [approvals] rules, policy/approvals/gate.ts) was the operation's
 *  one. Call the returned `recheck` right before spawning: the config may have changed while a human was asked. */
async function commandSpec(ctx: CapabilityContext, verb: CommandVerb, name: unknown, vars: unknown): Promise<{ spec: CommandSpec; asked: boolean; recheck(): void }> {
  const check = () => commandGrant(ctx.tool.name, ctx.tool.allow, verb, name, ctx.extension, ctx.ceiling, ctx.grants);
  try {
    return { spec: check(), asked: false, recheck: () => void check() };
  } catch (e) {
    if (!(e instanceof NotGrantedError) || !e.askable) throw e;
    const spec = commandGrant(ctx.tool.name, ctx.tool.allow, verb, name, ctx.extension, ctx.ceiling); // declared, allowed
    const proc = substitute(spec, vars ?? {});
    await ctx.approve({ op: 'command', command: name as string, argv: [proc.file, ...proc.args] }, askFor(e));
    // A human allowed it: it stands while the mode is still "ask" (a grant added meanwhile covers it too).
    return {
      spec,
      asked: true,
      recheck: () => {
        try {
          check();
        } catch (again) {
          if (!(again instanceof NotGrantedError) || !again.askable) throw again;
        }
      },
    };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Performs operations `kind` of one allow.* key: its checks (manifest, grants, approvals), then the operation. */
type Performer<A extends OpAllowKey> = (
  kind: OpsOf<A>, inv: Invocation, req: Record<string, unknown>, request: unknown, extras: OpExtras, ctx: CapabilityContext,
) => Promise<unknown>;

async function performCommands(kind: OpsOf<'commands'>, _inv: Invocation, req: Record<string, unknown>, _request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  switch (kind) {
    case 'commands.run': {
      const { spec, asked, recheck } = await commandSpec(ctx, 'run', req.name, req.vars);
      const proc = substitute(spec, req.vars ?? {});
      if (!asked) await ctx.approve({ op: 'command', command: req.name as string, argv: [proc.file, ...proc.args] });
      recheck(); // the operator's settings as they are now, after any wait for a human
      return runOnce(req.name as string, spec, proc, ctx.processes, extras.signal, { extension: ctx.extension, allow: ctx.tool.allow }, ctx.ceiling.maxProcesses);
    }
    case 'commands.start': {
      const { spec, asked, recheck } = await commandSpec(ctx, 'start', req.name, {});
      const proc = substitute(spec, {});
      await loadProcessSupport();
      // start is idempotent while the process runs: nothing new starts then, so nobody is asked.
      if (!asked && !ctx.processes.status(ctx.owner, req.name as string, spec).running) {
        await ctx.approve({ op: 'command', command: req.name as string, argv: [proc.file, ...proc.args] });
      }
      recheck();
      return ctx.processes.start(ctx.owner, req.name as string, spec, proc, { extension: ctx.extension, allow: ctx.tool.allow }, ctx.ceiling.maxProcesses);
    }
    case 'commands.status': {
      const { spec } = await commandSpec(ctx, 'status', req.name, {});
      return ctx.processes.status(ctx.owner, req.name as string, spec);
    }
    case 'commands.stop': {
      const { spec } = await commandSpec(ctx, 'stop', req.name, {});
      return ctx.processes.stop(ctx.owner, req.name as string, spec);
    }
  }
}

async function performNet(kind: OpsOf<'net'>, _inv: Invocation, req: Record<string, unknown>, request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  switch (kind) {
    case 'http.fetch':
      return ctx.http.fetch(ctx.tool.name, ctx.tool.allow.net, ctx.owner, request, extras.body ?? new Uint8Array(), extras.signal,
        grantCheck(ctx.grants, ctx.extension, ctx.tool.name, 'net', asker(ctx)), ctx.secrets?.headersFor(grantedSecrets(ctx.grants, ctx.extension, ctx.tool)),
        (url, method) => ctx.approve({ op: 'net', url: url.href, method }));
    case 'http.read':
      return ctx.http.read(ctx.owner, Number(req.body), extras.signal);
  }
}

async function performBrowser(_kind: OpsOf<'browser'>, inv: Invocation, req: Record<string, unknown>, _request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  if (!ctx.browser) throw new UnavailableError('page/context: there is no browser here');
  return ctx.browser.call(ctx.tool.name, ctx.tool.allow.browser, req as unknown as BrowserRequest, extras.signal, inv.id, {
    grant: grantCheck(ctx.grants, ctx.extension, ctx.tool.name, 'browser', asker(ctx)),
    approve: (url) => ctx.approve({ op: 'browser.navigate', url }),
    record: ctx.recordPage, limits: ctx.pageLimits?.(),
  });
}

async function performTools(_kind: OpsOf<'tools'>, _inv: Invocation, req: Record<string, unknown>, _request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  if (typeof req.tool !== 'string') throw new KilnError('plugins[name] needs a tool name');
  const callee = ctx.extensionOf(req.tool);
  checkToolCall(ctx.tool, ctx.extension.file, req.tool, callee, grantCheck(ctx.grants, ctx.extension, ctx.tool.name, 'tools'), callee && keyFor(ctx.grants, callee));
  return ctx.callTool(req.tool, req.args ?? null, extras.signal);
}

// One decision (capabilities/fs/policy.ts: the tool's own allow.fs, the operator's files, the grant, the
// approvals), then the performer on what it decided, in a turn of the (session, extension)'s own fs slot.
async function performFsOp(kind: OpsOf<'fs'>, _inv: Invocation, req: Record<string, unknown>, _request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  const settings = ctx.fs ?? DEFAULT_FS;
  const rt: FsRuntime = { settings, turns: ctx.fsTurns, signal: extras.signal, written: ctx.written };
  const op = await decideFs(kind, req, OPERATIONS[kind].input === 'json+bytes' ? extras.body?.length ?? 0 : undefined, {
    tool: ctx.tool.name, extension: ctx.extension, allow: ctx.tool.allow.fs, grants: ctx.grants, root: resolve(settings.root ?? process.cwd()),
    protectedFiles: ctx.protectedFiles?.() ?? [], buildInputs: ctx.buildInputs?.() ?? new Map(), approve: ctx.approve, judgesPaths: ctx.judgesPaths ?? false,
    listBelow: (path) => listBelow(path, rt), // under what the tool declares: the manifest's check passed
  });
  if (op.writes.length) ctx.guestWrote?.([...op.writes]); // recorded before the write: no rebuild can read it unrecorded
  return performFs(op, extras.body, rt);
}

/** The performer of each allow.* key: the compiler requires one for every key the table names. */
const PERFORMERS: { [A in OpAllowKey]: Performer<A> } = {
  commands: performCommands, net: performNet, browser: performBrowser, tools: performTools, fs: performFsOp,
};

export async function performOp(kind: OpKind, inv: Invocation, request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  const req = isObject(request) ? request : {};
  const perform = PERFORMERS[OPERATIONS[kind].allow] as Performer<OpAllowKey>;
  return perform(kind, inv, req, request, extras, ctx);
}
