// The WASI imports a guest gets: nothing that grants authority.
//
// The engine's core module reaches WASI only through the preview1 adapter, and after dead-code removal
// it asks for just stdio, terminals, clocks and the filesystem preopens. We give it: stdio that goes
// to the instance's log sink (never to the host's stdout, which carries the MCP protocol), no terminal,
// no preopened directory, and the real clocks. preview2-shim provides the clocks and the resource classes
// the bindings check against; we do not use its stdio, environment, exit or preopens, whose defaults
// would hand the guest the host's stdout, environment, process.exit and (in old versions) filesystem.
import { clocks, filesystem } from '@bytecodealliance/preview2-shim';

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
    'wasi:clocks/monotonic-clock': clocks.monotonicClock,
    'wasi:clocks/wall-clock': clocks.wallClock,
    'wasi:filesystem/preopens': { getDirectories: () => [] },
    'wasi:filesystem/types': filesystem.types,
    'wasi:io/error': { Error: IoError },
    'wasi:io/streams': { InputStream, OutputStream },
  };
}
