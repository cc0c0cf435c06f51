// The session's `vars` store: small strings that outlive guest resets. Its limits, checked in one place.
import { KilnError } from './errors.js';

export const VARS_LIMITS = { keys: 1024, keyBytes: 256, valueBytes: 64 * 1024 };

/** Throws a KilnError saying which limit `vars.set(key, value)` would break. */
export function checkVarsSet(vars: Map<string, string>, key: string, value: string): void {
  if (Buffer.byteLength(key) > VARS_LIMITS.keyBytes) throw new KilnError(`vars key is over ${VARS_LIMITS.keyBytes} bytes`);
  if (Buffer.byteLength(value) > VARS_LIMITS.valueBytes) throw new KilnError(`vars value is over ${VARS_LIMITS.valueBytes} bytes`);
  if (!vars.has(key) && vars.size >= VARS_LIMITS.keys) throw new KilnError(`vars holds at most ${VARS_LIMITS.keys} keys`);
}
