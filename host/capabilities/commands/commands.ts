// allow.commands: the one place that decides what a command call may run. Pure functions, no processes:
// tests call them directly, and host/capabilities/commands/processes.ts runs only what they return.
//
// Rules (docs/capabilities.md):
//  - A tool runs only names it declares, and only those the operator allows for its extension.
//  - A command's `env` (server environment names passed through to its process) is the operator's too: in modes
//    "granted" and "ask" each name must be in the extension's grant's `allowEnv` (never asked), in mode
//    "declared" too when that grant lists `allowEnv` (envRefusal).
//  - `${name}` placeholders are substituted strictly: every placeholder needs a value, every value must be a
//    placeholder, values are strings, finite numbers or booleans, without NUL bytes, at most 64 KiB each.
//  - Shell form quotes each value in single quotes; argv form passes each value as (part of) one argument.
//  - Whatever text ends up at the start of an argument (argv form) or of a shell word (shell form): if its
//    first character comes from a value and is "-", the call is refused (argument injection: `git clone
//    ${base}${repo}` with repo = `--upload-pack=...`), unless the spec lists that placeholder in `allowDash`,
//    or a literal "--" word comes before it in the same command.
//  - Templates that would let a value run as code are refused when the manifest is read
//    (template.ts says exactly which, from the words shell-words.ts reads).
import { PermissionError } from '../../errors.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';
import { granted, grantOf, intersectNames, NO_GRANTS, notGranted, type Grants, type NotGrantedError } from '../../policy/grants.js';
import type { Allow, CommandSpec } from '../../extensions/manifest.js';
import { argvWord, literal, PLACEHOLDER, placeholders, shellCommands, type Word } from './shell-words.js';

export type CommandVerb = 'run' | 'start' | 'status' | 'stop';

export const VALUE_LIMIT = 64 * 1024;


/** The operator's switch, kiln.toml `[commands]` (which names each extension may run: its grant, policy/grants.ts). */
export interface CommandCeiling {
  /** false: no extension may run any command. */
  enabled: boolean;
  /** Commands (one-shot and persistent) running at once in the server, across sessions (processes.ts);
   *  absent: DEFAULT_MAX_PROCESSES. */
  maxProcesses?: number;
}

/** [commands] maxProcesses by default: commands running at once in one server, across its sessions. */
export const DEFAULT_MAX_PROCESSES = 64;
/** The highest [commands] maxProcesses: each command is a reaper and its process, under the machine's own limits. */
export const MAX_PROCESSES_CEILING = 4096;

export const OPEN_CEILING: CommandCeiling = { enabled: true, maxProcesses: DEFAULT_MAX_PROCESSES };

/** The command names a tool may run: what it declares AND what the operator grants its extension. */
export function grantedCommands(allow: Allow, extension: ExtensionIdentity, ceiling: CommandCeiling, grants: Grants = NO_GRANTS): string[] {
  if (!ceiling.enabled) return [];
  return intersectNames(Object.keys(allow.commands), granted(grants, extension, 'commands'));
}

/**
 * Whether a command still running, started as `name` under `origin` (the extension and the declaration of the
 * tool that started it), is covered by the operator's settings `after` a config change from `before`. It is
 * when its extension is still loaded (`loaded`: the change did not take it out of `extensions`) and the new
 * settings grant it, its `env` pass-through included (envRefusal). A command the new settings do not grant is stopped, except in mode "ask"
 * when the settings before did not grant it either: a human approved it then, and the change took nothing
 * away from it (a grant that covered it, or the mode that let it run unasked).
 */
export function stillCovered(
  name: string, origin: { extension: ExtensionIdentity; allow: Allow },
  before: { ceiling: CommandCeiling; grants: Grants }, after: { ceiling: CommandCeiling; grants: Grants }, loaded = true,
): boolean {
  if (!loaded) return false;
  const spec = Object.hasOwn(origin.allow.commands, name) ? origin.allow.commands[name] : undefined;
  if (!spec || envRefusal('', spec, origin.extension, after.grants)) return false; // the environment is never asked
  if (grantedCommands(origin.allow, origin.extension, after.ceiling, after.grants).includes(name)) return true;
  if (!after.ceiling.enabled || after.grants.mode !== 'ask') return false;
  return before.grants.mode === 'ask' && !grantedCommands(origin.allow, origin.extension, before.ceiling, before.grants).includes(name);
}

/** The spec a call to `commands.<verb>(name)` may use, or a PermissionError saying why not (a NotGrantedError
 *  when the tool declares it and the operator's grant does not list it). */
