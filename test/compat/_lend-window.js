// Lends linkedom's `window` as the global `window` to a browser build that looks for a DOM while it loads
// (turndown's takes `window.DOMParser` then); test/compat/_return-window.js, imported after that package,
// takes it back, so that no later code in the process sees a `window` it did not have. Where there is a
// `window` already, nothing is lent.
import { parseHTML } from 'linkedom';

export const lent = typeof globalThis.window === 'undefined';
if (lent) globalThis.window = parseHTML('<!doctype html><html><head></head><body></body></html>').window;
