// `kiln bdd`'s report formats (host/bdd/formats.ts) against cucumber-js 13 itself. Real cucumber-js runs the
// reference suite in test/fixtures/bdd-reference once (every step status, an outline, a background, a rule, a data
// table, a doc string, tags, text/JSON/PNG attachments and a log line, tagged Before/After hooks, a retried
// scenario) and writes its message stream and every report; each of our formats is fed that same stream, and
// must write what cucumber-js wrote from it. Durations are in the stream, so even those match: nothing is
// normalised. Field-level checks below pin what the reports hold, so a change in both would still be seen.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { createFormatter, FORMAT_NAMES, JUNIT_SUITE_NAME } from '../dist/host/bdd/formats.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const suite = join(root, 'test/fixtures/bdd-reference');
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
const REPORTS = { message: 'messages.ndjson', json: 'report.json', junit: 'junit.xml', html: 'report.html', pretty: 'pretty.txt', progress: 'progress.txt', summary: 'summary.txt' };

let out;
let envelopes;
const reference = {};

before(async () => {
  out = mkdtempSync(join(tmpdir(), 'kiln-bdd-formats-'));
  const args = [join(suite, 'cucumber.cjs'), '--import', 'steps/**/*.mjs', '--retry', '1', '--retry-tag-filter', '@flaky',
    ...Object.entries(REPORTS).flatMap(([format, file]) => ['--format', `${format}:${join(out, file)}`])];
  // Reports in files are uncoloured unless FORCE_COLOR says otherwise (the test runner may set it).
  const env = { ...process.env };
  delete env.FORCE_COLOR;
  const result = await new Promise((done) => {
    execFile(process.execPath, args, { cwd: suite, env, timeout: 60_000 }, (error, stdout, stderr) => done({ code: error ? error.code : 0, stdout, stderr }));
  });
  // The suite fails on purpose (failed, pending, undefined and ambiguous scenarios): exit code 1, not a crash.
  assert.equal(result.code, 1, `cucumber-js: ${result.stderr}\n${result.stdout}`);
  for (const [format, file] of Object.entries(REPORTS)) reference[format] = readFileSync(join(out, file), 'utf8');
  envelopes = reference.message.trim().split('\n').map((line) => JSON.parse(line));
});

after(() => { if (out) rmSync(out, { recursive: true, force: true }); });

/** Everything `format` writes for `stream` (default: cucumber-js's envelopes). */
async function render(format, { stream = envelopes, cwd = suite, colors } = {}) {
  let text = '';
  const formatter = createFormatter(format, (chunk) => { text += chunk; }, { cwd, colors });
  for (const envelope of stream) formatter.update(envelope);
  await formatter.finish();
  return text;
}

const only = (key) => envelopes.filter((e) => e[key]).map((e) => e[key]);

test('the formats are the seven cucumber-js names kiln supports, and no other', () => {
  assert.deepEqual(FORMAT_NAMES, ['pretty', 'progress', 'summary', 'json', 'junit', 'message', 'html']);
  assert.throws(() => createFormatter('rerun', () => {}, { cwd: suite }), /unknown format "rerun"/);
});

test('the reference run covers what the formats must show', () => {
  const statuses = new Set(only('testStepFinished').map((f) => f.testStepResult.status));
  for (const s of ['PASSED', 'FAILED', 'PENDING', 'SKIPPED', 'UNDEFINED', 'AMBIGUOUS']) assert.ok(statuses.has(s), s);
  assert.ok(only('suggestion').length > 0, 'cucumber-js reports an undefined step\'s snippets as a suggestion envelope');
  assert.deepEqual(new Set(only('attachment').map((a) => a.mediaType)), new Set(['text/plain', 'application/json', 'image/png', 'text/x.cucumber.log+plain']));
  assert.ok(only('testCaseFinished').some((f) => f.willBeRetried));
  assert.deepEqual(only('hook').map((h) => h.type), ['BEFORE_TEST_CASE', 'AFTER_TEST_CASE']);
});

