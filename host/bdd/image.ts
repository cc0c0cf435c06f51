// The bdd image: one module holding kiln's BDD runtime (guest/bdd/runtime.js), the step files and the
// configured extensions, compiled to bytecode for one guest per worker: the runner bundles the
// discovered step files and the configured extensions into one module.
//
// The entry is generated: the runtime first (it defines Given/When/Then...), then each file preceded by a marker
// that tells the runtime whose registrations follow, then one internal tool per file, `kiln.bdd.<i>`. A step
// runs as a call of its file's tool, so every capability it uses is checked against that file's manifest, made
// here by the host (never taken from the guest):
//  - an extension file: the union of what its tools declare (loaded as the MCP server loads it);
//  - a step-only file: what the operator grants it in [grants."<file>"] (net, browser, tools, env, fs; never
//    commands, which need a declared command spec); nothing without a grant.
// Grants then apply to both as they do to tools (policy/grants.ts), keyed on the file a step comes from.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Engine } from '../engine/engine.js';
import type { ExtensionIdentity } from '../policy/extension-identity.js';
import { grantOf, type Grants } from '../policy/grants.js';
import type { Allow, ToolManifest } from '../extensions/manifest.js';
import { repoRoot } from '../paths.js';
import type { LoadedExtension } from '../extensions/loaded.js';
import { BUNDLE_PREFIX, StackMapper } from '../untrusted/source-map.js';
import { ExtensionLoadError } from '../errors.js';

/** One file the image holds. */
export interface BddFile {
  file: string;
  /** An extension's tools' manifests (as the MCP server loads them); undefined for a step-only file. */
  tools?: ToolManifest[];
  /** How grants name it: the file, and its artifact's sha256 when it is an extension. */
  identity: ExtensionIdentity;
}

export const BDD_TOOL_PREFIX = 'kiln.bdd.';

let runtimeCode: Promise<string> | undefined;

/** guest/bdd/runtime.js and the @cucumber packages it imports, as one module without imports (kiln's own
 *  code: bundled without the extension containment rules, which it then sits inside of as a virtual module). */
function runtime(): Promise<string> {
  runtimeCode ??= (async () => {
    const { rollup } = await import('@rollup/wasm-node');
    const { nodeResolve } = await import('@rollup/plugin-node-resolve');
    const plugin = (await import('@rollup/plugin-commonjs')).default;
    const commonjs = plugin as unknown as typeof plugin.default;
    // regexp-match-indices is a polyfill of the RegExp `d` flag (with a large tree of es-abstract behind it);
    // quickjs-ng has the flag, so the runtime uses it directly.
    const indices: import('@rollup/wasm-node').Plugin = {
      name: 'kiln-match-indices',
      resolveId: (id: string) => (id === 'regexp-match-indices' ? '\0match-indices' : null),
      load: (id: string) => (id === '\0match-indices'
        ? "const cache = new WeakMap();\nexport default function execWithIndices(re, s) {\n  let d = cache.get(re);\n  if (!d) cache.set(re, (d = re.flags.includes('d') ? re : new RegExp(re.source, re.flags + 'd')));\n  d.lastIndex = re.lastIndex;\n  const m = d.exec(s);\n  re.lastIndex = d.lastIndex;\n  return m;\n}\n"
        : null),
    };
    const build = await rollup({ input: join(repoRoot, 'guest', 'bdd', 'runtime.js'), plugins: [indices, nodeResolve({ browser: true }), commonjs()], onLog: () => {} });
    try {
      return (await build.generate({ format: 'es' })).output[0].code;
    } finally {
      await build.close();
    }
  })();
  return runtimeCode;
}

/** The union of what an extension's tools declare: what its steps may use. */
export function unionAllow(tools: ToolManifest[]): Allow {
  const out: Allow = { commands: {}, net: [], browser: [], tools: [], env: [] };
  const add = (list: string[], more: string[] | undefined) => { for (const x of more ?? []) if (!list.includes(x)) list.push(x); };
  for (const t of tools) {
    for (const [name, spec] of Object.entries(t.allow.commands)) if (!Object.hasOwn(out.commands, name)) out.commands[name] = spec;
    add(out.net, t.allow.net);
    add(out.browser, t.allow.browser);
    add(out.tools!, t.allow.tools);
    add(out.env!, t.allow.env);
    const fs = (t.allow as { fs?: { read?: string[]; write?: string[] } }).fs;
    if (fs) {
      const mine = ((out as { fs?: { read: string[]; write: string[] } }).fs ??= { read: [], write: [] });
      add(mine.read, fs.read);
      add(mine.write, fs.write);
    }
  }
  return out;
}

