// The `timers/promises` built-in's setTimeout and setImmediate, over the engine's timers (guest/web/
// timers.js): a promise of `value`, rejected with an AbortError when `options.signal` aborts, as Node's.
// Not here: setInterval's async iterator and `scheduler`.
const aborted = (signal) => Object.assign(new Error('The operation was aborted', { cause: signal.reason }), { name: 'AbortError', code: 'ABORT_ERR' });

function later(start, clear, value, options = {}) {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(aborted(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clear(timer);
      reject(aborted(signal));
    };
    const timer = start(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(value);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export const setTimeout = (delay, value, options) => later((fn) => globalThis.setTimeout(fn, delay), globalThis.clearTimeout, value, options);
export const setImmediate = (value, options) => later((fn) => globalThis.setImmediate(fn), globalThis.clearImmediate, value, options);
export default { setTimeout, setImmediate };
