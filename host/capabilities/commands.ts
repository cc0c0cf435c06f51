// allow.commands: the one place that decides what a command call may run. Pure functions, no processes:
// tests call them directly, and host/capabilities/processes.ts runs only what they return.
//
// Rules (docs/capabilities.md):
//  - A tool runs only names it declares, and only those the operator allows for its extension.
//  - `${name}` placeholders are substituted strictly: every placeholder needs a value, every value must be a
//    placeholder, values are strings, finite numbers or booleans, without NUL bytes, at most 64 KiB each.
//  - Shell form quotes each value in single quotes; argv form passes each value as (part of) one argument.
//  - A value that would begin an argument and starts with "-" is refused (argument injection: `git clone
//    ${url}` with `--upload-pack=...`), unless the spec lists the placeholder in `allowDash`, or, in argv
//    form, a literal "--" argument comes before it.
//  - Templates that would re-evaluate a value are refused when the manifest is read: a placeholder in
//    command position (`${cmd} arg`, `$(${x})`), after `eval`, as the script of `sh -c`, or inside quotes
//    (where kiln's own quoting would break).
import { PermissionError } from '../errors.js';
import type { Allow, CommandSpec } from '../manifest.js';

export type CommandVerb = 'run' | 'start' | 'status' | 'stop';

export const VALUE_LIMIT = 64 * 1024;

const PLACEHOLDER = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'ash', 'fish', 'busybox']);

/** What the operator allows, from kiln.toml `[commands]`. */
export interface CommandCeiling {
  /** false: no extension may run any command. */
  enabled: boolean;
  /** Extension (source file name, e.g. "git-sha.ts") → the only command names it may run. */
  extensions: Record<string, string[]>;
}

export const OPEN_CEILING: CommandCeiling = { enabled: true, extensions: {} };

/** The command names a tool may run: what it declares AND what the operator allows its extension. */
export function grantedCommands(allow: Allow, extension: string, ceiling: CommandCeiling): string[] {
  if (!ceiling.enabled) return [];
  const listed = Object.hasOwn(ceiling.extensions, extension) ? ceiling.extensions[extension] : undefined;
  return Object.keys(allow.commands).filter((n) => !listed || listed.includes(n));
}

/** The spec a call to `commands.<verb>(name)` may use, or a PermissionError saying why not. */
export function commandGrant(
  tool: string, allow: Allow, verb: CommandVerb, name: unknown,
  extension = '', ceiling: CommandCeiling = OPEN_CEILING,
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
  if (!grantedCommands(allow, extension, ceiling).includes(name)) {
    throw new PermissionError(
      ceiling.enabled
        ? `the operator does not allow command "${name}" for ${extension} (kiln.toml [commands.extensions])`
        : `the operator has turned commands off for this server (kiln.toml [commands] enabled = false)`,
    );
  }
  if (verb === 'run' && spec.persistent) throw new PermissionError(`command "${name}" is persistent: use commands.start/status/stop, not run`);
  if (verb !== 'run' && !spec.persistent) throw new PermissionError(`command "${name}" is one-shot: use commands.run, not ${verb}`);
  return spec;
}

// ---- templates ------------------------------------------------------------------------------------------

export function placeholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

interface ShellWord {
  text: string;
  /** First word of a simple command (after assignments), i.e. what the shell runs. */
  command: boolean;
  /** Quote context of each placeholder in this word. */
  quoted: boolean;
}

/** Split a shell line into words, enough to judge where placeholders sit. Not a full shell parser: it
 *  knows quotes, backslashes, `$(`/backtick nesting and the operators that start a new command. */
function shellWords(line: string): ShellWord[] {
  const words: ShellWord[] = [];
  let cur = '', quoted = false, inWord = false, expectCommand = true;
  let quote: '"' | "'" | undefined;
  const end = () => {
    if (!inWord) return;
    const isAssignment = /^[A-Za-z_][A-Za-z0-9_]*=/.test(cur) && expectCommand;
    words.push({ text: cur, command: expectCommand && !isAssignment, quoted });
    if (!isAssignment) expectCommand = false;
    cur = ''; quoted = false; inWord = false;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) { quote = undefined; continue; }
      if (c === '\\' && quote === '"') { cur += line[++i] ?? ''; continue; }
      if (line.startsWith('${', i)) quoted = true;
      cur += c;
      continue;
    }
    if (c === '\\') { cur += line[++i] ?? ''; inWord = true; continue; }
    if (c === '"' || c === "'") { quote = c; inWord = true; continue; }
    if (c === '`' || line.startsWith('$(', i)) { end(); expectCommand = true; i += c === '`' ? 0 : 1; continue; }
    if (/[\s;&|()\n]/.test(c)) { end(); if (/[;&|()\n]/.test(c)) expectCommand = true; continue; }
    cur += c;
    inWord = true;
  }
  end();
  return words;
}

