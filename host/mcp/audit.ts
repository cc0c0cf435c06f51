// The built-in `kiln_extensions` tool: everything loaded, for security review before deploying a server.
import { authority } from '../policy/authority.js';
import type { Registry } from '../extensions/registry.js';

export const AUDIT_TOOL = {
  name: 'kiln_extensions',
  description: 'List every loaded extension file: its tools, exposure, timeouts, capabilities (declared, granted by the operator, effective), and artifact and engine hashes.',
  inputSchema: {
    type: 'object' as const,
    properties: { include_schema: { type: 'boolean', description: "include each tool's inputSchema" } },
    additionalProperties: false,
  },
};

/** The operator's [secrets.*] (never a value) with `grantedTo`: the [grants."<key>"] that list each. */
function secretsReport(registry: Registry): Record<string, unknown> {
  const { extensions, spelled } = registry.policy.grants;
  return Object.fromEntries(Object.entries(registry.policy.secrets ?? {}).map(([name, spec]) => [name, {
    ...spec, grantedTo: Object.entries(extensions).filter(([, g]) => g.secrets?.includes(name)).map(([key]) => spelled[key] ?? key),
  }]));
}

/** The report; `visible`, for a principal with a tools list (mcp/principals.ts): only the tools it may call
 *  (by either name) and their files are shown, the secrets those tools declare, and no load failures or
 *  warnings (they name other files). */
export function auditReport(registry: Registry, includeSchema: boolean, visible?: (tool: string) => boolean): unknown {
  const shown = (name: string) => !visible || visible(name) || visible(registry.advertised().asShown.get(name) ?? name);
  const extensions = registry.extensions.filter((ext) => !visible || ext.artifact.manifest.tools.some((t) => shown(t.name)));
  const declaredSecrets = new Set(extensions.flatMap((ext) => ext.artifact.manifest.tools.filter((t) => shown(t.name)).flatMap((t) => t.allow.secrets ?? [])));
  const secrets = secretsReport(registry);
  return {
    engine: {
      id: registry.engine.info.id, quickjs: registry.engine.info.quickjs.version, backend: registry.engine.backend,
      ...(registry.engine.wasmtime ? { wasmtime: registry.engine.wasmtime.wasmtimeVersion } : {}),
      ...(registry.engine.choice.fallback ? { fallback: registry.engine.choice.fallback } : {}),
    },
    operator: {
      policy: { mode: registry.policy.grants.mode }, toolNames: registry.naming, commands: registry.policy.commands, net: registry.policy.net,
      allowEnv: registry.policy.allowEnv, browser: { enabled: registry.policy.browser.enabled },
      // Names, variables, hosts, headers and formats: never a value (capabilities/secrets/secrets.ts).
      // Each with the grants that may use it (`secrets = [...]` in [grants."<key>"]): nobody else, in every mode.
      secrets: visible ? Object.fromEntries(Object.entries(secrets).filter(([name]) => declaredSecrets.has(name))) : secrets, cpuMs: registry.policy.limits.cpuMs ?? null,
      // What asks a human first ([approvals]); shown, never changed, over MCP.
      approvals: (({ store, ...a }) => ({ ...a, store: store ?? null }))(registry.approvals.settings),
      fs: { ...registry.policy.fs, root: registry.policy.fs.root ?? process.cwd() },
    },
    extensions: extensions.map((ext) => ({
      file: ext.file,
      kind: ext.kind,
      artifactSha256: ext.artifact.sha256,
      engine: ext.artifact.manifest.engine,
      source: ext.artifact.manifest.source,
      tools: ext.artifact.manifest.tools.filter((t) => shown(t.name)).map((t) => ({
        name: t.name,
        description: t.description,
        exposeAsTool: t.exposeAsTool,
        loaded: registry.tools.get(t.name)?.extension === ext,
        // The name MCP clients see it by ([mcp] toolNames), or null when it is not advertised.
        advertisedAs: (t.exposeAsTool && registry.tools.get(t.name)?.extension === ext && registry.advertised().asShown.get(t.name)) || null,
        // The tools whose advertised name this one's would be too (none of them is served over MCP), else null.
        nameClash: [...registry.advertised().collisions.values()].find((names) => t.exposeAsTool && names.includes(t.name)) ?? null,
        // Every file that defines this name when more than one does (none of them serves it), else null.
        contested: registry.contested.get(t.name) ?? null,
        timeoutMs: t.timeoutMs ?? null,
        cpuMs: t.cpuMs ?? null,
        memoryLimitBytes: t.memoryLimitBytes ?? null,
        allow: t.allow,
        // declared, granted (null: the operator's grants do not narrow that kind) and effective (policy/grants.ts)
        ...authority(t.allow, { file: ext.file, sha256: ext.artifact.sha256 }, registry.policy),
        ...(includeSchema ? { inputSchema: t.inputSchema ?? null, outputSchema: t.outputSchema ?? null } : {}),
      })),
    })),
    failures: visible ? [] : registry.failures,
    warnings: visible ? [] : registry.warnings,
  };
}
