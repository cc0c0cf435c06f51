// `kiln mcp`: the loaded tools as an MCP server over stdio. stdout carries only the protocol; everything
// else (guest logs, load failures) goes to stderr. The server exits when stdin closes or on SIGTERM/SIGINT.
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { KilnError, ToolError } from '../errors.js';
import type { Registry } from '../registry.js';
import { ScriptRunner } from '../scripts.js';
import { Sessions } from '../sessions.js';
import { AUDIT_TOOL, auditReport } from './audit.js';

export const CLOSE_SESSION_TOOL = {
  name: 'kiln_close_session',
  description: 'End a session now: its guests, vars, persistent processes and cookies. Default: the session of this call.',
  inputSchema: {
    type: 'object' as const,
    properties: { session: { type: 'string', description: 'the session to close' } },
    additionalProperties: false,
  },
};

type ToolResult = { content: { type: 'text'; text: string }[]; isError?: boolean };

const ok = (value: unknown): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value ?? null) }] });

export function errorResult(e: unknown): ToolResult {
  const text = e instanceof ToolError
    ? (e.detail.startsWith(e.message) ? e.detail : `${e.message}\n\n${e.detail}`)
    : e instanceof KilnError ? `${e.name}: ${e.message}` : `internal error: ${(e as Error)?.message ?? e}`;
  return { isError: true, content: [{ type: 'text', text: text.trimEnd() }] };
}

export const RUN_SCRIPT_TOOL = {
  name: 'run_script',
  description: "Run JavaScript or TypeScript in a session's sandbox. The value of its last expression (awaited) is the result; it can call any loaded tool as plugins[name](args) and use vars. Always returns {status, result, logs, error}.",
  inputSchema: {
    type: 'object' as const,
    properties: {
      code: { type: 'string', description: 'the script' },
      session: { type: 'string', description: 'the session to run in (default "default")' },
      timeoutMs: { type: 'integer', minimum: 1, description: "time limit (default: the server's)" },
    },
    required: ['code'],
    additionalProperties: false,
  },
};

export class McpHost {
  readonly sessions: Sessions;
  private readonly scripts: ScriptRunner;
  constructor(readonly registry: Registry, private readonly log: (line: string) => void) {
    this.sessions = new Sessions(
      registry.engine, 'mcp',
      (session, ext, level, message) => this.log(`[${session} ${ext.artifact.manifest.source.name} ${level}] ${message}`),
      registry.policy, registry.policy.sessions,
    );
    this.scripts = new ScriptRunner(registry);
  }

  listTools(): { name: string; description?: string; inputSchema: { type: 'object'; [k: string]: unknown } }[] {
    const tools = [...this.registry.tools.values()]
      .filter((t) => t.manifest.exposeAsTool)
      .map((t) => ({
        name: t.manifest.name,
        description: t.manifest.description,
        inputSchema: (t.manifest.inputSchema ?? { type: 'object' }) as { type: 'object' },
      }));
    return [AUDIT_TOOL, CLOSE_SESSION_TOOL, RUN_SCRIPT_TOOL, ...tools];
  }

  async callTool(name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined): Promise<ToolResult> {
    try {
      const sessionName = typeof meta?.session === 'string' ? meta.session : 'default';
      if (name === AUDIT_TOOL.name) return ok(auditReport(this.registry, args?.include_schema === true));
      if (name === RUN_SCRIPT_TOOL.name) {
        // Always a protocol-level success: the script's own outcome is in `status`.
        const a = args ?? {};
        const bad = typeof a.code !== 'string' ? 'code must be a string'
          : a.session !== undefined && typeof a.session !== 'string' ? 'session must be a string'
          : a.timeoutMs !== undefined && !(Number.isInteger(a.timeoutMs) && (a.timeoutMs as number) > 0) ? 'timeoutMs must be a positive integer' : undefined;
        if (bad) return ok({ status: 'error', result: null, logs: [], error: { name: 'InvalidArgumentsError', message: bad, stack: '' } });
        const target = (a.session as string | undefined) ?? sessionName;
        return ok(await this.sessions.run(target, (s) => this.scripts.run(s, a.code as string, { timeoutMs: a.timeoutMs as number | undefined })));
      }
      if (name === CLOSE_SESSION_TOOL.name) {
        const target = typeof args?.session === 'string' ? args.session : sessionName;
        return ok({ session: target, closed: this.sessions.close(target) });
      }
      const entry = this.registry.tools.get(name);
      if (!entry || !entry.manifest.exposeAsTool) return errorResult(new KilnError(`no tool named "${name}" is exposed by this server`));
      return ok(await this.sessions.run(sessionName, (session) => this.registry.call(session, name, args ?? {})));
    } catch (e) {
      return errorResult(e);
    }
  }

  close(): void {
    this.sessions.closeAll();
  }
}

export async function serveStdio(registry: Registry, version: string): Promise<void> {
  const log = (line: string) => process.stderr.write(line.endsWith('\n') ? line : line + '\n');
  const host = new McpHost(registry, log);
  const server = new Server({ name: 'kiln', version }, { capabilities: { tools: {} } });
  server.setRequestHandler('tools/list', async () => ({ tools: host.listTools() }));
  server.setRequestHandler('tools/call', async (req) =>
    host.callTool(req.params.name, req.params.arguments as Record<string, unknown> | undefined, req.params._meta as Record<string, unknown> | undefined),
  );
  let closing = false;
  const shutdown = (code: number) => {
    if (closing) return;
    closing = true;
    host.close();
    process.exit(code);
  };
  process.stdin.on('end', () => shutdown(0));
  process.stdin.on('close', () => shutdown(0));
  process.on('SIGTERM', () => shutdown(0));
  process.on('SIGINT', () => shutdown(0));
  process.on('exit', () => host.close()); // last resort: no process group outlives the server
  await server.connect(new StdioServerTransport());
}
