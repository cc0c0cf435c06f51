// How deep a guest may recurse. Every wasm frame lives on the native stack of the thread that runs the
// guest, and QuickJS's own check (the catchable RangeError) can only see the wasm shadow stack. So the
// shadow-stack limit handed to the guest at load is a fixed fraction of the native stack: with the stack
// weights the engine build gives C recursions (scripts/engine/quickjs-patches.mjs), no recursion measured
// here uses more than 2.5 bytes of native stack per byte of shadow stack, and a fraction of 0.4 leaves the
// rest for the host's own frames under the guest (imports, console, the call that entered it).
import { isMainThread, resourceLimits } from 'node:worker_threads';

/** The native stack of a session worker: with it a guest's limit is the largest glue.c accepts. */
export const WORKER_STACK_MB = 8;
/** V8's default stack on Node's main thread (`--stack-size`, in KiB). */
const V8_DEFAULT_STACK_KB = 984;
/** Shadow stack bytes per native stack byte. */
const SHADOW_PER_NATIVE = 0.4;
/** What glue.c accepts (its shadow stack is 2 MiB: each MiB more costs every instantiation ~0.04 ms). */
const MIN_LIMIT = 64 * 1024;
const MAX_LIMIT = 1792 * 1024;

/** The native stack in bytes of the thread that calls this: a worker's `resourceLimits.stackSizeMb`, or the
 *  main thread's `--stack-size`. */
export function nativeStackBytes(): number {
  if (!isMainThread && resourceLimits.stackSizeMb) return resourceLimits.stackSizeMb * 1024 * 1024;
  const flag = [...process.execArgv].reverse().find((a) => a.startsWith('--stack-size='));
  const kb = flag ? Number(flag.slice('--stack-size='.length)) : NaN;
  return (Number.isFinite(kb) && kb > 0 ? kb : V8_DEFAULT_STACK_KB) * 1024;
}

/** The shadow-stack limit (bytes) for a guest run on a native stack of `nativeBytes`. */
export function guestStackLimit(nativeBytes: number = nativeStackBytes()): number {
  return Math.min(MAX_LIMIT, Math.max(MIN_LIMIT, Math.floor(nativeBytes * SHADOW_PER_NATIVE)));
}
