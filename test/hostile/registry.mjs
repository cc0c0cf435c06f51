// Attacks on what the registry serves and what the operator's word covers over time: a file that defines
// another's tool name to receive its callers (squat-*), authority that outlives its revocation (revoke-*),
// annotations that call a tool able to send DELETE read-only (annot-*), and sessions that together hold more
// processes than the server allows (proc-server-*).
import assert from 'node:assert/strict';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { call, mcp, tempDir, waitUntil } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, live, serve, sources } from './harness.mjs';

/** A unique sleep duration: its text marks the process in `ps`. */
const unique = () => `48${Math.floor(Math.random() * 1e6)}.${Math.floor(Math.random() * 1e6)}`;
/** The commands (not their reapers) whose command line holds `sleep n`. */
const sleeping = (n) => live(`sleep ${n}`).filter((l) => !l.includes('kiln-reaper'));

// ---- annotations ----------------------------------------------------------------------------------------

attack('annot-net-delete', 'a tool that sends DELETE through allow.net is listed read-only and idempotent', async (t) => {
  const srv = await startServer(t);
  const dir = sources(t, {
    'd.ts': `defineTool({ name: 'd.remove', exposeAsTool: true, allow: { net: ['127.0.0.1'] },
  handler: async ({ args }: any) => (await fetch(args.url, { method: 'DELETE' })).status });
defineTool({ name: 'd.pure', exposeAsTool: true, handler: () => 1 });\n`,
    'e.ts': `defineTool({ name: 'e.pure', exposeAsTool: true, handler: () => 1 });\n`,
  });
  const { client } = await serve(t, [dir]);
  const hints = Object.fromEntries((await client.listTools()).tools.map((x) => [x.name, x.annotations]));
  for (const name of ['d.remove', 'd.pure']) { // d.pure can call d.remove: it shares its file
    assert.equal(hints[name].readOnlyHint, false, `${name} is listed read-only`);
    assert.equal(hints[name].idempotentHint, false, `${name} is listed idempotent`);
    assert.equal(hints[name].destructiveHint, true);
    assert.equal(hints[name].openWorldHint, true);
  }
  assert.equal(hints['e.pure'].readOnlyHint, true, 'a tool that reaches nothing stays read-only');
  // What the listing must account for: the tool does send DELETE.
  assert.equal((await call(client, 'd.remove', { url: `${srv.base}/hello` })).text, '200');
  assert.ok(srv.hits.some((h) => h.method === 'DELETE'));
});
