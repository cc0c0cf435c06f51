// The session's `vars` store: small strings that outlive guest resets. Its limits, checked in one place.
//
// A store belongs to one (session, extension file). Its keys and values together hold at most
// `VARS_LIMITS.storeBytes`, so what all vars can hold on a server is bounded by [sessions] maxSessions × the
// number of loaded extensions × storeBytes (docs/configuration.md).
import { KilnError } from '../errors.js';

export const VARS_LIMITS = { keys: 1024, keyBytes: 256, valueBytes: 64 * 1024, storeBytes: 1024 * 1024 };

const size = (vars: Map<string, string>) => {
  let n = 0;
  for (const [k, v] of vars) n += k.length + v.length;
  return n;
};

/** Throws a KilnError saying which limit `vars.set(key, value)` would break. */
export function checkVarsSet(vars: Map<string, string>, key: string, value: string): void {
  if (Buffer.byteLength(key) > VARS_LIMITS.keyBytes) throw new KilnError(`vars key is over ${VARS_LIMITS.keyBytes} bytes`);
  if (Buffer.byteLength(value) > VARS_LIMITS.valueBytes) throw new KilnError(`vars value is over ${VARS_LIMITS.valueBytes} bytes`);
  if (!vars.has(key) && vars.size >= VARS_LIMITS.keys) throw new KilnError(`vars holds at most ${VARS_LIMITS.keys} keys`);
  // Characters, not bytes, for speed: a cheap bound (a UTF-8 byte count is at most 3× it).
  const after = size(vars) - (vars.has(key) ? key.length + vars.get(key)!.length : 0) + key.length + value.length;
  if (after > VARS_LIMITS.storeBytes) throw new KilnError(`vars of one extension in a session hold at most ${VARS_LIMITS.storeBytes} characters of keys and values; delete some first`);
}
