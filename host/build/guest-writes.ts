// A grant is given to the code the operator reviewed: the files an extension's build read. While it is served,
// no tool may write those files (capabilities/fs-policy.ts); and a rebuild must not read a file a guest wrote,
// or it would run that guest's code under this extension's grant (a planted file that the resolver now prefers:
// `lib/helper.ts` before `lib/helper/index.ts`, a package in a nearer node_modules, a file a new import names).
//
// This is the server's record of what guests wrote through allow.fs (real paths: files written or appended,
// directories made, rename targets), kept for the server's life and shared by every reload (registry.ts), and
// the pure question a (re)build asks of it. A restart forgets it: starting a server is the operator's approval
// of what is on disk. The record is bounded: past MAX_TRACKED paths it stops telling them apart, and every
// rebuild is refused until a restart (never a guess that lets one through).
import { dirname } from 'node:path';

/** Who wrote a path: the extension file, and its tool that did. */
export interface Writer {
  extension: string;
  tool: string;
}

/** Paths recorded before the record stops telling them apart. */
export const MAX_TRACKED = 100_000;

export class GuestWrites {
  private readonly paths = new Map<string, Writer>();
  private overflow?: Writer;

  /** `path` (a real path) is about to be written, made or moved onto by `by`. */
  record(path: string, by: Writer): void {
    if (this.overflow) return;
    if (!this.paths.has(path) && this.paths.size >= MAX_TRACKED) {
      this.overflow = by;
      this.paths.clear();
      return;
    }
    this.paths.set(path, by);
  }

  /** The first of `inputs` (real paths) that a guest wrote, or that lies in a directory a guest made or moved,
   *  with who did; undefined when a build of them runs only what the operator put on disk. */
  writtenAmong(inputs: readonly string[]): { input: string; by: Writer; overflow?: true } | undefined {
    if (this.overflow && inputs.length) return { input: inputs[0], by: this.overflow, overflow: true };
    if (this.paths.size === 0) return undefined;
    for (const input of inputs) {
      for (let p = input; ; p = dirname(p)) {
        const by = this.paths.get(p);
        if (by) return { input, by };
        if (dirname(p) === p) break;
      }
    }
    return undefined;
  }
}
