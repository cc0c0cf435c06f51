// `npm run test:loaded [-- files...]`: `npm test` (package.json's own command, with the given test files in
// place of test/*.test.mjs) with CPU hogs running beside it, one per core by default (KILN_HOGS=n), to show
// that the suite decides by events, not by the clock.
// The hogs end whatever happens: when the suite ends, when this script is interrupted, and on their own if
// this script dies without a word (each checks that its parent is still the one that started it).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

const root = new URL('..', import.meta.url);

const count = Number(process.env.KILN_HOGS ?? availableParallelism());
// A busy loop that leaves when it is orphaned (its parent pid changes), checked every few million turns.
const HOG = 'const p = process.ppid; for (let i = 0; ; i++) if ((i & 0x3fffff) === 0 && process.ppid !== p) process.exit(0);';
const hogs = Array.from({ length: count }, () => spawn(process.execPath, ['-e', HOG], { stdio: 'ignore' }));
const stop = () => { for (const h of hogs) if (h.exitCode === null && h.signalCode === null) h.kill('SIGKILL'); };
process.on('exit', stop);
process.stderr.write(`[test:loaded] ${count} CPU hog(s) running beside npm test\n`);

const files = process.argv.slice(2);
const command = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).scripts.test;
const quote = (s) => `'${s.replaceAll("'", "'\\''")}'`;
const suite = spawn('bash', ['-c', files.length ? command.replace('test/*.test.mjs', files.map(quote).join(' ')) : command], {
  cwd: root, stdio: 'inherit', detached: true, // its own process group: a signal here ends all of it (bash, setup, node --test, its files)
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stop();
    try {
      process.kill(-suite.pid, signal);
    } catch {
      // already gone
    }
    process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1));
  });
}
suite.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
