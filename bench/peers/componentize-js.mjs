// Peer: @bytecodealliance/componentize-js — the workloads inside a SpiderMonkey (StarlingMonkey)
// WebAssembly component, pre-initialised by Wizer (no AOT/weval), transpiled to JS by jco and run on
// Node's WebAssembly. All WASI features disabled: the component imports only the host's `add`.
//
// The component is built once and cached under build/peers/componentize-js/<hash>/ (about 12 s to
// componentize, 6 s to transpile); the hash covers workloads.js, the WIT and both tools' versions.
// Each instance is a fresh instantiation (its own linear memory) of core modules compiled once.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { add, methods, peersDir, pkgVersion, workloadsSource } from './common.mjs';

export const peer = 'componentize-js';
export const version = `@bytecodealliance/componentize-js ${pkgVersion('@bytecodealliance/componentize-js')} ` +
  `+ @bytecodealliance/jco ${pkgVersion('@bytecodealliance/jco')}`;

const WIT = `package local:bench;

interface host {
  add: func(a: f64, b: f64) -> f64;
}

world peer {
  import host;
  export call: func(name: string, args: string) -> string;
}
`;
// The guest module: workloads.js unchanged, between an import of the host function and one export.
const SOURCE = `import { add } from 'local:bench/host';
globalThis.hostAdd = add;
${workloadsSource}
export function call(name, args) { return benchCall(name, args); }
`;

/** Build (or reuse) the transpiled component; returns its directory. */
export async function build({ log = () => {} } = {}) {
  const hash = createHash('sha256').update(SOURCE).update(WIT).update(version).digest('hex').slice(0, 16);
  const dir = join(peersDir, '../../build/peers/componentize-js', hash);
  if (existsSync(join(dir, 'peer.js'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'source.js'), SOURCE);
  writeFileSync(join(tmp, 'peer.wit'), WIT);
  const { componentize } = await import('@bytecodealliance/componentize-js');
  let t = performance.now();
  const { component } = await componentize({
    sourcePath: join(tmp, 'source.js'),
    witPath: join(tmp, 'peer.wit'),
    worldName: 'peer',
    disableFeatures: ['stdio', 'random', 'clocks', 'http', 'fetch-event'],
  });
  writeFileSync(join(tmp, 'peer.wasm'), component);
  log(`componentize-js: ${component.length} bytes in ${(performance.now() - t).toFixed(0)} ms`);
  t = performance.now();
  const { transpile } = await import('@bytecodealliance/jco');
  const { files } = await transpile(component, { name: 'peer', instantiation: 'sync', quiet: true });
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(tmp, name)), { recursive: true });
    writeFileSync(join(tmp, name), bytes);
  }
  log(`jco transpile: ${Object.keys(files).length} files in ${(performance.now() - t).toFixed(0)} ms`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

export async function create() {
  const dir = await build({ log: (m) => process.stderr.write(`${m}\n`) });
  const { instantiate } = await import(pathToFileURL(join(dir, 'peer.js')).href);
  const modules = new Map();
  const getCoreModule = (name) => {
    if (!modules.has(name)) modules.set(name, new WebAssembly.Module(readFileSync(join(dir, name))));
    return modules.get(name);
  };
  const imports = { 'local:bench/host': { add } };
  const instantiateCore = (module, importObject) => new WebAssembly.Instance(module, importObject);
  const instance = () => {
    let root = instantiate(getCoreModule, imports, instantiateCore);
    return methods((name, argsJson) => root.call(name, argsJson), {
      newInstance: async () => instance(),
      dispose: () => { root = null; }, // jco exposes no destroy: the instance goes when unreachable
    });
  };
  return instance();
}
