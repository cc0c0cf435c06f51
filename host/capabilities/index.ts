// Routing a guest's capability call to the one place that checks and performs it.
import { KilnError } from '../errors.js';
import type { Invocation, OpKind } from '../engine/instance.js';
import type { ToolManifest } from '../manifest.js';
import { commandGrant, type CommandVerb } from './commands.js';

export class UnavailableError extends KilnError {
  override name = 'UnavailableError';
}

export interface CapabilityContext {
  tool: ToolManifest;
  /** Call another loaded tool in the same session (plugins[name](args)); it runs with its own manifest. */
  callTool(name: string, args: unknown): Promise<unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

export async function performOp(kind: OpKind, _inv: Invocation, request: unknown, ctx: CapabilityContext): Promise<unknown> {
  const req = isObject(request) ? request : {};
  switch (kind) {
    case 'commands.run':
    case 'commands.start':
    case 'commands.status':
    case 'commands.stop': {
      const verb = kind.slice('commands.'.length) as CommandVerb;
      commandGrant(ctx.tool.name, ctx.tool.allow, verb, req.name);
      throw new UnavailableError(`commands.${verb}: running processes is not available in this kiln version yet (the grant was checked; nothing ran)`);
    }
    case 'http.fetch':
      throw new UnavailableError('fetch/request: outbound HTTP is not available in this kiln version yet (nothing was sent)');
    case 'browser.call':
      throw new UnavailableError('page/context: no browser is configured for this server');
    case 'plugins.call':
      if (typeof req.tool !== 'string') throw new KilnError('plugins[name] needs a tool name');
      return ctx.callTool(req.tool, req.args ?? null);
  }
}
