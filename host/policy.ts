// The operator's settings (kiln.toml): ceilings on what extensions may declare, and the server's limits.
import { OPEN_CEILING, type CommandCeiling } from './capabilities/commands.js';
import { DEFAULT_NET_POLICY, type NetPolicy } from './capabilities/net.js';

export interface OperatorPolicy {
  commands: CommandCeiling;
  net: NetPolicy;
  /** Server environment variables a guest's `process.env` may show (when they are set). */
  allowEnv: string[];
}

export const DEFAULT_POLICY: OperatorPolicy = { commands: OPEN_CEILING, net: DEFAULT_NET_POLICY, allowEnv: [] };

/** The environment a guest sees: the allowed names that are set on the server, nothing else. */
export function guestEnv(policy: OperatorPolicy, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of policy.allowEnv) if (env[name] !== undefined) out[name] = env[name]!;
  return out;
}
