// Routing a guest's capability call to the one place that checks and performs it.
import { KilnError } from '../errors.js';
import type { Invocation, OpExtras, OpKind } from '../engine/instance.js';
import type { ToolManifest } from '../manifest.js';
import type { ExtensionIdentity } from '../extension-identity.js';
import type { BrowserRequest, SessionBrowser } from './browser.js';
import { commandGrant, substitute, type CommandCeiling } from './commands.js';
import { DEFAULT_FS, performFs, type FsSettings } from './fs.js';
import { checkToolCall } from './tools.js';
import type { HttpSession } from './http.js';
import { loadProcessSupport, runOnce, type ProcessTable } from './processes.js';

export class UnavailableError extends KilnError {
  override name = 'UnavailableError';
}

export interface CapabilityContext {
  /** The manifest of the tool whose handler made the call. */
  tool: ToolManifest;
  /** The extension as the operator's policy names it: the file kiln loaded and its artifact's sha256. */
  extension: ExtensionIdentity;
  /** The extension's file: owner of its persistent processes. */
  owner: string;
  ceiling: CommandCeiling;
  processes: ProcessTable;
  http: HttpSession;
  /** The extension's browser context in this session (allow.browser); none for scripts. */
  browser?: SessionBrowser;
  /** Call another loaded tool in the same session (plugins[name](args)); it runs with its own manifest. */
  callTool(name: string, args: unknown, signal: AbortSignal): Promise<unknown>;
  /** The file a loaded tool belongs to (for allow.tools), undefined when none is loaded by that name. */
  fileOf(name: string): string | undefined;
  /** [fs]: the workspace root and caps (allow.fs); absent: the defaults. */
  fs?: FsSettings;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

export async function performOp(kind: OpKind, inv: Invocation, request: unknown, extras: OpExtras, ctx: CapabilityContext): Promise<unknown> {
  const req = isObject(request) ? request : {};
  switch (kind) {
    case 'commands.run': {
      const spec = commandGrant(ctx.tool.name, ctx.tool.allow, 'run', req.name, ctx.extension, ctx.ceiling);
      return runOnce(req.name as string, spec, substitute(spec, req.vars ?? {}), ctx.processes, extras.signal);
    }
    case 'commands.start': {
      const spec = commandGrant(ctx.tool.name, ctx.tool.allow, 'start', req.name, ctx.extension, ctx.ceiling);
      await loadProcessSupport();
      return ctx.processes.start(ctx.owner, req.name as string, spec, substitute(spec, {}));
    }
    case 'commands.status': {
      const spec = commandGrant(ctx.tool.name, ctx.tool.allow, 'status', req.name, ctx.extension, ctx.ceiling);
      return ctx.processes.status(ctx.owner, req.name as string, spec);
    }
    case 'commands.stop': {
      const spec = commandGrant(ctx.tool.name, ctx.tool.allow, 'stop', req.name, ctx.extension, ctx.ceiling);
      return ctx.processes.stop(ctx.owner, req.name as string, spec);
    }
    case 'http.fetch':
      return ctx.http.fetch(ctx.tool.name, ctx.tool.allow.net, ctx.owner, request, extras.body ?? new Uint8Array(), extras.signal);
    case 'http.read':
      return ctx.http.read(ctx.owner, Number(req.body), extras.signal);
    case 'browser.call':
      if (!ctx.browser) throw new UnavailableError('page/context: there is no browser here');
      return ctx.browser.call(ctx.tool.name, ctx.tool.allow.browser, req as unknown as BrowserRequest, extras.signal, inv.id);
    case 'plugins.call':
      if (typeof req.tool !== 'string') throw new KilnError('plugins[name] needs a tool name');
      checkToolCall(ctx.tool, ctx.extension.file, req.tool, ctx.fileOf(req.tool));
      return ctx.callTool(req.tool, req.args ?? null, extras.signal);
    case 'fs.readFile': case 'fs.writeFile': case 'fs.appendFile': case 'fs.readdir':
    case 'fs.stat': case 'fs.mkdir': case 'fs.rm': case 'fs.rename':
      // The running tool's own allow.fs, checked and resolved on this side (capabilities/fs.ts); a (session,
      // extension)'s HTTP state object stands for it in the count of operations in flight.
      return performFs(kind, req, extras.body, { tool: ctx.tool.name, allow: ctx.tool.allow.fs, settings: ctx.fs ?? DEFAULT_FS, slot: ctx.http, signal: extras.signal });
  }
}
