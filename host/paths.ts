// Where kiln's own files are. The compiled host lives in dist/host/, so the repository root is two up.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The engine build (scripts/build-engine.mjs writes it); KILN_ENGINE_DIR points elsewhere. */
export function engineDir(): string {
  return process.env.KILN_ENGINE_DIR ? resolve(process.env.KILN_ENGINE_DIR) : join(repoRoot, 'build', 'engine');
}
