// Peer: isolated-vm — a separate V8 isolate (own heap, memory limit) in the same process.
// Needs `node --no-node-snapshot` on Node 20+ (isolated-vm's README); run-one.mjs adds it.
// Strings cross the boundary by copy; hostAdd is an ivm.Callback run synchronously on the host.
import ivm from 'isolated-vm';
import { add, methods, pkgVersion, workloadsPath, workloadsSource } from './common.mjs';

export const peer = 'isolated-vm';
export const version = `isolated-vm ${pkgVersion('isolated-vm')}`;

export async function create() {
  const instance = () => {
    const isolate = new ivm.Isolate({ memoryLimit: 128 });
    const context = isolate.createContextSync();
    context.global.setSync('hostAdd', new ivm.Callback(add));
    isolate.compileScriptSync(workloadsSource, { filename: workloadsPath }).runSync(context);
    const benchCall = context.global.getSync('benchCall', { reference: true });
    return methods((name, argsJson) => benchCall.applySync(undefined, [name, argsJson]), {
      newInstance: async () => instance(),
      dispose: () => {
        benchCall.release();
        context.release();
        isolate.dispose();
      },
    });
  };
  return instance();
}
