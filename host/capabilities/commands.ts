// allow.commands: which declared command a call may use. Pure: tests call it directly.
import { PermissionError } from '../errors.js';
import type { Allow, CommandSpec } from '../manifest.js';

export type CommandVerb = 'run' | 'start' | 'status' | 'stop';

/** The spec a call to `commands.<verb>(name)` may use, or a PermissionError saying why not. */
export function commandGrant(tool: string, allow: Allow, verb: CommandVerb, name: unknown): CommandSpec {
  if (typeof name !== 'string' || name === '') throw new PermissionError(`commands.${verb} needs a command name`);
  const spec = Object.hasOwn(allow.commands, name) ? allow.commands[name] : undefined;
  if (!spec) {
    const declared = Object.keys(allow.commands);
    throw new PermissionError(
      `tool "${tool}" did not declare a command named "${name}" in allow.commands` +
        (declared.length ? ` (it declares: ${declared.join(', ')})` : ' (it declares none)'),
    );
  }
  if (verb === 'run' && spec.persistent) throw new PermissionError(`command "${name}" is persistent: use commands.start/status/stop, not run`);
  if (verb !== 'run' && !spec.persistent) throw new PermissionError(`command "${name}" is one-shot: use commands.run, not ${verb}`);
  return spec;
}
