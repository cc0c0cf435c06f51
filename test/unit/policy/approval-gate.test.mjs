// Unit tests of host/policy/approvals/gate.ts: ApprovalGate.approve with a fake asker (what MCP elicitation
// would be) and a fake audit log, no server. What is proven here, each by what the asker saw and what the
// audit recorded: "deny" never asks (a use mode "ask" forces to a human included); a forced use is asked
// even when [approvals] asks for nothing; the question's three lines (the guest's on the first only); the
// per-call bound (refused unasked, the setting named) and the per-session bound (the rest wait, a "session"
// answer given meanwhile covers them, a cancelled waiter leaves the queue); every answer that is not a
// clear yes is a refusal; "session" answers are per session and per exact target; "always" answers live in
// the operator's store file (0600, no argument value in it, a broken file never overwritten).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AlwaysStore, ApprovalGate, approvalsOff } from '../../../dist/host/policy/approvals/gate.js';
import { QUESTION_MAX_CHARS } from '../../../dist/host/policy/approvals/question.js';
import { DEFAULT_APPROVALS } from '../../../dist/host/policy/approvals/settings.js';

const EXT = { file: '/srv/ext/notes.ts', sha256: 'ab'.repeat(32) };
const STRICT = { ...DEFAULT_APPROVALS, preset: 'strict' };
const CMD = { op: 'command', command: 'deploy', argv: ['deploy', '--prod', 'ARGV-MARK'] };

function audit() {
  const lines = [];
  return { lines, write: (r) => lines.push(r), events: () => lines.map((r) => r.event) };
}

/** A gate with a fake audit log and an asker answering from `queue` (each an answer, or a function of the
 *  form and signal); every form asked is kept in `forms`. */
function setup(settings = STRICT, queue = [], warn = () => {}) {
  const log = audit();
  const gate = new ApprovalGate(settings, log, warn);
  const forms = [];
  const ask = async (form, signal) => {
    forms.push(form);
    const next = queue.shift();
    assert.ok(next, `an unexpected question: ${form.message}`);
    return typeof next === 'function' ? next(form, signal) : next;
  };
  const subject = (over = {}) => ({
    session: 's1', sessionKey: over.sessionKey ?? sessionA, extension: EXT, tool: 'notes.edit',
    signal: new AbortController().signal, via: { ask }, ...over,
  });
  return { gate, log, forms, subject };
}
const sessionA = {};
const accept = (allow) => ({ action: 'accept', content: { allow } });
const refused = (re) => (e) => e.name === 'PermissionError' && re.test(e.message);

test('approvalsOff: only the permissive preset with no rules and default "allow" asks for nothing', () => {
  assert.equal(approvalsOff(DEFAULT_APPROVALS), true);
  assert.equal(approvalsOff({ ...DEFAULT_APPROVALS, default: 'require' }), false);
  assert.equal(approvalsOff({ ...DEFAULT_APPROVALS, preset: 'balanced' }), false);
  assert.equal(approvalsOff({ ...DEFAULT_APPROVALS, rules: [{ verdict: 'allow' }] }), false, 'a rule, even an allow, is a setting');
  assert.equal(new ApprovalGate(undefined).settings, DEFAULT_APPROVALS, 'no [approvals]: the defaults');
});

test('approvals off: an operation goes ahead without a question and without an audit line', async () => {
  const { gate, log, forms, subject } = setup(DEFAULT_APPROVALS);
  await gate.approve(CMD, subject());
  assert.deepEqual([forms.length, log.lines.length], [0, 0]);
});

