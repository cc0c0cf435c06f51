// Finding extension files: a named file is used as-is; a directory is scanned recursively for sources
// (.js .cjs .mjs .jsx .ts .cts .mts .tsx) and artifacts (.wasm). node_modules and dot-directories are skipped,
// and so is what matches an exclude pattern: test files (*.test.*, *.spec.*) always, plus kiln.toml's
// `exclude`. A pattern with a slash matches the path relative to the directory scanned (`drafts/**`); one
// without matches a file or directory name at any depth (`*.wip.ts`). `*` is any run of characters but `/`,
// `**` any run including `/`, `?` one character.
import { readdirSync, statSync } from 'node:fs';
import { extname, join, relative, resolve, sep } from 'node:path';
import { KilnError } from '../errors.js';

/** The source files kiln builds, the same for every host. */
export const SOURCE_EXTENSIONS = ['.js', '.cjs', '.mjs', '.jsx', '.ts', '.cts', '.mts', '.tsx'];
const LOADABLE = new Set([...SOURCE_EXTENSIONS, '.wasm']);
/** Never extensions, whatever the config says: tests next to the code they test. */
export const DEFAULT_EXCLUDE = ['*.test.*', '*.spec.*'];

/** A glob as a regular expression over a '/'-separated path. */
export function globRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') { i++; re += '(?:.*/)?'; } else re += '.*';
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

function excluder(patterns: string[]): (rel: string) => boolean {
  const compiled = patterns.map((p) => ({ anywhere: !p.includes('/'), re: globRegExp(p.replace(/^\.\//, '').replace(/\/$/, '')) }));
  return (rel) => {
    const parts = rel.split('/');
    return compiled.some(({ anywhere, re }) => (anywhere ? parts.some((part) => re.test(part)) : re.test(rel)));
  };
}

function walk(root: string, dir: string, out: string[], excluded: (rel: string) => boolean): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const full = join(dir, entry.name);
    if (excluded(relative(root, full).split(sep).join('/'))) continue;
    if (entry.isDirectory()) walk(root, full, out, excluded);
    else if (entry.isFile() && LOADABLE.has(extname(entry.name)) && !entry.name.endsWith('.d.ts')) out.push(full);
  }
}

/** The extension files under `paths` (a file named is always taken; directories are scanned). */
export function discover(paths: string[], exclude: string[] = []): string[] {
  const excluded = excluder([...DEFAULT_EXCLUDE, ...exclude]);
  const out: string[] = [];
  for (const p of paths.map((x) => resolve(x))) {
    let st;
    try {
      st = statSync(p);
    } catch {
      throw new KilnError(`${p}: no such file or directory`);
    }
    if (st.isDirectory()) walk(p, p, out, excluded);
    else out.push(p);
  }
  return [...new Set(out)];
}
