// Property test of path containment for source builds (host/build/containment.ts) against a reference model:
// a file may be read when, after resolving `..` and `.`, it is under the extension's directory, or inside a
// node_modules directory that belongs to that directory or one of its ancestors. Real directories and
// symlinks on disk: a symlink is followed, so a link pointing out is judged by where it points.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { containmentViolation } from '../dist/host/build/containment.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'kiln-contain-')));
after(() => rmSync(base, { recursive: true, force: true }));
// base/outer/node_modules/pkg, base/outer/ext (the extension root), base/outer/ext/node_modules/lib, base/secret
const root = join(base, 'outer', 'ext');
for (const d of ['outer/node_modules/pkg', 'outer/ext/node_modules/lib', 'outer/ext/src', 'secret']) mkdirSync(join(base, d), { recursive: true });
symlinkSync(join(base, 'secret'), join(root, 'src', 'link-out'));
symlinkSync(join(root, 'src'), join(root, 'node_modules', 'link-in'));

const inside = (p, d) => p === d || p.startsWith(d + sep);
/** The reference: where the path really is (the two symlinks above resolved by hand), then the rule. */
function reference(path) {
  let p = resolve(root, path);
  const out = join(root, 'src', 'link-out'), into = join(root, 'node_modules', 'link-in');
  for (let i = 0; i < 4; i++) {
    if (inside(p, out)) p = join(base, 'secret', p.slice(out.length));
    else if (inside(p, into)) p = join(root, 'src', p.slice(into.length));
  }
  p = resolve(p);
  if (inside(p, root)) return true;
  const parts = p.split(sep);
  const at = parts.indexOf('node_modules');
  if (at < 0) return false;
  const owner = parts.slice(0, at).join(sep);
  return inside(root, owner);
}

test('containment agrees with the reference model on generated paths (3000 cases, real symlinks)', () => {
  const segment = fc.constantFrom('..', '.', 'src', 'node_modules', 'lib', 'pkg', 'link-out', 'link-in', 'secret', 'outer', 'ext', 'x.ts');
  fc.assert(fc.property(fc.array(segment, { minLength: 1, maxLength: 8 }), (segs) => {
    const path = segs.join('/');
    const allowed = containmentViolation(root, resolve(root, path)) === undefined;
    assert.equal(allowed, reference(path), `${path} → ${resolve(root, path)}`);
  }), { numRuns: 3000 });
});
