// Which config file kiln reads when none is named (--config): kept apart from config/config.ts so that finding it
// loads no parser.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { KilnError } from '../errors.js';

/** The names kiln looks for in a directory: one schema in three formats (config/config.ts). */
export const CONFIG_NAMES = ['kiln.toml', 'kiln.yaml', 'kiln.yml', 'kiln.json'];

/** The config file in `dir`, if one exists; several: an error, since kiln cannot know which one the operator edits. */
export function defaultConfig(dir: string): string | undefined {
  const found = CONFIG_NAMES.filter((n) => existsSync(join(dir, n)));
  if (found.length > 1) throw new KilnError(`found ${found.join(' and ')} here: keep one, or name it with --config`);
  return found[0] && join(dir, found[0]);
}
