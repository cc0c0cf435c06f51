// The DNS lookup kiln connects through, for fetch (http.ts, undici's connect) and for the browser's gate
// (capabilities/browser/gate.ts): it keeps only the addresses the operator's [net] allows, inside the connection's own
// lookup, so the address that was checked is the one connected to (a rebinding name gains nothing).
import type { LookupAddress } from 'node:dns';
import { createRequire } from 'node:module';
import { PermissionError } from '../../errors.js';
import { addressAllowed, type NetPolicy } from './net.js';

const load = createRequire(import.meta.url); // node:dns loads on the first connection, not on kiln run's path

/** A name that resolves only to addresses `[net] denyPrivate` forbids. */
export class PrivateAddressError extends PermissionError {
  constructor(hostname: string, addresses: LookupAddress[]) {
    super(`${hostname} resolves to ${addresses.map((a) => a.address).join(', ')}, a private or loopback address, which the operator forbids ([net] denyPrivate)`);
  }
}

/** A `lookup` for net.connect, http.request or undici's connect, judged under `policy`. */
export function allowedLookup(policy: NetPolicy) {
  return (hostname: string, options: any, callback: any): void => {
    (load('node:dns') as typeof import('node:dns')).lookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err);
      const allowed = addresses.filter((a) => addressAllowed(a.address, policy));
      if (allowed.length === 0) return callback(new PrivateAddressError(hostname, addresses));
      if (options?.all) return callback(null, allowed);
      callback(null, allowed[0].address, allowed[0].family);
    });
  };
}
