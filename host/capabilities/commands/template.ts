// Which `allow.commands` templates kiln accepts. Pure functions: tests call them directly; the manifest
// parser (host/extensions/manifest.ts) refuses a template they refuse, so a refused template never runs.
//
// What kiln claims, and no more (docs/capabilities.md, "What a template may do with a value"):
//  1. A value is substituted as exactly one shell word (single-quoted) or as part of exactly one argument,
//     and never begins an option (that rule is enforced at substitution: commands.ts `substitute`).
//  2. A template is refused when a placeholder sits where the shell or a program kiln knows would run the
//     value as code, choose the program, or keep it for later evaluation. The programs kiln knows are the
//     tables below; what any other program does with an argument is the template author's code, reviewed by
//     the operator in `kiln inspect`.
//  3. In shell form, a placeholder is accepted only in plain word context: not inside quotes, after a
//     backslash, in backticks, `${...}`, `$((...))`, comments or here-documents; `$( )` is analysed by the
//     same rules. A template with placeholders that uses shell syntax kiln does not analyse (`case`, `for`,
//     `[[`, `((`, functions, here-documents) is refused: use argv form.
// The analysis errs towards refusing: a template it cannot prove safe is refused with the reason and a way
// out (usually: argv form, with the value as an argument after a literal script).
//
// The words these rules read come from shell-words.ts (the sh lexer, which enforces rule 3 as it reads); this
// file holds rules 2 and 3's remaining checks: reserved words, assignments, and the programs kiln knows.
import { argvWord, hasPlaceholder, literal, placeholders, shellCommands, unstable, type Word } from './shell-words.js';

export class TemplateError extends Error {
  override name = 'TemplateError';
}

// ---- what kiln knows about programs ---------------------------------------------------------------------

/** Shells: a value may only be a positional parameter after a literal `-c` script (argv form:
 *  `["sh", "-c", "echo \"$1\"", "_", "${x}"]`). */
const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'posh', 'rbash', 'fish', 'csh', 'tcsh']);
/** A value anywhere in these commands is refused: they run text as code, or keep a value for later. */
const EVALUATORS = new Set(['eval', 'source', '.', 'trap', 'let', 'alias', 'set', 'export', 'readonly', 'local', 'declare',
  'typeset', 'watch', 'su', 'runuser', 'make', 'gmake', 'npx', 'pnpx', 'bunx']);
