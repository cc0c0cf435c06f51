// The `process` built-in (`import process from 'node:process'`): the engine's own global `process`
// (guest/web/process.js), which configure() installs before an extension's module runs. Nothing of its own.
const process = globalThis.process;
export default process;
export const { platform, arch, version, versions, release, argv, pid, env, nextTick, hrtime, stdout, stderr, cwd, memoryUsage, exit } = process;
