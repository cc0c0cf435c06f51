// Runs test/web-platform/checks.js in this Node process, as a kiln guest runs it, and prints the results as
// JSON. An exception thrown by a timer callback, or a rejection nobody handles, is logged by a guest and the
// guest goes on; Node would exit, so here they are ignored.
import { readFileSync } from 'node:fs';

process.on('uncaughtException', () => {});
process.on('unhandledRejection', () => {});
const source = readFileSync(new URL('./checks.js', import.meta.url), 'utf8').replace(/await runChecks\(\)\s*$/, 'return await runChecks();');
const AsyncFunction = (async () => {}).constructor;
const results = await new AsyncFunction(source)();
process.stdout.write(JSON.stringify(results));
