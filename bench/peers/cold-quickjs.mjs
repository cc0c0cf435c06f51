#!/usr/bin/env node
// Whole-process cold start of the quickjs-emscripten peer: load the sandbox, run the noop workload on
// {"who":"x"}, print the result. Time the whole process from outside:
//   hyperfine --warmup 3 'node bench/peers/cold-quickjs.mjs'
import { create } from './quickjs.mjs';

const sandbox = await create();
process.stdout.write(`${JSON.stringify(sandbox.noop('{"who":"x"}'))}\n`);
sandbox.dispose();
