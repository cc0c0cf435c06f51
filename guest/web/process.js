// `process` and `performance`.
import { host } from './internal.js';
import { decodeUtf8 } from './encoding.js';
import { chunkBytes } from './blob.js';

// Installed by configure(), at load: the rest of this file runs in the engine's snapshot, where the clock
// reads build time and the config (platform, pid, env) is not known yet. The time origin is taken when
// performance is first read, not at load: a top level that reads no clock calls no host, and such a load
// can be snapshotted (host/engine/snapshots.ts).
function configure(config) {
  let origin, timeOrigin;
  const nowMs = () => {
    const [s, ns] = host.native.hrtime();
    origin ??= [s, ns];
    return (s - origin[0]) * 1e3 + (ns - origin[1]) / 1e6;
  };
  const performance = Object.defineProperties({}, {
    now: { value: nowMs, enumerable: true },
    timeOrigin: { get: () => (timeOrigin ??= Date.now() - nowMs()), enumerable: true },
    [Symbol.toStringTag]: { value: 'Performance' },
  });
  host.define('performance', Object.freeze(performance));
  const write = (level) => ({
    write(chunk) { const s = typeof chunk === 'string' ? chunk : decodeUtf8(chunkBytes(chunk)); host.native.log(level, s.endsWith('\n') ? s.slice(0, -1) : s); return true; },
    isTTY: false,
  });
  function hrtime(prev) {
    const [s, ns] = host.native.hrtime();
    if (!prev) return [s, ns];
    let ds = s - prev[0], dn = ns - prev[1];
    if (dn < 0) { ds -= 1; dn += 1e9; }
    return [ds, dn];
  }
  hrtime.bigint = () => { const [s, ns] = host.native.hrtime(); return BigInt(s) * 1000000000n + BigInt(ns); };
  host.define('process', Object.freeze({
    platform: config.platform ?? 'linux',
    arch: 'wasm32',
    version: 'v0.1.0-kiln',
    versions: Object.freeze({ kiln: '0.1.0', quickjs: 'ng-0.17.0' }),
    release: Object.freeze({ name: 'kiln' }),
    argv: Object.freeze(['kiln', 'script']),
    pid: config.pid ?? 1,
    env: Object.freeze({ ...(config.env ?? {}) }),
    // A microtask in the order it was queued, as the authoring contract says: not Node's queue that runs
    // before the promise jobs (docs/extensions.md lists the difference).
    nextTick: (fn, ...args) => {
      if (typeof fn !== 'function') throw new TypeError('process.nextTick needs a function');
      queueMicrotask(() => fn(...args));
    },
    hrtime,
    stdout: Object.freeze(write(1)),
    stderr: Object.freeze(write(3)),
    cwd: () => '/',
    memoryUsage: () => { const [heap, memory] = host.native.memoryUsage(); return { rss: memory, heapTotal: memory, heapUsed: heap, external: 0, arrayBuffers: 0 }; },
    exit: () => { throw new Error('process.exit() is not available to an extension'); },
  }));
}


export { configure };
