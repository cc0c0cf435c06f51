#!/usr/bin/env python3
"""A second, independent host for kiln artifacts: wasmtime's component model from Python.

    host.py <artifact.wasm> <tool> <args-json>

prints one JSON line, {"manifest": ..., "loaded": ..., "result": ...}, or {"error": ...} (with "manifest" when
the artifact was read that far). "manifest" is the artifact's `kiln-manifest` section, the only source of
policy; "loaded" is what the guest's top level registered (`guest.load`), checked against it.

It implements the world `kiln:extension` (wit/kiln.wit) with the least authority a host can give:

  * WASI through wasmtime's own implementation: no preopened directory, an empty environment, no
    arguments, an empty stdin; guest stdout/stderr go to this process's stderr, never to stdout.
  * runtime: log to stderr, sleep on a real timer queue, finish records the handler's outcome, interrupted
    answers True once the running invocation's deadline has passed, parse-url with a deliberately strict
    urllib-based parser (it refuses what it might read differently from a WHATWG parser).
  * intl: refused with a TypeError (Python has no ICU of its own): the guest's Intl and toLocaleString throw.
  * vars: a dict, with the Node host's size limits.
  * commands.*, http.fetch/read, browser.call, plugins.call, fs.*: refused. Each returns an op id at once and
    the op then fails with "CapabilityError: ... is not available in this host", delivered through
    guest.complete from the event loop (never from inside the import: a component cannot be re-entered).

What the host enforces itself, because nothing in the guest is trusted: an op is accepted only for an
invocation this instance started and that has not finished; every run of guest code has a deadline (the
tool's timeoutMs, else 30 s), signalled through runtime.interrupted and backed by wasmtime's epoch
interruption for code that never polls; linear memory is capped by the store's limiter; at most 1024
operations in flight; and the tools the guest registers must be the ones its manifest declares.

The contract is kiln:extension@0.7.0: the extension's bytecode travels in the artifact's `kiln-image`
custom section and `guest.load(config, image)` takes it; the component itself is kiln's engine, the same
bytes for every artifact. A component that imports another version of the contract is refused.
"""
import hashlib
import heapq
import hmac
import os
import json
import re
import sys
import threading
import time
import urllib.parse
from collections import deque

import wasmtime
from wasmtime.component import Component, Linker, Variant