test('"deny" never asks, also when mode "ask" forces the use to a human; the refusal names the rule', async () => {
  const settings = { ...DEFAULT_APPROVALS, rules: [{ id: 'no-deploy', op: ['command'], command: ['deploy'], verdict: 'deny' }] };
  const { gate, log, forms, subject } = setup(settings, [accept('once')]);
  const forced = { rule: '[policy] mode = "ask" (commands "deploy" is declared, not granted)', hint: 'to allow it, add "deploy" to commands' };
  for (const f of [undefined, forced]) {
    await assert.rejects(gate.approve(CMD, subject(), f), refused(/^tool "notes\.edit" may not run command "deploy": the operator's approvals\.rules\[0\] "no-deploy" denies it \(kiln\.toml \[approvals\]\)$/));
  }
  assert.equal(forms.length, 0, 'nobody was asked');
  assert.deepEqual(log.events(), ['decision', 'decision']);
  assert.ok(log.lines.every((r) => r.verdict === 'deny' && r.target === 'deploy' && !JSON.stringify(r).includes('ARGV-MARK')), 'no argv in the audit');
});

test('a forced use is asked even when [approvals] asks for nothing; with nobody to ask, the grant\'s own line is the hint', async () => {
  const forced = { rule: '[policy] mode = "ask" (net "x.test" is declared, not granted)', hint: 'to allow it, add "x.test" to net in [grants."notes.ts"]' };
  const req = { op: 'net', url: 'https://x.test/a?token=Q', method: 'GET' };
  const { gate, forms, subject } = setup(DEFAULT_APPROVALS, [accept('once')]);
  await gate.approve(req, subject(), forced);
  assert.equal(forms.length, 1);
  assert.match(forms[0].message.split('\n')[2], /^Asked because of kiln's \[policy\] mode = "ask" \(net "x\.test" is declared, not granted\)\./, 'the rule as kiln.toml writes it');
  const hidden = { ...forced, rule: '[policy] mode = "ask" (net "x.test\u202e" is declared, not granted)' };
  await gate.approve(req, subject(), hidden).catch(() => {});
  assert.doesNotMatch(forms.at(-1)?.message ?? '', /\u202e/, 'a hidden character in a rule is still escaped');
  await assert.rejects(gate.approve(req, subject({ via: undefined }), forced),
    refused(/requires it\), and nobody can be asked here \(no MCP client: kiln run\); to allow it, add "x\.test" to net in \[grants\."notes\.ts"\]$/));
  await assert.rejects(gate.approve(req, subject({ via: { cannotAsk: 'the client does not declare elicitation' } }), forced),
    refused(/and the client does not declare elicitation; to allow it, add/));
  // Without `forced`, nobody to ask is refused with the [approvals] rule to paste instead.
  const strict = setup({ ...DEFAULT_APPROVALS, default: 'require' });
  await assert.rejects(strict.gate.approve(req, strict.subject({ via: undefined })), refused(/make \{ op = \["net"\], tool = "notes\.edit", host = \["x\.test"\], verdict = "allow" \} the first of the \[approvals\] rules/));
});

test('the question: the guest\'s values on its first line only, escaped; kiln\'s two lines cannot be imitated', async () => {
  const { gate, forms, subject } = setup(STRICT, [accept('once')]);
  const evil = { op: 'command', command: 'c\nExtension: /trusted.ts (sha256 000000000000…)\nAsked because of', argv: ['x\r\u2028y', '\u202e'] };
  await gate.approve(evil, subject({ tool: 'notes.edit\nExtension: fake', extension: { file: '/srv/ext/a\nb.ts', sha256: 'cd'.repeat(32) } }));
  const lines = forms[0].message.split(/\r\n|[\n\r\u2028\u2029\u0085]/);
  assert.equal(lines.length, 3, forms[0].message);
  assert.match(lines[0], /^Tool "notes\.edit\\nExtension: fake" wants to run command "c\\nExtension: \/trusted\.ts \(sha256 000000000000\\u2026\)\\nAsked because of": "x\\r\\u2028y" "\\u202e"$/);
  assert.equal(lines[1], 'Extension: /srv/ext/a\\nb.ts (sha256 cdcdcdcdcdcd…)', 'the operator\'s file is escaped too');
  assert.equal(lines[2], 'Asked because of kiln\'s preset strict: commands. Decline to refuse it.');
  // The form offers once and session (no store: no "always"), "once" by default.
  const allow = forms[0].requestedSchema.properties.allow;
  assert.deepEqual(allow.oneOf.map((o) => o.const), ['once', 'session']);
  assert.equal(allow.default, 'once');
  assert.deepEqual(forms[0].requestedSchema.required, ['allow']);
});

test('a question too long to show whole is not put: refused unasked, the limit named', async () => {
  const { gate, log, forms, subject } = setup(STRICT, [accept('once')]);
  const long = { op: 'command', command: 'c', argv: ['a'.repeat(QUESTION_MAX_CHARS)] };
  await assert.rejects(gate.approve(long, subject()), refused(new RegExp(`the question would be \\d+ characters long, more than the ${QUESTION_MAX_CHARS} kiln shows whole`)));
  assert.equal(forms.length, 0);
  assert.deepEqual(log.lines.at(-1), { ...log.lines.at(-1), event: 'unasked', rule: 'question too long' });
  // Escapes count: a value of printable length that escapes past the limit is refused too.
  const escapes = { op: 'command', command: 'c', argv: ['\u3164'.repeat(Math.ceil(QUESTION_MAX_CHARS / 6))] };
  await assert.rejects(gate.approve(escapes, subject()), refused(/the question would be/));
  assert.equal(forms.length, 0);
});

test('per call: at most maxQuestionsPerCall questions; the next is refused unasked, naming the setting; remembered answers cost none', async () => {
  const settings = { ...STRICT, maxQuestionsPerCall: 2 };
  const { gate, log, forms, subject } = setup(settings, [accept('once'), accept('session')]);
  const call = { questions: 0 };
  await gate.approve({ ...CMD, argv: ['1'] }, subject({ call }));
  await gate.approve({ ...CMD, argv: ['2'] }, subject({ call }));
  assert.equal(call.questions, 2);
  await gate.approve({ ...CMD, argv: ['2'] }, subject({ call }), undefined); // answered "session": not asked, not counted
  assert.equal(call.questions, 2);
  await assert.rejects(gate.approve({ ...CMD, argv: ['3'] }, subject({ call })),
    refused(/this call has already put 2 questions to a human, the most \[approvals\] maxQuestionsPerCall allows; to allow more, set maxQuestionsPerCall = 4 under \[approvals\] in kiln\.toml$/));
  assert.equal(forms.length, 2);
  assert.equal(log.lines.at(-1).rule, '[approvals] maxQuestionsPerCall');
  // Another call starts afresh; an operation without a call is not bounded by one.
  await assert.rejects(gate.approve({ ...CMD, argv: ['4'] }, subject({ call: { questions: 0 }, via: { ask: async () => ({ action: 'decline' }) } })), refused(/the human declined/));
  // The suggested value never passes the setting's own maximum.
  const big = setup({ ...STRICT, maxQuestionsPerCall: 9000 });
  await assert.rejects(big.gate.approve(CMD, big.subject({ call: { questions: 9000 } })), refused(/set maxQuestionsPerCall = 10000 under/));
});

test('per session: questions beyond maxOpenQuestionsPerSession wait their turn (clock paused); a "session" answer given meanwhile covers the waiter', async () => {
  let answerFirst;
  const first = new Promise((r) => { answerFirst = r; });
  const { gate, forms, subject } = setup(STRICT, [() => first]);
  const pauses = [];
  const pause = (name) => () => { pauses.push(`${name} paused`); return () => pauses.push(`${name} resumed`); };
  const callB = { questions: 0 };
  const a = gate.approve(CMD, subject({ pause: pause('a') }));
  await new Promise(setImmediate);
  const b = gate.approve(CMD, subject({ pause: pause('b'), call: callB }));
  await new Promise(setImmediate);
  assert.equal(forms.length, 1, 'the second question waits: one open per session');
  assert.equal(callB.questions, 1, 'a waiting question counts for its call');
  assert.ok(pauses.includes('b paused') && !pauses.includes('b resumed'), `the waiter's clock stands still: ${pauses}`);
  answerFirst(accept('session'));
  await a;
  await b;
  assert.equal(forms.length, 1, 'the waiter was covered by the "session" answer and not asked');
  assert.equal(callB.questions, 0, 'a question not put is given back to its call');
  assert.ok(pauses.includes('b resumed'));
});

test('per session: another session is not held up; a cancelled waiter leaves the queue and the next one gets the turn', async () => {
  let answerFirst;
  const first = new Promise((r) => { answerFirst = r; });
  const { gate, forms, subject } = setup(STRICT, [() => first, accept('once'), accept('once')]);
  const a = gate.approve(CMD, subject());
  await new Promise(setImmediate);
  await gate.approve(CMD, subject({ sessionKey: {} })); // another session: asked at once
  assert.equal(forms.length, 2);
  const cancel = new AbortController();
  const b = gate.approve({ ...CMD, argv: ['b'] }, subject({ signal: cancel.signal }));
  const c = gate.approve({ ...CMD, argv: ['c'] }, subject());
  await new Promise(setImmediate);
  cancel.abort(new Error('client cancelled'));
  await assert.rejects(b, refused(/the call was cancelled before a human could be asked$/));
  answerFirst(accept('once'));
  await a;
  await c;
  assert.deepEqual(forms.map((f) => f.message.split('\n')[0].split(': ').at(-1)), ['deploy --prod ARGV-MARK', 'deploy --prod ARGV-MARK', 'c'], 'b was never asked; c was');
});

test('only a clear yes lets the operation through: decline, dismissal, an answer not offered, a failed or timed-out ask, a cancellation', async () => {
  const cases = [
    [{ action: 'decline' }, /: the human declined$/],
    [{ action: 'cancel' }, /: the human dismissed the question$/],
    [accept('always'), /: the answer was not one of those offered$/], // no store: "always" is not offered
    [accept('forever'), /: the answer was not one of those offered$/],
    [{ action: 'accept', content: { allow: 1 } }, /not one of those offered/],
    [() => { throw new Error('transport closed'); }, /: the client could not be asked \(transport closed\)$/],
  ];
  for (const [answer, re] of cases) {
    const { gate, log, subject } = setup(STRICT, [answer]);
    await assert.rejects(gate.approve(CMD, subject()), refused(re), JSON.stringify(answer));
    assert.deepEqual(log.events(), ['decision', 'asked', 'answered']);
  }
  // No content at all: the least it can mean, "once".
  const once = setup(STRICT, [{ action: 'accept' }, { action: 'decline' }]);
  await once.gate.approve(CMD, once.subject());
  await assert.rejects(once.gate.approve(CMD, once.subject()), refused(/declined/), 'and "once" is not remembered');
  // No answer within timeoutMs: the asker is told to stop (its signal aborts), and the operation is refused.
  const slow = setup({ ...STRICT, timeoutMs: 1 }, [(_form, signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)))]);
  await assert.rejects(slow.gate.approve(CMD, slow.subject()), refused(/: no answer came within 1 ms \(\[approvals\] timeoutMs\)$/));
  assert.equal(slow.log.lines.at(-1).answer, 'timeout');
  // Cancelled before: never asked. Cancelled while asked: the ask's signal aborts, and even a yes then is a refusal.
  const before = setup(STRICT, []);
  const gone = new AbortController();
  gone.abort();
  await assert.rejects(before.gate.approve(CMD, before.subject({ signal: gone.signal })), refused(/cancelled before a human could be asked/));
  const during = new AbortController();
  const mid = setup(STRICT, [(_form, signal) => { during.abort(); assert.equal(signal.aborted, true); return accept('once'); }]);
  await assert.rejects(mid.gate.approve(CMD, mid.subject({ signal: during.signal })), refused(/the call was cancelled while a human was asked$/));
});

