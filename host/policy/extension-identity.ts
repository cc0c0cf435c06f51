// How the operator names an extension in kiln.toml's per-extension tables: by what the operator controls — the
// file kiln loaded, or the artifact's exact bytes — never by anything the artifact says about itself.
import { realpathSync } from 'node:fs';

/** An extension as the operator can name it: the real path of the file kiln loaded, and the sha256 of the
 *  artifact's bytes. Never anything the artifact says about itself (its manifest's source name, say). */
export interface ExtensionIdentity {
  file: string;
  sha256: string;
}

/** The keys an extension answers to in the operator's per-extension tables (`[commands.extensions]`,
 *  `[limits.memory]`): its real path, and `sha256:<hex>` of its artifact. config/config.ts turns every key of those
 *  tables into one of these forms (a path is resolved against the config file's directory). */
export function extensionKeys(ext: ExtensionIdentity): string[] {
  let real = ext.file;
  try {
    real = realpathSync(ext.file);
  } catch {
    // not on disk (a built-in pseudo-extension): its path is its key
  }
  return [real, `sha256:${ext.sha256}`];
}

/** The operator's entry for `ext` in a per-extension table, or undefined. */
export function operatorEntry<T>(table: Record<string, T>, ext: ExtensionIdentity): T | undefined {
  for (const key of extensionKeys(ext)) if (Object.hasOwn(table, key)) return table[key];
  return undefined;
}