/** What a step-only file may use: its grant (no grant: nothing). */
export function grantedAllow(grants: Grants, identity: ExtensionIdentity): Allow {
  const { grant } = grantOf(grants, identity);
  const allow: Allow = { commands: {}, net: grant?.net ?? [], browser: grant?.browser ?? [], tools: grant?.tools ?? [], env: [...Object.keys(grant?.env ?? {}), ...(grant?.allowEnv ?? [])] };
  if (grant?.fs) (allow as { fs?: unknown }).fs = { read: grant.fs.read ?? [], write: grant.fs.write ?? [] };
  return allow;
}

/** The bdd image as a loaded extension (hostKind "bdd"): its tools are the host-made `kiln.bdd.<i>`. */
/** `where.base`: the project directory (locations in reports are relative to it); `where.root`: the directory
 *  whose files the bundle may read (it holds the project and every file named). */
export async function buildImage(engine: Engine, files: BddFile[], where: { base: string; root: string }, grants: Grants, builder: { compileSource(s: string, n: string, m: boolean): Promise<Uint8Array> }): Promise<LoadedExtension & { files: BddFile[] }> {
  // One tool per file, and one more with no authority for the runtime's own work (setup, matching, making
  // the World): `kiln.bdd.<files.length>`.
  const manifests: ToolManifest[] = [...files.map((f, i) => ({
    name: `${BDD_TOOL_PREFIX}${i}`, exposeAsTool: false,
    allow: f.tools ? unionAllow(f.tools) : grantedAllow(grants, f.identity),
  })), { name: `${BDD_TOOL_PREFIX}${files.length}`, exposeAsTool: false, allow: { commands: {}, net: [], browser: [] } }];
  const entry = join(where.base, '.kiln-bdd-entry.js');
  const virtual: Record<string, string> = {
    '\0kiln-bdd:runtime': await runtime(),
    '\0kiln-bdd:tools': `globalThis.__kilnBdd.tools(${JSON.stringify(manifests.map((m) => m.allow))});\n`,
    '\0kiln-bdd:cucumber': `const c = globalThis.__kilnBdd.cucumber;\nexport const { ${CUCUMBER_EXPORTS.join(', ')} } = c;\nexport default c;\n`,
  };
  const lines = ["import '\\0kiln-bdd:runtime';"];
  files.forEach((f, i) => {
    virtual[`\0kiln-bdd:file:${i}`] = `globalThis.__kilnBdd.file(${i});\n`;
    lines.push(`import '\\0kiln-bdd:file:${i}';`, `import ${JSON.stringify(f.file)};`);
  });
  lines.push("import '\\0kiln-bdd:tools';");
  virtual[entry] = lines.join('\n') + '\n';
  const { bundle } = await import('../build/bundle.js');
  let b;
  try {
    b = await bundle(entry, { virtual, root: where.root, aliases: { '@cucumber/cucumber': '\0kiln-bdd:cucumber' } });
  } catch (e) {
    throw new ExtensionLoadError('kiln bdd', (e as Error).message);
  }
  const name = basename(entry);
  const image = await builder.compileSource(b.code, BUNDLE_PREFIX + name, true);
  const mapper = new StackMapper(name, b.map);
  const sha256 = createHash('sha256').update(image).digest('hex');
  return {
    file: entry,
    kind: 'source',
    hostKind: 'bdd',
    files,
    toolIdentity: (tool: string) => files[Number(tool.slice(BDD_TOOL_PREFIX.length))]?.identity,
    artifact: {
      file: entry,
      sha256,
      manifest: { format: 1, engine: engine.info.id, source: { name, sha256 }, tools: manifests, steps: 0 },
      image,
      mapper: async () => mapper,
    },
  };
}

/** What `import { ... } from '@cucumber/cucumber'` gives a step file. */
const CUCUMBER_EXPORTS = ['Given', 'When', 'Then', 'defineStep', 'And', 'But', 'Before', 'After', 'BeforeAll', 'AfterAll',
  'BeforeStep', 'AfterStep', 'defineParameterType', 'setDefaultTimeout', 'setWorldConstructor', 'setDefinitionFunctionWrapper',
  'setParallelCanAssign', 'DataTable', 'World'];

/** sha256 of a file's bytes (a step-only file's identity for grants keyed on sha256). */
export function fileSha256(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}
