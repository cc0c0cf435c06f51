// Where kiln's own files are. The compiled host lives in dist/host/, so the package (or checkout) root is
// two up. A source checkout keeps its caches in build/cache; an installed package (its directory may be
// read-only, or shared by several users' `npx`) keeps them in the user's cache directory.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The engine build (scripts/build-engine.mjs writes it; the package ships it); KILN_ENGINE_DIR points elsewhere. */
export function engineDir(): string {
  return process.env.KILN_ENGINE_DIR ? resolve(process.env.KILN_ENGINE_DIR) : join(repoRoot, 'build', 'engine');
}

/** A source checkout (the package ships no build scripts). */
export const isCheckout = existsSync(join(repoRoot, 'scripts', 'build-engine.mjs'));

/** The directory of kiln's caches: build/cache in a checkout, else $XDG_CACHE_HOME/kiln-mcp (~/.cache/kiln-mcp).
 *  Never a shared temporary directory: whoever can write a cache can choose what a source builds to. */
export function cacheDir(): string {
  if (isCheckout) return join(repoRoot, 'build', 'cache');
  const base = process.env.XDG_CACHE_HOME && process.env.XDG_CACHE_HOME.startsWith('/') ? process.env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'kiln-mcp');
}
