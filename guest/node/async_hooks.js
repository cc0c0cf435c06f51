// The `async_hooks` built-in's AsyncLocalStorage, as far as it can be right without the engine's help:
// quickjs-ng has no hook into promise jobs, so a store is the one of the innermost run() still on the call
// stack. Synchronous code inside run(), and every callback it calls before returning, sees the store, as in
// Node; code that runs later (after an `await`, in a .then, a timer) does not, and sees the store of whatever
// run() is on the stack then — usually none (undefined). Only AsyncLocalStorage's run, exit, getStore,
// enterWith and disable are here; docs/extensions.md says so.
const active = new WeakMap(); // storage -> { store } while a run() of it is on the stack

export class AsyncLocalStorage {
  getStore() {
    return active.get(this)?.store;
  }

  run(store, fn, ...args) {
    return this.#with({ store }, fn, args);
  }

  exit(fn, ...args) {
    return this.#with(undefined, fn, args);
  }

  /** Node's: the store for the rest of this synchronous execution; here, until the next run() or exit() ends
   *  or enterWith() is called again. */
  enterWith(store) {
    active.set(this, { store });
  }

  disable() {
    active.delete(this);
  }

  #with(frame, fn, args) {
    const outer = active.get(this);
    if (frame) active.set(this, frame);
    else active.delete(this);
    try {
      return fn(...args);
    } finally {
      if (outer) active.set(this, outer);
      else active.delete(this);
    }
  }
}
export default { AsyncLocalStorage };
