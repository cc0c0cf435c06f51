// Peer: quickjs-emscripten (Bellard's QuickJS, the package's default RELEASE_SYNC variant).
// One WebAssembly module per process; each instance is its own QuickJS runtime + context in it.
import { getQuickJS } from 'quickjs-emscripten';
import { pkgVersion } from './common.mjs';
import { quickjsInstance } from './quickjs-common.mjs';

export const peer = 'quickjs';
export const version = `quickjs-emscripten ${pkgVersion('quickjs-emscripten')} + ` +
  `@jitl/quickjs-wasmfile-release-sync ${pkgVersion('@jitl/quickjs-wasmfile-release-sync')}`;

export async function create() {
  return quickjsInstance(await getQuickJS());
}
