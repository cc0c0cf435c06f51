// kiln's own version (package.json), read once when first asked for.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './paths.js';

let version: string | undefined;
export function kilnVersion(): string {
  return (version ??= JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version as string);
}
