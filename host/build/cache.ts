// Built sources, kept on disk between processes: starting `kiln mcp` on sources a second time costs what
// starting on artifacts costs. An entry is keyed by the engine's id, the code of kiln's builder, and the
// source's path; it records the sha256 of every file the build read (the entry, its imports, the package
// files, the package.json files that decided their resolution) and is used only while each still has that
// content; a hit gives those files back (the registry protects them while the source is served). The cached
// artifact is then verified like any artifact (openArtifact), after its own recorded sha256 — a truncated or
// altered entry is rebuilt, never trusted. A cache directory that cannot be written is no cache.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir, repoRoot } from '../paths.js';
import { kilnVersion } from '../version.js';

export const BUILD_CACHE = process.env.KILN_BUILD_CACHE ? resolve(process.env.KILN_BUILD_CACHE) : join(cacheDir(), 'artifacts');

const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

interface Entry {
  inputs: [string, string][]; // [path, sha256 of its content]
  artifactSha256: string;
}

/** The code that turns a source into an artifact (the compiled dist/host/build/ modules in a checkout; in the
 *  package, which ships only the bundled command line, the bundle's chunks): a changed kiln builder makes every
 *  entry stale. */
let builderId: string | undefined;
export function builder(): string {
  if (builderId) return builderId;
  const h = createHash('sha256').update(kilnVersion());
  const compiled = join(repoRoot, 'dist', 'host', 'build');
  const dir = existsSync(compiled) ? compiled : dirname(fileURLToPath(import.meta.url));
  try {
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.js')).sort()) h.update(f).update(readFileSync(join(dir, f)));
  } catch {
    // no compiled builder next to this code: the version alone
  }
  return (builderId = h.digest('hex'));
}

export class BuildCache {
  /** Content hashes read during this load: entries share most inputs (a package's files), so each file is
   *  read and hashed once per process, not once per entry. */
  private readonly hashes = new Map<string, string>();
  constructor(private readonly engineId: string, private readonly dir = BUILD_CACHE) {}

  private hashOf(path: string): string {
    let h = this.hashes.get(path);
    if (h === undefined) this.hashes.set(path, (h = sha256(readFileSync(path))));
    return h;
  }

  private keyOf(file: string): string {
    return sha256(`${this.engineId}\0${builder()}\0${resolve(file)}`);
  }

  /** The cached artifact for `file`, with the files it was built from, if every one of them is unchanged. */
  lookup(file: string): { bytes: Uint8Array; inputs: string[] } | undefined {
    const key = this.keyOf(file);
    try {
      const entry = JSON.parse(readFileSync(join(this.dir, `${key}.json`), 'utf8')) as Entry;
      for (const [path, hash] of entry.inputs) if (this.hashOf(path) !== hash) return undefined;
      const bytes = readFileSync(join(this.dir, `${key}.wasm`));
      return sha256(bytes) === entry.artifactSha256 ? { bytes: new Uint8Array(bytes), inputs: entry.inputs.map(([path]) => path) } : undefined;
    } catch {
      return undefined; // no entry, an input gone, an unreadable or malformed entry: build again
    }
  }

  store(file: string, bytes: Uint8Array, inputs: string[]): void {
    const key = this.keyOf(file);
    try {
      const entry: Entry = { inputs: inputs.map((p) => [p, this.hashOf(p)]), artifactSha256: sha256(bytes) };
      mkdirSync(this.dir, { recursive: true });
      for (const [name, data] of [[`${key}.wasm`, bytes], [`${key}.json`, JSON.stringify(entry)]] as const) {
        const tmp = join(this.dir, `${name}.${process.pid}.tmp`);
        writeFileSync(tmp, data);
        renameSync(tmp, join(this.dir, name));
      }
    } catch {
      // read-only or full: nothing is cached, the build stands
    }
  }
}
