// Which templates kiln accepts (host/capabilities/commands/template.ts), as a table, and the leading-dash rule
// for whatever text ends up at the start of an argument or a shell word (commands.ts `substitute`).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { substitute } from '../dist/host/capabilities/commands/commands.js';
import { checkTemplate } from '../dist/host/capabilities/commands/template.js';

const spec = (run, extra = {}) => ({ run, env: [], output: 'text', persistent: false, allowDash: [], ...extra });

// [template, accepted?] — every walk-around found by attacking kiln from outside is here, refused.
export const TEMPLATES = [
  // shell form: plain values are fine
  ['git -C ${repo} rev-parse HEAD', true],
  ['cat ${f} | wc -l', true],
  ['x=1 printf %s ${v}', true],
  ['echo $(cat ${f})', true],
  ['echo "$HOME" ${v}', true],
  ['grep -r -- ${pattern} src', true],
  ['timeout 5 curl -s ${url}', true],
  ['env LC_ALL=C sort ${file}', true],
  ['nice -n 5 gzip -k ${file}', true],
  ['find ${dir} -name "*.ts" -exec wc -l {} +', true],
  ['python3 script.py ${arg}', true],
  ['git clone ${url} ${dest} && cd ${dest} && git log -1', true],
  ['printf %s ${a}${b}', true],
  ['if test -f ${f}; then cat ${f}; fi', true],
  ['cat < ${input} > out.txt', true],
  ['sh -c \'printf "%s" "$1"\' _ ${x}', true],
  // shell form: refused
  ['sh -c ${x}', false],
  ['sh -ec ${x}', false],
  ['sh -xc ${x}', false],
  ['bash -c -- ${x}', false],
  ['env sh -c ${x}', false],
  ['timeout 5 sh -c ${x}', false],
  ['timeout -s KILL 5 sh -c ${x}', false],
  ['nohup sh -c ${x}', false],
  ['exec sh -c ${x}', false],
  ['command eval ${x}', false],
  ['nohup eval ${x}', false],
  ['eval ${x}', false],
  ['source ${x}', false],
  ['. ${x}', false],
  ['echo \\${x}', false],
  ['cat <<EOF\n${x}\nEOF', false],
  ['cat <<< ${x}', false],
  ['env ${x}', false],
  ['env FOO=1 ${x} arg', false],
  ['sudo -u root ${x}', false],
  ['xargs ${x} < list', false],
  ['$(${x})', false],
  ['a && ${x}', false],
  ['FOO=1 ${x}', false],
  ['printf \'%s\' \'${x}\'', false],
  ['printf "%s" "${x}"', false],
  ['echo `echo ${x}`', false],
  ['echo ${HOME:-${x}}', false],
  ['echo $((${x} + 1))', false],
  ['echo hi # ${x}', false],
  ['X=${x}; eval "$X"', false],
  ['export X=${x}; sh -c "$X"', false],
  ['set -- ${x}; eval "$@"', false],
  ['f() { eval "$1"; }; f ${x}', false],
  ['case ${x} in a) echo a;; esac', false],
  ['for f in ${x}; do echo $f; done', false],
  ['[[ ${x} == a ]]', false],
  ['X=${x} sh -c \'eval "$X"\'', false],
  ['$(echo ${x}) arg', false],
  ['sh -c \'eval "$1"\' _ ${x}', false],
  ['sh -c \'$1\' _ ${x}', false],
  ['sh -c \'"$@"\' _ ${x}', false],
  ['python3 -c ${code}', false],
  ['python3 ${script}', false],
  ['python3 -W ignore -c ${code}', false],
  ['node -e ${code}', false],
  ['perl -ne ${code} file', false],
  ['awk ${prog} file', false],
  ['sed ${script} file', false],
  ['find . -exec ${x} \\;', false],
  ['find . -exec sh -c ${x} \\;', false],
  ['git -c ${cfg} fetch', false],
  ['git -c core.sshCommand=${cmd} fetch', false],
  ['git fetch --upload-pack=${x}', false],
  ['ssh host ${cmd}', false],
  ['ssh -o ${opt} host true', false],
  ['rsync -e ${x} a b', false],
  ['tar --to-command=${x} -xf a.tar', false],
  ['make ${target}', false],
  ['npx ${pkg}', false],
  ['watch ${x}', false],
  // found by the property test: an unquoted expansion that is empty shifts the value into its place
  ['sh -c $EMPTY ${x}', false],
  ['$CMD ${x}', false],
  ['timeout $T sh -c \'printf "%s" "$1"\' _ ${x}', false],
  ['"$CMD" ${x}', true],
  // argv form: accepted
  [['git', 'clone', '${url}', '${dest}'], true],
  [['sh', '-c', 'printf "%s" "$1"', '_', '${x}'], true],
  [['/bin/bash', '-c', 'run "$1"', 'bash', '${x}'], true],
  [['timeout', '5', 'curl', '${url}'], true],
  [['python3', '-c', 'import sys; print(sys.argv[1])', '${x}'], true],
  [['find', '${dir}', '-name', '*.md'], true],
  // argv form: refused
  [['sh', '-c', '${x}'], false],
  [['sh', '-ec', '${x}'], false],
  [['bash', '-c', '--', '${x}'], false],
  [['env', 'sh', '-c', '${x}'], false],
  [['timeout', '5', 'sh', '-c', '${x}'], false],
  [['env', '${x}'], false],
  [['nohup', '${x}'], false],
  [['xargs', '-0', '${x}'], false],
  [['busybox', 'sh', '-c', '${x}'], false],
  [['sh', '-c', 'eval "$1"', '_', '${x}'], false],
  [['bash', '${script}'], false],
  [['node', '--eval', '${x}'], false],
  [['git', '-c', 'core.pager=${x}', 'log'], false],
  [['ssh', 'host', 'ls', '${dir}'], false],
  [['${program}', 'arg'], false],
];

