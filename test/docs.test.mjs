// The docs name the host's modules as they are: every `host/...` path in docs/*.md and README.md exists (a
// file or a folder; a glob matches something; a `<placeholder>` is a pattern, not a path). So a module that
// moves or splits takes its mentions with it, in the same commit.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { test } from 'node:test';
import { root } from './helpers.mjs';

const DOCS = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Every `host/...` path a text names: `host/` starting a word (not `dist/host/`, not `localhost/`), up to the
 *  first character a path does not hold; a trailing `.` or `,` ends a sentence, not the path. */
export function hostPaths(text) {
  return [...text.matchAll(/(?<![\w./-])host\/[\w./*<>-]*/g)].map((m) => m[0].replace(/[.,]+$/, ''));
}

/** Whether `path` (relative to the checkout) names something: a file, a folder, or for a glob in its last
 *  part, at least one entry of its folder. */
export function names(path) {
  if (path.includes('<')) return true; // a pattern such as host/capabilities/<key>/
  if (!path.includes('*')) return existsSync(join(root, path));
  const dir = join(root, dirname(path));
  const glob = new RegExp(`^${basename(path).replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
  return existsSync(dir) && readdirSync(dir).some((f) => glob.test(f));
}

test('every host/ path the docs name exists', () => {
  const missing = [];
  let seen = 0;
  for (const doc of DOCS) {
    for (const path of new Set(hostPaths(readFileSync(join(root, doc), 'utf8')))) {
      seen++;
      if (!names(path)) missing.push(`${doc}: ${path}`);
    }
  }
  assert.ok(seen > 50, `read ${seen} host/ paths in ${DOCS.length} documents`);
  assert.deepEqual(missing, [], 'host/ paths named in the docs that do not exist');
});

test('the path check finds a path that does not exist, and reads paths as prose writes them', () => {
  assert.deepEqual(hostPaths('see `host/engine/engine.ts`, host/policy/. Not dist/host/cli.js or localhost/x.'), ['host/engine/engine.ts', 'host/policy/']);
  assert.equal(names('host/engine/engine.ts'), true);
  assert.equal(names('host/policy/'), true);
  assert.equal(names('host/engine/no-such-module.ts'), false);
  assert.equal(names('host/capabilities/<key>/'), true);
  assert.equal(names('host/engine/*.ts'), true);
  assert.equal(names('host/engine/nothing-*.ts'), false);
});

test('docs/deployment.md shows the load balancers\' configurations the scale-out tests run', async () => {
  const { haproxyConfig } = await import('./haproxy.mjs');
  const { nginxConfig } = await import('./nginx.mjs');
  const doc = readFileSync(join(root, 'docs/deployment.md'), 'utf8');
  const blocks = [...doc.matchAll(/```\n([^`]*?)```/g)].map((m) => m[1]);
  const replicas = [1, 2, 3].map((i) => ({ name: `r${i}`, port: 8100 + i }));
  assert.ok(blocks.includes(haproxyConfig(8100, replicas)), 'the HAProxy configuration, as test/haproxy.mjs writes it');
  // nginx's: its http block as the test writes it for two replicas, less the lines naming the test's files.
  const ours = nginxConfig(8100, replicas.slice(0, 2), '/d').split('\n');
  const http = ours.slice(ours.indexOf('http {') + 1, ours.lastIndexOf('}'))
    .filter((l) => !/_path |access_log/.test(l)).map((l) => l.replace(/^ {2}/, '')).join('\n');
  assert.ok(blocks.some((b) => b.trimEnd() === http.trimEnd()), `the nginx configuration, as test/nginx.mjs writes it:\n${http}`);
});

test('docs/extensions.md\'s "Node builtins" tables are host/build/node-builtins.ts\'s lists, at the pinned versions', async () => {
  const { NODE_BUILTINS, REFUSED_BUILTINS, packageVersion } = await import(join(root, 'dist/host/build/node-builtins.js'));
  const doc = readFileSync(join(root, 'docs/extensions.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Node builtins'), doc.indexOf('## Building and checking'));
  const rows = (header) => {
    const at = section.indexOf(header);
    assert.ok(at >= 0, `the table headed ${header}`);
    const lines = section.slice(at).split('\n').slice(2);
    return lines.slice(0, lines.findIndex((l) => !l.startsWith('| '))).map((l) => l.slice(2, -2).split(' | '));
  };
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const served = Object.entries(NODE_BUILTINS).map(([name, impl]) => {
    if ('file' in impl) return [`\`${name}\``, `kiln's \`${impl.file}\``];
    assert.equal(manifest.dependencies[impl.package], packageVersion(impl.package), `${impl.package} is a dependency, pinned to the version installed`);
    return [`\`${name}\``, `npm \`${impl.package}@${packageVersion(impl.package)}\``];
  });
  assert.deepEqual(rows('| built-in | resolves to |'), served);
  assert.deepEqual(rows('| built-in | use instead |'), Object.entries(REFUSED_BUILTINS).map(([name, way]) => [`\`${name}\``, way]));
  for (const impl of Object.values(NODE_BUILTINS)) if ('file' in impl) assert.ok(existsSync(join(root, impl.file)), impl.file);
});