export class TemplateError extends Error {
  override name = 'TemplateError';
}

/** Refuse a command spec that would re-evaluate a value or could not be quoted safely. */
export function checkTemplate(name: string, spec: CommandSpec): void {
  const where = `allow.commands.${name}`;
  if (spec.cwd !== undefined && placeholders(spec.cwd).length) throw new TemplateError(`${where}.cwd must be a literal path, not a template`);
  if (Array.isArray(spec.run)) {
    const [program, ...rest] = spec.run;
    if (placeholders(program).length) throw new TemplateError(`${where}: the program (run[0]) must be literal, not ${program}`);
    const base = program.split('/').pop()!;
    const c = rest.indexOf('-c');
    if (SHELLS.has(base) && c >= 0 && placeholders(rest[c + 1] ?? '').length) {
      throw new TemplateError(`${where}: ${base} -c with a placeholder in its script re-evaluates the value as shell code; pass the value as an argument ("$1") or use argv form without a shell`);
    }
    if (base === 'eval' || (base === 'env' && rest.some((a) => placeholders(a).length && !a.includes('=')))) {
      throw new TemplateError(`${where}: ${base} would run a value as a command`);
    }
    return;
  }
  const words = shellWords(spec.run);
  for (const [i, w] of words.entries()) {
    const names = placeholders(w.text);
    if (!names.length) continue;
    const ref = '${' + names[0] + '}';
    if (w.quoted) throw new TemplateError(`${where}: ${ref} is inside quotes; kiln quotes every value itself, so remove the quotes around it`);
    if (w.command) throw new TemplateError(`${where}: ${ref} is in command position, which would run the value as a command`);
    const prev = words.slice(0, i);
    const commandStart = prev.map((p) => p.command).lastIndexOf(true);
    const cmdWords = commandStart >= 0 ? prev.slice(commandStart) : [];
    const program = cmdWords[0]?.text.split('/').pop() ?? '';
    if (program === 'eval' || program === 'source' || program === '.') {
      throw new TemplateError(`${where}: ${program} ${ref} re-evaluates the value as shell code`);
    }
    if (SHELLS.has(program) && cmdWords.some((p) => p.text === '-c')) {
      throw new TemplateError(`${where}: ${program} -c ${ref} re-evaluates the value as shell code`);
    }
  }
}

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

function dashRefused(name: string, value: string, spec: CommandSpec): PermissionError | undefined {
  if (!value.startsWith('-') || spec.allowDash.includes(name)) return undefined;
  return new PermissionError(
    `value for \${${name}} starts with "-" and would be read as an option (argument injection); ` +
      `the command's spec can allow it with allowDash: ["${name}"] or, in argv form, put "--" before it`,
  );
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
    const dashes = rest.indexOf('--');
    const args = rest.map((arg, i) => {
      const startsWith = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}/.exec(arg)?.[1];
      if (startsWith && (dashes < 0 || i < dashes)) {
        const refused = dashRefused(startsWith, values.get(startsWith)!, spec);
        if (refused) throw refused;
      }
      return arg.replace(PLACEHOLDER, (_, n: string) => values.get(n)!);
    });
    return { file, args };
  }
  const line = spec.run.replace(PLACEHOLDER, (_whole: string, n: string, offset: number) => {
    const before = offset === 0 ? ' ' : spec.run[offset - 1];
    if (/[\s;&|(]/.test(before)) {
      const refused = dashRefused(n, values.get(n)!, spec);
      if (refused) throw refused;
    }
    return shellQuote(values.get(n)!);
  });
  return { file: '/bin/sh', args: ['-c', line] };
}
