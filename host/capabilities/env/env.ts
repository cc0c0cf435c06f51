// allow.env's one decision: the environment a guest sees in its frozen `process.env`, computed from the
// operator's settings and handed to the guest's creation (sessions/session.ts) as a value.
//
// Invariants: a script's guest (the operator's or client's own code) sees only the [scripting] allowEnv names that
// are set on the server. An extension's guest sees only names its tools declare (allow.env), each from its grant's
// explicit `env` value, else passed through when its grant's `allowEnv` lists it (or, in mode "declared",
// [scripting] allowEnv does) and it is set on the server; nothing else. A variable a [secrets.*] reads is never
// passed through, whatever lists it (capabilities/secrets/secrets.ts). One guest serves one file, whose tools
// share its globals, so the file's tools together are what is declared. Pure: the server's environment is an
// argument.
import { grantOf, type Grants } from '../../policy/grants.js';
import type { ExtensionIdentity } from '../../policy/extension-identity.js';
import { secretEnvNames, type SecretsConfig } from '../secrets/secrets.js';

/** What of the operator's settings allow.env is decided by (a part of policy/policy.ts OperatorPolicy). */
export interface EnvPolicy {
  /** [policy] mode and [grants]: each extension's `env` values and `allowEnv` pass-throughs. */
  grants: Grants;
  /** [scripting] allowEnv. */
  allowEnv: string[];
  /** [secrets.*]: the variables they read never reach a guest. */
  secrets?: SecretsConfig;
}

/** The extension whose guest is made, and the names its file's tools declare in allow.env. */
export interface EnvRequest {
  identity: ExtensionIdentity;
  declared: string[];
}

/** The environment a guest sees: `ext`'s (undefined: a script's guest), from the server's `env`. */
export function guestEnv(policy: EnvPolicy, ext?: EnvRequest, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  const secret = secretEnvNames(policy.secrets); // a [secrets.*] variable never reaches a guest, whatever lists it
  if (!ext) {
    for (const name of policy.allowEnv) if (env[name] !== undefined && !secret.has(name)) out[name] = env[name]!;
    return out;
  }
  const { grant } = grantOf(policy.grants, ext.identity);
  const passed = [...(grant?.allowEnv ?? []), ...(policy.grants.mode === 'declared' ? policy.allowEnv : [])];
  for (const name of ext.declared) {
    if (grant?.env && Object.hasOwn(grant.env, name)) out[name] = grant.env[name];
    else if (passed.includes(name) && !secret.has(name) && env[name] !== undefined) out[name] = env[name]!;
  }
  return out;
}
