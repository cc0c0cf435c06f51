// The WASI imports a guest gets: nothing that grants authority.
//
// The engine's core module reaches WASI only through the preview1 adapter, and after dead-code removal
// it asks for just stdio, terminals, clocks and the filesystem preopens. We give it: stdio that goes
// to the instance's log sink (never to the host's stdout, which carries the MCP protocol), no terminal,
// no preopened directory, and the real clocks.
//
// All of it is implemented here rather than taken from preview2-shim: the shim's stdio, environment, exit
// and preopens default to the host's stdout, environment, process.exit and (in old versions) filesystem;
// its filesystem module brings node:fs into reach for a guest that, with no preopens, can never hold a
// descriptor; and even its clocks module loads its worker I/O, ~27 ms of every cold start for two
// functions that read hrtime and Date.
import { hrtime } from 'node:process';

export type StdioSink = (stream: 'stdout' | 'stderr', text: string) => void;

class IoError {
  constructor(readonly message: string) {}
  toDebugString(): string {
    return this.message;
  }
}

class InputStream {
  read(_len: bigint): Uint8Array {
    throw { tag: 'closed' };
  }
  blockingRead(_len: bigint): Uint8Array {
    throw { tag: 'closed' };
  }
}

class OutputStream {
  constructor(private readonly write_: (bytes: Uint8Array) => void) {}
  checkWrite(): bigint {
    return 65536n;
  }
  write(bytes: Uint8Array): void {
    this.write_(bytes);
  }
  blockingWriteAndFlush(bytes: Uint8Array): void {
    this.write_(bytes);
  }
  flush(): void {}
  blockingFlush(): void {}
}

const monotonicClock = { now: (): bigint => hrtime.bigint(), resolution: (): bigint => 1n };
const wallClock = {
  now: () => {
    const ms = Date.now();
    return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
  },
  resolution: () => ({ seconds: 0n, nanoseconds: 1_000_000 }),
};

/** Never constructed: with no preopened directory there is no descriptor to hand out. */
class Descriptor {}

class TerminalInput {}
class TerminalOutput {}

/** The WASI part of an instance's import object. */
export function wasiImports(sink: StdioSink): Record<string, unknown> {
  const decoder = new TextDecoder();
  const stream = (name: 'stdout' | 'stderr') => new OutputStream((b) => sink(name, decoder.decode(b)));
  const stdout = stream('stdout');
  const stderr = stream('stderr');
  const stdin = new InputStream();
  return {
    'wasi:cli/environment': { getEnvironment: () => [], getArguments: () => [], initialCwd: () => undefined },
    'wasi:cli/exit': {
      exit: () => {
        throw new Error('the guest called exit');
      },
    },
    'wasi:cli/stdin': { getStdin: () => stdin },
    'wasi:cli/stdout': { getStdout: () => stdout },
    'wasi:cli/stderr': { getStderr: () => stderr },
    'wasi:cli/terminal-input': { TerminalInput },
    'wasi:cli/terminal-output': { TerminalOutput },
    'wasi:cli/terminal-stdin': { getTerminalStdin: () => undefined },
    'wasi:cli/terminal-stdout': { getTerminalStdout: () => undefined },
    'wasi:cli/terminal-stderr': { getTerminalStderr: () => undefined },
    'wasi:clocks/monotonic-clock': monotonicClock,
    'wasi:clocks/wall-clock': wallClock,
    'wasi:filesystem/preopens': { getDirectories: () => [] },
    'wasi:filesystem/types': { Descriptor, filesystemErrorCode: () => undefined },
    'wasi:io/error': { Error: IoError },
    'wasi:io/streams': { InputStream, OutputStream },
  };
}
