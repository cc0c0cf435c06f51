// A tool's MCP annotations, derived from what kiln enforces, not from what the author claims. The author may
// only make a hint more cautious: a tool that can run commands is never read-only, one that can reach the
// network is always open-world, whatever its manifest says.
//
// What a tool can reach includes every tool it can call through plugins[...]: its own file's tools and those
// its allow.tools names, transitively (capabilities/tools/tools.ts).
//
// What is within reach follows policy/grants.ts withinReach: the effective authority, and in [policy] mode "ask" every
// declared use a human may allow.
//
//  - readOnlyHint: no command, no network (allow.net), no secret, no browser and no allow.fs write prefix is
//    within reach, and the author does not say otherwise (readOnlyHint: false, or destructiveHint: true).
//    allow.net names hosts, not methods: a tool that can reach a host can send it POST, PUT and DELETE (with
//    the operator's credentials, when it declares a secret), so kiln cannot call it read-only.
//  - destructiveHint: not read-only. An author cannot lower it: kiln cannot tell what a command does.
//  - idempotentHint: read-only. An author may say false.
//  - openWorldHint: allow.net or allow.browser is within reach. An author may say true.
import type { ToolAnnotations, ToolManifest } from '../extensions/manifest.js';

/** What a tool can reach: its own grants, and those of the tools it may call. */
export interface Reach {
  commands: boolean;
  /** allow.net: any method to the hosts it names (allow.net cannot restrict methods). */
  net: boolean;
  /** allow.secrets: requests carrying the operator's credentials. */
  secrets?: boolean;
  /** A browser (allow.browser, on a server whose [browser] is enabled): it can submit forms, so it writes. */
  browser: boolean;
  /** allow.fs with a write prefix: it can write, rename and remove files. */
  fsWrite?: boolean;
}

export function annotations(tool: ToolManifest, reach: Reach): Required<ToolAnnotations> {
  const claimed = tool.annotations ?? {};
  const readOnly = !reach.commands && !reach.net && !reach.secrets && !reach.browser && !reach.fsWrite && claimed.readOnlyHint !== false && claimed.destructiveHint !== true;
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly,
    idempotentHint: readOnly && claimed.idempotentHint !== false,
    openWorldHint: reach.net || reach.browser || claimed.openWorldHint === true,
  };
}