test(`templates: ${TEMPLATES.length} accepted or refused as documented`, () => {
  assert.ok(TEMPLATES.length >= 40);
  for (const [run, accepted] of TEMPLATES) {
    const label = JSON.stringify(run);
    if (accepted) assert.doesNotThrow(() => checkTemplate('c', spec(run)), label);
    else assert.throws(() => checkTemplate('c', spec(run)), { name: 'TemplateError' }, label);
  }
});

test('a refusal says what is wrong and what to do instead', () => {
  assert.throws(() => checkTemplate('clone', spec('timeout 5 sh -c ${x}')),
    /^TemplateError: allow\.commands\.clone: \$\{x\} is the script of a shell's -c: the value would run as shell code; pass it as "\$1" after the script\. Use argv form/);
  assert.throws(() => checkTemplate('c', spec('echo \\${x}')), /a backslash before a placeholder/);
  assert.throws(() => checkTemplate('c', spec('cat <<EOF\n${x}\nEOF')), /here-document/);
});

test('templates without placeholders are the author\'s code, accepted as written', () => {
  for (const run of ['cat <<EOF\nhello\nEOF', 'for f in *.ts; do wc -l "$f"; done', 'eval "$(ssh-agent)"', 'sh -c "echo hi"']) {
    assert.doesNotThrow(() => checkTemplate('c', spec(run)), run);
  }
});

const injection = /starts an argument with "-" and would be read as an option \(argument injection\)/;

test('adjacent placeholders: whatever text starts an argument, a leading "-" from a value is refused', () => {
  const attack = { base: '', repo: '--upload-pack=touch M;git-upload-pack' };
  assert.throws(() => substitute(spec(['git', 'clone', '${base}${repo}']), attack), injection);
  assert.throws(() => substitute(spec('git clone ${base}${repo}'), attack), injection);
  assert.throws(() => substitute(spec("git clone ''${repo}"), { repo: '-x' }), injection);
  assert.throws(() => substitute(spec('git clone ""${repo}'), { repo: '-x' }), injection);
  assert.throws(() => substitute(spec('ls ${a}${b}${c}'), { a: '', b: '', c: '-la' }), injection);
  assert.throws(() => substitute(spec('echo $(ls ${p})'), { p: '-la' }), injection);
  assert.throws(() => substitute(spec('ls x; ls ${p}'), { p: '-la' }), injection);
  assert.throws(() => substitute(spec('git clone $EMPTY${p}'), { p: '-x' }), injection); // $EMPTY may be ""
  assert.throws(() => substitute(spec('git clone "$PREFIX"${p}'), { p: '-x' }), injection);
  // a literal start, a non-empty earlier value, "--" or allowDash: fine
  assert.deepEqual(substitute(spec(['git', 'clone', '${base}${repo}']), { base: 'https://h/', repo: '-x' }).args, ['clone', 'https://h/-x']);
  assert.deepEqual(substitute(spec(['ls', '--', '${a}${b}']), { a: '', b: '-la' }).args, ['--', '-la']);
  assert.equal(substitute(spec('ls -- ${a}${b}'), { a: '', b: '-la' }).args[1], "ls -- '''-la'");
  assert.deepEqual(substitute(spec(['ls', '${a}${b}'], { allowDash: ['b'] }), { a: '', b: '-la' }).args, ['-la']);
  assert.throws(() => substitute(spec(['ls', '${a}${b}'], { allowDash: ['a'] }), { a: '', b: '-la' }), injection);
  assert.equal(substitute(spec('ls "x"${p}'), { p: '-la' }).args[1], `ls "x"'-la'`);
});
