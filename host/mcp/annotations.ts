// A tool's MCP annotations, derived from what kiln enforces, not from what the author claims. The author may
// only make a hint more cautious: a tool that can run commands is never read-only, one that can reach the
// network is always open-world, whatever its manifest says.
//
//  - readOnlyHint: no command is granted (the tool's only way to change anything outside its guest; its
//    HTTP requests reach the hosts of allow.net, which openWorldHint reports). An author may say false.
//  - destructiveHint: not read-only. An author cannot lower it: kiln cannot tell what a command does.
//  - idempotentHint: read-only. An author may say false.
//  - openWorldHint: allow.net is declared. An author may say true.
import type { ToolAnnotations, ToolManifest } from '../manifest.js';

export function annotations(tool: ToolManifest, grantedCommands: readonly string[]): Required<ToolAnnotations> {
  const claimed = tool.annotations ?? {};
  const readOnly = grantedCommands.length === 0 && claimed.readOnlyHint !== false;
  return {
    readOnlyHint: readOnly,
    destructiveHint: !readOnly,
    idempotentHint: readOnly && claimed.idempotentHint !== false,
    openWorldHint: tool.allow.net.length > 0 || claimed.openWorldHint === true,
  };
}
