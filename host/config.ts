// kiln.toml: which extensions to load, and the operator's settings.
//
//   extensions = ["./extensions", "./tools/box-login.ts"]   # files or directories (scanned recursively)
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'smol-toml';
import { KilnError } from './errors.js';

export interface KilnConfig {
  /** Absolute paths of the files and directories to load. */
  extensions: string[];
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
  return { extensions: ext.map((e) => resolve(dirname(file), e)) };
}
