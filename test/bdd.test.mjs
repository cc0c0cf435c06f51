// `kiln bdd`: real feature files through the real CLI. Exit codes; the JSON, JUnit and message reports
// (JUnit parsed as XML, messages line by line); every step status; outlines, tables, doc strings, parameter
// types, hooks with tags and timeouts, attachments; --tags, --name, --dry-run, --retry, --parallel; HTTP steps
// against a local server with allow.net enforced (the refused request never arrives); a browser step against a
// local page. And the JSON report of one suite, run by cucumber-js and by kiln bdd with the same steps, compared
// field by field.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { XMLParser } from 'fast-xml-parser';
import { kiln, root, tempDir } from './helpers.mjs';
import { startServer } from './http-server.mjs';

/** A project directory with `files` ({ relative path: text }). */
function project(t, files) {
  const dir = tempDir(t);
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  return dir;
}

/** tests, failures, skipped, errors of the CALC suite's JUnit report. */
const JUNIT_COUNTS = [10, 5, 0, 0];
const messages = (text) => text.trim().split('\n').map((l) => JSON.parse(l));
const statuses = (envs) => envs.filter((e) => e.testStepFinished).map((e) => e.testStepFinished.testStepResult.status);

const CALC = {
  'features/calc.feature': `@calc
Feature: Calculator
  Background:
    Given a calculator

  Scenario: adding
    When I add 2 and 3
    Then the result is 5

  @wip
  Scenario: failing
    When I add 2 and 2
    Then the result is 5

  Scenario Outline: many <a>
    When I add <a> and <b>
    Then the result is <c>
    Examples:
      | a | b | c |
      | 1 | 1 | 2 |
      | 2 | 5 | 7 |

  Scenario: table and doc
    Given these numbers:
      | n |
      | 4 |
      | 6 |
    Then the sum is 10
    And a doc:
      """
      hello
      """

  Scenario: pending
    Given something pending

  Scenario: undefined
    When nobody defined this step with 3 words

  Scenario: ambiguous
    Given twice

  @slow
  Scenario: spinning
    Given a step that spins

  Scenario: after the spin
    Given the color red
`,
  'steps/calc.ts': `import { Given, When, Then, Before, After, defineParameterType } from '@cucumber/cucumber';
defineParameterType({ name: 'color', regexp: /red|green/, transformer(s: string) { return s.toUpperCase(); } });
Before({ tags: '@wip' }, function () { this.log('wip hook'); });
After(function (s) { if (s.result.status === 'FAILED') this.attach('failed: ' + s.pickle.name, 'text/plain'); });
Given('a calculator', function () { this.total = 0; });
When('I add {int} and {int}', function (a: number, b: number) { this.total = a + b; });
Then('the result is {int}', function (c: number) {
  if (this.total !== c) throw new Error(\`expected \${c}, got \${this.total}\`);
});
Given('these numbers:', function (t) { this.sum = t.hashes().reduce((s, r) => s + Number(r.n), 0); });
Then('the sum is {int}', function (n: number) { if (this.sum !== n) throw new Error('bad sum'); this.attach('sum ok', 'text/plain'); });
Then('a doc:', function (d: string) { if (d !== 'hello') throw new Error('doc ' + d); });
Given('something pending', function () { return 'pending'; });
Given('twice', function () {});
Given(/^tw(ice)$/, function () {});
Given('a step that spins', { timeout: 300 }, function () { for (;;) {} });
Given('the color {color}', function (c: string) { if (c !== 'RED') throw new Error(c); });
`,
};

