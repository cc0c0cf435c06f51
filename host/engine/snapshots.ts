// Snapshots of guests taken right after their top level ran, so that a new session of the same extension
// starts from the memory that top level left instead of running it again. wasmtime only: an instance maps a
// snapshot copy-on-write and holds only the pages its own work then writes (wasmtime/src/memory.rs).
//
// Invariants:
//  - A snapshot is taken only of a top level that called the host not once (no import at all: no clock, no
//    random number, no log, no capability, no timer), which returned its manifest, and left no operation or
//    timer behind. Such a run is a function of the engine, the bytecode and the load config alone, so
//    starting from its snapshot is indistinguishable from running it again, except in time. Any other top
//    level runs in every instance, as before.
//  - Keyed by the sha256 of the bytecode and the exact config text the guest was loaded with (the engine is
//    the process's one); the manifest text the top level returned is kept with it.
//  - Taken at a key's second load, so a one-shot process (one load) pays nothing for it; at most
//    MAX_SNAPSHOTS per thread, the oldest dropped first (guests started from it keep its pages mapped).
//  - Only of a memory of at most MAX_SNAPSHOT_MEMORY, and the oldest dropped while those kept hold more than
//    MAX_SNAPSHOT_RESIDENT: a snapshot outlives every session of its extension and is counted in no guest's
//    reservation ([limits] totalMemoryBytes), so what a top level leaves must not stay resident for good.
import { createHash } from 'node:crypto';
import type { MemorySnapshot } from './wasmtime.js';

/** Snapshots kept per thread (each holds its memory's non-zero pages once, typically 2–4 MB). */
export const MAX_SNAPSHOTS = 32;
/** Linear memory past which a load is not snapshotted (an engine with a small extension loaded has ~4 MiB). */
export const MAX_SNAPSHOT_MEMORY = 32 * 1024 * 1024;
/** Bytes the snapshots of one thread may hold together. */
export const MAX_SNAPSHOT_RESIDENT = 128 * 1024 * 1024;

export interface LoadSnapshot {
  memory: MemorySnapshot;
  /** The text the guest's `load` returned (its manifest). */
  manifest: string;
}

const bytecodeSha = new WeakMap<Uint8Array, string>();

/** The key of a load of `bytecode` with `config` (its exact text). */
export function snapshotKey(bytecode: Uint8Array, config: string): string {
  let sha = bytecodeSha.get(bytecode);
  if (!sha) {
    sha = createHash('sha256').update(bytecode).digest('hex');
    bytecodeSha.set(bytecode, sha);
  }
  return `${sha}\n${config}`;
}

const taken = new Map<string, LoadSnapshot>();
/** Keys loaded once without a snapshot: the next load of one takes it. Bounded as `taken` is. */
const loadedOnce = new Set<string>();
/** The bytecode of every snapshot kept, by sha256 (a new instance of other bytecode needs none looked up). */
const bytecodes = new Map<string, number>();

const shaOf = (key: string) => key.slice(0, key.indexOf('\n'));

/** The snapshot of `key`'s load, if one was taken. */
export function snapshotFor(key: string): LoadSnapshot | undefined {
  return taken.get(key);
}

/** True when some snapshot of `bytecode` is kept (under any config). */
export function hasSnapshotOf(bytecode: Uint8Array): boolean {
  return bytecodes.size > 0 && bytecodes.has(shaOf(snapshotKey(bytecode, '')));
}

/** Told after an eligible load of `key` that left `memoryBytes` of linear memory (see the invariants): true
 *  when this one should be snapshotted. */
export function wantSnapshot(key: string, memoryBytes: number): boolean {
  if (taken.has(key) || memoryBytes > MAX_SNAPSHOT_MEMORY) return false;
  if (loadedOnce.delete(key)) return true;
  loadedOnce.add(key);
  if (loadedOnce.size > MAX_SNAPSHOTS) loadedOnce.delete(loadedOnce.values().next().value as string);
  return false;
}

export function keepSnapshot(key: string, snapshot: LoadSnapshot): void {
  taken.set(key, snapshot);
  const sha = shaOf(key);
  bytecodes.set(sha, (bytecodes.get(sha) ?? 0) + 1);
  while (taken.size > MAX_SNAPSHOTS || (taken.size > 1 && snapshotStats().residentBytes > MAX_SNAPSHOT_RESIDENT)) {
    const oldest = taken.keys().next().value as string;
    taken.delete(oldest);
    const s = shaOf(oldest);
    const n = (bytecodes.get(s) ?? 1) - 1;
    if (n > 0) bytecodes.set(s, n);
    else bytecodes.delete(s);
  }
}

/** How many snapshots this thread keeps, and their bytes held (for kiln_extensions and the benchmarks). */
export function snapshotStats(): { count: number; residentBytes: number } {
  let residentBytes = 0;
  for (const s of taken.values()) residentBytes += s.memory.residentBytes;
  return { count: taken.size, residentBytes };
}