/** Programs that run another program: options that take an argument, and operands before the program. */
const WRAPPERS: Record<string, { argOpts: string[]; operands?: number; assignments?: boolean }> = {
  env: { argOpts: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'], assignments: true },
  nohup: { argOpts: [] }, setsid: { argOpts: [] }, unbuffer: { argOpts: [] }, command: { argOpts: [] }, builtin: { argOpts: [] },
  busybox: { argOpts: [] }, exec: { argOpts: ['-a'] },
  nice: { argOpts: ['-n', '--adjustment'] },
  ionice: { argOpts: ['-c', '-n', '-p', '-P', '-u', '--class', '--classdata', '--pid', '--pgid', '--uid'] },
  timeout: { argOpts: ['-s', '--signal', '-k', '--kill-after'], operands: 1 },
  stdbuf: { argOpts: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  time: { argOpts: ['-f', '--format', '-o', '--output'] },
  chroot: { argOpts: ['--userspec', '--groups'], operands: 1 },
  sudo: { argOpts: ['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T', '--user', '--group', '--chdir', '--host', '--prompt', '--role', '--type', '--other-user', '--command-timeout', '--close-from'] },
  doas: { argOpts: ['-u', '-C'] },
  taskset: { argOpts: [], operands: 1 },
  flock: { argOpts: ['-w', '--timeout', '-E', '--conflict-exit-code', '-c', '--command'], operands: 1 },
  xargs: { argOpts: ['-a', '-d', '-E', '-I', '-L', '-n', '-P', '-s', '--arg-file', '--delimiter', '--eof', '--replace', '--max-lines', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'] },
  strace: { argOpts: ['-e', '-o', '-p', '-s', '-u', '-E', '-a', '-b', '-I', '-P', '-S', '-X'] },
  ltrace: { argOpts: ['-e', '-o', '-p', '-s', '-u', '-a', '-n', '-A', '-D', '-F', '-l', '-x', '-L'] },
  unshare: { argOpts: ['--propagation', '--setgroups', '--map-user', '--map-group', '-S', '-G', '--setuid', '--setgid', '-w', '--wd', '-R', '--root'] },
  nsenter: { argOpts: ['-t', '--target', '-S', '-G', '--setuid', '--setgid', '-w', '--wd', '-r', '--root'] },
};
/** Interpreters: their inline code, module or script must be literal; a value may only come after it. The
 *  pattern says which option words take the code (or a module to run) as their next word. */
const INTERPRETERS: [RegExp, RegExp][] = [
  [/^python[0-9.]*$/, /^-[A-Za-z]*[cm]$/],
  [/^(node|nodejs|bun)$/, /^(-[A-Za-z]*[ep]|--eval|--print|-r|--require|--import|--loader)$/],
  [/^deno$/, /^(eval|run|repl|task|x|-e|--eval)$/],
  [/^perl[0-9.]*$/, /^-[A-Za-z]*[eEMm]$/],
  [/^ruby[0-9.]*$/, /^-[A-Za-z]*[er]$/],
  [/^php[0-9.]*$/, /^-[A-Za-z]*[rBREF]$/],
  [/^(lua|luajit)[0-9.]*$/, /^-[A-Za-z]*[el]$/],
  [/^(tclsh|wish|expect)[0-9.]*$/, /^-[A-Za-z]*c$/],
  [/^(osascript|Rscript)$/, /^-e$/],
  [/^(pwsh|powershell)$/, /^-(c|command|e|encodedcommand|f|file)$/i],
  [/^(awk|gawk|mawk|nawk)$/, /^(-[A-Za-z]*[fe]|--file|--source|--exec|--include|-i)$/],
  [/^(sed|gsed)$/, /^(-[A-Za-z]*[ef]|--expression|--file)$/],
];
/** Options of common programs whose argument is run as a command (or chooses one). */
const COMMAND_OPTIONS: Record<string, string[]> = {
  git: ['-c', '--config-env', '-u', '--upload-pack', '--receive-pack', '--exec', '--exec-path'],
  scp: ['-S', '-o', '-F', '-J'],
  sftp: ['-S', '-o', '-F', '-D', '-J'],
  rsync: ['-e', '--rsh', '--rsync-path'],
  tar: ['--to-command', '--checkpoint-action', '-I', '--use-compress-program', '--rsh-command', '--info-script', '-F', '--new-volume-script'],
};
const SSH_ARG_OPTIONS = 'BbcDEeFIiJLlmOoPpQRSWw';
const FIND_EXEC = new Set(['-exec', '-execdir', '-ok', '-okdir']);

const base = (text: string) => text.slice(text.lastIndexOf('/') + 1);
const firstPlaceholder = (w: Word) => {
  const p = w.pieces.find((x) => 'ph' in x) as { ph: string } | undefined;
  return p ? '${' + p.ph + '}' : 'a value (a positional parameter, or the output of $( ) with a value in it)';
};

/** Checks one command whose program is `words[at]`. */
class CommandCheck {
  constructor(private readonly words: Word[], private readonly refuse: (why: string) => never) {}

  private valueAt(j: number, why: string): void {
    const w = this.words[j];
    if (w?.tainted) this.refuse(`${firstPlaceholder(w)} ${why}`);
  }

  private anyValue(from: number, why: string): void {
    for (let j = from; j < this.words.length; j++) this.valueAt(j, why);
  }

  program(at: number): void {
    const w = this.words[at];
    if (!w) return;
    this.valueAt(at, 'is in command position: the value would choose the program');
    const values = this.words.some((x) => x.tainted);
    const text = literal(w);
    if (text === undefined) {
      // "$CMD" is the author's choice of program; an unquoted $CMD may expand to nothing, and a value after it
      // would become the program.
      if (values && unstable(w)) this.refuse('the program is an unquoted expansion, which may vanish and leave a value in command position');
      return;
    }
    const name = base(text);
    const positional = SHELLS.has(name) || Object.hasOwn(WRAPPERS, name) || INTERPRETERS.some(([re]) => re.test(name)) ||
      name === 'find' || name === 'ssh' || Object.hasOwn(COMMAND_OPTIONS, name);
    if (positional && values && this.words.slice(at + 1).some(unstable)) {
      this.refuse(`an unquoted expansion ($VAR, $( ), \`…\`) in a ${name} command that takes a value: it may vanish or split, and shift the value into another position; quote it`);
    }
    if (SHELLS.has(name)) return this.shell(at);
    if (EVALUATORS.has(name)) return this.anyValue(at + 1, `is an argument of ${name}, which runs its arguments as code or keeps them for later`);
    if (Object.hasOwn(WRAPPERS, name)) return this.wrapper(at, name);
    const interpreter = INTERPRETERS.find(([re]) => re.test(name));
    if (interpreter) return this.interpreter(at, name, interpreter[1]);
    if (name === 'find') return this.find(at);
    if (name === 'ssh') return this.ssh(at);
    if (Object.hasOwn(COMMAND_OPTIONS, name)) return this.commandOptions(at, name, COMMAND_OPTIONS[name]);
  }

  /** sh [options] [-c script [name [args...]] | script-file [args...]]: values only after the script. */
  private shell(at: number): void {
    let j = at + 1;
    let inline = false;
    for (; j < this.words.length; j++) {
      const o = literal(this.words[j]);
      if (o === undefined) break; // a value here is the script (or an option): refused below
      if (o === '--') { j++; break; }
      if (!/^[-+]/.test(o) || o === '-' || o === '+') break;
      if (/^[-+][A-Za-z]*c/.test(o)) inline = true;
      if (/^[-+][A-Za-z]*[oO]$/.test(o) || o === '--rcfile' || o === '--init-file') {
        this.valueAt(++j, `is the argument of ${o}, an option of ${literal(this.words[at])}`);
      }
    }
    this.valueAt(j, inline ? 'is the script of a shell\'s -c: the value would run as shell code; pass it as "$1" after the script'
      : 'is the script a shell runs');
    // The values become positional parameters of the literal script: check what the script does with them.
    const script = literal(this.words[j]);
    if (inline && script !== undefined && this.words.slice(j + 1).some((w) => w.tainted)) {
      for (const words of shellCommands(script, false, this.refuse, true)) checkShellCommand(words, this.refuse);
    }
  }

  private wrapper(at: number, name: string): void {
    const spec = WRAPPERS[name];
    let operands = spec.operands ?? 0;
    let j = at + 1;
    const why = `is an option or operand of ${name}, which runs another program: the value could choose the program`;
    for (; j < this.words.length; j++) {
      this.valueAt(j, why);
      const o = literal(this.words[j])!;
      if (o === '--') { j++; break; }
      if (/^-./.test(o)) {
        if (spec.argOpts.includes(o)) this.valueAt(++j, why);
        continue;
      }
      if (spec.assignments && /^[A-Za-z_][A-Za-z0-9_]*=/.test(o)) continue;
      if (operands > 0) { operands--; continue; }
      break;
    }
    this.program(j);
    // If the options were misread, a shell or an evaluator later in the line may still be the program.
    for (let k = j + 1; k < this.words.length; k++) {
      const t = literal(this.words[k]);
      if (t !== undefined && (SHELLS.has(base(t)) || EVALUATORS.has(base(t)))) this.program(k);
    }
  }

  private interpreter(at: number, name: string, codeFlag: RegExp): void {
    let script = false;
    for (let j = at + 1; j < this.words.length; j++) {
      const o = literal(this.words[j]);
      if (!script) this.valueAt(j, `comes before the code or script ${name} runs: it could be code, a module or an option`);
      if (o !== undefined && codeFlag.test(o)) {
        this.valueAt(j + 1, `is the code or module ${name} runs (after ${o})`);
        j++;
        script = true;
      } else if (!script && o !== undefined && !o.startsWith('-')) script = true;
    }
  }

  /** find ... -exec program args ; : the program and its arguments follow the program rules. */
  private find(at: number): void {
    for (let j = at + 1; j < this.words.length; j++) {
      const o = literal(this.words[j]);
      if (o !== undefined && FIND_EXEC.has(o)) {
        let end = j + 1;
        while (end < this.words.length && !/^[;+]$/.test(literal(this.words[end]) ?? '')) end++;
        new CommandCheck(this.words.slice(j + 1, end), this.refuse).program(0);
        j = end;
      }
    }
  }

  /** ssh [options] destination [command...]: the remote command runs in a shell on the remote host. */
  private ssh(at: number): void {
    let j = at + 1;
    for (; j < this.words.length; j++) {
      const o = literal(this.words[j]);
      if (o === '--') { j++; break; }
      if (o === undefined || !o.startsWith('-')) break;
      this.valueAt(j, 'is an ssh option');
      if (SSH_ARG_OPTIONS.includes(o[o.length - 1]) && o.length === 2) this.valueAt(++j, `is the argument of ssh ${o}, which can run commands`);
    }
    this.anyValue(j + 1, 'is part of the command ssh runs in a shell on the remote host');
  }

  private commandOptions(at: number, name: string, options: string[]): void {
    for (let j = at + 1; j < this.words.length; j++) {
      const w = this.words[j];
      const head = w.pieces[0] && 'lit' in w.pieces[0] ? w.pieces[0].lit : '';
      const o = literal(w);
      if (o !== undefined && options.includes(o)) this.valueAt(j + 1, `is the argument of ${name} ${o}, which runs or configures a command`);
      else if (w.tainted && options.some((opt) => head.startsWith(opt + '=') || (opt.length === 2 && head.startsWith(opt) && head.length > 2))) {
        this.refuse(`${firstPlaceholder(w)} is in ${name}'s ${head.split('=')[0]} option, which runs or configures a command`);
      }
    }
  }
}

const RESERVED = new Set(['!', '{', '}', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until']);
const UNANALYSED = new Set(['case', 'esac', 'for', 'select', 'function', 'coproc', '[[', ']]', 'in']);

/** Check one shell simple command: reserved words and assignments first, then the program. */
function checkShellCommand(words: Word[], refuse: (why: string) => never): void {
  let i = 0;
  for (; i < words.length; i++) {
    const t = literal(words[i]);
    if (t !== undefined && UNANALYSED.has(t)) refuse(`"${t}", shell syntax kiln does not analyse in a template with placeholders`);
    if (t !== undefined && RESERVED.has(t)) continue;
    const head = words[i].pieces[0];
    if (head && 'lit' in head && /^[A-Za-z_][A-Za-z0-9_]*=/.test(head.lit)) continue; // an assignment
    break;
  }
  const assignments = words.slice(0, i).filter((w) => w.tainted);
  if (i === words.length && assignments.length) {
    refuse(`${firstPlaceholder(assignments[0])} is assigned to a shell variable, which the rest of the line could run as code`);
  }
  const check = new CommandCheck(words, refuse);
  if (assignments.length) {
    const program = literal(words[i]);
    if (program === undefined || SHELLS.has(base(program)) || EVALUATORS.has(base(program)) || Object.hasOwn(WRAPPERS, base(program))) {
      refuse(`${firstPlaceholder(assignments[0])} is in the environment of ${program ?? 'a computed program'}, which could run it as code`);
    }
  }
  check.program(i);
}

/**
 * Refuse a template that would let a value run as code (see the rules at the top of this file).
 * `where` names the template in messages (e.g. `allow.commands.clone`).
 */
export function checkTemplateText(where: string, run: string | string[]): void {
  const refuse = (why: string): never => {
    throw new TemplateError(`${where}: ${why}. Use argv form (run: ["program", ...]) and pass the value as an argument after the literal script or program`);
  };
  if (Array.isArray(run)) {
    if (hasPlaceholder(run[0])) throw new TemplateError(`${where}: the program (run[0]) must be literal, not ${run[0]}`);
    new CommandCheck(run.map(argvWord), refuse).program(0);
    return;
  }
  if (!hasPlaceholder(run)) return; // no value reaches this line: it is the author's code, as written
  for (const words of shellCommands(run, true, refuse)) checkShellCommand(words, refuse);
}

/** Refuse an allow.commands entry (its `run` and `cwd`) that would let a value run as code (see above). */
export function checkTemplate(name: string, spec: { run: string | string[]; cwd?: string }): void {
  const where = `allow.commands.${name}`;
  if (spec.cwd !== undefined && placeholders(spec.cwd).length) throw new TemplateError(`${where}.cwd must be a literal path, not a template`);
  checkTemplateText(where, spec.run);
}