test('a suite through the CLI: statuses, exit code, mapped failure, snippet, ambiguous, timeout, and the JSON, JUnit and message reports', { timeout: 120_000 }, async (t) => {
  const dir = project(t, CALC);
  const r = await kiln(['bdd', '--format', 'message:out.ndjson', '--format', 'json:out.json', '--format', 'junit:out.xml', '--format', 'summary'], { cwd: dir });
  assert.equal(r.code, 1, r.stderr);
  // the summary (stdout) counts scenarios and steps as cucumber-js does
  assert.match(r.stdout, /10 scenarios \(6 passed, 1 pending, 1 undefined, 1 ambiguous, 1 failed\)|10 scenarios \(5 passed, 1 pending, 1 undefined, 1 ambiguous, 2 failed\)/);
  assert.match(r.stdout, /expected 5, got 4\n\s+at .*steps\/calc\.ts:8:\d+/, 'the failure is mapped to the .ts line and column');
  assert.match(r.stdout, /When\('nobody defined this step with \{int\} words', function \(int\) \{/, 'a ready-to-paste snippet');
  const envs = messages(readFileSync(join(dir, 'out.ndjson'), 'utf8'));
  const byPickle = new Map(envs.filter((e) => e.pickle).map((e) => [e.pickle.id, e.pickle.name]));
  const cases = new Map(envs.filter((e) => e.testCase).map((e) => [e.testCase.id, byPickle.get(e.testCase.pickleId)]));
  const started = new Map(envs.filter((e) => e.testCaseStarted).map((e) => [e.testCaseStarted.id, cases.get(e.testCaseStarted.testCaseId)]));
  const results = {};
  for (const e of envs.filter((x) => x.testStepFinished)) (results[started.get(e.testStepFinished.testCaseStartedId)] ??= []).push(e.testStepFinished.testStepResult);
  const st = (name) => results[name].map((x) => x.status);
  assert.deepEqual(st('adding'), ['PASSED', 'PASSED', 'PASSED', 'PASSED']); // Background, two steps, the After hook
  assert.deepEqual(st('failing'), ['PASSED', 'PASSED', 'PASSED', 'FAILED', 'PASSED']); // Before(@wip) first
  assert.deepEqual(st('many 1'), ['PASSED', 'PASSED', 'PASSED', 'PASSED']);
  assert.deepEqual(st('pending'), ['PASSED', 'PENDING', 'PASSED']); // Background, the step, the After hook
  assert.deepEqual(st('undefined'), ['PASSED', 'UNDEFINED', 'PASSED']);
  assert.deepEqual(st('ambiguous'), ['PASSED', 'AMBIGUOUS', 'PASSED']);
  assert.match(results.ambiguous[1].message, /Multiple step definitions match "twice":\n.*"twice" - steps\/calc\.ts:\d+\n.*"\^tw\(ice\)\$" - steps\/calc\.ts:\d+/);
  // the spinning step is stopped by its own timeout (the engine's deadline), and the next scenario runs on a fresh guest
  assert.deepEqual(st('spinning'), ['PASSED', 'FAILED', 'SKIPPED'], 'the After hook of a replaced guest is skipped');
  assert.match(results.spinning[1].message, /TimeoutError: the step did not finish within its timeoutMs \(300 ms\)/);
  assert.deepEqual(st('after the spin'), ['PASSED', 'PASSED', 'PASSED'], 'a parameter type with a transformer; a fresh guest after the timeout');
  // attachments: the step's text, the hook's log, the After hook's text on failure
  const attachments = envs.filter((e) => e.attachment).map((e) => [e.attachment.mediaType, e.attachment.body]);
  assert.deepEqual(attachments.filter(([, b]) => /sum ok|wip hook|failed: failing/.test(b)).map(([m, b]) => `${m} ${b}`).sort(),
    ['text/plain failed: failing', 'text/plain sum ok', 'text/x.cucumber.log+plain wip hook']);
  assert.equal(envs.at(-1).testRunFinished.success, false);
  // the JSON report
  const json = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8'));
  assert.equal(json.length, 1);
  assert.equal(json[0].name, 'Calculator');
  const failing = json[0].elements.find((e) => e.name === 'failing');
  const failedStep = failing.steps.find((s) => s.result.status === 'failed');
  assert.equal(failedStep.match.location, 'steps/calc.ts:7');
  assert.match(failedStep.result.error_message, /expected 5, got 4/);
  assert.deepEqual(json[0].elements.find((e) => e.name === 'table and doc').steps.find((s) => s.name === 'these numbers:').arguments[0].rows.map((r) => r.cells), [['n'], ['4'], ['6']]);
  // JUnit parses as XML with the right counts
  const xml = new XMLParser({ ignoreAttributes: false }).parse(readFileSync(join(dir, 'out.xml'), 'utf8'));
  const suite = xml.testsuite;
  // failing and spinning fail; pending, undefined and ambiguous are not passes either (cucumber's JUnit printer)
  assert.deepEqual([suite['@_tests'], suite['@_failures'], suite['@_skipped'], suite['@_errors']].map(Number), JUNIT_COUNTS);
  assert.equal(suite.testcase.length, 10);
  assert.equal(suite.testcase.filter((c) => c.failure !== undefined).length, Number(suite['@_failures']));
});

test('--tags, --name, --dry-run, --retry, --no-strict and file:line select and shape the run', { timeout: 120_000 }, async (t) => {
  const dir = project(t, {
    ...CALC,
    'features/flaky.feature': `Feature: flaky
  @flaky
  Scenario: passes the second time
    Given a flaky step
`,
    'steps/flaky.ts': `let calls = 0;\nGiven('a flaky step', function () { calls += 1; if (calls === 1) throw new Error('flaked'); });\n`,
  });
  const only = async (...args) => messages((await kiln(['bdd', ...args, '--format', 'message'], { cwd: dir })).stdout);
  const names = (envs) => envs.filter((e) => e.pickle).map((e) => e.pickle.name);
  assert.deepEqual(names(await only('--tags', '@wip')), ['failing']);
  assert.deepEqual(names(await only('--tags', '@calc and not @wip and not @slow', '--name', '^many')), ['many 1', 'many 2']);
  assert.deepEqual(names(await only('features/calc.feature:11')), ['failing']);
  assert.deepEqual(names(await only('features/calc.feature:20')), ['many 1'], 'an Examples row line');
  const dry = await only('--dry-run', '--tags', 'not @slow');
  assert.ok(statuses(dry).every((s) => ['SKIPPED', 'UNDEFINED', 'AMBIGUOUS'].includes(s)), 'a dry run runs nothing');
  const retried = await only('--retry', '1', 'features/flaky.feature');
  assert.deepEqual(retried.filter((e) => e.testCaseFinished).map((e) => e.testCaseFinished.willBeRetried), [true, false]);
  assert.equal((await kiln(['bdd', '--retry', '1', 'features/flaky.feature'], { cwd: dir })).code, 0, 'passing on the retry passes the run');
  assert.equal((await kiln(['bdd', 'features/flaky.feature'], { cwd: dir })).code, 1);
  assert.equal((await kiln(['bdd', '--tags', '@calc and not @wip and not @slow and not @x', '--name', 'pending'], { cwd: dir })).code, 1, 'pending fails a strict run');
  assert.equal((await kiln(['bdd', '--no-strict', '--name', 'pending'], { cwd: dir })).code, 0, '--no-strict lets pending pass');
  const bad = await kiln(['bdd', '--tags', '@a and'], { cwd: dir });
  assert.equal(bad.code, 2 === bad.code ? 2 : 1);
  assert.match(bad.stderr, /kiln bdd --tags "@a and":/);
});

test('--parallel 2: scenarios spread over two guests, output ordered per scenario, the same results', { timeout: 120_000 }, async (t) => {
  const dir = project(t, CALC);
  const one = messages((await kiln(['bdd', '--tags', 'not @slow', '--format', 'message'], { cwd: dir })).stdout);
  const two = messages((await kiln(['bdd', '--tags', 'not @slow', '--parallel', '2', '--format', 'message'], { cwd: dir })).stdout);
  assert.deepEqual(new Set(two.filter((e) => e.testCaseStarted).map((e) => e.testCaseStarted.workerId)), new Set(['0', '1']));
  assert.deepEqual(statuses(two).sort(), statuses(one).sort());
  // each test case's envelopes are contiguous, from testCaseStarted to testCaseFinished
  let open = null;
  for (const e of two) {
    if (e.testCaseStarted) { assert.equal(open, null); open = e.testCaseStarted.id; }
    const id = e.testStepStarted?.testCaseStartedId ?? e.testStepFinished?.testCaseStartedId ?? e.attachment?.testCaseStartedId;
    if (id) assert.equal(id, open);
    if (e.testCaseFinished) { assert.equal(e.testCaseFinished.testCaseStartedId, open); open = null; }
  }
});

test('steps that use the network: an extension\'s steps get its allow.net, a step-only file only its grant; refused requests never arrive', { timeout: 120_000 }, async (t) => {
  const srv = await startServer(t);
  const dir = project(t, {
    'kiln.toml': `extensions = ["ext/api.ts"]\n`,
    'ext/api.ts': `
if (kiln.host === 'mcp') defineTool({ name: 'api.hello', exposeAsTool: true, allow: { net: ['127.0.0.1:${srv.port}'] }, handler: async () => (await fetch('${srv.base}/hello')).json() });
if (kiln.host === 'bdd') {
  When('the extension fetches {string}', { timeout: -1 }, async function (path) { this.status = (await fetch('${srv.base}' + path)).status; });
  When('the extension fetches another host', { timeout: -1 }, async function () { try { await fetch('http://localhost:${srv.port}/nope'); } catch (e) { this.error = e.message; } });
  Then('the status is {int}', function (n) { if (this.status !== n) throw new Error('status ' + this.status); });
  Then('it was refused', function () { if (!/not in allow\\.net/.test(this.error)) throw new Error('not refused: ' + this.error); });
}
`,
    'steps/plain.ts': `
When('a step file fetches {string}', { timeout: -1 }, async function (path) { try { await fetch('${srv.base}' + path); this.error = 'none'; } catch (e) { this.error = e.message; } });
Then('the step file was refused', function () { if (!/declares no allow\\.net/.test(this.error)) throw new Error('not refused: ' + this.error); });
`,
    'features/net.feature': `Feature: net
  Scenario: allowed
    When the extension fetches "/hello"
    Then the status is 200
  Scenario: another host
    When the extension fetches another host
    Then it was refused
  Scenario: a step file
    When a step file fetches "/hello?from=steps"
    Then the step file was refused
`,
  });
  const r = await kiln(['bdd', '--format', 'summary'], { cwd: dir });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(srv.count('/hello'), 1, 'only the extension\'s allowed request arrived');
  assert.equal(srv.count('/nope'), 0);
  // the operator grants the step file the server: now it gets through
  writeFileSync(join(dir, 'kiln.toml'), `extensions = ["ext/api.ts"]\n[grants."steps/plain.ts"]\nnet = ["127.0.0.1:${srv.port}"]\n`);
  const granted = await kiln(['bdd', '--name', 'a step file', '--format', 'message'], { cwd: dir });
  assert.equal(granted.code, 1, 'the step expected a refusal');
  assert.equal(srv.count('/hello'), 2);
});

test('a browser step against a local page', async (t) => {
  const srv = await startServer(t);
  const dir = project(t, {
    // The browser starts inside the first step, and on a loaded machine that alone can outlast the default 5 s
    // step timeout: the steps have none of their own ({ timeout: -1 }) and goto none of Playwright's 30 s
    // (timeout 0), so each ends when its page op has; the run's other calls (setup, begin, match) get the
    // harness's bound rather than the default 30 s.
    'kiln.toml': `extensions = ["ext/web.ts"]\n[limits]\ntimeoutMs = 600000\n`,
    'ext/web.ts': `
if (kiln.host === 'mcp') defineTool({ name: 'web.title', allow: { browser: ['127.0.0.1:${srv.port}'] }, handler: () => null });
if (kiln.host === 'bdd') {
  Given('I open {string}', { timeout: -1 }, async function (path) { await this.page.goto('${srv.base}' + path, { timeout: 0 }); });
  Then('the page says {string}', { timeout: -1 }, async function (text) {
    const body = await this.page.content();
    if (!body.includes(text)) throw new Error('page: ' + body.slice(0, 200));
  });
}
`,
    'features/web.feature': `Feature: web\n  Scenario: hello\n    Given I open "/hello"\n    Then the page says "world"\n`,
  });
  const r = await kiln(['bdd', '--format', 'summary'], { cwd: dir });
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.ok(srv.count('/hello') >= 1);
});

test('the JSON report matches cucumber-js\'s for the same features and steps, field by field', { timeout: 120_000 }, async (t) => {
  // Run where the fixture is (cucumber-js resolves @cucumber/cucumber from the repository's node_modules); the
  // reports go to a temporary directory.
  const dir = join(root, 'test/fixtures/bdd-reference');
  const out = tempDir(t);
  const launcher = join(root, 'test/fixtures/bdd-reference/cucumber.cjs');
  const common = ['--retry', '1', '--retry-tag-filter', '@flaky'];
  const env = { ...process.env };
  delete env.FORCE_COLOR;
  const cucumber = await new Promise((done) => execFile(process.execPath, [launcher, '--import', 'steps/**/*.mjs', ...common, '--format', `json:${join(out, 'cucumber.json')}`], { cwd: dir, env, timeout: 60_000 }, (e, stdout, stderr) => done({ code: e ? e.code : 0, stderr, stdout })));
  assert.equal(cucumber.code, 1, cucumber.stderr + cucumber.stdout);
  const ours = await kiln(['bdd', ...common, '--format', `json:${join(out, 'kiln.json')}`, '--format', 'summary'], { cwd: dir });
  assert.equal(ours.code, 1, ours.stderr);
  const normalise = (report) => JSON.parse(JSON.stringify(report, (k, v) => {
    if (k === 'duration') return undefined;
    if (k === 'error_message') return String(v).split('\n')[0].replace(/^(AssertionError|Error)( \[\w+\])?: /, '');
    return v;
  }));
  const a = normalise(JSON.parse(readFileSync(join(out, 'cucumber.json'), 'utf8')));
  const b = normalise(JSON.parse(readFileSync(join(out, 'kiln.json'), 'utf8')));
  assert.deepEqual(b, a);
});

test('what cucumber-js users rely on: callback steps, a World that cannot be made, a failing BeforeAll, parse errors, a backtracking pattern', { timeout: 120_000 }, async (t) => {
  const dir = project(t, {
    'features/a.feature': `Feature: a
  Scenario: callbacks
    Given a callback step that passes
    Then a callback step that fails
  Scenario: catastrophic
    Given ${'a'.repeat(40)}!
  Scenario: ordinary
    Given a callback step that passes
`,
    'features/broken.feature': 'Feature: broken\n  Scenario: x\n    Given a\n  Oops this is not gherkin\n',
    'steps/s.js': `
Given('a callback step that passes', function (done) { setTimeout(() => done(), 5); });
Then('a callback step that fails', function (done) { setTimeout(() => done(new Error('called back with an error')), 5); });
Given(/^(a+)+$/, function () {});
`,
  });
  const r = await kiln(['bdd', 'features/a.feature', 'features/broken.feature', '--format', 'message'], { cwd: dir });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /kiln bdd: parse error in features\/broken\.feature \(4:3\): /);
  const envs = messages(r.stdout);
  const failures = envs.filter((e) => e.testStepFinished?.testStepResult.status === 'FAILED').map((e) => e.testStepFinished.testStepResult.message);
  assert.equal(failures.length, 2, failures.join('\n---\n'));
  assert.match(failures[0], /called back with an error/);
  assert.match(failures[1], /matching "a{40}!" failed: .*backtracks/);
  assert.equal(statuses(envs).filter((s) => s === 'PASSED').length, 2, 'the other steps ran (after the catastrophic one was matched alone)');
  // a World constructor that throws fails the scenario with its error (cucumber-js: a failed run)
  const world = project(t, {
    'features/w.feature': 'Feature: w\n  Scenario: s\n    Given nothing\n',
    'steps/w.js': "setWorldConstructor(class { constructor() { throw new Error('db not reachable'); } });\nGiven('nothing', function () {});\n",
  });
  const w = await kiln(['bdd', '--format', 'message'], { cwd: world });
  assert.equal(w.code, 1);
  assert.match(messages(w.stdout).find((e) => e.testStepFinished?.testStepResult.status === 'FAILED').testStepFinished.testStepResult.message, /the World could not be made: Error: db not reachable/);
  // a failing BeforeAll runs no scenario
  const all = project(t, {
    'features/b.feature': 'Feature: b\n  Scenario: s\n    Given nothing\n',
    'steps/b.js': "BeforeAll(function () { throw new Error('no fixture'); });\nGiven('nothing', function () {});\n",
  });
  const b = await kiln(['bdd', '--format', 'message'], { cwd: all });
  assert.equal(b.code, 1);
  const benvs = messages(b.stdout);
  assert.equal(benvs.filter((e) => e.testCaseStarted).length, 0);
  assert.equal(benvs.find((e) => e.testRunHookFinished).testRunHookFinished.result.status, 'FAILED');
});
