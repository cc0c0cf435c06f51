#!/usr/bin/env node
// The bundled command line (scripts/bundle-cli.mjs: CommonJS, like this file, see bin/package.json) when it
// is at least as new as the compiled host, compiled with V8's code cache (code-cache.js); after a plain `tsc`
// the unbundled ES modules, so an edit never runs stale code.
'use strict';
const { statSync } = require('node:fs');
const { join } = require('node:path');

const mtime = (rel) => statSync(join(__dirname, rel), { throwIfNoEntry: false })?.mtimeMs ?? -1;
if (mtime('../dist/cli/cli.js') >= mtime('../dist/host/cli.js')) {
  require('./code-cache.js').useCodeCache(join(__dirname, '..', 'dist', 'cli'), join(__dirname, '..'));
  require('../dist/cli/cli.js');
} else {
  import('../dist/host/cli.js');
}
