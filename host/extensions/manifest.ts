// Tool manifests: what an extension declares (name, schema, exposure, timeout, capabilities).
//
// The host never takes a manifest on trust: whether it comes from running the guest at build time or from
// an artifact's `kiln-manifest` section, it goes through `parseTools`, which checks every field and
// normalises `allow` (the `exec` alias becomes `commands`). Policy is computed from the result only.
// Whether an inputSchema is valid JSON Schema is checked where it is compiled (schema/validators.ts).
import { checkTemplate, TemplateError } from '../capabilities/commands/template.js';
import { NetPatternError, parsePattern } from '../capabilities/net/net.js';
import { SECRET_NAME } from '../capabilities/secrets/secrets.js';
import { FsPrefixError, normalisePrefix, type FsAllow } from '../capabilities/fs/prefix.js';

export type OutputShape = 'text' | 'json' | 'lines';

export interface CommandSpec {
  run: string | string[];
  timeoutMs?: number;
  env: string[];
  cwd?: string;
  output: OutputShape;
  persistent: boolean;
  /** Placeholders whose values may start with "-" (see capabilities/commands/commands.ts). */
  allowDash: string[];
}

export interface Allow {
  commands: Record<string, CommandSpec>;
  net: string[];
  /** Hosts the session's browser may load for this tool (allow.net's grammar); empty: no page, no context. */
  browser: string[];
  /** Tools of other extensions this tool may call through plugins[...] (its own file's: always). */
  tools?: string[];
  /** Server environment names its guest's process.env may show (when the operator allows them too). */
  env?: string[];
  /** Names of the operator's [secrets.*] the host adds to this tool's requests (capabilities/secrets/secrets.ts). */
  secrets?: string[];
  /** Workspace path prefixes it may read and write (capabilities/fs/prefix.ts), normalised; absent: none. */
  fs?: FsAllow;
}

/** MCP's tool annotations: hints for clients. The author may only make them more cautious than what kiln
 *  derives from the capabilities (mcp/annotations.ts). */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}
const ANNOTATION_KEYS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const;

export interface ToolManifest {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
  /** The JSON Schema of the tool's result: listed in tools/list, and every result is checked against it. */
  outputSchema?: Record<string, unknown>;
  annotations?: ToolAnnotations;
  exposeAsTool: boolean;
  timeoutMs?: number;
  /** CPU time the guest may spend running this tool's call; the operator's [limits] cpuMs may lower it. */
  cpuMs?: number;
  /** A ceiling on the heap of the file's guest (the lowest of its tools' and the operator's applies). */
  memoryLimitBytes?: number;
  allow: Allow;
}

