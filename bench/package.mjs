#!/usr/bin/env node
// What a user downloads and installs: `npm run bench:package`. Packs this checkout (after `npm run build`
// and the engine build, as `npm pack` does), then installs the tarball into a new empty project three times
// with a warm npm cache (`--prefer-offline`: the registry is asked only for what the cache lacks) and prints
// the tarball's size, the installed size (apparent bytes, and disk blocks as `du` counts them) and the median
// install time. Nothing here asserts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const work = mkdtempSync(join(tmpdir(), 'kiln-bench-package-'));
const sizes = (p) => {
  const st = statSync(p, { throwIfNoEntry: false });
  if (!st || st.isSymbolicLink()) return [0, 0];
  if (!st.isDirectory()) return [st.size, st.blocks * 512];
  return readdirSync(p).map((e) => sizes(join(p, e))).reduce(([a, b], [c, d]) => [a + c, b + d], [0, st.blocks * 512]);
};
try {
  process.stderr.write('[bench:package] npm pack\n');
  const [info] = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  const times = [];
  let installed = [0, 0];
  for (let i = 0; i < 3; i++) {
    const project = join(work, `project-${i}`);
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), '{ "name": "bench-project", "private": true }\n');
    process.stderr.write(`[bench:package] npm install, round ${i + 1} of 3\n`);
    const t = performance.now();
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, info.filename)], { cwd: project, stdio: 'ignore' });
    times.push(performance.now() - t);
    installed = sizes(join(project, 'node_modules'));
  }
  const median = [...times].sort((a, b) => a - b)[1];
  const mb = (b) => `${(b / 1e6).toFixed(1)} MB`;
  console.log(`| tarball | ${mb(info.size)} (${info.files.length} files, ${mb(info.unpackedSize)} unpacked) |`);
  console.log(`| installed node_modules | ${mb(installed[0])} (${mb(installed[1])} on disk) |`);
  console.log(`| npm install, warm cache | ${(median / 1000).toFixed(1)} s median of 3 (${times.map((x) => (x / 1000).toFixed(1)).join(', ')}) |`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
