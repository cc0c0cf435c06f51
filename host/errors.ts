// Typed errors. Each carries a message a user can act on; `name` tells the kind of failure.

export class KilnError extends Error {
  override name = 'KilnError';
}

/** The engine build is missing or not the one this host expects. */
/** The command line itself is wrong (an option's value): `kiln` exits 2 before loading anything. */
export class UsageError extends KilnError {
  override name = 'UsageError';
}

export class EngineError extends KilnError {
  override name = 'EngineError';
}

/** An artifact or source could not be built or loaded. */
export class ExtensionLoadError extends KilnError {
  override name = 'ExtensionLoadError';
  constructor(readonly file: string, message: string) {
    super(`${file}: ${message}`);
  }
}

/** A capability call was refused by policy. The guest sees it as a PermissionError. */
export class PermissionError extends KilnError {
  override name = 'PermissionError';
}

/** A capability this server cannot offer here (no browser in this host; fs without Linux's /proc/self/fd). */
export class UnavailableError extends KilnError {
  override name = 'UnavailableError';
}

/** Arguments did not match a tool's inputSchema. */
export class InvalidArgumentsError extends KilnError {
  override name = 'InvalidArgumentsError';
}

/** The guest trapped, ran out of memory, or otherwise cannot continue; its instance is discarded. */
export class GuestCrashError extends KilnError {
  override name = 'GuestCrashError';
}

/** A handler threw; message first, the guest's stack after. */
export class ToolError extends KilnError {
  override name = 'ToolError';
  constructor(message: string, readonly detail: string) {
    super(message);
  }
}

/** A call ran past its time limit; the guest that ran it was discarded. */
export class TimeoutError extends KilnError {
  override name = 'TimeoutError';
}

/** A tool's result did not match its outputSchema: the result is not sent. */
export class InvalidResultError extends KilnError {
  override name = 'InvalidResultError';
}

/** The client cancelled the call (or went away): its guest was stopped and discarded, its work aborted. */
export class CancelledError extends KilnError {
  override name = 'CancelledError';
}

/** "`what` was cancelled by the client (its reason)": an abort signal's reason (an Error's message, or the
 *  string a client sent with notifications/cancelled) in a message a person can read. */
export function cancelledMessage(what: string, reason: unknown): string {
  const detail = reason instanceof Error ? reason.message : typeof reason === 'string' && reason ? reason : undefined;
  if (reason instanceof CallStoppedError) return `${what} was stopped: ${reason.message}`;
  return `${what} was cancelled by the client${detail ? ` (${detail.slice(0, 500)})` : ''}`;
}

/** Why kiln itself ends a call that is still running (an abort reason): on MCP 2026-07-28, a call that puts a
 *  question to a human ends with the question, and runs again from the top with the answer. */
export class CallStoppedError extends KilnError {
  override name = 'CallStoppedError';
}

/** The guest ran out of its memory limit; the guest was discarded. */
export class MemoryLimitError extends KilnError {
  override name = 'MemoryLimitError';
}

/** A call used more CPU time than its cpuMs (the manifest's, or the operator's [limits] cpuMs); the guest that
 *  ran it was stopped and discarded, as after a timeout. */
export class CpuLimitError extends KilnError {
  override name = 'CpuLimitError';
}

/** The shared session store ([sessions] store) cannot be reached, or refused what kiln asked of it. */
export class StoreError extends KilnError {
  override name = 'StoreError';
}
