#!/usr/bin/env node
// One workload of one peer, in this process and nothing else: warm-up, then timed iterations (bounded
// by count and by time), then one JSON line on stdout:
//   {peer, version, workload, nodeFlags, iterations, samplesUs, medianUs, p99Us, rssBytes, answer}
//
//   node bench/peers/run-one.mjs <peer> <workload> [--iterations N] [--warmup N]
//
// Workloads: noop, transform, sort, fib, sieve, hostCalls (one call each per sample);
// newInstance (a fresh sandbox with the workloads loaded + its first noop call; disposed untimed);
// rss100 (100 instances, each after one noop call: rssBytes = (RSS after − RSS before) / 100; pssBytes and
// privateDirtyBytes likewise, from /proc/self/smaps_rollup).
// rssBytes is the process RSS at the end for every other workload.
//
// The process re-runs itself once with --expose-gc and the peer's own Node flags (isolated-vm needs
// --no-node-snapshot on Node 20+).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { makeTransformInput, NOOP_ARGS } from './input.mjs';
import { PEERS, WORKLOADS } from './peers.mjs';

const [peerName, workload, ...rest] = process.argv.slice(2);
const usage = `usage: run-one.mjs <${Object.keys(PEERS).join('|')}> <${Object.keys(WORKLOADS).join('|')}> [--iterations N] [--warmup N]`;
if (!PEERS[peerName] || !WORKLOADS[workload]) {
  console.error(usage);
  process.exit(2);
}
const opt = (name) => {
  const i = rest.indexOf(name);
  return i >= 0 ? Number(rest[i + 1]) : undefined;
};

const flags = ['--expose-gc', ...PEERS[peerName].nodeFlags];
if (process.env.KILN_PEER_CHILD !== '1') {
  const r = spawnSync(process.execPath, [...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, ...PEERS[peerName].env, KILN_PEER_CHILD: '1' },
    timeout: 10 * 60_000,
  });
  process.exit(r.status ?? 1);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 100));
  }
};
/** A short, comparable form of a workload's answer (transform's is ~100 KiB: count, sum and a digest). */
const summarise = (value) => {
  if (value && typeof value === 'object' && Array.isArray(value.items)) {
    return { count: value.count, sum: value.sum, sha256: createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16) };
  }
  return value;
};

const mod = await import(PEERS[peerName].module);
const first = await mod.create();
const cfg = WORKLOADS[workload];
const out = { peer: peerName, version: typeof mod.version === 'function' ? mod.version() : mod.version, workload, nodeFlags: process.execArgv };

/** The process's Pss and private dirty bytes (/proc/self/smaps_rollup): RSS counts a page shared by N
 *  mappings N times, as wasmtime's copy-on-write snapshot pages are; these count what is really used. */
const rollup = () => {
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1] ?? NaN) * 1024;
  return { pss: kb('Pss'), dirty: kb('Private_Dirty') };
};

if (workload === 'rss100') {
  await first.noop(NOOP_ARGS);
  await settle();
  const before = process.memoryUsage.rss();
  const rollBefore = rollup();
  const instances = [];
  for (let i = 0; i < cfg.instances; i++) {
    const inst = await first.newInstance();
    await inst.noop(NOOP_ARGS);
    instances.push(inst);
  }
  await settle();
  const after = process.memoryUsage.rss();
  const rollAfter = rollup();
  Object.assign(out, {
    iterations: cfg.instances, samplesUs: [], medianUs: null, p99Us: null,
    rssBytes: Math.round((after - before) / cfg.instances), rssBeforeBytes: before, rssAfterBytes: after,
    pssBytes: Math.round((rollAfter.pss - rollBefore.pss) / cfg.instances),
    privateDirtyBytes: Math.round((rollAfter.dirty - rollBefore.dirty) / cfg.instances),
    answer: (await Promise.all(instances.map((x) => x.noop(NOOP_ARGS)))).every((r) => r.who === 'x') ? `${cfg.instances} instances answer` : 'wrong answer',
  });
  for (const inst of instances) inst.dispose();
} else {
  const input = workload === 'transform' ? makeTransformInput() : workload === 'noop' ? NOOP_ARGS : undefined;
  let answer;
  const run = workload === 'newInstance'
    ? async () => {
      const t = performance.now();
      const inst = await first.newInstance();
      answer = await inst.noop(NOOP_ARGS);
      const us = (performance.now() - t) * 1000;
      inst.dispose();
      return us;
    }
    : async () => {
      const t = performance.now();
      // Awaited on every side: kiln's calls are asynchronous; for a synchronous peer this costs a microtask.
      answer = await first[workload](input);
      return (performance.now() - t) * 1000;
    };
  const warmup = opt('--warmup') ?? cfg.warmup;
  const iterations = opt('--iterations') ?? cfg.iterations;
  for (let i = 0; i < warmup; i++) await run();
  const samplesUs = [];
  const t0 = performance.now();
  for (let i = 0; i < iterations && performance.now() - t0 < cfg.maxMs; i++) samplesUs.push(await run());
  Object.assign(out, {
    iterations: samplesUs.length,
    samplesUs: samplesUs.map((x) => Math.round(x * 100) / 100),
    medianUs: Math.round(median(samplesUs) * 100) / 100,
    p99Us: Math.round(pct(samplesUs, 0.99) * 100) / 100,
    rssBytes: process.memoryUsage.rss(),
    answer: summarise(answer),
  });
}
first.dispose();
process.stdout.write(`${JSON.stringify(out)}\n`);
