// Takes back the `window` test/compat/_lend-window.js lent (see there), once the package that needed it has loaded.
import { lent } from './_lend-window.js';

if (lent) delete globalThis.window;
