// What a human and the audit log are told about an operation: the question put to a human (`question`), the
// operation in words for an error (`describe`), the target an audit line may show (`safeTarget`), and how the
// operator would let it through without asking (`allowHint`). Pure.
//
// Invariants:
//  - What an audit line or an error message shows of a target (`safeTarget`, `describe`) never holds argument
//    values: a command's name (not its argv), a URL's method, origin and path (no query), a file path and size.
//  - Every value the guest controls is shown quoted and escaped (policy/approvals/escaping.ts), so it stays on
//    its own line inside its quotes. A question shows every value whole; one longer than QUESTION_MAX_CHARS is
//    not put (the gate refuses the operation, unasked). Error messages may cut.
//  - A hint is one line of valid TOML: a rule to put first in `[approvals] rules`, and, when the verdict came
//    from the preset or the default, the setting that would not require it.
import { clip, escaped, shown } from './escaping.js';
import { normalisePath, urlOf, type ApprovalRequest, type DecisionInput } from './request.js';
import { decide, type Decision } from './rules.js';
import { PRESETS, type ApprovalSettings } from './settings.js';

/** A value the guest controls, as a question shows it: escaped, in double quotes, whole. */
const whole = (s: string) => `"${escaped(s)}"`;

type Show = (s: string) => string;

/** What lies below a directory an operation removes or moves, in words: how many entries, and the first few. */
function insideText(r: ApprovalRequest, show: Show): string {
  const n = r.inside?.length ?? 0;
  if (!n) return '';
  const first = r.inside!.slice(0, 5).map(show).join(', ');
  return ` and the ${n} ${n === 1 ? 'entry' : 'entries'} below it (${first}${n > 5 ? `, and ${n - 5} more` : ''})`;
}

/** The target as the audit log and error messages may show it: no argument values, no query strings. */
export function safeTarget(r: ApprovalRequest): string {
  switch (r.op) {
    case 'command': return clip(r.command ?? '', 200);
    case 'net':
    case 'browser.navigate': {
      const u = urlOf(r);
      const where = u ? clip(`${u.origin}${u.pathname}`, 500) : 'an invalid URL';
      return r.op === 'net' ? `${(r.method ?? 'GET').toUpperCase()} ${where}` : where;
    }
    default: {
      const path = clip(normalisePath(r.path ?? ''), 500);
      if (r.op === 'fs.rename') return `${path} -> ${clip(normalisePath(r.to ?? ''), 500)}`;
      return typeof r.size === 'number' ? `${path} (${r.size} bytes)` : path;
    }
  }
}

/** A file operation's target in words: its path(s), shown, where a directory symlink really leads them, and a
 *  write's size. */
function fsTarget(r: ApprovalRequest, show: Show = (x) => shown(x)): string {
  const one = (p: string | undefined, really: string | undefined) =>
    `${show(normalisePath(p ?? '') || '.')}${really !== undefined ? ` (really ${show(really || '.')})` : ''}`;
  const path = one(r.path, r.realPath);
  if (r.op === 'fs.rename') return `${path} to ${one(r.to, r.realTo)}`;
  return typeof r.size === 'number' && r.op === 'fs.write' ? `${path} (${r.size} bytes)` : path;
}

/** "run command \"deploy\"", "send GET \"https://x/y\"", ...: the operation in words, with its safe target
 *  (no argv, no query), every guest value shown. */
export function describe(r: ApprovalRequest): string {
  const u = urlOf(r);
  const where = u ? shown(`${u.origin}${u.pathname}`) : 'an invalid URL';
  switch (r.op) {
    case 'command': return `run command ${shown(r.command ?? '', 200)}`;
    case 'net': return `send ${escaped((r.method ?? 'GET').toUpperCase()).slice(0, 32)} ${where}`;
    case 'browser.navigate': return `load ${where} in its browser`;
    case 'fs.read': return `read ${fsTarget(r)}`;
    case 'fs.write': return `write ${fsTarget(r)}`;
    case 'fs.delete': return `delete ${fsTarget(r)}${insideText(r, (x) => shown(x, 200))}`;
    case 'fs.rename': return `rename ${fsTarget(r)}${insideText(r, (x) => shown(x, 200))}`;
  }
}

/** The longest question kiln puts to a human (characters, as shown: escapes included). */
export const QUESTION_MAX_CHARS = 16 * 1024;

/** A question to put to a human, or why none may be put: a question never hides part of what it asks about. */
export type Question = { text: string } | { tooLong: number };

/** What the human is asked (one line): the operation and its whole target, argv and query included (they are
 *  the client's own user, who sees the arguments anyway), every guest value shown whole: quoted and escaped.
 *  Nothing is cut: a question longer than QUESTION_MAX_CHARS is not put at all (`tooLong`, its length). */
export function question(tool: string, r: ApprovalRequest): Question {
  const what = (() => {
    switch (r.op) {
      case 'command': {
        const argv = (r.argv ?? []).map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : whole(a))).join(' ');
        return `run command ${whole(r.command ?? '')}: ${argv}`;
      }
      case 'net': {
        const method = (r.method ?? 'GET').toUpperCase();
        return `send an HTTP request: ${/^[A-Z]+$/.test(method) ? method : whole(method)} ${whole(r.url ?? '')}`;
      }
      case 'browser.navigate': return `load a page in its browser: ${whole(r.url ?? '')}`;
      case 'fs.read': return `read the file ${fsTarget(r, whole)}`;
      case 'fs.write': return `write the file ${fsTarget(r, whole)}`;
      case 'fs.delete': return `delete ${fsTarget(r, whole)}${insideText(r, whole)}`;
      case 'fs.rename': return `rename ${fsTarget(r, whole)}${insideText(r, whole)}`;
    }
  })();
  const text = `Tool ${whole(tool)} wants to ${what}`;
  return text.length > QUESTION_MAX_CHARS ? { tooLong: text.length } : { text };
}

/** A TOML basic string of `s`, every hidden character escaped (the hint is shown to a human too). */
const tomlString = (s: string) => `"${escaped(s).replace(/\\u\{([0-9a-f]+)\}/g, (_, h: string) => `\\U${h.padStart(8, '0')}`)}"`;

/**
 * How the operator would let `input` through without asking: a rule to put first, and, when the verdict
 * came from the preset or the default, the setting that would not require it. One line (it ends up in an
 * error's first line), valid TOML: an inline table for `[approvals] rules = [...]`.
 */
export function allowHint(input: DecisionInput, settings: ApprovalSettings, decided: Decision): string {
  const keys: string[] = [`op = [${tomlString(input.op)}]`, `tool = ${tomlString(input.tool)}`];
  if (input.op === 'command' && input.command !== undefined) keys.push(`command = ${tomlString(input.command)}`);
  const u = urlOf(input);
  if ((input.op === 'net' || input.op === 'browser.navigate') && u) keys.push(`host = [${tomlString(u.host)}]`);
  if (input.op.startsWith('fs.') && input.path !== undefined) keys.push(`path = [${tomlString(normalisePath(input.path))}]`);
  keys.push('verdict = "allow"');
  let hint = `to allow it without asking, make { ${keys.join(', ')} } the first of the [approvals] rules in kiln.toml`;
  if (decided.rule.startsWith('preset ')) {
    const lighter = PRESETS.slice(0, PRESETS.indexOf(settings.preset)).reverse()
      .find((p) => decide(input, { ...settings, preset: p }).verdict === 'allow');
    if (lighter) hint += `, or set [approvals] preset = "${lighter}"`;
  } else if (decided.rule === 'default') {
    hint += ', or set [approvals] default = "allow"';
  }
  return hint;
}