# wasm's native stack (wasmtime's own default is 512 KiB), and QuickJS's shadow-stack limit at 0.2 of it, as
# docs/embedding.md asks: deep recursion is then a catchable RangeError, never a trap.
WASM_STACK = 2 * 1024 * 1024
CONFIG = {"host": "script", "platform": "linux", "pid": 1, "env": {}, "memoryLimit": 64 * 1024 * 1024, "stackLimit": WASM_STACK // 5}
DEFAULT_TIMEOUT_MS = 30_000  # a tool without timeoutMs, and the top level (load)
CONTRACT = "0.7.0"
MEMORY_SLACK = 32 * 1024 * 1024  # linear memory beyond the QuickJS heap: engine data, stack, the image
MAX_OPS_IN_FLIGHT = 1024
MAX_TIMERS = 16  # pending runtime.sleep timers, apart from the operations (kiln's guest asks for two at most)
EPOCH_GRACE_S = 1.0  # how long after a deadline a guest that never asks `interrupted` is trapped
VARS_LIMITS = {"key_bytes": 1024, "value_bytes": 1024 * 1024, "keys": 10_000}
INVOCATION = 1


class HostError(Exception):
    """Why the call failed on the host side: "Name: message"."""


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ---- the artifact ------------------------------------------------------------------------------------

def leb128(data, pos):
    value = shift = 0
    while True:
        if pos >= len(data):
            raise HostError("ExtensionLoadError: truncated LEB128 in the artifact")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def custom_sections(data):
    """{name: [payload, ...]} of the component's top-level custom sections (id 0). Nested modules are not
    entered: kiln puts its sections at the top level of the component."""
    if data[:4] != b"\0asm" or data[4:8] != b"\x0d\x00\x01\x00":
        raise HostError("ExtensionLoadError: not a WebAssembly component (expected an artifact made by `kiln build`)")
    sections, pos = {}, 8
    while pos < len(data):
        section_id = data[pos]
        size, pos = leb128(data, pos + 1)
        end = pos + size
        if end > len(data):
            raise HostError("ExtensionLoadError: a section runs past the end of the artifact")
        if section_id == 0:
            name_len, name_pos = leb128(data, pos)
            name = data[name_pos:name_pos + name_len].decode("utf-8", "replace")
            sections.setdefault(name, []).append(bytes(data[name_pos + name_len:end]))
        pos = end
    return sections


def one_section(sections, name, required):
    found = sections.get(name, [])
    if len(found) > 1:
        raise HostError(f"ExtensionLoadError: {len(found)} {name} sections: an artifact has at most one")
    if not found and required:
        raise HostError(f"ExtensionLoadError: no {name} section: this component was not made by `kiln build`")
    return found[0] if found else None


# ---- runtime.parse-url ---------------------------------------------------------------------------------

DEFAULT_PORTS = {"http:": "80", "https:": "443", "ws:": "80", "wss:": "443", "ftp:": "21"}
# What this parser accepts: printable ASCII without backslash, space or quote-like characters. Anything else
# (tabs and newlines WHATWG strips, backslashes it reads as slashes, IDNA, percent-encoded hosts) is refused
# rather than risk reading it differently from the guest's idea of the same URL.
SAFE_URL = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*$")
SAFE_HOST = re.compile(r"^[a-z0-9\-.]+$|^\[[0-9a-f:.]+\]$")


URL_PARTS = ["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"]
HASHES = ["sha1", "sha256", "sha384", "sha512"]


def hash_name(alg):
    """The crypto interface's hash enum, as hashlib names it."""
    return alg if isinstance(alg, str) else HASHES[alg]


def parse_url(url, base):
    for text in (url, base or ""):
        if not SAFE_URL.match(text):
            raise ValueError("characters this host's parser does not accept")
    if base is not None:
        base_parts = urllib.parse.urlsplit(base)
        if not base_parts.scheme or not base_parts.netloc:
            raise ValueError("the base is not an absolute URL")
        url = urllib.parse.urljoin(base, url)
    p = urllib.parse.urlsplit(url)
    protocol = p.scheme.lower() + ":"
    if protocol not in DEFAULT_PORTS or not p.netloc:
        raise ValueError("only absolute http, https, ws, wss and ftp URLs are understood here")
    hostname = (p.hostname or "").lower()
    if p.netloc.startswith("[") or ":" in hostname:
        hostname = "[" + hostname.strip("[]") + "]"
    if not hostname or not SAFE_HOST.match(hostname):
        raise ValueError("not a host name this host's parser accepts")
    port = "" if p.port is None or str(p.port) == DEFAULT_PORTS[protocol] else str(p.port)
    host = hostname + (":" + port if port else "")
    username, password = p.username or "", p.password or ""
    userinfo = username + (":" + password if password else "") + ("@" if username or password else "")
    pathname = p.path or "/"
    search = "?" + p.query if p.query else ""
    hash_ = "#" + p.fragment if p.fragment else ""
    return {
        "href": f"{protocol}//{userinfo}{host}{pathname}{search}{hash_}",
        "protocol": protocol, "username": username, "password": password, "host": host,
        "hostname": hostname, "port": port, "pathname": pathname, "search": search, "hash": hash_,
        "origin": f"{protocol}//{host}",
    }


# ---- the host ------------------------------------------------------------------------------------------

def ok(value):
    return Variant("ok", value)


def err(message):
    return Variant("err", message)


class Host:
    def __init__(self, artifact_bytes):
        sections = custom_sections(artifact_bytes)
        raw = one_section(sections, "kiln-manifest", required=True)
        try:
            self.manifest = json.loads(raw.decode("utf-8"))
            self.tools = {t["name"]: t for t in self.manifest["tools"]}
        except (ValueError, TypeError, KeyError) as e:
            raise HostError(f"ExtensionLoadError: the kiln-manifest section is not a manifest ({e})")
        self.image = one_section(sections, "kiln-image", required=True)

        config = wasmtime.Config()
        config.epoch_interruption = True  # the backstop for a guest that never asks `interrupted`
        config.max_wasm_stack = WASM_STACK
        self.engine = wasmtime.Engine(config)
        self.component = Component(self.engine, artifact_bytes)
        self.version = self.contract_version()

        self.store = wasmtime.Store(self.engine)
        wasi = wasmtime.WasiConfig()  # no preopens, no env, no args, empty stdin
        wasi.stdout_custom = lambda data: log("[guest stdout]", bytes(data).decode("utf-8", "replace").rstrip())
        wasi.stderr_custom = lambda data: log("[guest stderr]", bytes(data).decode("utf-8", "replace").rstrip())
        self.store.set_wasi(wasi)
        self.store.set_limits(memory_size=CONFIG["memoryLimit"] + MEMORY_SLACK)
        self.store.set_epoch_deadline(1)  # the engine's epoch moves only when a run's backstop fires

        self.vars = {}
        self.running = {}  # invocation -> (tool, deadline in time.monotonic())
        self.outcomes = {}  # invocation -> ("ok", value) | ("err", text)
        self.loading = False
        self.next_op = 1
        self.timers = []  # heap of (due, op)
        self.ready = deque()  # (op, outcome) to deliver from the event loop
        self.pending = set()  # ops whose outcome the guest still waits for
        self.pending_timers = set()  # those of them that are timers
        self.run_deadline = float("inf")
        self.interrupted_at = None
        self.dead = None

        linker = Linker(self.engine)
        linker.add_wasip2()
        with linker.root() as root:
            self.define_kiln(root)
        self.instance = linker.instantiate(self.store, self.component)
        self.guest = {name: self.export_func(name) for name in ("load", "invoke", "complete")}

    # -- which contract ------------------------------------------------------------------------------

    def contract_version(self):
        """The version of kiln:extension the component was built against, from its own imports: 0.7.0."""
        versions = set()
        for name in self.component.type.imports(self.engine):
            m = re.fullmatch(r"kiln:extension/([a-z-]+)(?:@(.+))?", name)
            if m:
                versions.add(m.group(2) or "")
        if versions != {CONTRACT}:
            raise HostError(f"ExtensionLoadError: the component imports kiln:extension {sorted(versions)}; this host speaks {CONTRACT}")
        return CONTRACT

    def iface(self, name):
        return f"kiln:extension/{name}@{self.version}" if self.version else f"kiln:extension/{name}"

    def export_func(self, name):
        missing = HostError(f"ExtensionLoadError: the component exports no {self.iface('guest')}#{name}")
        guest = self.instance.get_export_index(self.store, self.iface("guest"))
        if guest is None:
            raise missing
        index = self.instance.get_export_index(self.store, name, guest)
        func = self.instance.get_func(self.store, index) if index is not None else None
        if func is None:
            raise missing
        return func

    # -- the imports ---------------------------------------------------------------------------------

    def define_kiln(self, root):
        with root.add_instance(self.iface("types")):
            pass  # types only
        with root.add_instance(self.iface("commands")) as i:
            for fn in ("run", "start", "status", "stop"):
                i.add_func(fn, self.refused(f"commands.{fn}"))
        with root.add_instance(self.iface("http")) as i:
            i.add_func("fetch", lambda store, inv, request, body: self.refuse_op("http.fetch", inv))
            i.add_func("read", self.refused("http.read"))
            i.add_func("abort", lambda store, op: None)  # nothing of ours is ever in flight
            i.add_func("discard", lambda store, body: None)
        with root.add_instance(self.iface("browser")) as i:
            i.add_func("call", self.refused("browser.call"))
        with root.add_instance(self.iface("plugins")) as i:
            i.add_func("call", self.refused("plugins.call"))
        with root.add_instance(self.iface("fs")) as i:
            for fn in ("read-file", "readdir", "stat", "mkdir", "rm", "rename"):
                i.add_func(fn, self.refused(f"fs.{fn}"))
            for fn in ("write-file", "append-file"):
                i.add_func(fn, lambda store, inv, request, data, fn=fn: self.refuse_op(f"fs.{fn}", inv))
        with root.add_instance(self.iface("vars")) as i:
            i.add_func("get", lambda store, key: self.vars.get(key))
            i.add_func("set", lambda store, key, value: self.vars_set(key, value))
            i.add_func("delete", lambda store, key: self.vars.pop(key, None) is not None)
            i.add_func("keys", lambda store: list(self.vars))
        with root.add_instance(self.iface("runtime")) as i:
            i.add_func("log", lambda store, level, message: log(f"[guest {level}]", message))
            i.add_func("sleep", lambda store, ms: self.sleep(ms))
            i.add_func("clear-timer", lambda store, op: self.clear_timer(op))
            i.add_func("finish", lambda store, inv, outcome: self.finish(inv, outcome))
            i.add_func("progress", lambda store, inv, update: None)  # no caller here asks for progress
            i.add_func("interrupted", lambda store: self.interrupted())
            i.add_func("parse-url", lambda store, url, base: self.parse_url(url, base))
            i.add_func("set-url-part", lambda store, href, part, value: self.set_url_part(href, part, value))
        with root.add_instance(self.iface("crypto")) as i:
            i.add_func("random-bytes", lambda store, n: os.urandom(n) if n <= 65536 else b"")
            i.add_func("digest", lambda store, alg, data: hashlib.new(hash_name(alg), bytes(data)).digest())
            i.add_func("hmac", lambda store, alg, key, data: hmac.new(bytes(key), bytes(data), hash_name(alg)).digest())
        with root.add_instance(self.iface("intl")) as i:
            i.add_func("call", lambda store, spec, op, args: err("TypeError: Intl is not available in this host"))

    def refused(self, kind):
        return lambda store, inv, request: self.refuse_op(kind, inv)

    def new_op(self):
        op = self.next_op
        self.next_op += 1
        return op

    def refuse_op(self, kind, inv):
        """A capability this host does not grant. The op fails later, from the event loop; past the limit of
        operations in flight it is op 0, refused at once, and nothing is kept for it."""
        if len(self.pending) - len(self.pending_timers) >= MAX_OPS_IN_FLIGHT:
            return 0
        op = self.new_op()
        if inv not in self.running:
            outcome = err(f"CapabilityError: {kind} can only be called while a handler runs (invocation {inv} is not running)")
        else:
            outcome = err(f"CapabilityError: {kind} is not available in this host")
        self.pending.add(op)
        self.ready.append((op, outcome))
        return op

    def sleep(self, ms):
        if len(self.pending_timers) >= MAX_TIMERS:
            return 0  # refused: setTimeout throws a RangeError in the guest
        op = self.new_op()
        if self.running or self.loading:  # an idle guest's timers never fire
            self.pending.add(op)
            self.pending_timers.add(op)
            heapq.heappush(self.timers, (time.monotonic() + ms / 1000, op))
        return op

    def clear_timer(self, op):
        """clearTimeout: the timer never completes. Only timers: any other op id is left alone."""
        if op in self.pending_timers:
            self.pending_timers.discard(op)
            self.pending.discard(op)

    def finish(self, inv, outcome):
        if inv not in self.running:
            return  # not ours, or already finished: ignored
        tool, deadline = self.running.pop(inv)
        if self.interrupted_at is not None or time.monotonic() > deadline:
            self.outcomes[inv] = ("err", f'TimeoutError: tool "{tool}" was stopped at its deadline')
        elif outcome.tag == "ok":
            try:
                self.outcomes[inv] = ("ok", json.loads(outcome.payload))
            except ValueError:
                self.outcomes[inv] = ("err", f'TypeError: tool "{tool}" reported a result that is not JSON')
        elif outcome.payload.startswith("InternalError: out of memory"):
            # QuickJS hit the heap limit load's config set. The guest may be inconsistent: it is not used again.
            self.outcomes[inv] = ("err", f'MemoryLimitError: tool "{tool}" ran out of its memory limit')
            self.dead = "MemoryLimitError: the guest ran out of its memory limit"
        else:
            self.outcomes[inv] = ("err", outcome.payload)
        if not self.running:
            self.cancel_idle_work()

    def interrupted(self):
        if time.monotonic() <= self.run_deadline:
            return False
        if self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
        return True

    def parse_url(self, url, base):
        try:
            return ok(json.dumps(parse_url(url, base)))
        except ValueError as e:
            return err(f"Invalid URL: {url[:200]} ({e})")

    def set_url_part(self, href, part, value):
        """The WHATWG setters, for the parts this host's strict parser can recompose: href, search, hash and
        pathname. The others fail (the guest's setter throws) rather than risk a different reading."""
        part = part if isinstance(part, str) else URL_PARTS[part]
        try:
            if part == "href":
                return ok(json.dumps(parse_url(value, None)))
            p = urllib.parse.urlsplit(href)
            if part == "search":
                p = p._replace(query=value[1:] if value.startswith("?") else value)
            elif part == "hash":
                p = p._replace(fragment=value[1:] if value.startswith("#") else value)
            elif part == "pathname":
                p = p._replace(path=value if value.startswith("/") else "/" + value)
            else:
                return err(f"this host does not implement the URL {part} setter")
            return ok(json.dumps(parse_url(urllib.parse.urlunsplit(p), None)))
        except ValueError as e:
            return err(f"Invalid URL: {value[:200]} ({e})")

    def vars_set(self, key, value):
        if len(key.encode()) > VARS_LIMITS["key_bytes"]:
            return f"vars key is over {VARS_LIMITS['key_bytes']} bytes"
        if len(value.encode()) > VARS_LIMITS["value_bytes"]:
            return f"vars value is over {VARS_LIMITS['value_bytes']} bytes"
        if key not in self.vars and len(self.vars) >= VARS_LIMITS["keys"]:
            return f"vars holds at most {VARS_LIMITS['keys']} keys"
        self.vars[key] = value
        return None  # result<_, string>: ok

    def cancel_idle_work(self):
        """No handler is in flight: nothing the guest started may run or complete."""
        self.timers.clear()
        self.ready.clear()
        self.pending.clear()
        self.pending_timers.clear()

    # -- entering the guest ----------------------------------------------------------------------------

    def enter(self, name, *args):
        """Call a guest export under the earliest deadline in flight. A trap kills the instance."""
        if self.dead:
            raise HostError(self.dead)
        now = time.monotonic()
        deadline = min([now + DEFAULT_TIMEOUT_MS / 1000] + [d for _, d in self.running.values()])
        self.run_deadline, self.interrupted_at = deadline, None
        self.store.set_epoch_deadline(1)
        backstop = threading.Timer(max(0.0, deadline - now) + EPOCH_GRACE_S, self.engine.increment_epoch)
        backstop.daemon = True
        backstop.start()
        try:
            result = self.guest[name](self.store, *args)
        except wasmtime.WasmtimeError as e:
            trap = str(e).strip().splitlines()[0] if str(e).strip() else "trap"
            self.dead = (f"TimeoutError: the guest ran past its time limit and was stopped" if self.interrupted_at or time.monotonic() > deadline
                         else f"GuestCrashError: the guest crashed ({trap})")
            raise HostError(self.dead)
        finally:
            backstop.cancel()
            self.run_deadline = float("inf")
        if self.interrupted_at is not None:
            self.dead = "TimeoutError: the guest ran past its time limit and was stopped"
            raise HostError(self.dead)
        return result

    def load(self):
        args = [json.dumps(CONFIG), self.image]
        log(f"[host] {self.iface('guest')}: load(config, image of {len(self.image)} bytes)")
        self.loading = True
        try:
            outcome = self.enter("load", *args)
        finally:
            self.loading = False
            self.cancel_idle_work()
        if outcome.tag != "ok":
            raise HostError(f"ExtensionLoadError: the top level failed: {outcome.payload}")
        loaded = json.loads(outcome.payload)
        registered = sorted(str(t.get("name")) for t in loaded.get("tools", []))
        if registered != sorted(self.tools):
            raise HostError("ExtensionLoadError: the tools its code registers differ from its manifest; rebuild the artifact")
        return loaded

    def call(self, tool, args):
        if tool not in self.tools:
            raise HostError(f'ToolError: no tool named "{tool}" in this artifact\'s manifest')
        timeout_ms = self.tools[tool].get("timeoutMs") or DEFAULT_TIMEOUT_MS
        deadline = time.monotonic() + timeout_ms / 1000
        self.running[INVOCATION] = (tool, deadline)
        self.enter("invoke", INVOCATION, tool, json.dumps(args))
        # The event loop: deliver refusals and due timers, one guest.complete each, until the handler finishes.
        while INVOCATION not in self.outcomes:
            now = time.monotonic()
            if now > deadline:
                raise HostError(f'TimeoutError: tool "{tool}" did not finish within {timeout_ms} ms')
            if self.ready:
                op, outcome = self.ready.popleft()
            elif self.timers:
                due, op = self.timers[0]
                if op not in self.pending:  # cleared
                    heapq.heappop(self.timers)
                    continue
                if due > now:
                    time.sleep(min(due, deadline) - now)
                    continue
                heapq.heappop(self.timers)
                self.pending_timers.discard(op)
                outcome = ok("null")
            else:
                raise HostError(f'ToolError: tool "{tool}" is waiting, but nothing it waits for is pending: it can never finish')
            if op in self.pending:
                self.pending.discard(op)
                self.enter("complete", op, outcome)
        status, value = self.outcomes[INVOCATION]
        if status == "err":
            raise HostError(value)
        return value


def main(argv):
    if len(argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    _, artifact, tool, args_json = argv
    out = {}
    try:
        args = json.loads(args_json)
        with open(artifact, "rb") as f:
            host = Host(f.read())
        out["manifest"] = host.manifest
        out["loaded"] = host.load()
        out["result"] = host.call(tool, args)
    except HostError as e:
        out["error"] = str(e)
    except (OSError, ValueError, wasmtime.WasmtimeError) as e:
        out["error"] = f"Error: {str(e).strip()}"
    except Exception as e:  # a bug in this host: still one JSON line on stdout, the traceback on stderr
        import traceback
        traceback.print_exc()
        out["error"] = f"InternalError: {type(e).__name__}: {e}"
    print(json.dumps(out), flush=True)
    return 0 if "error" not in out else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
