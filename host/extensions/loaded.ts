// A loaded extension and a served tool, as the registry holds them and sessions run them: data only, so that
// what loads a tool (registry.ts) imports nothing of what runs it (sessions/), and a session needs no registry.
import type { OpenArtifact } from './artifact.js';
import type { ToolManifest } from './manifest.js';
import type { ExtensionIdentity } from '../policy/extension-identity.js';
import type { Validator } from '../schema/validators.js';

export interface LoadedExtension {
  file: string;
  /** "source" when compiled on the fly, "artifact" when loaded from a .wasm file. */
  kind: 'source' | 'artifact';
  /** Loaded as this host kind instead of the session's (the script guest is "script", kiln bdd's "bdd"). */
  hostKind?: 'script' | 'bdd';
  artifact: OpenArtifact;
  /** A source's build inputs (real paths): the entry, its imports, its packages' files and package.json. */
  inputs?: string[];
  /** How the operator's grants name the file a tool comes from, when that is not this one (kiln bdd's image
   *  holds many files: host/bdd/image.ts). */
  toolIdentity?(tool: string): ExtensionIdentity | undefined;
}

export interface ToolEntry {
  manifest: ToolManifest;
  extension: LoadedExtension;
  /** Why arguments do not match the tool's inputSchema, or undefined (schema/validators.ts). */
  validate?: Validator;
  /** Why a result does not match the tool's outputSchema, or undefined (made on first use). */
  checkResult?: () => Promise<Validator | undefined>;
}
