// The guest's URL class on the host (the `runtime.parse-url` and `runtime.set-url-part` WIT functions): the
// WHATWG parser the host's own policy uses, so a guest and its host never disagree on what a URL means.
// Pure functions: no authority.
//
// Invariants:
//  - Failures are thrown as the ABI's error value ({ payload: "Invalid URL: ..." }, the input cut to 200
//    characters), never as a JS exception into the guest.
//  - `part` is one of the WIT `url-part` enum's ten names (the ABI refuses anything else), each a URL setter.

/** The WIT `runtime.url-part` enum. */
export type UrlPart = 'href' | 'protocol' | 'username' | 'password' | 'host' | 'hostname' | 'port' | 'pathname' | 'search' | 'hash';

/** A URL as the guest's URL class holds it. */
function urlParts(u: URL): string {
  const { href, protocol, username, password, host, hostname, port, pathname, search, hash, origin } = u;
  return JSON.stringify({ href, protocol, username, password, host, hostname, port, pathname, search, hash, origin });
}

/** runtime.parse-url: `input` parsed against `base`, as its parts (JSON). */
export function parseUrl(input: string, base: string | undefined): string {
  try {
    return urlParts(base === undefined ? new URL(input) : new URL(input, base));
  } catch {
    throw { payload: `Invalid URL: ${input.slice(0, 200)}` };
  }
}

/** runtime.set-url-part: the parts of `href` after its `part` setter ran with `value` (JSON). */
export function setUrlPart(href: string, part: UrlPart, value: string): string {
  let u: URL;
  try {
    u = new URL(href);
  } catch {
    throw { payload: `Invalid URL: ${href.slice(0, 200)}` };
  }
  try {
    u[part] = value;
  } catch {
    throw { payload: `Invalid URL: ${value.slice(0, 200)}` };
  }
  return urlParts(u);
}
