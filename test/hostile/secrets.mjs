// Attacks on the operator's secrets ([secrets.*], allow.secrets): an extension that declares another one's
// secret to have it added to its own requests (in mode "granted" and in the default mode "declared"). Each
// asserts that the attack failed and that the secret appears nowhere: not in a local server's log of request
// headers, not in the result.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { call } from '../helpers.mjs';
import { startServer } from '../http-server.mjs';
import { attack, serve, serverPid, sources, token } from './harness.mjs';

const SECRET_ENV = 'HOSTILE_TEST_SECRET';
const secretValue = () => token('S3CRET');

const secretTable = (port) => `[secrets.github]
env = "${SECRET_ENV}"
hosts = ["127.0.0.1:${port}"]
header = "authorization"
format = "Bearer {}"
`;

const fetcher = (name, port, secrets) => `defineTool({ name: '${name}', exposeAsTool: true,
  allow: { net: ['127.0.0.1:${port}'], secrets: ${JSON.stringify(secrets)} },
  handler: async ({ args }: any) => { try { const r = await fetch(args.url); return String(r.status); } catch (e: any) { return e.name + ': ' + e.message; } } });`;

for (const mode of ['granted', 'declared']) {
  attack(`secret-grant-steal-${mode}`, `mode "${mode}": an extension declares another extension's secret to get it on its own requests`, async (t) => {
    const srv = await startServer(t);
    const value = secretValue();
    const dir = sources(t, {
      'victim.ts': fetcher('victim.get', srv.port, ['github']),
      'thief.ts': fetcher('thief.get', srv.port, ['github']),
      'kiln.toml': `extensions = ["victim.ts", "thief.ts"]
[policy]
mode = "${mode}"
${secretTable(srv.port)}
[grants."victim.ts"]
net = ["127.0.0.1:${srv.port}"]
secrets = ["github"]
${mode === 'granted' ? `[grants."thief.ts"]\nnet = ["127.0.0.1:${srv.port}"]\n` : ''}`,
    });
    const { client, stderr } = await serve(t, ['--config', join(dir, 'kiln.toml')], { env: { [SECRET_ENV]: value } });
    // The victim, granted the secret, gets it: the secret is configured and works.
    const ok = await call(client, 'victim.get', { url: `${srv.base}/hello?who=victim` });
    assert.equal(ok.text, '200', ok.text);
    assert.deepEqual(srv.hits.map((h) => h.headers.authorization), [`Bearer ${value}`]);
    // The thief, granted the host and not the secret, is refused before its handler runs, naming the line to add.
    const r = await call(client, 'thief.get', { url: `${srv.base}/hello?who=thief` });
    assert.equal(r.isError, true, r.text);
    assert.match(r.text, /^PermissionError: tool "thief\.get" declares secrets "github", but the operator has not granted it to thief\.ts .*to allow it, add (the line secrets = \["github"\] to \[grants\."thief\.ts"\]|the table \[grants\."thief\.ts"\] with the line secrets = \["github"\])/);
    assert.equal(srv.hits.length, 1, 'the thief reached the server');
    assert.equal(JSON.stringify(srv.hits).split(value).length, 2, 'the secret reached the server once, from the victim only');
    assert.ok(!r.text.includes(value) && !stderr().includes(value));
    // kiln_extensions says who may use it.
    const report = (await call(client, 'kiln_extensions')).json;
    assert.deepEqual(report.operator.secrets.github.grantedTo, ['victim.ts']);
    const thief = report.extensions.find((e) => e.file.endsWith('thief.ts')).tools[0];
    assert.deepEqual([thief.declared.secrets, thief.granted.secrets, thief.effective.secrets], [['github'], [], []]);
  });
}
