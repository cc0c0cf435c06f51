// The `requestState` of MCP 2026-07-28's multi round-trip requests, as kiln mints and checks it: a call that
// needs a human's approval ends with the question and this state; the client calls again with the answer and
// the state, and kiln takes the state back only when it is exactly one it minted for this very call.
//
// Wire: `ks1.<kid>.<payload>.<mac>`: kid, the first 8 hex digits of sha256(key); payload, base64url JSON;
// mac, base64url HMAC-SHA256(key, "ks1.<kid>.<payload>"). Signed, not encrypted: it holds names and digests,
// never an argument value.
//
// Invariants:
//  - A state is accepted (`open`) only when its MAC verifies under a key of the ring (the first signs; the
//    others, earlier keys, still verify), it has not expired, it is bound to this call (the principal, the kiln
//    session, the tool, a digest of the arguments: all equal), and it was never accepted before: its id is
//    spent at the first acceptance (`SpentStates`), so a replayed retry is refused. Any failure is one refusal
//    whose reason is kept for the audit log, never told to the client.
//  - Every replica of a deployment must share the key (KILN_STATE_KEY or [mcp] stateKeyFile); without one, kiln
//    makes a key for this process, and a state is honoured by it alone. Spent ids are per process.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { KilnError } from '../errors.js';
import type { AnswerKind } from '../policy/approvals/gate.js';

/** What a human said to a question, as a state carries it: an accepted answer's kind, or a refusal. */
export type StateAnswer = AnswerKind | 'decline' | 'cancel' | 'invalid';

/** What a state says. */
export interface StatePayload {
  v: 1;
  /** Issued and expiring (ms since the epoch). */
  iat: number;
  exp: number;
  /** Its id: spent when the state is accepted. */
  jti: string;
  /** The process that minted it (`RequestStates.process`): a retry it comes back to is never run again there. */
  px: string;
  /** The principal, the kiln session ("" for a call's own ephemeral session), the tool as called, the
   *  arguments' digest (`argumentsDigest`). */
  pr: string;
  ss: string;
  tool: string;
  args: string;
  /** The answers of the earlier rounds, by approval key (policy/approvals/keys.ts). */
  ok: [string, StateAnswer][];
  /** The question this state goes with: its approval key and the answers offered. */
  ask: { key: string; offered: AnswerKind[] };
}

/** Why a state was refused (the audit log's `reason`). */
export type StateRefusal = 'malformed' | 'key' | 'mac' | 'expired' | 'binding' | 'replayed' | 'ended';

export class StateRefusedError extends KilnError {
  override name = 'StateRefusedError';
  constructor(readonly reason: StateRefusal) {
    super(`requestState refused (${reason})`);
  }
}

/** The ids of accepted states, until they expire. */
export interface SpentStates {
  /** True the first time `jti` is claimed (before `exp`); false when it was claimed before. */
  claim(jti: string, exp: number): boolean | Promise<boolean>;
}

/** The most spent ids a process keeps; past it, expired ones are swept, and then new states are refused. */
const MAX_SPENT = 1 << 20;

/** Spent ids in this process's memory. */
export class SpentInMemory implements SpentStates {
  private readonly spent = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now, private readonly max = MAX_SPENT) {}

  claim(jti: string, exp: number): boolean {
    if (this.spent.has(jti)) return false;
    if (this.spent.size >= this.max) {
      const now = this.now();
      for (const [k, e] of this.spent) if (e < now) this.spent.delete(k);
      if (this.spent.size >= this.max) return false; // a million unexpired states: refuse rather than forget one
    }
    this.spent.set(jti, exp);
    return true;
  }
}

/** The smallest key kiln signs with. */
export const MIN_KEY_BYTES = 32;

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** JSON with every object's keys sorted (a digest of it does not depend on key order). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The digest a state binds a call's arguments by. */
export function argumentsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args ?? {})).digest('base64url');
}

/** A key given as text: base64url (or base64) of at least MIN_KEY_BYTES bytes. */
function decodeKey(text: string, where: string): Buffer {
  const t = text.trim();
  const key = /^[A-Za-z0-9_-]+$/.test(t) ? Buffer.from(t, 'base64url') : /^[A-Za-z0-9+/]+={0,2}$/.test(t) ? Buffer.from(t, 'base64') : undefined;
  if (!key || key.length < MIN_KEY_BYTES) {
    throw new KilnError(`${where}: a requestState key is base64 of at least ${MIN_KEY_BYTES} random bytes (make one with: openssl rand -base64 32)`);
  }
  return key;
}

