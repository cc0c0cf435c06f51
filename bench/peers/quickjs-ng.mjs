// Peer: quickjs-ng through quickjs-emscripten-core and the @jitl/quickjs-ng-wasmfile-release-sync variant.
// One WebAssembly module per process; each instance is its own QuickJS runtime + context in it.
import { newQuickJSWASMModuleFromVariant } from 'quickjs-emscripten-core';
import variant from '@jitl/quickjs-ng-wasmfile-release-sync';
import { pkgVersion } from './common.mjs';
import { quickjsInstance } from './quickjs-common.mjs';

export const peer = 'quickjs-ng';
export const version = `quickjs-emscripten-core ${pkgVersion('quickjs-emscripten-core')} + ` +
  `@jitl/quickjs-ng-wasmfile-release-sync ${pkgVersion('@jitl/quickjs-ng-wasmfile-release-sync')}`;

export async function create() {
  return quickjsInstance(await newQuickJSWASMModuleFromVariant(variant));
}
