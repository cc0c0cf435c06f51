// Property tests of command templates and substitution (fast-check), run through a real /bin/sh:
//  - a value comes back exactly as it went in, whatever characters it holds;
//  - the leading-dash rule holds however an argument is assembled from literal text and values;
//  - no template that kiln accepts lets a hostile value run as shell code (a marker file never appears).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import fc from 'fast-check';
import { substitute } from '../dist/host/capabilities/commands/commands.js';
import { checkTemplate } from '../dist/host/capabilities/commands/template.js';

const spec = (run, extra = {}) => ({ run, env: [], output: 'text', persistent: false, allowDash: [], ...extra });
const dir = mkdtempSync(join(tmpdir(), 'kiln-prop-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Run what `substitute` returned, as processes.ts would (no stdin, PATH only, bounded). */
const run = (inv) => execFileSync(inv.file, inv.args, { cwd: dir, env: { PATH: process.env.PATH }, stdio: ['ignore', 'pipe', 'pipe'], timeout: 3000, encoding: 'utf8' });
const noNul = (s) => !s.includes('\0');
const value = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom("it's", '$(id)', '`id`', '\\', "\\'", '"', '\n', '${HOME}', '*', '~', '!', '$((1+1))')).filter(noNul);

test('a value round-trips exactly through /bin/sh, in shell form and in argv form (300 + 300 cases)', () => {
  fc.assert(fc.property(value.filter((v) => !v.startsWith('-')), (v) => {
    assert.equal(run(substitute(spec("printf '%s' ${x}"), { x: v })), v);
    assert.equal(run(substitute(spec(['printf', '%s', '${x}']), { x: v })), v);
  }), { numRuns: 300 });
});

test('the dash rule holds for arguments assembled from any literal pieces and values (5000 cases)', () => {
  const piece = fc.oneof(fc.constantFrom('', 'a', '-', '--x=', '/'), fc.constantFrom('${a}', '${b}', '${c}'));
  const arg = fc.array(piece, { minLength: 1, maxLength: 4 }).map((ps) => ps.join(''));
  const val = fc.constantFrom('', '-', '-rf', '--upload-pack=x', 'x', '- ');
  fc.assert(fc.property(fc.array(arg, { minLength: 1, maxLength: 4 }), val, val, val, fc.boolean(), (args, a, b, c, dashes) => {
    const vars = { a, b, c };
    const used = new Set(args.join(' ').match(/\$\{[abc]\}/g)?.map((m) => m[2]) ?? []);
    const given = Object.fromEntries(Object.entries(vars).filter(([k]) => used.has(k)));
    const template = dashes ? ['ls', '--', ...args] : ['ls', ...args];
    // The reference: an argument whose first character comes from a value, and is "-", before any "--".
    const beforeSeparator = template.indexOf('--') < 0 ? args : args.slice(0, template.indexOf('--') - 1);
    const leading = (a) => {
      for (const m of a.split(/(\$\{[abc]\})/).filter((x) => x !== '')) {
        const text = m.startsWith('${') ? vars[m[2]] : m;
        if (text === '') continue;
        return m.startsWith('${') && text.startsWith('-');
      }
      return false;
    };
    const shouldRefuse = beforeSeparator.some(leading);
    let refused = false;
    try {
      substitute(spec(template), given);
    } catch (e) {
      assert.match(e.message, /argument injection/);
      refused = true;
    }
    assert.equal(refused, shouldRefuse, JSON.stringify({ template, given }));
  }), { numRuns: 5000 });
});

// Templates from a grammar that mixes safe uses of a value with every kind of re-evaluation; values that try
// to create a marker file. Whatever kiln accepts must leave no marker behind.
const marker = join(dir, 'PWNED');
const HOSTILE = [`$(touch ${marker})`, `;touch ${marker}`, `'; touch ${marker}; '`, `\`touch ${marker}\``, `\ntouch ${marker}\n`,
  `touch ${marker}`, `|touch ${marker}`, `&& touch ${marker}`, `"$(touch ${marker})"`, `\\'$(touch ${marker})'`, `x\n#`,
  `$(touch\${IFS}${marker})`];
const SAFE_PROGRAMS = ['printf %s', 'echo', 'true', 'cat /dev/null', 'timeout 5 printf %s', 'env LC_ALL=C printf %s', 'X=1 printf %s',
  "sh -c 'printf \"%s\" \"$1\"' _", 'nice -n 1 echo', 'command printf %s'];
const RISKY_PROGRAMS = ['sh -c', 'sh -ec', 'bash -c --', 'eval', 'env', 'env sh -c', 'timeout 5', 'timeout 5 sh -c', 'nohup', 'command',
  'command eval', 'exec', 'X=1', 'export X=1', 'X=1 sh -c \'eval "$X"\'', "sh -c '$1' _", "sh -c 'eval \"$1\"' _", 'xargs',
  'python3 -c', 'awk', 'set --', '.'];
const SAFE_ARGS = ['${x}', 'a${x}', '${x}b', '$(printf %s ${x})', 'lit', '--', '$HOME', '${x} >/dev/null'];
const RISKY_ARGS = ['"${x}"', "'${x}'", '\\${x}', '`printf %s ${x}`', '"$(printf %s ${x})"', '# ${x}', 'X=${x}', '<<<${x}'];
const program = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...SAFE_PROGRAMS) }, { weight: 2, arbitrary: fc.constantFrom(...RISKY_PROGRAMS) });
const argument = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...SAFE_ARGS) }, { weight: 1, arbitrary: fc.constantFrom(...RISKY_ARGS) });
const template = fc.array(fc.tuple(program, fc.array(argument, { maxLength: 3 })), { minLength: 1, maxLength: 3 })
  .chain((cmds) => fc.constantFrom(';', '&&', '|', '||', '\n').map((op) => cmds.map(([p, as]) => [p, ...as].join(' ')).join(` ${op} `)))
  .filter((t) => t.includes('${x}'));

let accepted = 0;
test('no accepted template lets a value run as shell code (600 templates × hostile values, run by /bin/sh)', (t) => {
  fc.assert(fc.property(template, fc.constantFrom(...HOSTILE), (t, v) => {
    try {
      checkTemplate('t', spec(t));
    } catch (e) {
      assert.equal(e.name, 'TemplateError', `${t}: ${e.message}`);
      return;
    }
    accepted++;
    let inv;
    try {
      inv = substitute(spec(t), { x: v });
    } catch (e) {
      assert.match(e.message, /argument injection/);
      return;
    }
    rmSync(marker, { force: true });
    try { run(inv); } catch { /* a failing command is fine; running the value is not */ }
    assert.equal(existsSync(marker), false, `template ${JSON.stringify(t)} ran the value ${JSON.stringify(v)} as code`);
  }), { numRuns: 600 });
  t.diagnostic(`${accepted} of 600 generated templates were accepted and run`);
  assert.ok(accepted > 100, `only ${accepted} generated templates were accepted: the property tested too little`);
});
