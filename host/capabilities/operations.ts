// The capability operations a guest can start: one row per operation, the only place they are listed. Everything
// else that names operations derives from this table: the op kinds (engine/instance.ts OpKind), the WIT import
// table's capability functions (engine/imports.ts), the grant kinds (policy/grants.ts GRANT_KINDS, grantKindOf),
// the approval kinds (policy/approvals/request.ts APPROVAL_OPS), the audit log's targets (policy/audit-log.ts
// auditTarget), the fs operations and the access each needs (capabilities/fs FsOp, FsAccessTable), and the
// router's dispatch (capabilities/index.ts: one performer per allow.* key).
//
// Columns:
//  - wit, fn: the WIT interface and function (as the component binds it: camelCase) that starts the operation.
//  - input: what the function takes: "json" a request; "json+bytes" a request and a body (list<u8>); "body" a
//    response body's handle (http.read: the host makes the request {"body": handle}).
//  - allow: the `allow.*` key (and capabilities/<folder>) that declares and performs it.
//  - grant: the operator's grant kind that narrows it ([grants."<extension>"]); null: none (http.read reads a
//    body whose fetch was judged).
//  - approval: the [approvals] `op` it may be put to a human as; null: never asked (browser.call is asked only
//    for navigations, as "browser.navigate").
//  - audit: what the audit log shows as its target (audit-log.ts auditTarget): "name" a command name, "url" a
//    method and URL without query, "browser" a page method (and a goto's URL), "tool" a tool name, "path" a
//    workspace path, "paths" a rename's two; null: no decision line of its own (http.read reads the body of a
//    fetch that had one).
//  - access: for allow.fs, the prefix list it needs ("read" or "write"); null elsewhere.
//
// Invariants: pure data, imports nothing (every layer may read it). Each derived list keeps the table's order,
// first appearance first (messages list them in that order).

export const OPERATIONS = {
  'commands.run': { wit: 'commands', fn: 'run', input: 'json', allow: 'commands', grant: 'commands', approval: 'command', audit: 'name', access: null },
  'commands.start': { wit: 'commands', fn: 'start', input: 'json', allow: 'commands', grant: 'commands', approval: 'command', audit: 'name', access: null },
  'commands.status': { wit: 'commands', fn: 'status', input: 'json', allow: 'commands', grant: 'commands', approval: null, audit: 'name', access: null },
  'commands.stop': { wit: 'commands', fn: 'stop', input: 'json', allow: 'commands', grant: 'commands', approval: null, audit: 'name', access: null },
  'http.fetch': { wit: 'http', fn: 'fetch', input: 'json+bytes', allow: 'net', grant: 'net', approval: 'net', audit: 'url', access: null },
  'http.read': { wit: 'http', fn: 'read', input: 'body', allow: 'net', grant: null, approval: null, audit: null, access: null },
  'browser.call': { wit: 'browser', fn: 'call', input: 'json', allow: 'browser', grant: 'browser', approval: 'browser.navigate', audit: 'browser', access: null },
  'plugins.call': { wit: 'plugins', fn: 'call', input: 'json', allow: 'tools', grant: 'tools', approval: null, audit: 'tool', access: null },
  'fs.readFile': { wit: 'fs', fn: 'readFile', input: 'json', allow: 'fs', grant: 'fs.read', approval: 'fs.read', audit: 'path', access: 'read' },
  'fs.writeFile': { wit: 'fs', fn: 'writeFile', input: 'json+bytes', allow: 'fs', grant: 'fs.write', approval: 'fs.write', audit: 'path', access: 'write' },
  'fs.appendFile': { wit: 'fs', fn: 'appendFile', input: 'json+bytes', allow: 'fs', grant: 'fs.write', approval: 'fs.write', audit: 'path', access: 'write' },
  'fs.readdir': { wit: 'fs', fn: 'readdir', input: 'json', allow: 'fs', grant: 'fs.read', approval: 'fs.read', audit: 'path', access: 'read' },
  'fs.stat': { wit: 'fs', fn: 'stat', input: 'json', allow: 'fs', grant: 'fs.read', approval: 'fs.read', audit: 'path', access: 'read' },
  'fs.mkdir': { wit: 'fs', fn: 'mkdir', input: 'json', allow: 'fs', grant: 'fs.write', approval: 'fs.write', audit: 'path', access: 'write' },
  'fs.rm': { wit: 'fs', fn: 'rm', input: 'json', allow: 'fs', grant: 'fs.write', approval: 'fs.delete', audit: 'path', access: 'write' },
  'fs.rename': { wit: 'fs', fn: 'rename', input: 'json', allow: 'fs', grant: 'fs.write', approval: 'fs.rename', audit: 'paths', access: 'write' },
} as const satisfies Record<string, Operation>;