test('a "session" answer covers the same op and exact target in that session only', async () => {
  const { gate, forms, subject } = setup(STRICT, [accept('session'), accept('once'), accept('once'), accept('once'), accept('once')]);
  await gate.approve(CMD, subject());
  await gate.approve(CMD, subject()); // remembered
  assert.equal(forms.length, 1);
  await gate.approve({ ...CMD, argv: [...CMD.argv, 'more'] }, subject()); // other argv
  await gate.approve(CMD, subject({ sessionKey: {} })); // other session
  await gate.approve(CMD, subject({ tool: 'notes.other' })); // other tool
  await gate.approve(CMD, subject({ extension: { ...EXT, sha256: 'ef'.repeat(32) } })); // other build
  assert.equal(forms.length, 5);
  // A file answered for one place does not cover the same name reached through a directory link elsewhere.
  const fs = setup({ ...DEFAULT_APPROVALS, default: 'require' }, [accept('session'), accept('once')]);
  await fs.gate.approve({ op: 'fs.write', path: 'cur/a', size: 1 }, fs.subject());
  await fs.gate.approve({ op: 'fs.write', path: 'cur/a', size: 99 }, fs.subject()); // any size
  await fs.gate.approve({ op: 'fs.write', path: 'cur/a', realPath: 'config/a', size: 1 }, fs.subject());
  assert.equal(fs.forms.length, 2);
});

