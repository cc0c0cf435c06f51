// immer: produce with nested drafts, Maps and Sets, patches, frozen results.
import { applyPatches, enableMapSet, enablePatches, produce, produceWithPatches, isDraft, current } from 'immer';
import { tool } from './_tool.js';

enableMapSet();
enablePatches();

export const args = {};
export function run() {
  const base = { todos: [{ id: 1, done: false }, { id: 2, done: false }], meta: { n: 2 }, m: new Map([['a', 1]]), s: new Set([1]) };
  let seenDraft, snapshot;
  const next = produce(base, (d) => {
    d.todos[0].done = true;
    d.todos.push({ id: 3, done: false });
    d.m.set('b', 2);
    d.s.add(2);
    seenDraft = isDraft(d.todos);
    snapshot = current(d.meta);
  });
  const [, patches, inverse] = produceWithPatches({ a: [1, 2], b: { c: 1 } }, (d) => { d.a.splice(0, 1); d.b.c = 2; delete d.b.x; d.z = 'new'; });
  return {
    changed: next.todos,
    shared: next.meta === base.meta,
    original: base.todos[0].done,
    frozen: [Object.isFrozen(next), Object.isFrozen(next.todos[2])],
    map: [...next.m], set: [...next.s],
    seenDraft, snapshot,
    patches, inverse,
    applied: applyPatches({ a: [1, 2], b: { c: 1 } }, patches),
  };
}
tool('immer', run);
