#!/usr/bin/env node
// Every workload of every peer (or the ones named), each in its own process through run-one.mjs, one after
// another. Prints each peer's answers, says whether all peers agree, and a table of medians.
//
//   node bench/peers/run-all.mjs [--peers a,b] [--workloads x,y] [--json FILE] [-- run-one options]
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PEERS, WORKLOADS } from './peers.mjs';

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const own = dash >= 0 ? argv.slice(0, dash) : argv;
const passOn = dash >= 0 ? argv.slice(dash + 1) : [];
const opt = (name) => {
  const i = own.indexOf(name);
  return i >= 0 ? own[i + 1] : undefined;
};
const peers = opt('--peers')?.split(',') ?? Object.keys(PEERS);
const workloads = opt('--workloads')?.split(',') ?? Object.keys(WORKLOADS);
const runOne = fileURLToPath(new URL('./run-one.mjs', import.meta.url));

const results = [];
for (const peer of peers) {
  for (const workload of workloads) {
    try {
      const line = execFileSync(process.execPath, [runOne, peer, workload, ...passOn], {
        encoding: 'utf8', timeout: 5 * 60_000, stdio: ['ignore', 'pipe', 'inherit'],
      });
      results.push(JSON.parse(line.trim().split('\n').pop()));
    } catch (e) {
      results.push({ peer, workload, error: String(e.message).split('\n')[0] });
    }
    const r = results.at(-1);
    process.stderr.write(`${peer} ${workload}: ${r.error ?? (r.medianUs ?? r.rssBytes)}\n`);
  }
}
if (opt('--json')) writeFileSync(opt('--json'), JSON.stringify(results, null, 2));

// ---- answers -----------------------------------------------------------------------------------------
console.log('versions:');
for (const peer of peers) console.log(`  ${peer}: ${results.find((r) => r.peer === peer && r.version)?.version ?? '(failed)'}`);
console.log('answers:');
let agree = true;
for (const workload of workloads) {
  const answers = peers.map((peer) => JSON.stringify(results.find((r) => r.peer === peer && r.workload === workload)?.answer));
  const same = answers.every((a) => a === answers[0]);
  agree &&= same;
  console.log(`  ${workload}: ${same ? `all ${answers[0]}` : peers.map((p, i) => `${p}=${answers[i]}`).join('  ')}`);
}
console.log(agree ? 'all peers agree' : 'PEERS DISAGREE');

// ---- medians -----------------------------------------------------------------------------------------
const cell = (r) => {
  if (!r) return '';
  if (r.error) return 'error';
  if (r.workload === 'rss100') return `${(r.rssBytes / 1024 / 1024).toFixed(2)} MB`;
  return r.medianUs >= 1000 ? `${(r.medianUs / 1000).toFixed(2)} ms` : `${r.medianUs.toFixed(1)} µs`;
};
const header = ['workload (median)', ...peers];
const rows = workloads.map((w) => [w === 'rss100' ? 'RSS per idle instance (100)' : w, ...peers.map((p) => cell(results.find((r) => r.peer === p && r.workload === w)))]);
const widths = header.map((_, i) => Math.max(...[header, ...rows].map((r) => r[i].length)));
const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
console.log(`\npeers — node ${process.version}, ${new Date().toISOString().slice(0, 10)}`);
console.log(line(header));
console.log(line(widths.map((w) => '-'.repeat(w))));
for (const r of rows) console.log(line(r));
process.exitCode = agree && results.every((r) => !r.error) ? 0 : 1;
