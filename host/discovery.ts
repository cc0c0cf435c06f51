// Finding extension files: a named file is used as-is; a directory is scanned recursively for sources
// (.js .cjs .mjs .jsx .ts .cts .mts .tsx) and artifacts (.wasm). node_modules and dot-directories are skipped.
import { readdirSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import { KilnError } from './errors.js';

/** The source files kiln builds, the same for every host. */
export const SOURCE_EXTENSIONS = ['.js', '.cjs', '.mjs', '.jsx', '.ts', '.cts', '.mts', '.tsx'];
const LOADABLE = new Set([...SOURCE_EXTENSIONS, '.wasm']);

function walk(dir: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = join(dir, entry.name);
    if (entry.isDirectory()) walk(full, out);
    else if (entry.isFile() && LOADABLE.has(extname(entry.name)) && !entry.name.endsWith('.d.ts')) out.push(full);
  }
}

export function discover(paths: string[]): string[] {
  const out: string[] = [];
  for (const p of paths.map((x) => resolve(x))) {
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new KilnError(`${p}: no such file or directory`);
    }
    if (st.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return [...new Set(out)];
}
