// The `timers` built-in: the engine's own Node-style timers (guest/web/timers.js), which are globals already.
// Nothing of its own: an npm polyfill would wrap them in timer objects of its own, unlike Node's.
const { setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate } = globalThis;
export { setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate };
export default { setTimeout, setInterval, setImmediate, clearTimeout, clearInterval, clearImmediate };
