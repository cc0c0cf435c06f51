// What a source extension may import when kiln builds it: the files under its own directory, and packages
// installed in a node_modules directory of that directory or of one of its ancestors (where Node's resolution
// finds them). Paths are compared after resolving symlinks, so a symlinked file or directory, a package
// whose `main` points elsewhere, or a symlink out of node_modules cannot reach the rest of the disk. Pure
// functions: tests call them directly; the bundler (bundle.ts) asks before every module it loads.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';

const inside = (path: string, dir: string) => path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);

/** `real`, remembering each answer: for one build, which asks the same paths many times. */
export function realOnce(): (path: string) => string {
  const seen = new Map<string, string>();
  return (path) => {
    let r = seen.get(path);
    if (r === undefined) seen.set(path, (r = real(path)));
    return r;
  };
}

/** The real path of `path`; for a path that does not exist (yet), its longest existing prefix resolved and the
 *  rest appended, so a missing file behind a symlink is judged by where the symlink points. The system's
 *  realpath(3), one call per path (Node's own walks it an lstat per component: a bundle of a thousand files
 *  asks thousands of times). */
export function real(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(real(parent), basename(path));
  }
}

/** The extension's root: the real directory of its entry file. */
export function extensionRoot(entry: string): string {
  return real(dirname(real(entry)));
}

/** Why `file` may not be imported by an extension rooted at `root`, or undefined if it may. `realpath` is
 *  `real` or one that remembers its answers for the length of one build. */
export function containmentViolation(root: string, file: string, realpath: (path: string) => string = real): string | undefined {
  const path = realpath(file);
  if (inside(path, root)) return undefined;
  // Packages: the first node_modules directory on the path, which must belong to the root or an ancestor.
  const at = path.split(sep).indexOf('node_modules');
  if (at > 0) {
    const modules = path.split(sep).slice(0, at + 1).join(sep);
    const owner = dirname(modules);
    if (inside(root, owner) && inside(path, realpath(modules))) return undefined;
  }
  return `${path} is outside the extension's directory (${root}) and its node_modules`;
}
