// The WIT world's imports (wit/kiln.wit `world extension`), one block per interface, as the engine's component
// binds them: what each guest call turns into on the host. This file maps; it decides nothing. The op loop
// behind the capability calls (starting, bounding, delivering) is the instance's (engine/instance.ts); the
// capability checks are behind InstanceHost.op (capabilities/).
//
// Invariants:
//  - A capability call (commands, http, browser, plugins, fs) only starts an op and returns its id: nothing
//    of the operation runs inside the import. Those functions are the rows of capabilities/operations.ts.
//  - Imports never throw into the guest, except the `result`-typed ones, which throw `{ payload }`: the ABI's
//    error value.
//  - crypto, intl and the URL functions are pure (entropy aside): no authority, so no check.
import { digest, hmac, randomBytes, type Hash } from './crypto.js';
import { parseUrl, setUrlPart, type UrlPart } from './url.js';
import { OPERATIONS, opsOfInterface, type OpInterface, type OpKind } from '../capabilities/operations.js';

/** The WIT `runtime.level` enum. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** A `result<json, string>` as the ABI hands it over (runtime.finish, guest.complete). */
export type Outcome = { tag: 'ok'; val: string } | { tag: 'err'; val: string };

/** The session's small string store (the `vars` interface). */
export interface GuestVars {
  get(key: string): string | undefined;
  /** Throws a KilnError with the reason when the store refuses. */
  set(key: string, value: string): void;
  delete(key: string): boolean;
  keys(): string[];
}

/** What one guest instance gives its imports: the op loop and its own state (engine/instance.ts). */
export interface ImportTarget {
  /** Start capability operation `kind` for invocation `inv`; the op id (0: refused). */
  startOp(kind: OpKind, inv: number, request: string, body?: Uint8Array): number;
  /** Abort an op this instance started (a fetch or a body read); anything else is ignored. */
  abortOp(op: number): void;
  /** The guest will not read this response body. */
  discardBody(body: number): void;
  readonly vars: GuestVars;
  log(level: LogLevel, message: string): void;
  sleep(ms: number): number;
  clearTimer(op: number): void;
  interrupted(): boolean;
  progress(inv: number, update: string): void;
  finish(inv: number, outcome: Outcome): void;
  intl(spec: string, op: string, args: string): string;
}

/** The import object for one instance, keyed by WIT interface. */
export function witImports(t: ImportTarget): Record<string, unknown> {
  /** The functions of WIT interface `wit` that start operations, as capabilities/operations.ts lists them. */
  const ops = (wit: OpInterface): Record<string, unknown> => Object.fromEntries(opsOfInterface(wit).map((kind) => {
    const { fn, input } = OPERATIONS[kind];
    const start = input === 'json+bytes'
      ? (inv: number, request: string, bytes: Uint8Array) => t.startOp(kind, inv, request, bytes)
      : input === 'body'
      ? (inv: number, body: number) => t.startOp(kind, inv, JSON.stringify({ body }))
      : (inv: number, request: string) => t.startOp(kind, inv, request);
    return [fn, start];
  }));
  return {
    'kiln:extension/commands': ops('commands'),
    'kiln:extension/http': {
      ...ops('http'),
      abort: (op: number) => t.abortOp(op),
      discard: (body: number) => t.discardBody(body),
    },
    'kiln:extension/browser': ops('browser'),
    'kiln:extension/plugins': ops('plugins'),
    'kiln:extension/fs': ops('fs'),
    'kiln:extension/vars': {
      get: (k: string) => t.vars.get(k),
      set: (k: string, v: string) => {
        try {
          t.vars.set(k, v);
        } catch (e) {
          throw { payload: e instanceof Error ? e.message : String(e) };
        }
      },
      delete: (k: string) => t.vars.delete(k),
      keys: () => t.vars.keys(),
    },
    'kiln:extension/runtime': {
      log: (level: LogLevel, message: string) => t.log(level, message),
      sleep: (ms: number) => t.sleep(ms),
      clearTimer: (op: number) => t.clearTimer(op),
      interrupted: () => t.interrupted(),
      parseUrl: (input: string, base: string | undefined) => parseUrl(input, base),
      setUrlPart: (href: string, part: UrlPart, value: string) => setUrlPart(href, part, value),
      progress: (inv: number, update: string) => t.progress(inv, update),
      finish: (inv: number, outcome: Outcome) => t.finish(inv, outcome),
    },
    // crypto.getRandomValues, crypto.subtle (engine/crypto.ts).
    'kiln:extension/crypto': {
      randomBytes: (n: number) => randomBytes(n),
      digest: (algorithm: Hash, data: Uint8Array) => digest(algorithm, data),
      hmac: (algorithm: Hash, key: Uint8Array, data: Uint8Array) => hmac(algorithm, key, data),
    },
    // The host's ICU for the guest's Intl (engine/intl.ts).
    'kiln:extension/intl': { call: (spec: string, op: string, args: string) => t.intl(spec, op, args) },
  };
}
