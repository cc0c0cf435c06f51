// The quickjs-emscripten and quickjs-ng peers differ only in the WebAssembly module they load.
import { add, methods, workloadsPath, workloadsSource } from './common.mjs';

/** A runtime + context in `module` with the workloads loaded and hostAdd defined. */
export function quickjsInstance(module) {
  const runtime = module.newRuntime();
  const context = runtime.newContext();
  const hostAdd = context.newFunction('hostAdd', (a, b) => context.newNumber(add(context.getNumber(a), context.getNumber(b))));
  context.setProp(context.global, 'hostAdd', hostAdd);
  hostAdd.dispose();
  context.unwrapResult(context.evalCode(workloadsSource, workloadsPath)).dispose();
  const benchCall = context.getProp(context.global, 'benchCall');
  const call = (name, argsJson) => {
    const nameHandle = context.newString(name);
    const argsHandle = context.newString(argsJson);
    const result = context.callFunction(benchCall, context.undefined, nameHandle, argsHandle);
    nameHandle.dispose();
    argsHandle.dispose();
    const handle = context.unwrapResult(result);
    const text = context.getString(handle);
    handle.dispose();
    return text;
  };
  return methods(call, {
    newInstance: async () => quickjsInstance(module),
    dispose: () => {
      benchCall.dispose();
      context.dispose();
      runtime.dispose();
    },
  });
}