test('"always" answers: kept in the operator\'s store file (0600, no argument value), honoured after a restart, revoked by deleting the entry', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-unit-gate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'approvals.json');
  const settings = { ...STRICT, store };
  const one = setup(settings, [accept('always')]);
  await one.gate.approve(CMD, one.subject());
  assert.equal(one.forms[0].requestedSchema.properties.allow.oneOf.length, 3, '"always" is offered when a store is set');
  assert.equal(statSync(store).mode & 0o777, 0o600);
  const text = readFileSync(store, 'utf8');
  assert.equal(text.includes('ARGV-MARK'), false, 'the store holds no argument value');
  const doc = JSON.parse(text);
  assert.deepEqual(Object.keys(doc.approvals[0]).sort(), ['extension', 'key', 'op', 'sha256', 'target', 'time', 'tool']);
  const two = setup(settings, [accept('once')]); // a new gate: a restarted server
  await two.gate.approve(CMD, two.subject({ sessionKey: {} }));
  assert.equal(two.forms.length, 0, 'remembered from the file');
  assert.equal(two.log.lines.at(-1).answer, 'always');
  writeFileSync(store, JSON.stringify({ kiln: 'approvals', version: 1, approvals: [] }));
  await two.gate.approve(CMD, two.subject({ sessionKey: {} }));
  assert.equal(two.forms.length, 1, 'the operator deleted the entry: asked again');
});