test('message: one envelope per line, re-parsing to the same envelopes, as cucumber-js writes them', async () => {
  const text = await render('message');
  assert.equal(text, reference.message);
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'every line ends with a newline');
  assert.deepEqual(lines.map((line) => JSON.parse(line)), envelopes);
});

test('json: the Cucumber JSON report cucumber-js writes, field by field', async () => {
  const text = await render('json');
  const ours = JSON.parse(text);
  assert.deepEqual(ours, JSON.parse(reference.json));
  assert.equal(text, reference.json, 'the same text too: same key order, same indentation, no trailing newline');

  // What the report holds, pinned.
  assert.deepEqual(ours.map((f) => [f.uri, f.id, f.keyword, f.line, f.elements.length]),
    [['features/outlines.feature', 'outlines-and-rules', 'Feature', 1, 4], ['features/statuses.feature', 'step-statuses', 'Feature', 2, 8]]);
  const [outlines, statuses] = ours;
  assert.deepEqual(statuses.tags, [{ name: '@core', line: 1 }]);
  assert.equal(statuses.description, '  Every status a step can end in, one scenario each.');
  const byName = Object.fromEntries([...outlines.elements, ...statuses.elements].map((e) => [e.name, e]));

  const passing = byName['passing, with a data table and a doc string'];
  assert.equal(passing.id, 'step-statuses;passing,-with-a-data-table-and-a-doc-string');
  assert.equal(passing.description, '    A scenario\'s own description.');
  assert.deepEqual(passing.tags, [{ name: '@core', line: 1 }, { name: '@smoke', line: 8 }, { name: '@tables', line: 8 }]);
  assert.deepEqual(passing.steps.map((s) => [s.keyword, s.name, s.line, s.result.status, s.match.location]), [
    ['Given ', 'a clean slate', 6, 'passed', 'steps/steps.mjs:17'], // the Background's step, first in the scenario
    ['Given ', 'the following users:', 11, 'passed', 'steps/steps.mjs:21'],
    ['When ', 'I send the document:', 15, 'passed', 'steps/steps.mjs:25'],
    ['Then ', '2 users are stored', 19, 'passed', 'steps/steps.mjs:29'],
  ]);
  assert.deepEqual(passing.steps[1].arguments, [{ rows: [{ cells: ['name', 'role'] }, { cells: ['alice', 'admin'] }, { cells: ['bob', 'guest'] }] }]);
  assert.deepEqual(passing.steps[2].arguments, [{ content: '{"hello": "world"}', line: 16 }]);
  for (const step of Object.values(byName).flatMap((e) => e.steps)) assert.equal(typeof step.result.duration, 'number');

  const failed = byName.failing.steps[1];
  assert.equal(failed.result.status, 'failed');
  assert.match(failed.result.error_message, /^Error: expected the widget to be blue\n +at /);
  assert.equal(byName.failing.steps[2].result.status, 'skipped');
  assert.equal(byName.pending.steps[1].result.status, 'pending');
  assert.equal(byName.skipped.steps[1].result.status, 'skipped');
  for (const [name, status] of [['undefined', 'undefined'], ['ambiguous', 'ambiguous']]) {
    const step = byName[name].steps[1];
    assert.equal(step.result.status, status);
    assert.equal(step.match, undefined, `${name}: no single step definition, no match`);
    assert.equal(step.result.error_message, undefined);
  }

  const embeddings = byName.attachments.steps[1].embeddings;
  assert.deepEqual(embeddings.map((e) => e.mime_type), ['text/plain', 'application/json', 'image/png', 'text/x.cucumber.log+plain']);
  assert.equal(Buffer.from(embeddings[0].data, 'base64').toString(), 'a note');
  assert.deepEqual(JSON.parse(Buffer.from(embeddings[1].data, 'base64').toString()), { answer: 42 });
  assert.equal(embeddings[2].data, PNG_BASE64);

  // The retried scenario appears once, with its passing last attempt.
  const flaky = statuses.elements.filter((e) => e.name === 'flaky, passing on its second attempt');
  assert.equal(flaky.length, 1);
  assert.deepEqual(flaky[0].steps.map((s) => s.result.status), ['passed', 'passed']);

  // An outline: one element per example row, located at the row, tagged with its Examples' tags.
  assert.deepEqual(outlines.elements.slice(0, 3).map((e) => [e.keyword, e.name, e.line, e.id, e.tags]), [
    ['Scenario Outline', 'adding 2 to 1', 11, 'outlines-and-rules;adding-2-to-1', [{ name: '@small', line: 8 }]],
    ['Scenario Outline', 'adding 2 to 2', 12, 'outlines-and-rules;adding-2-to-2', [{ name: '@small', line: 8 }]],
    ['Scenario Outline', 'adding 20 to 10', 16, 'outlines-and-rules;adding-20-to-10', []],
  ]);
  // A rule: in the id; its tag has no line (cucumber-js does not look in rules); hooks are hidden steps.
  const hooked = byName.hooked;
  assert.equal(hooked.id, 'outlines-and-rules;hooks-run-around-tagged-scenarios;hooked');
  assert.deepEqual(hooked.tags, [{ name: '@ruled' }, { name: '@hooked', line: 24 }]);
  assert.deepEqual(hooked.steps.map((s) => [s.keyword, s.hidden, s.name, s.match?.location]), [
    ['Before', true, undefined, undefined], ['Given ', undefined, 'the number 1', 'steps/steps.mjs:60'],
    ['When ', undefined, 'I add 1', 'steps/steps.mjs:64'], ['Then ', undefined, 'the result is 2', 'steps/steps.mjs:68'],
    ['After', true, undefined, undefined],
  ]);
  assert.deepEqual(hooked.steps[4].embeddings, [{ data: Buffer.from('after hook ran').toString('base64'), mime_type: 'text/plain' }]);
});

