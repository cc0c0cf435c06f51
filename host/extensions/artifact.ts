// Artifacts: sealed `.wasm` components. Reading one checks that it was built for this engine and parses its
// manifest; nothing in it runs until a session instantiates it (and then only as bytecode the engine reads).
import { EngineError, ExtensionLoadError } from '../errors.js';
import { sha256, type Engine } from '../engine/engine.js';
import { ManifestError, parseTools, type ToolManifest } from './manifest.js';
import type { StackMapper } from '../untrusted/source-map.js';
import { isComponent, readCustomSections } from '../engine/wasm-binary.js';

export const MANIFEST_SECTION = 'kiln-manifest';
export const SOURCEMAP_SECTION = 'kiln-sourcemap';
export const ARTIFACT_FORMAT = 1;

export interface ArtifactManifest {
  format: number;
  /** The engine id the artifact was built for. */
  engine: string;
  source: { name: string; sha256: string };
  tools: ToolManifest[];
  /** BDD registrations seen at build time (served by the bdd host). */
  steps: number;
}

export interface OpenArtifact {
  file: string;
  sha256: string;
  manifest: ArtifactManifest;
  /** The extension's bytecode, handed to the guest at load. */
  image: Uint8Array;
  /** Maps guest stacks to the extension's sources; loaded on first use (the source-map library costs ~13 ms). */
  mapper(): Promise<StackMapper | undefined>;
}

/** The largest manifest section kiln reads. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;
const HEX64 = /^[0-9a-f]{64}$/;

/** Read and check an artifact's manifest. Every field is hostile input: a crafted artifact can put anything
 *  there, and nothing in it is believed without a check (and no operator decision uses its names). */
export function readManifest(file: string, bytes: Uint8Array): ArtifactManifest {
  if (!isComponent(bytes)) throw new ExtensionLoadError(file, 'not a WebAssembly component (expected an artifact made by `kiln build`)');
  const sections = readCustomSections(bytes, MANIFEST_SECTION);
  if (sections.length === 0) throw new ExtensionLoadError(file, `no ${MANIFEST_SECTION} section: this component was not made by \`kiln build\``);
  if (sections.length > 1) throw new ExtensionLoadError(file, `${sections.length} ${MANIFEST_SECTION} sections: an artifact has exactly one`);
  if (sections[0].length > MAX_MANIFEST_BYTES) throw new ExtensionLoadError(file, `the ${MANIFEST_SECTION} section is larger than ${MAX_MANIFEST_BYTES} bytes`);
  let m: any;
  try {
    m = JSON.parse(new TextDecoder().decode(sections[0]));
  } catch {
    throw new ExtensionLoadError(file, `the ${MANIFEST_SECTION} section is not JSON`);
  }
  const bad = (what: string) => new ExtensionLoadError(file, `the ${MANIFEST_SECTION} section's ${what}; rebuild the artifact with \`kiln build\``);
  if (typeof m !== 'object' || m === null || Array.isArray(m)) throw bad('content is not an object');
  if (m.format !== ARTIFACT_FORMAT) throw new ExtensionLoadError(file, `artifact format ${typeof m.format === 'number' ? m.format : JSON.stringify(m.format)?.slice(0, 40)} is not supported (expected ${ARTIFACT_FORMAT}); rebuild it`);
  if (typeof m.engine !== 'string' || !HEX64.test(m.engine)) throw bad('engine is not an engine id (64 hex digits)');
  const src = m.source;
  if (typeof src !== 'object' || src === null || typeof src.name !== 'string' || !/^[^\/\0-\x1f\x7f]{1,255}$/.test(src.name) ||
    typeof src.sha256 !== 'string' || !HEX64.test(src.sha256)) throw bad('source is not {name: a file name, sha256: 64 hex digits}');
  if (m.steps !== undefined && !(Number.isInteger(m.steps) && m.steps >= 0)) throw bad('steps is not a count');
  try {
    return { format: m.format, engine: m.engine, source: { name: src.name, sha256: src.sha256 }, tools: parseTools(m.tools), steps: m.steps ?? 0 };
  } catch (e) {
    if (e instanceof ManifestError) throw new ExtensionLoadError(file, e.message);
    throw e;
  }
}

export async function openArtifact(file: string, bytes: Uint8Array, engine: Engine): Promise<OpenArtifact> {
  const manifest = readManifest(file, bytes);
  if (manifest.engine !== engine.info.id) {
    throw new ExtensionLoadError(file, `built for engine ${manifest.engine.slice(0, 12)}…, but this host runs engine ${engine.info.id.slice(0, 12)}…; rebuild it with \`kiln build\``);
  }
  let image: Uint8Array;
  try {
    image = engine.verify(bytes);
  } catch (e) {
    if (e instanceof EngineError) throw new ExtensionLoadError(file, /not built for this engine/.test(e.message) ? `${e.message}: its code differs from this host's engine (tampered, or made by another tool)` : e.message);
    throw e;
  }
  const [map] = readCustomSections(bytes, SOURCEMAP_SECTION);
  let mapper: Promise<StackMapper | undefined> | undefined;
  const loadMapper = async () => {
    if (!map) return undefined;
    const { StackMapper } = await import('../untrusted/source-map.js');
    return new StackMapper(manifest.source.name, JSON.parse(new TextDecoder().decode(map)));
  };
  return {
    file,
    sha256: sha256(bytes),
    manifest,
    image,
    mapper: () => (mapper ??= loadMapper()),
  };
}
