// `kiln mcp`: the loaded tools as an MCP server over stdio. stdout carries only the protocol; everything
// else (guest logs, load failures) goes to stderr. The server exits when stdin closes or on SIGTERM/SIGINT.
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { KilnError, ToolError } from '../errors.js';
import type { Registry } from '../registry.js';
import { Session } from '../session.js';
import { AUDIT_TOOL, auditReport } from './audit.js';

const SESSION_NAME = /^[\w.:@-]{1,128}$/;

type ToolResult = { content: { type: 'text'; text: string }[]; isError?: boolean };

const ok = (value: unknown): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value ?? null) }] });

export function errorResult(e: unknown): ToolResult {
  const text = e instanceof ToolError
    ? (e.detail.startsWith(e.message) ? e.detail : `${e.message}\n\n${e.detail}`)
    : e instanceof KilnError ? `${e.name}: ${e.message}` : `internal error: ${(e as Error)?.message ?? e}`;
  return { isError: true, content: [{ type: 'text', text: text.trimEnd() }] };
}

export class McpHost {
  private readonly sessions = new Map<string, Session>();
  constructor(readonly registry: Registry, private readonly log: (line: string) => void) {}

  session(name: string): Session {
    if (!SESSION_NAME.test(name)) throw new KilnError(`session name ${JSON.stringify(name)} must be 1-128 characters of letters, digits and . _ : @ -`);
    let s = this.sessions.get(name);
    if (!s) {
      s = new Session(name, this.registry.engine, 'mcp', (ext, level, message) => this.log(`[${ext.artifact.manifest.source.name} ${level}] ${message}`), this.registry.policy);
      this.sessions.set(name, s);
    }
    return s;
  }

  listTools(): { name: string; description?: string; inputSchema: { type: 'object'; [k: string]: unknown } }[] {
    const tools = [...this.registry.tools.values()]
      .filter((t) => t.manifest.exposeAsTool)
      .map((t) => ({
        name: t.manifest.name,
        description: t.manifest.description,
        inputSchema: (t.manifest.inputSchema ?? { type: 'object' }) as { type: 'object' },
      }));
    return [AUDIT_TOOL, ...tools];
  }

  async callTool(name: string, args: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined): Promise<ToolResult> {
    try {
      if (name === AUDIT_TOOL.name) return ok(auditReport(this.registry, args?.include_schema === true));
      const entry = this.registry.tools.get(name);
      if (!entry || !entry.manifest.exposeAsTool) return errorResult(new KilnError(`no tool named "${name}" is exposed by this server`));
      const sessionName = typeof meta?.session === 'string' ? meta.session : 'default';
      return ok(await this.registry.call(this.session(sessionName), name, args ?? {}));
    } catch (e) {
      return errorResult(e);
    }
  }

  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
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
