// Who is calling kiln over HTTP: a principal, from the request's bearer token. The shared token (KILN_TOKEN or
// [http] token) is principal "default"; a token whose sha256 a [principals.<name>] table holds is <name>; a
// JWT an OAuth 2.1 authorization server issued ([http.oauth]: its signature checked against the issuer's JWKS,
// its issuer, its audience (this server) and its expiry) is "oauth:<sub>", whose table is
// [principals."oauth:<sub>"], else [principals."oauth:*"]. What a principal may do is its
// [principals.*] table's: the tools it may list and call, its own limits, whether it may read /metrics.
//
// Invariants:
//  - A token is compared in constant time (the shared one) or by its digest (a principal's, stored only as
//    sha256); a token under MIN_TOKEN_CHARS is never accepted, and kiln refuses to start with one.
//  - A JWT is accepted only signed by a key of the issuer's JWKS with an asymmetric algorithm, with the
//    configured issuer, this server's audience, an expiry in the future (and not before its nbf), and a
//    subject; any other token is the same 401 (`invalid_token`), whose reason goes to the log only.
//  - Sessions, tasks and approval states are keyed by the principal's `key`, which no client chooses: a
//    session another principal names is another session.
//  - The [principals.*] tables are read as the config file is now (a saved change or SIGHUP): a removed table's
//    token is refused from the next request, and a principal's tools and limits are its table's at each call.
import { createHash, timingSafeEqual } from 'node:crypto';
import { KilnError } from '../errors.js';
import type { OAuthSettings, PrincipalSettings } from '../config/config.js';

/** The table an OAuth subject without a table of its own gets. */
export const OAUTH_DEFAULT = 'oauth:*';

/** The shortest bearer token kiln accepts. */
export const MIN_TOKEN_CHARS = 16;

/** One caller, as kiln knows it. */
export interface Principal {
  /** How the operator names it: "default", a [principals.*] name, "oauth:<sub>", "stdio". */
  id: string;
  /** What sessions, tasks and states are keyed by: `id` made safe for a session name. */
  key: string;
  settings: PrincipalSettings;
  /** A [principals.<name>] principal whose table the config no longer has: it may do nothing more, and what it
   *  still runs is stopped (mcp/http.ts). */
  readonly revoked: boolean;
}


/** The principal of a local client (stdio): everything, as before principals. */
export const STDIO_PRINCIPAL: Principal = { id: 'stdio', key: 'stdio', settings: {}, revoked: false };

/** What a revoked principal may do: nothing (kiln_close_session aside). */
const REVOKED: PrincipalSettings = Object.freeze({ tools: [] });

/** Why a request's Authorization is refused: which case, for the 401's text. */
export type Refusal = 'missing' | 'scheme' | 'invalid';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const safeKey = (id: string) => (/^[\w.-]{1,64}$/.test(id) ? id : `p-${sha256(id).slice(0, 24)}`);

/** The bearer token of an Authorization header, or why there is none. */
export function bearerToken(header: string | undefined): string | Refusal {
  if (header === undefined) return 'missing';
  const m = /^Bearer (\S+)$/.exec(header);
  return m ? m[1] : 'scheme';
}

/** Checks tokens against the shared token, the principals' digests and, when configured, the OAuth issuer. */
type Tables = Record<string, PrincipalSettings & { tokenSha256?: string }>;

export class Principals {
  private digests: { of: Tables; byDigest: Map<string, string> } | undefined;
  private jwks?: Promise<(token: string) => Promise<Record<string, unknown>>>;

  /** `tables` gives the [principals.*] tables as they are now (the config file's current reading). */
  constructor(
    private readonly shared: string | undefined,
    private readonly tables: () => Tables,
    private readonly oauth?: OAuthSettings,
  ) {
    if (shared !== undefined && shared.length < MIN_TOKEN_CHARS) {
      throw new KilnError(`the bearer token (KILN_TOKEN or [http] token) is ${shared.length} characters; kiln takes tokens of at least ${MIN_TOKEN_CHARS} (make one with: openssl rand -base64 32)`);
    }
  }

  /** Principal names by token digest, for the tables as they are now. */
  private byDigest(): Map<string, string> {
    const of = this.tables();
    if (this.digests?.of !== of) {
      const byDigest = new Map<string, string>();
      for (const [name, p] of Object.entries(of)) if (p.tokenSha256) byDigest.set(p.tokenSha256.toLowerCase(), name);
      this.digests = { of, byDigest };
    }
    return this.digests.byDigest;
  }

  /** The principal `token` stands for; undefined when it stands for none (the reason given to `why`). */
  async check(token: string, why: (reason: string) => void = () => {}): Promise<Principal | undefined> {
    if (token.length < MIN_TOKEN_CHARS) return void why('too short');
    if (this.shared !== undefined) {
      const a = Buffer.from(token), b = Buffer.from(this.shared);
      if (a.length === b.length && timingSafeEqual(a, b)) return this.named('default');
    }
    const name = this.byDigest().get(sha256(token));
    if (name !== undefined) return this.named(name);
    if (this.oauth && token.split('.').length === 3) {
      try {
        const claims = await (await this.verifier())(token);
        const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
        const missing = this.oauth.scopes.filter((s) => !scopes.includes(s));
        if (missing.length) return void why(`the token lacks the scope(s) ${missing.join(', ')}`);
        // jose checks that a sub is present, not what it is: only a plain string names a subject.
        if (typeof claims.sub !== 'string' || !/^[^\u0000-\u001f]{1,256}$/.test(claims.sub)) return void why('its sub is not a string of 1 to 256 characters');
        return this.named(`oauth:${claims.sub}`);
      } catch (e) {
        return void why(`JWT refused: ${(e as Error).message}`);
      }
    }
    return void why('no such token');
  }

  /** Principal `id`, whose settings are its table's as the config file is at each use. A token principal
   *  (neither "default" nor an OAuth subject) exists only by its table: once that is gone it is revoked. */
  named(id: string): Principal {
    const tables = this.tables;
    const byToken = id !== 'default' && !id.startsWith('oauth:');
    return {
      id, key: safeKey(id),
      get revoked(): boolean {
        return byToken && !Object.hasOwn(tables(), id);
      },
      get settings(): PrincipalSettings {
        const now = tables();
        if (byToken && !Object.hasOwn(now, id)) return REVOKED;
        return (Object.hasOwn(now, id) ? now[id] : id.startsWith('oauth:') && Object.hasOwn(now, OAUTH_DEFAULT) ? now[OAUTH_DEFAULT] : undefined) ?? {};
      },
    };
  }

  /** The Protected Resource Metadata (RFC 9728) of this server, when it takes OAuth tokens. */
  metadata(): Record<string, unknown> | undefined {
    if (!this.oauth) return undefined;
    return {
      resource: this.oauth.audience, authorization_servers: [this.oauth.issuer], bearer_methods_supported: ['header'],
      ...(this.oauth.scopes.length ? { scopes_supported: this.oauth.scopes } : {}),
    };
  }

  private verifier(): Promise<(token: string) => Promise<Record<string, unknown>>> {
    const o = this.oauth!;
    return (this.jwks ??= (async () => {
      const { createRemoteJWKSet, jwtVerify } = await import('jose');
      const keys = createRemoteJWKSet(new URL(o.jwksUri), { timeoutDuration: 5000, cooldownDuration: 30_000 });
      return async (token: string) => {
        const { payload } = await jwtVerify(token, keys, {
          issuer: o.issuer, audience: o.audience, requiredClaims: ['exp', 'sub'],
          algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
        });
        return payload as Record<string, unknown>;
      };
    })());
  }
}
