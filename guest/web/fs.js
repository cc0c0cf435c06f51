// ctx.fs: the workspace's files (allow.fs), shaped like node:fs/promises. Each method is one operation of the
// WIT's `fs` interface, made for the handler's own invocation: the host checks the path against that tool's
// allow.fs and resolves it (host/capabilities/fs/fs.ts). Nothing here decides anything; the checks below only give
// Node's errors for arguments Node refuses too.
import { host, isBufferSource, toBytes } from './internal.js';
import { utf8Encode } from './encoding.js';

const coded = (Ctor, code, message) => Object.assign(new Ctor(message), { code });

function checkPath(path, what = 'path') {
  if (typeof path !== 'string') {
    throw coded(TypeError, 'ERR_INVALID_ARG_TYPE', `The "${what}" argument must be of type string (kiln's fs takes paths relative to the workspace root). Received ${path === null ? 'null' : typeof path}`);
  }
  if (path.includes('\0')) throw coded(TypeError, 'ERR_INVALID_ARG_VALUE', `The argument '${what}' must be a string without null bytes. Received ${JSON.stringify(path)}`);
  return path;
}

/** null: bytes; 'utf8': a string. Node's other encodings are refused rather than guessed. */
function encodingOf(options, method) {
  const enc = typeof options === 'string' ? options : options !== null && typeof options === 'object' ? options.encoding : undefined;
  if (enc === undefined || enc === null || enc === 'buffer') return null;
  const e = String(enc).toLowerCase();
  if (e === 'utf8' || e === 'utf-8') return 'utf8';
  throw coded(TypeError, 'ERR_INVALID_ARG_VALUE', `fs.${method}: kiln supports the encoding 'utf8' (or none, for bytes). Received ${JSON.stringify(String(enc))}`);
}

/** The data of writeFile/appendFile as an ArrayBuffer of exactly its bytes (undefined: none). */
function dataBuffer(data, options, method) {
  let bytes;
  if (typeof data === 'string') {
    encodingOf(options, method);
    bytes = utf8Encode(data);
  } else if (isBufferSource(data)) {
    bytes = toBytes(data);
  } else {
    throw coded(TypeError, 'ERR_INVALID_ARG_TYPE', `The "data" argument must be of type string or an instance of Uint8Array, TypedArray, DataView or ArrayBuffer. Received ${data === null ? 'null' : typeof data}`);
  }
  if (bytes.byteLength === 0) return undefined;
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.slice().buffer;
}

const TYPES = ['file', 'directory', 'symlink', 'fifo', 'socket', 'block', 'char'];
function typeTests(target, type) {
  const is = (t) => () => type === t;
  Object.assign(target, {
    isFile: is('file'), isDirectory: is('directory'), isSymbolicLink: is('symlink'), isFIFO: is('fifo'),
    isSocket: is('socket'), isBlockDevice: is('block'), isCharacterDevice: is('char'),
  });
  return target;
}

class Dirent {
  constructor(name, type, parentPath) {
    this.name = name;
    this.parentPath = parentPath;
    this.path = parentPath;
    typeTests(this, TYPES.includes(type) ? type : '');
  }
}

/** What stat gives: sizes, mode, link count and times (no device, inode or owner: those describe the host). */
class Stats {
  constructor(s) {
    for (const k of ['size', 'mode', 'nlink', 'atimeMs', 'mtimeMs', 'ctimeMs', 'birthtimeMs']) this[k] = s[k];
    this.atime = new Date(s.atimeMs);
    this.mtime = new Date(s.mtimeMs);
    this.ctime = new Date(s.ctimeMs);
    this.birthtime = new Date(s.birthtimeMs);
    typeTests(this, s.type);
  }
}

/** The handler's fs object for invocation `inv`. */
export function makeFs(inv) {
  const call = (fn, request) => host.startOp(fn, inv, request).done;
  const n = host.native;
  return Object.freeze({
    async readFile(path, options) {
      const enc = encodingOf(options, 'readFile');
      const buf = await call(n.fsReadFile, { path: checkPath(path) });
      const bytes = new Uint8Array(buf);
      return enc ? n.utf8Decode(bytes, false, false) : bytes;
    },
    async writeFile(path, data, options) {
      checkPath(path);
      const buf = dataBuffer(data, options, 'writeFile');
      await call((i, h) => n.fsWriteFile(i, h, buf), { path });
    },
    async appendFile(path, data, options) {
      checkPath(path);
      const buf = dataBuffer(data, options, 'appendFile');
      await call((i, h) => n.fsAppendFile(i, h, buf), { path });
    },
    async readdir(path, options) {
      encodingOf(options, 'readdir');
      const withFileTypes = options !== null && typeof options === 'object' && options.withFileTypes === true;
      if (options !== null && typeof options === 'object' && options.recursive) {
        throw coded(TypeError, 'ERR_INVALID_ARG_VALUE', 'fs.readdir: kiln does not list recursively; read each directory');
      }
      const list = await call(n.fsReaddir, { path: checkPath(path), withFileTypes });
      return withFileTypes ? list.map(([name, type]) => new Dirent(name, type, path)) : list;
    },
    async stat(path) {
      return new Stats(await call(n.fsStat, { path: checkPath(path) }));
    },
    async mkdir(path, options) {
      const recursive = options !== null && typeof options === 'object' && options.recursive === true;
      const first = await call(n.fsMkdir, { path: checkPath(path), recursive });
      return recursive && typeof first === 'string' ? first : undefined;
    },
    async rm(path, options) {
      const o = options !== null && typeof options === 'object' ? options : {};
      await call(n.fsRm, { path: checkPath(path), recursive: o.recursive === true, force: o.force === true });
    },
    async rename(oldPath, newPath) {
      await call(n.fsRename, { from: checkPath(oldPath, 'oldPath'), to: checkPath(newPath, 'newPath') });
    },
  });
}
