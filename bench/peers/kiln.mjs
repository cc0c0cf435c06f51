// Peer: kiln itself — the workloads built into a real artifact (`kiln build` pipeline, in process), each
// benchCall entry a tool, run in a GuestInstance exactly as a session runs one (inline isolation: the same
// thread, as the other in-process peers). hostAdd is a synchronous host call: the guest's `vars.get`, which
// the host answers with the sum (the one synchronous import a guest has).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openArtifact } from '../../dist/host/extensions/artifact.js';
import { Builder } from '../../dist/host/build/artifact.js';
import { Engine } from '../../dist/host/engine/engine.js';
import { GuestInstance } from '../../dist/host/engine/instance.js';
import { workloadsSource } from './common.mjs';

export const peer = 'kiln';
let engine;
/** kiln's engine and the backend it ran on (KILN_ENGINE, as the peer's entry sets it). */
export const version = () => `kiln (quickjs-ng 0.17.0 on ${engine?.backend === 'wasmtime' ? `wasmtime ${engine.wasmtime.wasmtimeVersion}` : 'V8'})`;

const TOOLS = ['noop', 'transform', 'sort', 'fib', 'sieve', 'hostCalls'];
const extension = `${workloadsSource}
globalThis.hostAdd = (a, b) => Number(vars.get(a + ',' + b));
// The prelude does benchCall's JSON.parse of the arguments and JSON.stringify of the result.
${TOOLS.map((t) => `defineTool({ name: '${t}', handler: ({ args }) => WORKLOADS.${t}(args) });`).join('\n')}
`;

const host = {
  op: async () => { throw new Error('no capabilities in the benchmark'); },
  vars: {
    get: (k) => { const i = k.indexOf(','); return String(Number(k.slice(0, i)) + Number(k.slice(i + 1))); },
    set() {}, delete: () => false, keys: () => [],
  },
  log() {},
};

export async function create() {
  engine = await Engine.load();
  const dir = mkdtempSync(join(tmpdir(), 'kiln-bench-'));
  let artifact;
  try {
    const file = join(dir, 'bench.js');
    writeFileSync(file, extension);
    const built = await new Builder(engine).build(file);
    artifact = await openArtifact(file, built.bytes, engine);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const instance = async () => {
    const guest = await GuestInstance.create(engine, artifact.image, host);
    guest.load({ host: 'mcp', memoryLimit: 256 * 1024 * 1024 });
    // JSON text in (parsed once on the host, as an MCP server receives it), a host value out.
    const call = (tool) => (json) => guest.invoke(tool, json === undefined ? null : JSON.parse(json));
    return {
      noop: call('noop'),
      transform: call('transform'),
      sort: () => guest.invoke('sort', null),
      fib: () => guest.invoke('fib', null),
      sieve: () => guest.invoke('sieve', null),
      hostCalls: () => guest.invoke('hostCalls', null),
      newInstance: instance,
      dispose: () => guest.dispose(),
    };
  };
  return instance();
}
