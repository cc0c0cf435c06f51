// One cold start, in this fresh process: artifact file → first result. Prints milliseconds as JSON.
import { setFlagsFromString } from 'node:v8';
setFlagsFromString('--wasm-tiering-budget=1000000000'); // as the CLI's one-shot commands do (host/cli.ts)
// The clock starts after Node itself has booted, at the first line kiln runs.
const t0 = performance.now();
const { readFileSync } = await import('node:fs');
const { Engine } = await import('../dist/host/engine/engine.js');
const { openArtifact } = await import('../dist/host/extensions/artifact.js');
const { GuestInstance } = await import('../dist/host/engine/instance.js');
const tImport = performance.now();
const engine = await Engine.load();
const tEngine = performance.now();
const artifact = await openArtifact(process.argv[2], readFileSync(process.argv[2]), engine);
const tOpen = performance.now();
const host = { op: async () => null, vars: { get() {}, set() {}, delete: () => false, keys: () => [] }, log() {} };
const instance = await GuestInstance.create(engine, artifact.image, host);
instance.load({ host: 'mcp' });
const result = await instance.invoke('hello.greet', { name: 'cold' });
const tEnd = performance.now();
if (!result?.message) throw new Error('no result');
process.stdout.write(JSON.stringify({ total: tEnd - t0, imports: tImport - t0, engine: tEngine - tImport, open: tOpen - tEngine, firstCall: tEnd - tOpen }));
