// js-yaml: load with anchors and the core schema, dump with options, errors with a position.
import * as yaml from 'js-yaml';
import { tool } from './_tool.js';

export const args = {};
export function run() {
  const doc = yaml.load('base: &b {x: 1, y: [a, b]}\nuse:\n  <<: *b\n  y: 2\nn: ~\nbig: 0x1F\nf: .inf\nd: 2001-12-14t21:59:43.10-05:00\n');
  let error;
  try {
    yaml.load('a: [1, 2\nb: 3');
  } catch (e) {
    error = [e.name, e.reason, e.mark.line, e.mark.column];
  }
  return {
    doc: { ...doc, f: String(doc.f) },
    all: yaml.loadAll('--- 1\n--- [2]\n--- {a: 3}'),
    dump: yaml.dump({ a: 'multi\nline', b: [1, { c: null }], 'key with: colon': true, e: '' }, { sortKeys: true, lineWidth: 40 }),
    flow: yaml.dump({ a: [1, 2] }, { flowLevel: 0 }),
    error,
  };
}
tool('js-yaml', run);