test('json: a run cut short before testRunFinished still leaves its report at finish()', async () => {
  const cut = envelopes.filter((e) => !e.testRunFinished);
  assert.deepEqual(JSON.parse(await render('json', { stream: cut })), JSON.parse(reference.json));
  assert.equal(await render('json', { stream: [] }), '[]');
});

test('junit: well-formed XML with the counts of the run, as cucumber-js writes it but for the suite name', async () => {
  const xml = await render('junit');
  assert.equal(XMLValidator.validate(xml), true);
  assert.equal(xml, reference.junit.replace('<testsuite name="Cucumber"', `<testsuite name="${JUNIT_SUITE_NAME}"`));
  const parsed = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '', isArray: (name) => name === 'testcase' }).parse(xml);
  const suiteElement = parsed.testsuite;
  assert.equal(suiteElement.name, 'kiln bdd');
  // 12 scenarios (the retried one once); failed, pending, undefined and ambiguous are failures, skipped is skipped.
  assert.deepEqual([suiteElement.tests, suiteElement.failures, suiteElement.skipped, suiteElement.errors], ['12', '5', '1', '0']);
  const cases = suiteElement.testcase;
  assert.equal(cases.length, 12);
  assert.equal(cases.filter((c) => c.failure !== undefined).length, 5);
  assert.equal(cases.filter((c) => c.skipped !== undefined).length, 1);
  const failing = cases.find((c) => c.name === 'failing');
  assert.equal(failing.classname, 'Step statuses');
  assert.equal(failing.failure.type, 'Error');
  assert.equal(failing.failure.message, 'expected the widget to be blue');
  assert.match(failing['system-out'], /^Given a clean slate\.+passed\nWhen the step fails\.+failed\nThen 2 users are stored\.+skipped$/);
});