export class ManifestError extends Error {
  override name = 'ManifestError';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Tool names: the characters MCP recommends, dot-namespaced by convention. No spaces, no look-alike letters
 *  from other scripts, no zero-width or control characters: a name cannot impersonate another. */
export const TOOL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Names kiln keeps for its own tools. */
const RESERVED = /^(kiln_|run_script$)/i;

/** How deep and how large an inputSchema may be, how many objects, arrays and booleans (each may be a subschema)
 *  it may hold, and how much text their paths from the root add up to: enough for any real schema, bounded for
 *  the validator (compiling takes time in proportion to the subschemas, and Ajv writes each check's path, its
 *  property names included, into the code it generates: a long name over many checks would be megabytes). */
export const MAX_SCHEMA_DEPTH = 64;
export const MAX_SCHEMA_BYTES = 256 * 1024;
export const MAX_SCHEMA_NODES = 4096;
export const MAX_SCHEMA_PATHS = 2 * 1024 * 1024;

/** Why `schema` cannot be compiled safely, or undefined: too many subschemas, paths too long, or a `$id` holding
 *  "*\/" (Ajv writes each `$id` into a comment of the code it generates, and "*\/" would end it: the rest would
 *  run as the server's code). */
function schemaRefusal(schema: unknown): string | undefined {
  let nodes = 0;
  let paths = 0;
  const stack: [unknown, number][] = [[schema, 0]];
  while (stack.length) {
    const [x, path] = stack.pop()!;
    if (typeof x === 'boolean') nodes++;
    if (typeof x !== 'object' || x === null) continue;
    if (++nodes > MAX_SCHEMA_NODES) return `holds more than ${MAX_SCHEMA_NODES} objects, arrays and booleans`;
    if ((paths += path) > MAX_SCHEMA_PATHS) return `has paths too long: their lengths from the root add up to more than ${MAX_SCHEMA_PATHS} characters (shorten its property names)`;
    const id = (x as Record<string, unknown>).$id;
    if (typeof id === 'string' && id.includes('*/')) return `has a $id with "*/" in it (${JSON.stringify(id).slice(0, 60)}); a $id is a URI, which needs none`;
    for (const [k, v] of Object.entries(x)) stack.push([v, path + k.length + 1]);
  }
  if (nodes > MAX_SCHEMA_NODES) return `holds more than ${MAX_SCHEMA_NODES} objects, arrays and booleans`;
  return undefined;
}

/** The nesting depth of a JSON value (iterative: a hostile value cannot overflow the host's stack). */
export function jsonDepth(v: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[v, 1]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (typeof x !== 'object' || x === null) continue;
    max = Math.max(max, d);
    if (max > 10_000) break;
    for (const child of Object.values(x)) stack.push([child, d + 1]);
  }
  return max;
}

function checkName(name: string): void {
  if (!TOOL_NAME.test(name)) {
    throw new ManifestError(`tool name ${JSON.stringify(name).slice(0, 80)} must be 1-64 characters of A-Z a-z 0-9 _ . - (MCP's tool name characters)`);
  }
  if (RESERVED.test(name)) throw new ManifestError(`tool name "${name}" is reserved: names starting with kiln_, and run_script, are kiln's own tools`);
}

/** The closest of `known` to a mistyped `key` (a different case, or at most two edits away), for a hint. */
export function didYouMean(key: string, known: readonly string[]): string {
  const distance = (a: string, b: string): number => {
    const row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      let prev = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const next = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
        prev = row[j];
        row[j] = next;
      }
    }
    return row[b.length];
  };
  const best = known.map((k) => ({ k, d: k.toLowerCase() === key.toLowerCase() ? 0 : distance(key, k) })).sort((a, b) => a.d - b.d)[0];
  return best && best.d <= 2 ? ` (did you mean "${best.k}"?)` : ` (known: ${known.join(', ')})`;
}

function checkKeys(where: string, v: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(v)) {
    if (!known.includes(k)) throw new ManifestError(`${where} has an unknown key "${k.slice(0, 64)}"${didYouMean(k, known)}`);
  }
}

export type Draft = 'draft-07' | '2019-09' | '2020-12';

const DRAFTS: Record<string, Draft> = {
  'http://json-schema.org/draft-07/schema': 'draft-07',
  'http://json-schema.org/draft-06/schema': 'draft-07',
  'https://json-schema.org/draft/2019-09/schema': '2019-09',
  'https://json-schema.org/draft/2020-12/schema': '2020-12',
};

/** The JSON Schema draft a schema asks for with `$schema` (draft-07 when it says nothing); a
 *  ManifestError naming the tool for a draft Ajv does not implement (draft-04 and older, or anything else). */
