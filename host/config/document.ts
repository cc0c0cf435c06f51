// The config file's text as a document: TOML (kiln.toml), YAML (kiln.yaml, kiln.yml) or JSON (kiln.json), chosen
// by the file's extension; config/config.ts reads the settings from what this returns (one schema for the three).
//
// Invariants:
//  - A key given twice in one table or object is an error in every format (smol-toml refuses it, YAML is read
//    with uniqueKeys, JSON is scanned by `duplicateJsonKey`), so a later line cannot silently undo an earlier one.
//  - YAML aliases are bounded (maxAliasCount), so a small file cannot expand into a huge document.
//  - A document that does not parse is one error, made by the caller's `fail` (config/config.ts: a ConfigError)
//    from the file, the format and the parser's first line.
//  - The parsers load only when a document is read, so finding a config file (config/config-file.ts) loads none.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** JSON.parse, refusing a key given twice in one object, as the TOML and YAML readers do (JSON.parse keeps
 *  the last silently: `"denyPrivate": true, ..., "denyPrivate": false` would read as false). */
function parseJson(text: string): unknown {
  const value = JSON.parse(text);
  const dup = duplicateJsonKey(text);
  if (dup) throw new Error(`the key ${JSON.stringify(dup.key)} is given twice in one object (line ${dup.line})`);
  return value;
}

/** The first key given twice in one object of `text`, which JSON.parse has accepted: a scan in JSON's own
 *  grammar (strings, the four whitespace characters, objects and arrays), comparing keys as decoded, so
 *  `"a"` and `"\u0061"` are the same key. Lines are counted at line feeds. */
export function duplicateJsonKey(text: string): { key: string; line: number } | undefined {
  const open: (Set<string> | undefined)[] = []; // per enclosing object its keys; undefined for an array
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    else if (c === '{') open.push(new Set());
    else if (c === '[') open.push(undefined);
    else if (c === '}' || c === ']') open.pop();
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      let next = end + 1;
      while (text[next] === ' ' || text[next] === '\t' || text[next] === '\n' || text[next] === '\r') next++;
      const keys = open[open.length - 1];
      if (text[next] === ':' && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return { key, line };
        keys.add(key);
      }
      i = end;
    }
  }
  return undefined;
}

/** The document in `file`, by its extension: TOML (kiln.toml), YAML (.yaml/.yml) or JSON (.json). `fail` makes
 *  the caller's error from the message when `text` does not parse. */
export function parseDocument(file: string, text: string, fail: (message: string) => Error): unknown {
  const lower = file.toLowerCase();
  const [format, parse] = lower.endsWith('.json') ? ['JSON', parseJson]
    : lower.endsWith('.yaml') || lower.endsWith('.yml') ? ['YAML', (t: string) => (require('yaml') as typeof import('yaml')).parse(t, { uniqueKeys: true, maxAliasCount: 100 })]
    : ['TOML', (t: string) => (require('smol-toml') as typeof import('smol-toml')).parse(t)] as const;
  try {
    return (parse as (t: string) => unknown)(text);
  } catch (e: any) {
    // The parsers' first line says what (yaml's says where too); smol-toml says where in its fields.
    const at = Number.isInteger(e?.line) ? ` (line ${e.line}, column ${e.column})` : '';
    throw fail(`${file}: not valid ${format}${at}: ${String(e?.message ?? e).split('\n')[0]}`);
  }
}
