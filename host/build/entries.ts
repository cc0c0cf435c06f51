// Which entry of a package the bundle chose, when it is not the package's default: bundle.ts prefers a build for
// browsers or web workers (the "browser" field, the "browser" or "worker" export condition), and such a build
// may do less (joi's browser build has no describe()). Each import of a package by name is judged once: the
// file the bundler resolved it to against the file the package's default entry is (its exports without those
// conditions, else its module or main field), and a difference is a note naming the package, the entry
// chosen, the one not chosen and why. Reads only package.json files the resolver already read. Never throws:
// a package.json it cannot make sense of is no note.
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { exports as resolveExports, legacy } from 'resolve.exports';

/** The export conditions that choose a build made for browsers or workers (bundle.ts passes them). */
export const BROWSER_CONDITIONS = ['browser', 'worker'] as const;

/** Where docs/extensions.md says how to pick another entry. */
export const ENTRIES_DOC = 'docs/extensions.md, "Which build of a package"';

export interface EntryChoice {
  /** name@version */
  pkg: string;
  /** What was imported: the package's name, or name/subpath. */
  specifier: string;
  /** The file chosen and the default one, relative to the package's directory ('' when there is none). */
  chosen: string;
  instead: string;
  /** What chose it: 'the "browser" field', 'the "worker" export condition', ... */
  by: string;
}

/** A bare specifier's package name and subpath ('.' or './x'); undefined for a relative or absolute one. */
function split(source: string): { name: string; subpath: string } | undefined {
  if (/^[./]/.test(source) || source.includes('\0') || source.includes(':')) return undefined;
  const parts = source.split('/');
  const n = source.startsWith('@') ? 2 : 1;
  if (parts.length < n || parts.slice(0, n).some((p) => !p)) return undefined;
  const rest = parts.slice(n).join('/');
  return { name: parts.slice(0, n).join('/'), subpath: rest ? `./${rest}` : '.' };
}

/** `target` in `dir` as Node would find a main file: as is, with .js, or as a directory's index.js. */
function file(dir: string, target: string): string | undefined {
  for (const candidate of [target, `${target}.js`, `${target}/index.js`]) {
    const p = join(dir, candidate);
    try {
      if (existsSync(p) && !p.endsWith(sep)) return realpathSync(p);
    } catch {
      // unreadable: not this candidate
    }
  }
  return undefined;
}

/** Judges each package import once per build (bundle.ts calls `note` from its resolveId hook). */
export class EntryChoices {
  private readonly seen = new Set<string>();
  readonly choices: EntryChoice[] = [];

  /** `source` (imported with require() when `isRequire`) resolved to the real file `resolved`. */
  note(source: string, resolved: string, isRequire: boolean): void {
    const spec = split(source);
    if (!spec) return;
    const key = `${spec.name}\0${spec.subpath}\0${isRequire}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    try {
      const choice = judge(spec.name, spec.subpath, source, resolved, isRequire);
      if (choice && !this.choices.some((c) => c.pkg === choice.pkg && c.specifier === choice.specifier)) this.choices.push(choice);
    } catch {
      // a package.json resolve.exports cannot read: no note
    }
  }

  /** One line per choice, sorted, for `kiln build`'s notes. */
  lines(): string[] {
    return [...this.choices].sort((a, b) => (a.specifier < b.specifier ? -1 : a.specifier > b.specifier ? 1 : 0)).map(describeChoice);
  }
}

export function describeChoice(c: EntryChoice): string {
  const instead = c.instead ? `instead of its default entry ${c.instead}` : 'as it has no default entry for this import';
  return `"${c.specifier}" resolved to ${c.chosen}, ${c.pkg}'s build for browsers (chosen by ${c.by}), ${instead}; ` +
    `a browser build may do less: to use another entry, import it by its subpath (see ${ENTRIES_DOC})`;
}

function judge(name: string, subpath: string, source: string, resolved: string, isRequire: boolean): EntryChoice | undefined {
  // The package's directory: where the resolved file's last node_modules/<name> is.
  const marker = `${sep}node_modules${sep}${name.split('/').join(sep)}${sep}`;
  const at = resolved.lastIndexOf(marker);
  if (at < 0) return undefined; // an alias or a browser map sent it elsewhere
  const dir = resolved.slice(0, at + marker.length - 1);
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  if (!manifest || typeof manifest !== 'object') return undefined;
  const pkg = typeof manifest.version === 'string' && /^[\w.+-]{1,64}$/.test(manifest.version) ? `${name}@${manifest.version}` : name;
  const rel = (f: string | undefined) => (f ? relative(dir, f).split(sep).join('/') : '');
  const base = ['module', isRequire ? 'require' : 'import', 'production'];
  const first = (conditions: string[]): string | undefined => {
    try {
      const targets = resolveExports(manifest, subpath, { conditions, unsafe: true });
      return targets?.length ? file(dir, targets[0]) : undefined;
    } catch {
      return undefined; // no entry for this subpath under these conditions
    }
  };
  if (manifest.exports !== undefined && manifest.exports !== null) {
    const instead = first(base);
    if (instead === resolved) return undefined;
    const cond = BROWSER_CONDITIONS.find((c) => first([...base, c]) === resolved);
    if (!cond) return undefined; // chosen by something else (a condition kiln does not add): not this note
    return { pkg, specifier: source, chosen: rel(resolved), instead: rel(instead), by: `the "${cond}" export condition` };
  }
  if (subpath !== '.' || manifest.browser === undefined) return undefined;
  const main = legacy(manifest, { browser: false }) as string | undefined;
  const instead = file(dir, typeof main === 'string' ? main : 'index.js');
  if (instead === resolved) return undefined;
  return { pkg, specifier: source, chosen: rel(resolved), instead: rel(instead), by: 'the "browser" field' };
}