export function draftOf(tool: string, schema: Record<string, unknown>, field = 'inputSchema'): Draft {
  const declared = schema.$schema;
  if (declared === undefined) return 'draft-07';
  const draft = typeof declared === 'string' ? DRAFTS[declared.replace(/#$/, '')] : undefined;
  if (!draft) {
    throw new ManifestError(`tool "${tool}": ${field}'s $schema ${JSON.stringify(declared).slice(0, 100)} is not a JSON Schema draft kiln validates (draft-07, 2019-09 or 2020-12)`);
  }
  return draft;
}

const TOOL_KEYS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'exposeAsTool', 'timeoutMs', 'cpuMs', 'memoryLimitBytes', 'allow'] as const;
/** The longest CPU budget (what a Node timer can wait, as for timeoutMs) and the largest heap (the engine's
 *  ceiling on linear memory) a manifest may declare. */
const MAX_CPU_MS = 2 ** 31 - 1;
const MAX_MEMORY_BYTES = 512 * 1024 * 1024;

function checkSchema(name: string, schema: Record<string, unknown>, field = 'inputSchema'): void {
  // MCP sends a tool's arguments as an object, and its clients reject a whole tool list over one tool whose
  // inputSchema root is anything else; structured results are objects too.
  if (schema.type !== 'object') {
    throw new ManifestError(`tool "${name}": ${field} must describe an object: its root needs "type": "object" (MCP requires it; found ${JSON.stringify(schema.type ?? null).slice(0, 60)})`);
  }
  draftOf(name, schema, field);
  if (jsonDepth(schema) > MAX_SCHEMA_DEPTH) throw new ManifestError(`tool "${name}": ${field} nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) throw new ManifestError(`tool "${name}": ${field} is larger than ${MAX_SCHEMA_BYTES} bytes`);
  const refusal = schemaRefusal(schema);
  if (refusal) throw new ManifestError(`tool "${name}": ${field} ${refusal}`);
}

function parseAnnotations(tool: string, v: unknown): ToolAnnotations | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw new ManifestError(`tool "${tool}": annotations must be an object`);
  checkKeys(`tool "${tool}": annotations`, v, ANNOTATION_KEYS);
  const out: ToolAnnotations = {};
  for (const k of ANNOTATION_KEYS) {
    if (v[k] === undefined) continue;
    if (typeof v[k] !== 'boolean') throw new ManifestError(`tool "${tool}": annotations.${k} must be true or false`);
    out[k] = v[k] as boolean;
  }
  return out;
}

function parseCommand(tool: string, name: string, v: unknown): CommandSpec {
  try {
    return parseCommandSpec(tool, name, v);
  } catch (e) {
    if (e instanceof ManifestError && !e.message.startsWith('tool "')) throw new ManifestError(`tool "${tool}": ${e.message}`);
    throw e;
  }
}

function parseCommandSpec(tool: string, name: string, v: unknown): CommandSpec {
  const where = `tool "${tool}": allow.commands.${name}`;
  if (typeof v === 'string') return checked(name, { run: v, env: [], output: 'text', persistent: false, allowDash: [] });
  if (!isObject(v)) throw new ManifestError(`${where} must be a shell string or a spec object`);
  checkKeys(where, v, ['run', 'timeoutMs', 'env', 'cwd', 'output', 'persistent', 'allowDash']);
  const run = v.run;
  const runOk = typeof run === 'string' || (Array.isArray(run) && run.length > 0 && run.every((a) => typeof a === 'string'));
  if (!runOk) throw new ManifestError(`${where}.run must be a string or a non-empty array of strings`);
  if (v.timeoutMs !== undefined && !(typeof v.timeoutMs === 'number' && v.timeoutMs > 0)) throw new ManifestError(`${where}.timeoutMs must be a positive number`);
  const env = v.env ?? [];
  if (!Array.isArray(env) || !env.every((e) => typeof e === 'string')) throw new ManifestError(`${where}.env must be an array of variable names`);
  if (v.cwd !== undefined && typeof v.cwd !== 'string') throw new ManifestError(`${where}.cwd must be a string`);
  const output = v.output ?? 'text';
  if (output !== 'text' && output !== 'json' && output !== 'lines') throw new ManifestError(`${where}.output must be "text", "json" or "lines"`);
  if (v.persistent !== undefined && typeof v.persistent !== 'boolean') throw new ManifestError(`${where}.persistent must be a boolean`);
  const allowDash = v.allowDash ?? [];
  if (!Array.isArray(allowDash) || !allowDash.every((e) => typeof e === 'string')) throw new ManifestError(`${where}.allowDash must be an array of placeholder names`);
  return checked(name, {
    run: run as string | string[], timeoutMs: v.timeoutMs as number | undefined, env, cwd: v.cwd as string | undefined,
    output, persistent: v.persistent === true, allowDash,
  });
}

function checked(name: string, spec: CommandSpec): CommandSpec {
  try {
    checkTemplate(name, spec);
  } catch (e) {
    if (e instanceof TemplateError) throw new ManifestError(e.message);
    throw e;
  }
  return spec;
}

/** allow.net and allow.browser: host patterns, one grammar (capabilities/net/net.ts). */
function parseHosts(tool: string, key: 'net' | 'browser', v: unknown): string[] {
  const hosts = v ?? [];
  if (!Array.isArray(hosts) || !hosts.every((h) => typeof h === 'string' && h.length > 0)) throw new ManifestError(`tool "${tool}": allow.${key} must be an array of host names`);
  for (const entry of hosts) {
    try {
      parsePattern(entry);
    } catch (e) {
      if (e instanceof NetPatternError) throw new ManifestError(`tool "${tool}": allow.${key}: ${e.message}`);
      throw e;
    }
  }
  return hosts;
}

function parseAllow(tool: string, v: unknown): Allow {
  if (v === undefined) return { commands: {}, net: [], browser: [] };
  if (!isObject(v)) throw new ManifestError(`tool "${tool}": allow must be an object`);
  for (const k of Object.keys(v)) {
    if (!['commands', 'exec', 'net', 'browser', 'tools', 'env', 'secrets', 'fs'].includes(k)) throw new ManifestError(`tool "${tool}": allow.${k.slice(0, 64)} is not a capability kiln knows${didYouMean(k, ['commands', 'exec', 'net', 'browser', 'tools', 'env', 'secrets', 'fs'])}`);
  }
  if (v.commands !== undefined && v.exec !== undefined) throw new ManifestError(`tool "${tool}": allow.exec is an alias of allow.commands; declare only one`);
  const cmds = v.commands ?? v.exec ?? {};
  if (!isObject(cmds)) throw new ManifestError(`tool "${tool}": allow.commands must be an object of name → command`);
  const commands: Record<string, CommandSpec> = {};
  for (const [name, spec] of Object.entries(cmds)) commands[name] = parseCommand(tool, name, spec);
  const tools = v.tools ?? [];
  if (!Array.isArray(tools) || !tools.every((n) => typeof n === 'string' && TOOL_NAME.test(n))) {
    throw new ManifestError(`tool "${tool}": allow.tools must be an array of tool names`);
  }
  const env = v.env ?? [];
  if (!Array.isArray(env) || !env.every((n) => typeof n === 'string' && ENV_NAME.test(n))) {
    throw new ManifestError(`tool "${tool}": allow.env must be an array of environment variable names`);
  }
  const secrets = v.secrets ?? [];
  if (!Array.isArray(secrets) || !secrets.every((n) => typeof n === 'string' && SECRET_NAME.test(n))) {
    throw new ManifestError(`tool "${tool}": allow.secrets must be an array of secret names (1-64 characters of A-Z a-z 0-9 _ -)`);
  }
  const fs = parseFs(tool, v.fs);
  return {
    commands, net: parseHosts(tool, 'net', v.net), browser: parseHosts(tool, 'browser', v.browser), ...(tools.length ? { tools } : {}), ...(env.length ? { env } : {}),
    ...(secrets.length ? { secrets: [...new Set(secrets as string[])] } : {}), ...(fs ? { fs } : {}),
  };
}

/** allow.fs: { read?: [prefix], write?: [prefix] }, each a path relative to the operator's workspace root; no
 *  absolute path, no "..". Normalised ("./data/" is "data"); absent or both empty: undefined. */
function parseFs(tool: string, v: unknown): FsAllow | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw new ManifestError(`tool "${tool}": allow.fs must be an object { read: [...], write: [...] } of path prefixes`);
  checkKeys(`tool "${tool}": allow.fs`, v, ['read', 'write']);
  const list = (key: 'read' | 'write'): string[] => {
    const given = v[key] ?? [];
    if (!Array.isArray(given) || given.length > 64) throw new ManifestError(`tool "${tool}": allow.fs.${key} must be an array of at most 64 path prefixes`);
    try {
      return [...new Set(given.map(normalisePrefix))];
    } catch (e) {
      if (e instanceof FsPrefixError) throw new ManifestError(`tool "${tool}": allow.fs.${key}: ${e.message}`);
      throw e;
    }
  };
  const read = list('read');
  const write = list('write');
  return read.length || write.length ? { read, write } : undefined;
}

function parseTool(v: unknown): ToolManifest {
  if (!isObject(v)) throw new ManifestError('a tool manifest must be an object');
  const name = v.name;
  if (typeof name !== 'string' || name.trim() === '') throw new ManifestError('a tool name must be a non-empty string');
  checkName(name);
  checkKeys(`tool "${name}"`, v, TOOL_KEYS);
  if (v.description !== undefined && typeof v.description !== 'string') throw new ManifestError(`tool "${name}": description must be a string`);
  if (v.title !== undefined && (typeof v.title !== 'string' || v.title.length > 200)) throw new ManifestError(`tool "${name}": title must be a string of at most 200 characters`);
  for (const field of ['inputSchema', 'outputSchema'] as const) {
    if (v[field] === undefined) continue;
    if (!isObject(v[field])) throw new ManifestError(`tool "${name}": ${field} must be a JSON Schema object`);
    checkSchema(name, v[field] as Record<string, unknown>, field);
  }
  if (v.timeoutMs !== undefined && !(typeof v.timeoutMs === 'number' && v.timeoutMs > 0)) throw new ManifestError(`tool "${name}": timeoutMs must be a positive number`);
  if (v.exposeAsTool !== undefined && typeof v.exposeAsTool !== 'boolean') throw new ManifestError(`tool "${name}": exposeAsTool must be true or false`);
  if (v.cpuMs !== undefined && !(typeof v.cpuMs === 'number' && v.cpuMs > 0 && v.cpuMs <= MAX_CPU_MS)) throw new ManifestError(`tool "${name}": cpuMs must be a positive number of milliseconds, at most ${MAX_CPU_MS}`);
  if (v.memoryLimitBytes !== undefined && !(Number.isInteger(v.memoryLimitBytes) && (v.memoryLimitBytes as number) > 0 && (v.memoryLimitBytes as number) <= MAX_MEMORY_BYTES)) {
    throw new ManifestError(`tool "${name}": memoryLimitBytes must be a positive integer, at most ${MAX_MEMORY_BYTES} (512 MiB)`);
  }
  return {
    name,
    title: v.title as string | undefined,
    description: v.description as string | undefined,
    inputSchema: v.inputSchema as Record<string, unknown> | undefined,
    outputSchema: v.outputSchema as Record<string, unknown> | undefined,
    annotations: parseAnnotations(name, v.annotations),
    exposeAsTool: v.exposeAsTool === true,
    timeoutMs: v.timeoutMs as number | undefined,
    ...(v.cpuMs !== undefined ? { cpuMs: v.cpuMs as number } : {}),
    ...(v.memoryLimitBytes !== undefined ? { memoryLimitBytes: v.memoryLimitBytes as number } : {}),
    allow: parseAllow(name, v.allow),
  };
}

/** Validate a list of tool manifests; names must be unique within the list. */
export function parseTools(v: unknown): ToolManifest[] {
  if (!Array.isArray(v)) throw new ManifestError('tools must be an array');
  const tools = v.map(parseTool);
  const seen = new Set<string>();
  for (const t of tools) {
    if (seen.has(t.name)) throw new ManifestError(`a tool named "${t.name}" is defined twice`);
    seen.add(t.name);
  }
  return tools;
}
