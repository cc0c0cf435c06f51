;; A stand-in for the next engine (kiln:extension@0.2.0), for test/wasmtime.test.mjs: it checks that
;; test/wasmtime/host.py speaks the 0.2.0 contract, where the extension's bytecode is not sealed into the
;; component but travels in the artifact's `kiln-image` custom section and is handed to
;; `guest.load(config, image)`. This fake "runs" an image by returning it as the manifest (so the host's
;; manifest check passes only if the image arrived intact). Its tools, told apart by the letter after
;; "fake.": `fake.echo` finishes with its arguments; `fake.spin` loops without ever asking
;; `runtime.interrupted` (only the host's epoch backstop can stop it); `fake.grow` grows its memory until
;; the host's store limiter refuses, then finishes with "capped" if that happened within 96 MiB.
;; Embedded with the WIT the test derives from wit/kiln.wit (`wasm-tools component embed`).
(module
  ;; runtime.finish(inv, result<json, string>), flattened: inv, discriminant, payload pointer and length.
  (import "kiln:extension/runtime@0.2.0" "finish" (func $finish (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (global $ret i32 (i32.const 16)) ;; a result's return area: [tag u8][pad][ptr u32][len u32]

  ;; A bump allocator: the host copies strings and lists in through it. Nothing is ever freed.
  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32) (result i32)
    (local $p i32)
    (local.set $p (i32.and (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
                           (i32.sub (i32.const 0) (local.get $align))))
    (global.set $heap (i32.add (local.get $p) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (if (i32.eq (memory.grow (i32.const 16)) (i32.const -1)) (then unreachable))))
    (local.get $p))

  ;; load(config: json, image: list<u8>) -> result<json, string>: ok(the image, as text).
  (func (export "kiln:extension/guest@0.2.0#load") (param $config i32) (param $config_len i32) (param $image i32) (param $image_len i32) (result i32)
    (i32.store8 (global.get $ret) (i32.const 0))
    (i32.store offset=4 (global.get $ret) (local.get $image))
    (i32.store offset=8 (global.get $ret) (local.get $image_len))
    (global.get $ret))

  ;; invoke(inv, tool, args): by tool, see the top of this file.
  (func (export "kiln:extension/guest@0.2.0#invoke") (param $inv i32) (param $tool i32) (param $tool_len i32) (param $args i32) (param $args_len i32)
    (local $kind i32)
    (local.set $kind (i32.load8_u offset=5 (local.get $tool)))
    (if (i32.eq (local.get $kind) (i32.const 0x73)) ;; 's'
      (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $kind) (i32.const 0x67)) ;; 'g'
      (then
        (loop $more (br_if $more (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))
        (if (i32.le_u (memory.size) (i32.const 1536)) ;; 96 MiB in 64 KiB pages
          (then (call $finish (local.get $inv) (i32.const 0) (i32.const 32) (i32.const 8))) ;; "capped"
          (else (call $finish (local.get $inv) (i32.const 0) (i32.const 48) (i32.const 10)))) ;; "uncapped"
        (return)))
    (call $finish (local.get $inv) (i32.const 0) (local.get $args) (local.get $args_len)))
  (data (i32.const 32) "\"capped\"")
  (data (i32.const 48) "\"uncapped\"")

  (func (export "kiln:extension/guest@0.2.0#complete") (param i32 i32 i32 i32))
  (func (export "kiln:extension/guest@0.2.0#complete-bytes") (param i32 i32 i32 i32))
  (func (export "kiln:extension/guest@0.2.0#run-script") (param i32 i32 i32) unreachable)
  (func (export "kiln:extension/guest@0.2.0#compile") (param i32 i32 i32 i32 i32) (result i32) unreachable)
)
