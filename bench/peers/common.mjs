// Shared by the peer files: the guest source, and the host-side wrappers every peer exposes.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const peersDir = dirname(fileURLToPath(import.meta.url));
export const workloadsPath = join(peersDir, 'workloads.js');
/** The guest JavaScript every peer loads unchanged. */
export const workloadsSource = readFileSync(workloadsPath, 'utf8');

/** The host function hostCalls() calls, 1,000 times. */
export const add = (a, b) => a + b;

/**
 * The benchmark surface of one sandbox instance, built from that sandbox's `call(name, argsJson) → json`
 * (which enters the guest's benchCall). JSON text in, a host value out.
 */
export function methods(call, { newInstance, dispose }) {
  return {
    noop: (argsJson) => JSON.parse(call('noop', argsJson)),
    transform: (jsonText) => JSON.parse(call('transform', jsonText)),
    sort: () => JSON.parse(call('sort', 'null')),
    fib: () => JSON.parse(call('fib', 'null')),
    sieve: () => JSON.parse(call('sieve', 'null')),
    hostCalls: () => JSON.parse(call('hostCalls', 'null')),
    /** A fresh sandbox with the workloads loaded, sharing whatever this peer loads once per process. */
    newInstance,
    /** Free this sandbox. */
    dispose,
  };
}

/** The installed version of a package, read from node_modules (some packages do not export package.json). */
export function pkgVersion(name) {
  return JSON.parse(readFileSync(join(peersDir, '../../node_modules', name, 'package.json'), 'utf8')).version;
}