/** One row of the table (see the columns above). */
export interface Operation {
  wit: 'commands' | 'http' | 'browser' | 'plugins' | 'fs';
  fn: string;
  input: 'json' | 'json+bytes' | 'body';
  allow: 'commands' | 'net' | 'browser' | 'tools' | 'fs';
  grant: string | null;
  approval: string | null;
  audit: 'name' | 'url' | 'browser' | 'tool' | 'path' | 'paths' | null;
  access: 'read' | 'write' | null;
}

type Table = typeof OPERATIONS;
/** A capability operation, as the instance hands it to its host (InstanceHost.op). */
export type OpKind = keyof Table;
/** The WIT interfaces whose functions start operations. */
export type OpInterface = Table[OpKind]['wit'];
/** The allow.* keys (capabilities/<folder>) that perform operations. */
export type OpAllowKey = Table[OpKind]['allow'];
/** The operations declared and performed under allow key `A`. */
export type OpsOf<A extends OpAllowKey> = { [K in OpKind]: Table[K]['allow'] extends A ? K : never }[OpKind];
/** The allow.fs operations. */
export type FsOp = OpsOf<'fs'>;
/** The grant kinds an operation is judged by (policy/grants.ts adds those no operation has: env, secrets). */
export type OpGrantKind = NonNullable<Table[OpKind]['grant']>;
/** The [approvals] ops (policy/approvals/request.ts). */
export type OpApprovalKind = NonNullable<Table[OpKind]['approval']>;
/** What an audit decision line shows as an operation's target (policy/audit-log.ts auditTarget). */
export type OpAuditKind = NonNullable<Table[OpKind]['audit']>;
/** Per fs operation: the prefix list it needs and its [approvals] op, exactly as the table says. */
export type FsAccessTable = { readonly [K in FsOp]: { readonly access: Table[K]['access']; readonly op: Table[K]['approval'] } };

export const OP_KINDS = Object.keys(OPERATIONS) as OpKind[];

/** The row of `kind`, or undefined for a name that is no operation (a page's own browser.request, say). */
export function operation(kind: string): Table[OpKind] | undefined {
  return Object.hasOwn(OPERATIONS, kind) ? OPERATIONS[kind as OpKind] : undefined;
}

/** Each distinct non-null value of column `col`, in table order. */
function distinct<C extends 'grant' | 'approval'>(col: C): NonNullable<Table[OpKind][C]>[] {
  const out: NonNullable<Table[OpKind][C]>[] = [];
  for (const k of OP_KINDS) {
    const v = OPERATIONS[k][col] as Table[OpKind][C];
    if (v !== null && !out.includes(v as NonNullable<Table[OpKind][C]>)) out.push(v as NonNullable<Table[OpKind][C]>);
  }
  return out;
}

/** The grant kinds operations are judged by, in table order. */
export const OP_GRANT_KINDS: readonly OpGrantKind[] = distinct('grant');
/** The [approvals] ops, in table order. */
export const OP_APPROVAL_KINDS: readonly OpApprovalKind[] = distinct('approval');

/** The [approvals] ops of the operations under allow key `allow`, in table order. */
export function approvalKindsOf(allow: OpAllowKey): OpApprovalKind[] {
  return OP_APPROVAL_KINDS.filter((a) => OP_KINDS.some((k) => OPERATIONS[k].allow === allow && OPERATIONS[k].approval === a));
}

/** The operations one WIT interface starts, in table order. */
export function opsOfInterface(wit: OpInterface): OpKind[] {
  return OP_KINDS.filter((k) => OPERATIONS[k].wit === wit);
}