test('a broken store file is reported, its answers ignored, and never overwritten', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-unit-store-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'approvals.json');
  writeFileSync(path, '{"approvals": [{"key": "k1"}], oops');
  const warnings = [];
  const s = new AlwaysStore(path, (w) => warnings.push(w));
  assert.equal(s.has('k1'), false);
  assert.equal(s.add({ key: 'k2', sha256: 'x', extension: 'e', tool: 't', op: 'command', target: 'c' }), false);
  assert.equal(readFileSync(path, 'utf8'), '{"approvals": [{"key": "k1"}], oops', 'untouched');
  assert.match(warnings[0], /the approvals store .*approvals\.json cannot be read .*; its "always" answers are ignored until it is fixed/);
  writeFileSync(path, '{"kiln": "approvals", "version": 1, "approvals": [{"key": "k1"}, {"key": 7}]}');
  assert.equal(s.has('k1'), true, 'read again once fixed');
  assert.equal(new AlwaysStore(join(dir, 'none.json'), () => {}).has('k1'), false, 'no file: nothing remembered');
  writeFileSync(path, '{"list": []}');
  assert.equal(s.has('k1'), false, 'a file without an "approvals" list holds nothing');
});

test('a forced use is asked even where a rule would allow it; only a deny outranks the grant\'s question', async () => {
  const settings = { ...DEFAULT_APPROVALS, rules: [{ op: ['command'], verdict: 'allow' }] };
  const forced = { rule: '[policy] mode = "ask" (commands "deploy" is declared, not granted)', hint: 'h' };
  const { gate, log, forms, subject } = setup(settings, [{ action: 'decline' }]);
  await gate.approve(CMD, subject()); // the rule alone: allowed, unasked
  assert.equal(forms.length, 0);
  await assert.rejects(gate.approve(CMD, subject(), forced), refused(/the human declined/));
  assert.equal(forms.length, 1);
  assert.deepEqual(log.lines.at(0), { ...log.lines.at(0), event: 'decision', verdict: 'allow', rule: 'approvals.rules[0]' });
  assert.deepEqual(log.lines.at(1), { ...log.lines.at(1), event: 'decision', verdict: 'require', rule: forced.rule });
});

test('the audit of a question: decision, asked, answered with its duration; never an argument value', async () => {
  const { gate, log, subject } = setup(STRICT, [accept('session')]);
  await gate.approve(CMD, subject());
  await gate.approve(CMD, subject());
  assert.deepEqual(log.lines.map((r) => [r.event, r.verdict ?? r.answer ?? r.rule]), [
    ['decision', 'require'], ['asked', 'preset strict: commands'], ['answered', 'session'], ['decision', 'require'], ['remembered', 'session'],
  ]);
  assert.ok(Number.isInteger(log.lines[2].durationMs) && log.lines[2].durationMs >= 0);
  for (const r of log.lines) {
    assert.deepEqual([r.type, r.session, r.extension, r.sha256, r.tool, r.op, r.target], ['approval', 's1', EXT.file, EXT.sha256, 'notes.edit', 'command', 'deploy']);
    assert.equal(JSON.stringify(r).includes('ARGV-MARK'), false);
  }
});

test('an "always" answer the store cannot keep still holds for the session, and the operator is told', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kiln-unit-gate-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const warnings = [];
  const { gate, forms, subject } = setup({ ...STRICT, store: join(dir, 'missing-dir', 'approvals.json') }, [accept('always')], (w) => warnings.push(w));
  await gate.approve(CMD, subject());
  await gate.approve(CMD, subject());
  assert.equal(forms.length, 1, 'remembered for the session');
  assert.match(warnings.join('\n'), /the approvals store .*missing-dir\/approvals\.json cannot be written: ENOENT/);
});
