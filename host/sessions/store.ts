// Where sessions' state lives beyond this process: [sessions] store = "redis://host:port[/db]" (Redis, or
// Valkey, which speaks its protocol) keeps sessions' `vars` — and the records other layers keep by name (a 2025
// MCP session's initialize: mcp/http.ts) — in a shared server, so that any replica of a deployment serves a
// session and its vars survive a replica's loss. Without it (the default) each process keeps its own, in
// memory. A guest's globals stay a per-replica cache that may reset, as the authoring contract allows.
//
// Invariants:
//  - The process's copy of a session's vars for one extension file (sessions/session.ts) is read from the store
//    before each call into that guest, when no call of it is in flight (`load`), and every change is written
//    through (`write`); a call is answered only after its session's writes reached the store (`flush`), so the
//    next call, on any replica, sees them. Concurrent calls of one session on two replicas: the last write
//    of a key wins, as between two extensions' calls on one replica.
//  - A session's vars (and a record) expire in the store [sessions] idleTtlMs after they were last written or
//    read, as its session does; an explicit close (kiln_close_session, a 2025 MCP session's DELETE) deletes
//    them.
//  - The store holds the vars of `(session, extension file)`: replicas must load the extensions at the same
//    paths (the same kiln.toml). Nothing else is stored: not the guests, processes or browser contexts.
//  - The database a URL names is the one used, or none: a SELECT the server refuses (an index past its
//    `databases`) fails the start, instead of writing into database 0.
//  - A store that cannot be reached fails the call that needs it, with a StoreError naming the setting;
//    /readyz reports it, and each change between reachable and not is logged once (`onState`).
import { createHash } from 'node:crypto';
import { KilnError, StoreError } from '../errors.js';

export interface VarsStore {
  /** The vars of `file` in `session`, as the store holds them now. */
  load(session: string, file: string): Promise<Map<string, string>>;
  /** A change made by a guest (queued; `flush` waits for it). */
  write(session: string, file: string, op: 'set' | 'delete', key: string, value?: string): void;
  /** Every change `session` made so far has reached the store. */
  flush(session: string): Promise<void>;
  /** Forget `session`'s vars (it was closed). */
  drop(session: string): Promise<void>;
  /** A record other layers keep by `name` (a string), for the sessions' idle time from each keep (a recall
   *  reads it only: who may renew it is the caller's decision). */
  keep(name: string, value: string): Promise<void>;
  recall(name: string): Promise<string | undefined>;
  forget(name: string): Promise<void>;
  /** Whether the store answers now. */
  readonly ready: boolean;
  /** What it is, for the operator's log and /readyz: the URL without its credentials. */
  readonly where: string;
  close(): Promise<void>;
}

/** How the store's reachability changed: `ready` false with why it is not reachable, true when it is again;
 *  `where`: the store, as VarsStore.where. */
export type StoreState = (ready: boolean, where: string, why?: string) => void;

/** The URL schemes [sessions] store takes. */
export const STORE_SCHEMES = ['redis:', 'rediss:', 'valkey:', 'valkeys:'];

const PREFIX = 'kiln:v1:';
const hashOf = (session: string, file: string) => `${PREFIX}vars:${session}:${createHash('sha256').update(file).digest('hex').slice(0, 20)}`;
const indexOf = (session: string) => `${PREFIX}session:${session}`;
const recordOf = (name: string) => `${PREFIX}record:${name}`;

/** A store in Redis or Valkey at `url`; its entries expire `ttlMs` after they were last written or read.
 *  Resolves once the server answered (or, when it does not answer yet, at once: it is retried, and `onState`
 *  hears when it answers); rejects when the server refuses the URL's database. */
export async function openStore(url: string, ttlMs: number, onState: StoreState = () => {}): Promise<VarsStore> {
  const { Redis } = await import('ioredis');
  const u = new URL(url.replace(/^valkey/, 'redis'));
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new KilnError(`[sessions] store = "${u.protocol}//${u.host}${u.pathname}": the path must be a database number (/0, /1, ...)`);
  const where = `${u.protocol}//${u.host}/${db}`;
  const redis = new Redis(u.href, { maxRetriesPerRequest: 1, commandTimeout: 5000, enableOfflineQueue: true, lazyConnect: true });
  let refused: string | undefined; // the server refused the database: nothing is read or written
  let state: boolean | undefined;
  const tell = (ready: boolean, why?: string) => {
    if (state === ready) return;
    state = ready;
    onState(ready, where, why);
  };
  redis.on('error', (e: Error) => {
    // ioredis selects the URL's database on each connect and, refused, goes on in database 0.
    if (/DB index is out of range|invalid DB index/i.test(e.message)) {
      refused = e.message;
      redis.disconnect();
    }
    tell(false, e.message.slice(0, 200)); // it reconnects on its own; a command that fails says so to its call
  });
  redis.on('ready', () => {
    if (refused === undefined) tell(true);
  });
  redis.on('end', () => tell(false, refused ?? 'the connection ended'));
  try {
    await redis.connect();
  } catch {
    // not reachable yet: calls that need it fail, and /readyz says so, until it answers
  }
  if (refused !== undefined) throw new KilnError(`[sessions] store = "${where}": the server refused the database (${refused}): name one it has`);
  const failed = (e: unknown) => new StoreError(`the session store [sessions] store = "${where}" cannot be reached: ${refused ?? (e as Error).message?.slice(0, 200) ?? e}`);
  const pending = new Map<string, Promise<unknown>[]>();
  return {
    where,
    get ready() {
      return refused === undefined && redis.status === 'ready';
    },
    async load(session, file) {
      const key = hashOf(session, file);
      try {
        const [[, entries]] = (await redis.multi().hgetall(key).pexpire(key, ttlMs).exec()) as [[null, Record<string, string>], unknown];
        return new Map(Object.entries(entries ?? {}));
      } catch (e) {
        throw failed(e);
      }
    },
    write(session, file, op, key, value) {
      const hash = hashOf(session, file);
      const index = indexOf(session);
      const m = redis.multi();
      if (op === 'set') m.hset(hash, key, value!);
      else m.hdel(hash, key);
      m.pexpire(hash, ttlMs).sadd(index, hash).pexpire(index, ttlMs);
      const p = m.exec();
      let list = pending.get(session);
      if (!list) pending.set(session, (list = []));
      list.push(p);
    },
    async flush(session) {
      const list = pending.get(session);
      if (!list) return;
      pending.delete(session);
      try {
        for (const r of await Promise.all(list)) for (const [err] of (r as [Error | null, unknown][] | null) ?? []) if (err) throw err;
      } catch (e) {
        throw failed(e);
      }
    },
    async drop(session) {
      pending.delete(session);
      try {
        const index = indexOf(session);
        const hashes = await redis.smembers(index);
        await redis.del(index, ...hashes);
      } catch {
        // they expire with the session's idle time anyway
      }
    },
    async keep(name, value) {
      try {
        await redis.set(recordOf(name), value, 'PX', ttlMs);
      } catch (e) {
        throw failed(e);
      }
    },
    async recall(name) {
      try {
        return (await redis.get(recordOf(name))) ?? undefined;
      } catch (e) {
        throw failed(e);
      }
    },
    async forget(name) {
      await redis.del(recordOf(name)).catch(() => {}); // it expires anyway
    },
    async close() {
      redis.disconnect();
    },
  };
}
