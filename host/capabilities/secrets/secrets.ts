// allow.secrets: credentials the operator holds, which the host adds to a tool's HTTP requests and the guest
// never sees. The operator's side (kiln.toml):
//
//   [secrets.github]
//   env = "GITHUB_TOKEN"          # the environment variable of kiln's own process that holds the value
//   hosts = ["api.github.com"]    # allow.net's grammar: the only hosts the header is ever sent to
//   header = "authorization"      # the request header it travels in
//   format = "Bearer {}"          # the header's value: exactly one {} stands for the secret
//
// and the tool's: `allow: { net: ['api.github.com'], secrets: ['github'] }`.
//
// Invariants (docs/security.md, "Secrets"; test/secrets.test.mjs):
//  - The value is read from kiln's environment once, when the server's registry is made, and deleted from it
//    (process.env): no child process (commands, the browser) and no environment pass-through (allowEnv,
//    allow.env, a command's env) can pass it on. `guestEnv` also skips every name a [secrets.*] uses. The
//    server's /proc/<pid>/environ still shows its initial environment: commands run where that entry does
//    not exist (reaper.c, "Isolation"), and the guest is never told the server's pid (sessions/session.ts GUEST_PID).
//  - The host adds the header to one hop of a request only when the tool whose handler made the request
//    declares the secret and the operator grants it to that tool's extension (`secrets = [...]` in its
//    [grants."<key>"], in every [policy] mode: policy/grants.ts grantedSecrets), the hop's URL host matches the secret's hosts (normalised as allow.net does: the
//    name, not the address it resolves to) and the hop is https, or plain http to a loopback host. Every hop
//    is built anew from the guest's own headers, so a redirect to another host never carries it.
//  - The secret wins: on a hop that gets it, a header of the same name the guest set is dropped.
//  - The value appears in no error message, log line, audit record, or anything that crosses into the guest:
//    it lives in a private field, is formatted only into the outgoing header, and is checked for characters
//    a header cannot carry when it is read (so the HTTP client has no reason to quote it back).
import { isIP } from 'node:net';
import { KilnError, PermissionError } from '../../errors.js';
import { hostAllowed, NetPatternError, normaliseHost, parsePattern } from '../net/net.js';

/** The operator's [secrets.<name>] table, validated. */
export interface SecretSpec {
  env: string;
  hosts: string[];
  /** Lower case. */
  header: string;
  format: string;
}

export type SecretsConfig = Record<string, SecretSpec>;

/** A secret's name, in allow.secrets and as the key of [secrets.<name>]. */
export const SECRET_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** RFC 9110 token characters: what a header name may be. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,128}$/;
/** What a header value may hold (undici refuses anything else): tab, visible ASCII, space, obs-text. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Headers the host frames itself (http.ts FORBIDDEN), and `cookie`, which the session's jar sets. */
const RESERVED_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer', 'proxy-connection', 'accept-encoding', 'cookie']);
const KEYS = ['env', 'hosts', 'header', 'format'];
const MAX_FORMAT = 1024;
const MAX_VALUE = 16 * 1024;

export class SecretError extends KilnError {
  override name = 'SecretError';
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parse `[secrets]` (a table of name → table). `fail` makes the caller's error (config/config.ts: a ConfigError
 *  naming the file). */
export function readSecrets(v: unknown, fail: (message: string) => Error): SecretsConfig {
  if (v === undefined) return {};
  if (!isTable(v)) throw fail('[secrets] must be a table of [secrets.<name>] tables');
  const out: SecretsConfig = {};
  for (const [name, t] of Object.entries(v)) {
    const where = `[secrets.${name}]`;
    if (!SECRET_NAME.test(name)) throw fail(`${JSON.stringify(name).slice(0, 80)} is not a secret name: 1-64 characters of A-Z a-z 0-9 _ -`);
    if (!isTable(t)) throw fail(`${where} must be a table with env, hosts, header and format`);
    for (const k of Object.keys(t)) if (!KEYS.includes(k)) throw fail(`${where} has an unknown key "${k.slice(0, 64)}" (env, hosts, header, format)`);
    for (const k of KEYS) if (t[k] === undefined) throw fail(`${where} needs ${k} (env, hosts, header and format are all required)`);
    const { env, hosts, header, format } = t;
    if (typeof env !== 'string' || !ENV_NAME.test(env)) throw fail(`${where} env must be the name of an environment variable`);
    if (env === 'PATH' || env.startsWith('KILN_')) throw fail(`${where} env = "${env}" is kiln's own setting, not a place for a secret`);
    if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === 'string' && h.length > 0)) {
      throw fail(`${where} hosts must be a non-empty list of hosts (allow.net's grammar: api.example.com, *.example.com, host:port)`);
    }
    for (const h of hosts) {
      try {
        parsePattern(h);
      } catch (e) {
        if (e instanceof NetPatternError) throw fail(`${where} hosts: ${e.message}`);
        throw e;
      }
    }
    if (typeof header !== 'string' || !HEADER_NAME.test(header)) throw fail(`${where} header must be a header name (letters, digits and !#$%&'*+-.^_\`|~)`);
    if (RESERVED_HEADERS.has(header.toLowerCase())) throw fail(`${where} header = "${header}" is set by kiln itself and cannot carry a secret`);
    if (typeof format !== 'string' || format.length > MAX_FORMAT || !HEADER_VALUE.test(format)) {
      throw fail(`${where} format must be a string of at most ${MAX_FORMAT} characters a header value can hold (no line breaks or control characters)`);
    }
    if (format.split('{}').length !== 2) throw fail(`${where} format must contain {} exactly once (where the secret goes), e.g. "Bearer {}"`);
    out[name] = { env, hosts: [...hosts], header: header.toLowerCase(), format };
  }
  const byEnv = new Map<string, string>();
  for (const [name, s] of Object.entries(out)) {
    const other = byEnv.get(s.env);
    if (other) throw fail(`[secrets.${other}] and [secrets.${name}] read the same env = "${s.env}"; one variable holds one secret`);
    byEnv.set(s.env, name);
  }
  return out;
}

