// A second artifact's first call in a warm process: the first artifact has loaded and answered (the engine
// is compiled and its interpreter warm), then the clock runs from opening the second artifact's file to
// its first result, in a warm server (spare instance ready). Prints milliseconds as JSON. Usage: second-artifact.mjs <first.wasm> <second.wasm>
import { readFileSync } from 'node:fs';
import { openArtifact } from '../dist/host/extensions/artifact.js';
import { Engine } from '../dist/host/engine/engine.js';
import { GuestInstance } from '../dist/host/engine/instance.js';

const host = { op: async () => null, vars: { get() {}, set() {}, delete: () => false, keys: () => [] }, log() {} };
const engine = await Engine.load();
async function firstCall(file, tool) {
  const artifact = await openArtifact(file, readFileSync(file), engine);
  const instance = await GuestInstance.create(engine, artifact.image, host);
  instance.load({ host: 'mcp' });
  return instance.invoke(tool, {});
}
GuestInstance.keepSpares(engine); // as a server does (kiln mcp, its workers)
await firstCall(process.argv[2], 'hello.noop');
// A warm server between two requests: the spare is made again, and V8's background compiles of the engine's
// hot functions (started by the first artifact's calls) have finished; on 2 cores they would otherwise take
// the CPU from this thread (measured: a 0.6 ms load then takes 5-7 ms in one process of three).
await new Promise((r) => setTimeout(r, 300));
const t = performance.now();
await firstCall(process.argv[3], 'bench.noop');
process.stdout.write(JSON.stringify({ ms: performance.now() - t }));
