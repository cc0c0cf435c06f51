// The command line: help for every subcommand, documented exit codes, --version.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { kiln, root } from './helpers.mjs';

test('every subcommand has --help (exit 0), and the overview documents the exit codes', async () => {
  for (const cmd of ['build', 'inspect', 'run', 'mcp']) {
    for (const flag of ['--help', '-h']) {
      const r = await kiln([cmd, flag]);
      assert.equal(r.code, 0, `${cmd} ${flag}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^usage:\\n  kiln ${cmd} `), `${cmd} ${flag}`);
    }
  }
  const overview = await kiln(['--help']);
  assert.equal(overview.code, 0);
  assert.match(overview.stdout, /exit codes: 0 success; 1 .*; 2 a usage error/);
});

test('a usage error exits 2 with the reason; --version prints the version', async () => {
  const bogus = await kiln(['mcp', '--bogus']);
  assert.equal(bogus.code, 2);
  assert.match(bogus.stderr, /^kiln: Unknown option '--bogus'/);
  assert.equal((await kiln(['nonsense'])).code, 2);
  const v = await kiln(['--version']);
  assert.equal(v.code, 0);
  assert.equal(v.stdout.trim(), JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
});
