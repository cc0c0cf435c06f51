// Where sessions' `vars` live beyond this process: [sessions] store = "redis://host:port" (Redis, or Valkey,
// which speaks its protocol) keeps them in a shared server, so that any replica of a deployment serves a
// session and its vars survive a replica's loss. Without it (the default) each process keeps its own, in
// memory. A guest's globals stay a per-replica cache that may reset, as the authoring contract allows.
//
// Invariants:
//  - The process's copy of a session's vars for one extension file (sessions/session.ts) is read from the store
//    before each call into that guest, when no call of it is in flight (`load`), and every change is written
//    through (`write`); a call is answered only after its session's writes reached the store (`flush`), so the
//    next call, on any replica, sees them. Concurrent calls of one session on two replicas: the last write
//    of a key wins, as between two extensions' calls on one replica.
//  - A session's vars expire in the store [sessions] idleTtlMs after its last call, as its session does; an
//    explicit close (kiln_close_session, a 2025 MCP session's end) deletes them.
//  - The store holds the vars of `(session, extension file)`: replicas must load the extensions at the same
//    paths (the same kiln.toml). Nothing else is stored: not the guests, processes or browser contexts.
//  - A store that cannot be reached fails the call that needs it, with a KilnError naming the setting;
//    /readyz reports it.
import { createHash } from 'node:crypto';
import { KilnError } from '../errors.js';

export interface VarsStore {
  /** The vars of `file` in `session`, as the store holds them now. */
  load(session: string, file: string): Promise<Map<string, string>>;
  /** A change made by a guest (queued; `flush` waits for it). */
  write(session: string, file: string, op: 'set' | 'delete', key: string, value?: string): void;
  /** Every change `session` made so far has reached the store. */
  flush(session: string): Promise<void>;
  /** Forget `session`'s vars (it was closed). */
  drop(session: string): Promise<void>;
  /** Whether the store answers now. */
  readonly ready: boolean;
  close(): Promise<void>;
}

/** The URL schemes [sessions] store takes. */
export const STORE_SCHEMES = ['redis:', 'rediss:', 'valkey:', 'valkeys:'];

const PREFIX = 'kiln:v1:';
const hashOf = (session: string, file: string) => `${PREFIX}vars:${session}:${createHash('sha256').update(file).digest('hex').slice(0, 20)}`;
const indexOf = (session: string) => `${PREFIX}session:${session}`;

/** A store in Redis or Valkey at `url`; its entries expire `ttlMs` after they were last written or read. */
export async function openStore(url: string, ttlMs: number): Promise<VarsStore> {
  const { Redis } = await import('ioredis');
  const u = new URL(url.replace(/^valkey/, 'redis'));
  const redis = new Redis(u.href, { maxRetriesPerRequest: 1, commandTimeout: 5000, enableOfflineQueue: true, lazyConnect: false });
  redis.on('error', () => {}); // reconnects on its own; a command that fails says so to its call
  const failed = (e: unknown) => new KilnError(`the session store [sessions] store = "${u.protocol}//${u.host}" cannot be reached: ${(e as Error).message?.slice(0, 200) ?? e}`);
  const pending = new Map<string, Promise<unknown>[]>();
  return {
    get ready() {
      return redis.status === 'ready';
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
    async close() {
      redis.disconnect();
    },
  };
}
