// Peer: node:vm — a new V8 context (same isolate, same heap, no memory or CPU limit of its own).
// The workloads are compiled once per process (vm.Script) and run in each new context.
import vm from 'node:vm';
import { add, methods, workloadsPath, workloadsSource } from './common.mjs';

export const peer = 'node-vm';
export const version = `node ${process.version}`;

export async function create() {
  const script = new vm.Script(workloadsSource, { filename: workloadsPath });
  const instance = () => {
    const context = vm.createContext({});
    context.hostAdd = add; // a host-realm function, called from the guest realm
    script.runInContext(context);
    const benchCall = context.benchCall;
    const self = methods((name, argsJson) => benchCall(name, argsJson), {
      newInstance: async () => instance(),
      dispose: () => {}, // nothing to free by hand: the context goes when it is unreachable
    });
    return self;
  };
  return instance();
}
