#!/usr/bin/env node
// The bundled command line (scripts/bundle-cli.mjs) when it is at least as new as the compiled host; after a
// plain `tsc` the unbundled modules, so an edit never runs stale code.
import { statSync } from 'node:fs';

const mtime = (rel) => statSync(new URL(rel, import.meta.url), { throwIfNoEntry: false })?.mtimeMs ?? -1;
const bundled = mtime('../dist/cli/cli.js') >= mtime('../dist/host/cli.js');
await import(bundled ? '../dist/cli/cli.js' : '../dist/host/cli.js');
