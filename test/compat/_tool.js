// Shared by the compatibility corpus (test/compat.test.mjs). Each test/compat/<package>.js exports `run(args)`,
// which uses one npm package on fixed inputs and returns a JSON-able result, and `args`, the arguments the
// test passes. In a guest, where `defineTool` is a global, the file registers `run` as the tool
// `compat.<package>`; in Node, where it is not, the test imports the same file and calls `run` itself.
export function tool(pkg, run, inputSchema) {
  if (typeof defineTool !== 'function') return;
  defineTool({ name: `compat.${pkg}`, timeoutMs: 20000, ...(inputSchema ? { inputSchema } : {}), handler: ({ args }) => run(args) });
}
