// The shape of host/: folders by layer, imports only downward. Read from the sources themselves (every static,
// type-only and dynamic import of a relative module), so a new file or a new import is checked the day it lands:
// no import cycle among host's modules, and host/'s root holds only the entry point and the basics every layer
// uses.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const HOST = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'host');

/** host/'s root: `kiln`'s entry point and the basics below every layer. */
const ROOT_FILES = ['cli.ts', 'errors.ts', 'paths.ts', 'version.ts'];

function sources(dir = HOST) {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Each module's relative imports (static, `import type`, `export … from`, `import()`), as module paths. */
function importGraph() {
  const graph = new Map();
  for (const file of sources()) {
    const text = readFileSync(file, 'utf8');
    const specs = [
      ...[...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'(\.{1,2}\/[^']+)'/gms)].map((m) => m[1]),
      ...[...text.matchAll(/\bimport\(\s*'(\.{1,2}\/[^']+)'\s*\)/g)].map((m) => m[1]),
    ];
    graph.set(file, [...new Set(specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts'))))].filter((t) => t !== file));
  }
  return graph;
}

/** The strongly connected components of more than one module (Tarjan's algorithm, iterative). */
function cycles(graph) {
  let next = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work = [[root, 0]];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length) {
      const top = work[work.length - 1];
      const [v, i] = top;
      const edges = (graph.get(v) ?? []).filter((w) => graph.has(w));
      if (i < edges.length) {
        top[1]++;
        const w = edges[i];
        if (!index.has(w)) {
          index.set(w, next);
          low.set(w, next++);
          stack.push(w);
          onStack.add(w);
          work.push([w, 0]);
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
        continue;
      }
      work.pop();
      if (work.length) {
        const parent = work[work.length - 1][0];
        low.set(parent, Math.min(low.get(parent), low.get(v)));
      }
      if (low.get(v) === index.get(v)) {
        const component = [];
        let w;
        do {
          w = stack.pop();
          onStack.delete(w);
          component.push(relative(HOST, w));
        } while (w !== v);
        if (component.length > 1) found.push(component.sort());
      }
    }
  }
  return found;
}

test('host/ has no import cycle: every import, type-only and dynamic ones included, goes downward', () => {
  const graph = importGraph();
  assert.ok(graph.size > 60, `read ${graph.size} modules`);
  const edges = [...graph.values()].reduce((n, e) => n + e.length, 0);
  assert.ok(edges > 200, `read ${edges} imports`);
  assert.deepEqual(cycles(graph), [], 'import cycles (each line: modules that import each other, directly or not)');
});

test('the cycle check finds a cycle when there is one', () => {
  const a = join(HOST, 'a.ts');
  const b = join(HOST, 'b.ts');
  const c = join(HOST, 'c.ts');
  assert.deepEqual(cycles(new Map([[a, [b]], [b, [c]], [c, [a]]])), [['a.ts', 'b.ts', 'c.ts']]);
  assert.deepEqual(cycles(new Map([[a, [b]], [b, [c]], [c, []]])), []);
});

test("host/'s root holds only the entry point and the basics; everything else is in a folder named for its layer", () => {
  const root = readdirSync(HOST).filter((f) => statSync(join(HOST, f)).isFile());
  assert.deepEqual(root.sort(), ROOT_FILES);
});