test('html: the self-contained page cucumber-js writes, with every envelope embedded', async () => {
  const html = await render('html');
  assert.equal(html, reference.html);
  assert.match(html, /^<!DOCTYPE html>/);
  assert.ok(html.trimEnd().endsWith('</html>'));
  const embedded = /window\.CUCUMBER_MESSAGES = (\[.*?\]);\n<\/script>/s.exec(html);
  assert.ok(embedded, 'the messages are embedded');
  // `<` is written as \x3C, so that no string can close the script element; JSON spells it \u003c.
  assert.deepEqual(JSON.parse(embedded[1].replace(/\\x3C/g, '\\u003c')), envelopes);
});

test('pretty, progress and summary: the text cucumber-js prints', async () => {
  for (const format of ['pretty', 'progress', 'summary']) {
    assert.equal(await render(format), reference[format], format);
  }
});

test('pretty: features, scenarios and steps with their status, errors, ambiguity, attachments, snippets and counts', async () => {
  const text = await render('pretty');
  const lines = text.split('\n');
  const has = (re) => assert.ok(lines.some((l) => re.test(l)), `a line matching ${re}`);
  has(/^Feature: Step statuses$/);
  has(/^ {2}Scenario: failing +# features\/statuses\.feature:21$/);
  has(/^ {2}Scenario Outline: adding 2 to 2 # features\/outlines\.feature:12$/);
  has(/^ {2}Rule: hooks run around tagged scenarios$/);
  has(/^ {4}@ruled @hooked$/);
  has(/^ {4}✔ Given the following users: +# steps\/steps\.mjs:21$/);
  has(/^ {8}\| alice \| admin \|$/);
  has(/^ {8}"""json$/);
  has(/^ {4}✘ When the step fails +# steps\/steps\.mjs:33$/);
  has(/^ {10}Error: expected the widget to be blue$/);
  has(/^ {4}■ Given a pending step +# steps\/steps\.mjs:37$/);
  has(/^ {4}↷ Given a step that skips itself +# steps\/steps\.mjs:41$/);
  has(/^ {4}■ Given a step nobody defined with "a string" and 42$/);
  has(/^ {4}✘ Given an ambiguous step$/);
  has(/^ {10}Multiple matching step definitions found:$/);
  has(/^ {12}• \^an ambiguous \(step\)\$ # steps\/steps\.mjs:46$/);
  has(/^ {10}a note$/);
  has(/^ {10}Embedding \[image\/png 69 bytes\]$/);
  has(/^You can implement missing steps with the snippets below:$/);
  has(/^Given\('a step nobody defined with \{string\} and \{int\}', function \(string, int\) \{$/);
  assertSummary(text);
});

test('progress: one character per step, then the failures and the summary', async () => {
  const text = await render('progress');
  const chars = { PASSED: '.', FAILED: 'F', PENDING: 'P', SKIPPED: '-', UNDEFINED: 'U', AMBIGUOUS: 'A' };
  assert.equal(text.split('\n')[0], only('testStepFinished').map((f) => chars[f.testStepResult.status]).join(''));
  assert.match(text, /\nFailed scenarios:\n {2}1\) adding 2 to 2 # features\/outlines\.feature:12\n/);
  assertSummary(text);
});

test('summary: only the non-passing scenarios, the counts and the snippets', async () => {
  const text = await render('summary');
  assert.doesNotMatch(text, /Feature:|✔/);
  for (const heading of ['Pending scenarios:', 'Undefined scenarios:', 'Ambiguous scenarios:', 'Failed scenarios:']) assert.ok(text.includes(`\n${heading}\n`), heading);
  assert.match(text, /\n {2}2\) failing # features\/statuses\.feature:21\n {7}When the step fails # steps\/steps\.mjs:33\n {11}Error: expected the widget to be blue\n/);
  assertSummary(text);
});

/** cucumber-js 13's summary: statuses from passed to failed, then the run's duration and the time in steps. */
function assertSummary(text) {
  assert.match(text, /\n12 scenarios \(6 passed, 1 skipped, 1 pending, 1 undefined, 1 ambiguous, 2 failed\)\n/);
  assert.match(text, /\n38 steps \(27 passed, 6 skipped, 1 pending, 1 undefined, 1 ambiguous, 2 failed\)\n/);
  assert.match(text, /\n\d+m \d+\.\d{3}s \(\d+m \d+\.\d{3}s executing your code\)\n/);
}

test('colours only when asked, and the same text either way', async () => {
  const previous = process.env.FORCE_COLOR;
  try {
    // Without `colors`, not even FORCE_COLOR colours the output; with it, colours need no terminal.
    for (const force of [undefined, '3']) {
      if (force === undefined) delete process.env.FORCE_COLOR; else process.env.FORCE_COLOR = force;
      for (const format of ['pretty', 'progress', 'summary']) {
        const plain = await render(format, { colors: false });
        assert.doesNotMatch(plain, /\x1b/, `${format} FORCE_COLOR=${force}`);
        const coloured = await render(format, { colors: true });
        assert.match(coloured, /\x1b\[3\dm/, `${format} FORCE_COLOR=${force}`);
        assert.equal(stripVTControlCharacters(coloured), plain, `${format} FORCE_COLOR=${force}`);
      }
    }
  } finally {
    if (previous === undefined) delete process.env.FORCE_COLOR; else process.env.FORCE_COLOR = previous;
  }
});

test('absolute paths and file: URLs under cwd are shown relative, in every format', async () => {
  const absolute = envelopes.map((e) => {
    const clone = structuredClone(e);
    for (const key of ['source', 'gherkinDocument', 'pickle']) if (clone[key]) clone[key].uri = join(suite, clone[key].uri);
    for (const key of ['stepDefinition', 'hook']) if (clone[key]) clone[key].sourceReference.uri = pathToFileURL(join(suite, clone[key].sourceReference.uri)).href;
    return clone;
  });
  for (const format of ['message', 'json', 'junit', 'pretty', 'summary']) {
    const expected = format === 'junit' ? reference.junit.replace('name="Cucumber"', `name="${JUNIT_SUITE_NAME}"`) : reference[format];
    assert.equal(await render(format, { stream: absolute }), expected, format);
  }
  // Outside cwd, a path stays absolute rather than climbing out with `../`.
  const elsewhere = await render('json', { stream: absolute, cwd: join(suite, 'features') });
  assert.equal(JSON.parse(elsewhere)[0].uri, 'outlines.feature');
  assert.equal(JSON.parse(elsewhere)[0].elements[0].steps[0].match.location, `${pathToFileURL(join(suite, 'steps/steps.mjs')).href}:60`);
});

test('guest text cannot drive the terminal: control characters are shown as escapes in the terminal formats', async () => {
  const hostile = '\x1b[2K\x1b]0;owned\x07\u202e';
  const stream = envelopes.map((e) => {
    const clone = structuredClone(e);
    const result = clone.testStepFinished?.testStepResult;
    if (result?.status === 'FAILED') {
      result.message = `${hostile}${result.message}`;
      result.exception.message = `${hostile}${result.exception.message}`;
      result.exception.stackTrace = `${hostile}${result.exception.stackTrace}`;
    }
    if (clone.attachment?.contentEncoding === 'IDENTITY') clone.attachment.body = `${hostile}${clone.attachment.body}`;
    return clone;
  });
  for (const format of ['pretty', 'progress', 'summary']) {
    for (const colors of [false, true]) {
      const text = await render(format, { stream, colors });
      assert.doesNotMatch(stripVTControlCharacters(text), /[\x1b\x07\u202e]/, `${format} colors=${colors}`);
      assert.doesNotMatch(text, /\x1b\[2K|\x1b\]0;/, `${format} colors=${colors}`);
      assert.ok(text.includes('\\u{1b}[2K\\u{1b}]0;owned\\u{7}\\u{202e}'), `${format} colors=${colors}`);
    }
  }
  // The data formats keep the text as it was, escaped by their own syntax.
  const json = await render('json', { stream });
  assert.ok(json.includes('\\u001b[2K'));
  assert.ok(JSON.parse(json)[1].elements.some((e) => e.steps.some((s) => s.result.error_message?.startsWith(hostile))));
});