export function commandGrant(
  tool: string, allow: Allow, verb: CommandVerb, name: unknown,
  extension: ExtensionIdentity = { file: '', sha256: '' }, ceiling: CommandCeiling = OPEN_CEILING, grants: Grants = NO_GRANTS,
): CommandSpec {
  if (typeof name !== 'string' || name === '') throw new PermissionError(`commands.${verb} needs a command name`);
  const spec = Object.hasOwn(allow.commands, name) ? allow.commands[name] : undefined;
  if (!spec) {
    const declared = Object.keys(allow.commands);
    throw new PermissionError(
      `tool "${tool}" did not declare a command named "${name}" in allow.commands` +
        (declared.length ? ` (it declares: ${declared.join(', ')})` : ' (it declares none)'),
    );
  }
  if (!ceiling.enabled) throw new PermissionError('the operator has turned commands off for this server (kiln.toml [commands] enabled = false)');
  // A name not granted in mode "ask" is put to a human; the environment is never asked (policy/grants.ts NOT_ASKED), so
  // its refusal comes first then: the spec a human allows has passed it.
  const refused = grantedCommands(allow, extension, ceiling, grants).includes(name) ? undefined : notGranted(grants, extension, tool, 'commands', name);
  if (refused && !refused.askable) throw refused;
  const env = envRefusal(tool, spec, extension, grants);
  if (env) throw env;
  if (refused) throw refused;
  if (verb === 'run' && spec.persistent) throw new PermissionError(`command "${name}" is persistent: use commands.start/status/stop, not run`);
  if (verb !== 'run' && !spec.persistent) throw new PermissionError(`command "${name}" is one-shot: use commands.run, not ${verb}`);
  return spec;
}

/** The refusal of the first name of `spec.env` (server environment variables passed through to the command's
 *  process) the operator's grant does not pass through to `extension`: in modes "granted" and "ask", every one
 *  must be in its grant's `allowEnv`; in mode "declared", only when the grant lists `allowEnv`. */
function envRefusal(tool: string, spec: CommandSpec, extension: ExtensionIdentity, grants: Grants): NotGrantedError | undefined {
  const list = grantOf(grants, extension).grant?.allowEnv ?? (grants.mode === 'declared' ? undefined : []);
  const missing = list && spec.env.find((n) => n !== 'PATH' && !list.includes(n)); // PATH: every command's (processes.ts childEnv)
  return missing === undefined ? undefined : notGranted(grants, extension, tool, 'env', missing);
}

// ---- templates ------------------------------------------------------------------------------------------

// ---- substitution -----------------------------------------------------------------------------------------

export interface Invocation {
  file: string;
  args: string[];
}

function valueText(name: string, v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (typeof v === 'number' && Number.isFinite(v)) s = String(v);
  else if (typeof v === 'boolean') s = String(v);
  else throw new PermissionError(`value for \${${name}} must be a string, a finite number or a boolean, not ${Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v}`);
  if (s.includes('\0')) throw new PermissionError(`value for \${${name}} contains a NUL byte`);
  if (Buffer.byteLength(s) > VALUE_LIMIT) throw new PermissionError(`value for \${${name}} is over ${VALUE_LIMIT} bytes`);
  return s;
}

export const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function dashRefused(name: string, spec: CommandSpec): PermissionError | undefined {
  if (spec.allowDash.includes(name)) return undefined;
  return new PermissionError(
    `value for \${${name}} starts an argument with "-" and would be read as an option (argument injection); ` +
      `the command's spec can allow it with allowDash: ["${name}"], or put a literal "--" argument before it`,
  );
}

/** The placeholder whose value supplies the first character of `w` when that character is "-". */
function leadingDash(w: Word, values: Map<string, string>): string | undefined {
  for (const p of w.pieces) {
    if ('dyn' in p) continue; // the shell computes it, and it may be empty: what follows may start the word
    if ('lit' in p) {
      if (p.lit === '') continue;
      return undefined;
    }
    const v = values.get(p.ph)!;
    if (v === '') continue;
    return v.startsWith('-') ? p.ph : undefined;
  }
  return undefined;
}

/** Refuse a value that would begin an argument or a shell word with "-" (before any literal "--"). */
function checkDashes(commands: Word[][], values: Map<string, string>, spec: CommandSpec): void {
  for (const words of commands) {
    for (const w of words) {
      if (literal(w) === '--') break;
      const name = leadingDash(w, values);
      if (name !== undefined) {
        const refused = dashRefused(name, spec);
        if (refused) throw refused;
      }
    }
  }
}

/** The process to run for `spec` with `vars`, or a PermissionError. */
export function substitute(spec: CommandSpec, vars: unknown): Invocation {
  if (vars === null || typeof vars !== 'object' || Array.isArray(vars)) throw new PermissionError('command variables must be an object of name → value');
  const given = vars as Record<string, unknown>;
  const template = Array.isArray(spec.run) ? spec.run : [spec.run];
  const wanted = new Set(template.flatMap(placeholders));
  const missing = [...wanted].filter((n) => !Object.hasOwn(given, n));
  if (missing.length) throw new PermissionError(`missing value for ${missing.map((n) => '${' + n + '}').join(', ')}`);
  const unknown = Object.keys(given).filter((n) => !wanted.has(n));
  if (unknown.length) throw new PermissionError(`no placeholder for ${unknown.map((n) => JSON.stringify(n)).join(', ')} in this command`);
  const values = new Map([...wanted].map((n) => [n, valueText(n, given[n])]));

  if (Array.isArray(spec.run)) {
    const [file, ...rest] = spec.run;
    checkDashes([rest.map(argvWord)], values, spec);
    return { file, args: rest.map((arg) => arg.replace(PLACEHOLDER, (_, n: string) => values.get(n)!)) };
  }
  const noTemplate = (why: string): never => { throw new PermissionError(`the command's template cannot be analysed: ${why}`); };
  if (values.size) checkDashes(shellCommands(spec.run, true, noTemplate), values, spec);
  const line = spec.run.replace(PLACEHOLDER, (_whole: string, n: string) => shellQuote(values.get(n)!));
  return { file: '/bin/sh', args: ['-c', line] };
}