/** The keys of a deployment: KILN_STATE_KEY (one key), else [mcp] stateKeyFile (one key a line, the first signs,
 *  the others verify), else undefined. */
export function readStateKeys(env: string | undefined, file: string | undefined): Buffer[] | undefined {
  if (env) return [decodeKey(env, 'KILN_STATE_KEY')];
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new KilnError(`[mcp] stateKeyFile ${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  if (lines.length === 0) throw new KilnError(`[mcp] stateKeyFile ${file}: holds no key`);
  return lines.map((l, i) => decodeKey(l, `[mcp] stateKeyFile ${file} line ${i + 1}`));
}

/** What a call binds a state to. */
export interface StateBinding {
  principal: string;
  session: string;
  tool: string;
  args: string;
}

export class RequestStates {
  private readonly ring: { kid: string; key: Buffer }[];
  /** True when the key was made for this process (nobody configured one). */
  readonly ephemeral: boolean;

  /** This process, as the states it mints name it. */
  readonly process = randomBytes(9).toString('base64url');

  constructor(keys: Buffer[] | undefined, private readonly spent: SpentStates = new SpentInMemory(), private readonly now: () => number = Date.now) {
    this.ephemeral = !keys?.length;
    this.ring = (keys?.length ? keys : [randomBytes(32)]).map((key) => ({ kid: createHash('sha256').update(key).digest('hex').slice(0, 8), key }));
  }

  /** A state for `payload` (minus its iat and exp; a random id unless it names one), valid for `ttlMs`. */
  mint(payload: Omit<StatePayload, 'v' | 'iat' | 'exp' | 'jti' | 'px'> & { jti?: string }, ttlMs: number): string {
    const iat = this.now();
    const full: StatePayload = { v: 1, iat, exp: iat + ttlMs, ...payload, jti: payload.jti ?? b64(randomBytes(16)), px: this.process };
    const { kid, key } = this.ring[0];
    const head = `ks1.${kid}.${b64(JSON.stringify(full))}`;
    return `${head}.${b64(createHmac('sha256', key).update(head).digest())}`;
  }

  /** The payload of `state` when it is one kiln minted, unexpired, for exactly `binding`, and never accepted
   *  before (it is spent now, once `check` has accepted the rest of the retry: a retry refused for what it
   *  carries besides the state does not spend it); a StateRefusedError otherwise. */
  async open<T>(state: unknown, binding: StateBinding, check: (payload: StatePayload) => T): Promise<{ payload: StatePayload; checked: T }> {
    const payload = this.verify(state);
    if (payload.pr !== binding.principal || payload.ss !== binding.session || payload.tool !== binding.tool || payload.args !== binding.args) {
      throw new StateRefusedError('binding');
    }
    const checked = check(payload);
    if (!(await this.spent.claim(payload.jti, payload.exp))) throw new StateRefusedError('replayed');
    return { payload, checked };
  }

  /** The payload of a state whose MAC verifies and that has not expired. */
  private verify(state: unknown): StatePayload {
    if (typeof state !== 'string' || state.length > 64 * 1024) throw new StateRefusedError('malformed');
    const parts = state.split('.');
    if (parts.length !== 4 || parts[0] !== 'ks1') throw new StateRefusedError('malformed');
    const [, kid, body, mac] = parts;
    const entry = this.ring.find((r) => r.kid === kid);
    if (!entry) throw new StateRefusedError('key');
    const want = createHmac('sha256', entry.key).update(`ks1.${kid}.${body}`).digest();
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== want.length || !timingSafeEqual(given, want)) throw new StateRefusedError('mac');
    let p: StatePayload;
    try {
      p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw new StateRefusedError('malformed'); // signed by kiln, so never; but a key may be shared with another program
    }
    if (p?.v !== 1 || typeof p.exp !== 'number' || typeof p.jti !== 'string' || !Array.isArray(p.ok) || typeof p.ask?.key !== 'string') throw new StateRefusedError('malformed');
    if (this.now() > p.exp) throw new StateRefusedError('expired');
    return p;
  }
}
