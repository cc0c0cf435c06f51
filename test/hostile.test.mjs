// The hostile suite (test/hostile/): every attack kiln must contain, run through the real CLI and a real MCP
// client. Each asserts that the attack failed and that its side effect is absent. Prints `N attacks, N contained`.
import { readdirSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { attacks } from './hostile/harness.mjs';

const dir = new URL('./hostile/', import.meta.url);
for (const f of readdirSync(dir).filter((f) => f.endsWith('.mjs') && f !== 'harness.mjs').sort()) {
  await import(new URL(f, dir).href);
}

let contained = 0;
describe('hostile', { concurrency: 3 }, () => {
  for (const a of attacks) {
    test(`${a.id}: ${a.title}`, { timeout: a.timeout }, async (t) => {
      await a.fn(t);
      contained++;
    });
  }
});

after(() => {
  process.stdout.write(`${attacks.length} attacks, ${contained} contained\n`);
});