/** Every environment name a [secrets.*] reads: no environment pass-through may show them (capabilities/env/env.ts guestEnv). */
export function secretEnvNames(config: SecretsConfig | undefined): Set<string> {
  return new Set(Object.values(config ?? {}).map((s) => s.env));
}

/** Values taken out of process.env, by variable name: taken once per process, so a second registry (a
 *  reload) finds them here rather than in an environment that no longer has them. */
const taken = new Map<string, string | undefined>();

function takeEnv(name: string, env: NodeJS.ProcessEnv): string | undefined {
  if (env !== process.env) return env[name];
  if (!taken.has(name)) {
    taken.set(name, process.env[name]);
    delete process.env[name];
  }
  return taken.get(name);
}

const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));

/** One secret as a tool's requests carry it. The value is a private field: JSON.stringify, util.inspect and
 *  structured clone of this object show none of it. */
export class SecretHeader {
  readonly #value: string;
  constructor(readonly name: string, readonly header: string, readonly hosts: readonly string[], value: string) {
    this.#value = value;
  }

  /** Whether a request hop to `url` gets this header: a host of the secret, over https (or plain http to a
   *  loopback host, which never leaves the machine). */
  appliesTo(url: URL): boolean {
    const host = normaliseHost(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(host))) return false;
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return hostAllowed([...this.hosts], host, port);
  }

  /** The header's value. Only http.ts calls this, for the request it sends. */
  reveal(): string {
    return this.#value;
  }

  toJSON(): unknown {
    return { name: this.name, header: this.header, hosts: this.hosts };
  }
}

/** The headers of one request hop: the guest's own (`headers`), with each secret that applies to `url` in
 *  place of any header of the same name. Refused when two of the tool's secrets would fill one header. */
export function withSecrets(headers: [string, string][], url: URL, secrets: readonly SecretHeader[]): [string, string][] {
  if (secrets.length === 0) return headers;
  const applying = secrets.filter((s) => s.appliesTo(url));
  if (applying.length === 0) return headers;
  const names = new Set<string>();
  for (const s of applying) {
    if (names.has(s.header)) {
      const both = applying.filter((x) => x.header === s.header).map((x) => x.name).join('" and "');
      throw new PermissionError(`secrets "${both}" both apply to ${url.host} in the header ${s.header}; the operator must give them different hosts or headers`);
    }
    names.add(s.header);
  }
  return [...headers.filter(([k]) => !names.has(k.toLowerCase())), ...applying.map((s): [string, string] => [s.header, s.reveal()])];
}

/** What a tool declares, as far as secrets go. */
interface Declaring {
  name: string;
  allow: { secrets?: string[] };
}

/** The operator's secrets with their values, for one registry (one server). */
export class SecretStore {
  /** name → the header, or why it cannot be used (no such variable, or one a header cannot carry). */
  private readonly ready = new Map<string, SecretHeader | string>();

  constructor(readonly config: SecretsConfig = {}, env: NodeJS.ProcessEnv = process.env) {
    for (const [name, s] of Object.entries(config)) {
      const raw = takeEnv(s.env, env)?.trim();
      if (!raw) {
        this.ready.set(name, `[secrets.${name}] env = "${s.env}" is not set in kiln's environment: set ${s.env} where kiln starts (it is read once, when the server starts), or point [secrets.${name}] env at the variable that holds it`);
      } else if (raw.length > MAX_VALUE || !HEADER_VALUE.test(raw)) {
        // Never quote the value, not even a part of it.
        this.ready.set(name, `the value of ${s.env} ([secrets.${name}] env) cannot be sent in a header: it is longer than ${MAX_VALUE} characters or holds a line break or control character`);
      } else {
        const [before, after] = s.format.split('{}');
        this.ready.set(name, new SecretHeader(name, s.header, s.hosts, before + raw + after));
      }
    }
  }

  /** Why `tool` cannot run: a secret it declares that is not configured, or has no usable value. */
  problem(tool: Declaring): string | undefined {
    for (const name of tool.allow.secrets ?? []) {
      const r = this.ready.get(name);
      if (r === undefined) {
        return `tool "${tool.name}" declares allow.secrets "${name}", which the operator has not configured: add [secrets.${name}] to kiln.toml with env = "<VARIABLE>", hosts = ["<host>"], header = "<header name>" and format = "<value with one {}>" (docs/configuration.md)`;
      }
      if (typeof r === 'string') return `tool "${tool.name}" declares allow.secrets "${name}", but ${r}`;
    }
    return undefined;
  }

  /** Refuse a call of `tool` before its handler runs when one of its secrets cannot be used. */
  check(tool: Declaring): void {
    const why = this.problem(tool);
    if (why) throw new SecretError(why);
  }

  /** The secrets a tool's requests carry: exactly `names`, the checked list policy/grants.ts `grantedSecrets` gives
   *  for that tool (declared by it and granted to its extension; never another tool's of the same file). */
  headersFor(names: readonly string[]): SecretHeader[] {
    const out: SecretHeader[] = [];
    for (const name of names) {
      const r = this.ready.get(name);
      if (r instanceof SecretHeader) out.push(r);
    }
    return out;
  }
}
