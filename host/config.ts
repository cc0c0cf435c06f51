// kiln.toml: which extensions to load, and the operator's settings.
//
//   extensions = ["./extensions", "./tools/box-login.ts"]   # files or directories (scanned recursively)
//
//   [commands]                  # the operator's ceiling on allow.commands
//   enabled = true              # false: no extension runs any command, whatever it declares
//   [commands.extensions]       # per extension file name: the only command names it may run
//   "git-sha.ts" = ["headSha"]
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'smol-toml';
import { OPEN_CEILING, type CommandCeiling } from './capabilities/commands.js';
import { KilnError } from './errors.js';

export interface KilnConfig {
  /** Absolute paths of the files and directories to load. */
  extensions: string[];
  commands: CommandCeiling;
}

export class ConfigError extends KilnError {
  override name = 'ConfigError';
}

export function readConfig(file: string): KilnConfig {
  if (!existsSync(file)) throw new ConfigError(`${file}: no such config file`);
  let doc: Record<string, unknown>;
  try {
    doc = parse(readFileSync(file, 'utf8'));
  } catch (e: any) {
    throw new ConfigError(`${file}: not valid TOML: ${e.message}`);
  }
  const ext = doc.extensions ?? [];
  if (!Array.isArray(ext) || !ext.every((e) => typeof e === 'string')) {
    throw new ConfigError(`${file}: \`extensions\` must be a list of paths`);
  }
  return { extensions: ext.map((e) => resolve(dirname(file), e)), commands: readCeiling(file, doc.commands) };
}

function readCeiling(file: string, v: unknown): CommandCeiling {
  if (v === undefined) return OPEN_CEILING;
  const bad = (msg: string) => new ConfigError(`${file}: [commands] ${msg}`);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('must be a table');
  const t = v as Record<string, unknown>;
  for (const k of Object.keys(t)) if (k !== 'enabled' && k !== 'extensions') throw bad(`has an unknown key "${k}" (enabled, extensions)`);
  if (t.enabled !== undefined && typeof t.enabled !== 'boolean') throw bad('enabled must be true or false');
  const exts = t.extensions ?? {};
  if (typeof exts !== 'object' || exts === null || Array.isArray(exts)) throw bad('extensions must be a table of file name → [command names]');
  for (const [name, list] of Object.entries(exts)) {
    if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) throw bad(`extensions."${name}" must be a list of command names`);
  }
  return { enabled: t.enabled !== false, extensions: exts as Record<string, string[]> };
}
