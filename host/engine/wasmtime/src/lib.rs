// kiln's wasmtime backend: a Node addon that runs the engine component on wasmtime, inside the host process,
// on the calling thread.
//
// Invariants:
//  - The addon adds no authority. Every import the component declares is answered by the JavaScript function
//    the host passes in for it (the same import object the V8 backend gets: host/engine/imports.ts and
//    host/engine/wasi.ts), called synchronously on the thread that called into the guest. An import the host
//    does not provide fails instantiation; nothing is implemented here.
//  - One wasmtime `Engine` per process (every worker thread shares it), configured once: copy-on-write
//    memory images, epoch interruption, and the pooling allocator when the host asks for it.
//  - Precompiled code is loaded only from bytes the host compiled itself (`precompile`) for this engine
//    configuration and verified; wasmtime checks their version and CPU features before using them.
//  - A guest's run ends at its deadline (epoch interruption: reported as `KILN_DEADLINE`), and its linear
//    memory grows only up to the ceiling the host set (the limiter refuses past it: the guest sees
//    `memory.grow` fail, as QuickJS's own out-of-memory).
//  - The guest is never re-entered: a call into it while one is running on the same instance is refused.
//  - An import's WIT signature is walked once, when the linker is built: the hot ones (typed.rs) are bound
//    with Rust types, the rest convert through `Val` by the types kept then. Either way the host's function
//    sees the same values and its answer or throw means the same (values.rs).
//  - A run's deadline and the memory it left pass through a Float64Array the host shares with the guest
//    object (`Guest`), not through calls.
mod js;
mod memory;
mod split;
mod typed;
mod values;

use js::{Fail, Value};
use napi::bindgen_prelude::*;
use napi::{sys, Env, JsValue};
use napi_derive::napi;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker, ResourceType, TypedFunc, Val};
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreContextMut, Trap};

/// How often the epoch advances: the resolution of a run's deadline.
const EPOCH_TICK: Duration = Duration::from_millis(2);
/// Native stack wasm may use when the host configures none.
const DEFAULT_WASM_STACK: usize = 1 << 20;

/// The JavaScript objects the guest holds as resources (an output stream, ...), by their `rep`.
#[derive(Default)]
pub struct Resources {
  slots: Vec<Option<sys::napi_ref>>,
  free: Vec<u32>,
}

impl Resources {
  fn insert(&mut self, env: js::Env, v: Value) -> js::Js<u32> {
    let r = js::reference(env, v)?;
    Ok(match self.free.pop() {
      Some(i) => {
        self.slots[i as usize] = Some(r);
        i
      }
      None => {
        self.slots.push(Some(r));
        (self.slots.len() - 1) as u32
      }
    })
  }
  fn get(&self, env: js::Env, rep: u32) -> js::Js<Value> {
    match self.slots.get(rep as usize) {
      Some(Some(r)) => js::deref(env, *r),
      _ => Err(Fail::Napi(format!("no resource {rep}"))),
    }
  }
  fn remove(&mut self, env: js::Env, rep: u32) {
    if let Some(slot) = self.slots.get_mut(rep as usize) {
      if let Some(r) = slot.take() {
        js::unreference(env, r);
        self.free.push(rep);
      }
    }
  }
}

/// What the limiter allows and what it has seen.
struct Limits {
  /// Bytes one linear memory may grow to (usize::MAX: no ceiling).
  ceiling: usize,
  /// The largest linear memory of the instance, in bytes.
  largest: usize,
  /// Set when a growth past the ceiling was refused.
  refused: bool,
}

impl ResourceLimiter for Limits {
  fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
    if desired > self.ceiling {
      self.refused = true;
      return Ok(false);
    }
    self.largest = self.largest.max(desired);
    Ok(true)
  }
  fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
    Ok(desired <= 1 << 20)
  }
}

/// A store's data: the JavaScript side of one instance.
pub struct Host {
  /// The env of the call in progress (set at each entry; only used during it).
  env: js::Env,
  /// The host's function for each plain import, by the import's index (`Loaded::imports`).
  funcs: Vec<Option<sys::napi_ref>>,
  resources: Resources,
  /// How many resource kinds the linker defined (`ResourceType::host_dynamic(0..n)`).
  resource_kinds: u32,
  /// An exception a host function threw that is not the ABI's error value: rethrown when the call unwinds.
  thrown: Option<sys::napi_ref>,
  /// The state array shared with JavaScript (`Guest`), kept alive as long as the store.
  state: Option<sys::napi_ref>,
  limits: Limits,
  /// Import calls the guest has made (`Guest::import_calls`).
  calls: u64,
}

// The store lives on the thread that created it; `env` is only read during a call on that thread.
unsafe impl Send for Host {}

impl Drop for Host {
  fn drop(&mut self) {
    for r in self.funcs.drain(..).flatten() {
      js::unreference(self.env, r);
    }
    for r in self.resources.slots.drain(..).flatten() {
      js::unreference(self.env, r);
    }
    for r in [self.thrown.take(), self.state.take()].into_iter().flatten() {
      js::unreference(self.env, r);
    }
  }
}

/// One import the component declares, as the host's import object names it.
#[derive(Clone)]
struct ImportSpec {
  /// The interface without its version (`wasi:cli/stdout`), as jco keys the import object.
  interface: String,
  /// The function's name in camelCase (`getStdout`), or for a method, the method's.
  name: String,
  method: bool,
}

/// The engine component, compiled, with its linker: shared by every thread of the process.
pub struct Loaded {
  pre: InstancePre<Host>,
  imports: Vec<ImportSpec>,
  resource_kinds: u32,
  exports: GuestExports,
  /// The engine's initial memory (its snapshot), which a blank instance maps.
  image: Arc<memory::Image>,
}

struct GuestExports {
  load: ComponentExportIndex,
  invoke: ComponentExportIndex,
  complete: ComponentExportIndex,
  complete_bytes: ComponentExportIndex,
  cancel: ComponentExportIndex,
  run_script: ComponentExportIndex,
  compile: ComponentExportIndex,
}

static ENGINE: OnceLock<std::result::Result<Engine, String>> = OnceLock::new();
static LOADED: Mutex<Vec<(String, Arc<Loaded>)>> = Mutex::new(Vec::new());

fn err(e: impl std::fmt::Display) -> Error {
  Error::from_reason(e.to_string())
}

/// The process's engine, configured by the first call (`wasm_stack`: bytes of native stack wasm may use).
fn engine(wasm_stack: Option<usize>) -> Result<&'static Engine> {
  ENGINE
    .get_or_init(|| {
      let mut c = Config::new();
      c.wasm_component_model(true);
      c.epoch_interruption(true);
      // Memories start from images this addon maps copy-on-write (memory.rs); the precompiled engine has
      // no data segments to write into them (split.rs).
      c.with_host_memory(Arc::new(memory::Creator));
      c.memory_init_cow(false);
      let stack = wasm_stack.unwrap_or(DEFAULT_WASM_STACK);
      // No fiber is ever made (no async), but the check that a fiber could hold the wasm stack still runs.
      c.async_stack_size(stack + (1 << 20));
      c.max_wasm_stack(stack);
      let e = Engine::new(&c).map_err(|e| format!("{e:#}"))?;
      let weak = e.weak();
      std::thread::Builder::new()
        .name("kiln-epoch".into())
        .spawn(move || loop {
          std::thread::sleep(EPOCH_TICK);
          match weak.upgrade() {
            Some(e) => e.increment_epoch(),
            None => break,
          }
        })
        .map_err(|e| e.to_string())?;
      Ok(e)
    })
    .as_ref()
    .map_err(err)
}

/// The version of wasmtime this addon embeds (part of a precompiled file's key).
#[napi]
pub fn wasmtime_version() -> String {
  env!("KILN_WASMTIME_VERSION").to_string()
}

/// Configure the process's engine before its first use (a later call changes nothing).
#[napi]
pub fn configure(wasm_stack_bytes: f64) -> Result<()> {
  engine(Some(wasm_stack_bytes as usize)).map(|_| ())
}

/// Compile the engine component `wasm` ahead of time for this machine and this engine configuration,
/// without its memory's data segments (instances map those bytes instead: `Runtime`).
#[napi]
pub fn precompile(wasm: Uint8Array) -> Result<Uint8Array> {
  let e = engine(None)?;
  let (code, _) = split::split(&wasm).map_err(err)?;
  let bytes = e.precompile_component(&code).map_err(|e| err(format!("{e:#}")))?;
  Ok(Uint8Array::from(bytes))
}

fn export(component: &Component, parent: &ComponentExportIndex, name: &str) -> Result<ComponentExportIndex> {
  component
    .get_export_index(Some(parent), name)
    .ok_or_else(|| err(format!("the engine component exports no guest.{name}")))
}

fn define(linker: &mut Linker<Host>, component: &Component, e: &Engine) -> Result<(Vec<ImportSpec>, u32)> {
  let mut specs = Vec::new();
  let mut kinds = 0u32;
  let mut seen: Vec<(ResourceType, u32)> = Vec::new();
  for (iface, item) in component.component_type().imports(e) {
    let ComponentItem::ComponentInstance(inst) = item.ty else {
      return Err(err(format!("the engine component imports {iface}, which is not an interface")));
    };
    let js_iface = iface.split('@').next().unwrap_or(iface).to_string();
    let mut li = linker.instance(iface).map_err(err)?;
    for (name, item) in inst.exports(e) {
      match item.ty {
        // A resource an interface `use`s from another is the same type there: it keeps its kind.
        ComponentItem::Resource(rt) => {
          let kind = match seen.iter().find(|(t, _)| *t == rt) {
            Some((_, k)) => *k,
            None => {
              seen.push((rt, kinds));
              kinds += 1;
              kinds - 1
            }
          };
          li.resource(name, ResourceType::host_dynamic(kind), |mut store: StoreContextMut<'_, Host>, rep| {
            store.data_mut().calls += 1;
            let env = store.data().env;
            store.data_mut().resources.remove(env, rep);
            Ok(())
          })
          .map_err(err)?;
        }
        ComponentItem::ComponentFunc(fty) => {
          let (method, fname) = match name.strip_prefix("[method]") {
            Some(rest) => (true, rest.split('.').nth(1).unwrap_or(rest)),
            None if name.starts_with('[') => return Err(err(format!("the engine component imports {iface}#{name}, a kind of function kiln does not bridge"))),
            None => (false, name),
          };
          let index = specs.len();
          specs.push(ImportSpec { interface: js_iface.clone(), name: values::camel(fname), method });
          // The signature, walked once here rather than at every call.
          let params: Vec<Type> = fty.params().map(|(_, t)| t).collect();
          let result: Option<Type> = fty.results().next();
          if !method && typed::try_bind(&mut li, name, index, &params, result.as_ref()).map_err(err)? {
            continue;
          }
          let sig = Signature { method: method.then(|| values::camel(fname)), params, result };
          li.func_new(name, move |store, _ty, params, results| bridge(store, index, &sig, params, results)).map_err(err)?;
        }
        // Type definitions (records, variants, aliases) need nothing from the host.
        ComponentItem::Type(_) => {}
        _ => return Err(err(format!("the engine component imports {iface}#{name}, which kiln does not bridge"))),
      }
    }
  }
  Ok((specs, kinds))
}

/// A dynamically bridged import's WIT signature, and for a method, the method's name in camelCase.
struct Signature {
  method: Option<String>,
  params: Vec<Type>,
  result: Option<Type>,
}

/// Why an import call failed, as wasmtime reports it: a host function's exception is kept (rethrown when
/// the guest's run unwinds), anything else is a trap naming it.
pub(crate) fn import_error(store: &mut StoreContextMut<'_, Host>, f: Fail) -> wasmtime::Error {
  match f {
    Fail::Thrown(v) => {
      if let Ok(r) = js::reference(store.data().env, v) {
        store.data_mut().thrown = Some(r);
      }
      wasmtime::Error::msg("a host function threw")
    }
    Fail::Napi(m) => wasmtime::Error::msg(format!("import bridge: {m}")),
    Fail::Guest(e) => e,
  }
}

/// Call the host's function for plain import `index` (verified a function at `instantiate`) with `args`.
pub(crate) fn call_host(store: &StoreContextMut<'_, Host>, index: usize, args: &[js::Value]) -> js::Js<js::Value> {
  let env = store.data().env;
  let r = store.data().funcs.get(index).copied().flatten().ok_or_else(|| Fail::Napi("import not bound".into()))?;
  let f = js::deref(env, r)?;
  js::call_function(env, js::undefined(env)?, f, args)
}

/// jco's rule for a throw `e` from a result-returning import: its error value is `e.payload` if it has one,
/// the thrown value itself unless it is an Error; an Error stays a throw (`Fail::Thrown`: the call traps).
pub(crate) fn result_payload(env: js::Env, e: js::Value) -> js::Js<js::Value> {
  if js::has_own(env, e, "payload")? {
    return js::get(env, e, "payload");
  }
  if js::is_error(env, e)? {
    return Err(Fail::Thrown(e));
  }
  Ok(e)
}

/// One import call through the dynamic values: the guest's arguments to the host's function, and its answer
/// (or its throw) back. Every JavaScript value it makes (here and in typed.rs) lives in a handle scope of its
/// own, closed when it returns: a guest run is one call from JavaScript however many imports it makes, and
/// without it their values would stay reachable until the run ends (a guest logging in a loop held hundreds
/// of MB).
fn bridge(mut store: StoreContextMut<'_, Host>, index: usize, sig: &Signature, params: &[Val], results: &mut [Val]) -> wasmtime::Result<()> {
  store.data_mut().calls += 1;
  let env = store.data().env;
  let scope = js::open_scope(env);
  let out = match answer(&mut store, index, sig, params) {
    Ok(Some(v)) => {
      results[0] = v;
      Ok(())
    }
    Ok(None) => Ok(()),
    Err(f) => Err(import_error(&mut store, f)),
  };
  js::close_scope(env, scope);
  out
}

fn answer(store: &mut StoreContextMut<'_, Host>, index: usize, sig: &Signature, params: &[Val]) -> js::Js<Option<Val>> {
  let env = store.data().env;
  let mut args = Vec::with_capacity(params.len());
  for (v, t) in params.iter().zip(sig.params.iter()) {
    args.push(values::to_js(store, v, t)?);
  }
  let returned = match &sig.method {
    Some(name) => {
      let this = args.remove(0);
      js::get(env, this, name).and_then(|f| js::call(env, this, f, &args))
    }
    None => call_host(store, index, &args),
  };
  Ok(Some(match (returned, sig.result.as_ref()) {
    (Ok(_), None) => return Ok(None),
    (Ok(v), Some(Type::Result(r))) => match r.ok() {
      Some(t) => Val::Result(Ok(Some(Box::new(values::from_js(store, v, &t)?)))),
      None => Val::Result(Ok(None)),
    },
    (Ok(v), Some(t)) => values::from_js(store, v, t)?,
    (Err(Fail::Thrown(e)), Some(Type::Result(r))) => {
      let p = result_payload(env, e)?;
      match r.err() {
        Some(t) => Val::Result(Err(Some(Box::new(values::from_js(store, p, &t)?)))),
        None => Val::Result(Err(None)),
      }
    }
    (Err(f), _) => return Err(f),
  }))
}

/// The engine component from precompiled `code` known as `key` (its sha256), or the one this process already
/// loaded under that key. `code` must be bytes `precompile` made and the host verified: wasmtime checks their
/// header (version, configuration, CPU) and copies them into its own executable memory, so a later change to
/// their source changes nothing here. `source` is the engine component they were compiled from (its memory's
/// initial bytes are read from it: `split`).
fn load(key: String, code: &[u8], source: &[u8]) -> Result<Arc<Loaded>> {
  if let Some((_, l)) = LOADED.lock().map_err(err)?.iter().find(|(k, _)| *k == key) {
    return Ok(l.clone());
  }
  let e = engine(None)?;
  let component = unsafe { Component::deserialize(e, code) }.map_err(|x| err(format!("{x:#}")))?;
  let mut linker = Linker::new(e);
  let (imports, resource_kinds) = define(&mut linker, &component, e)?;
  let guest = component
    .get_export_index(None, "kiln:extension/guest@0.7.0")
    .ok_or_else(|| err("the engine component exports no kiln:extension/guest@0.7.0"))?;
  let exports = GuestExports {
    load: export(&component, &guest, "load")?,
    invoke: export(&component, &guest, "invoke")?,
    complete: export(&component, &guest, "complete")?,
    complete_bytes: export(&component, &guest, "complete-bytes")?,
    cancel: export(&component, &guest, "cancel")?,
    run_script: export(&component, &guest, "run-script")?,
    compile: export(&component, &guest, "compile")?,
  };
  let pre = linker.instantiate_pre(&component).map_err(|x| err(format!("{x:#}")))?;
  let image = Arc::new(memory::Image::new(&split::initial(source).map_err(err)?).map_err(err)?);
  let loaded = Arc::new(Loaded { pre, imports, resource_kinds, exports, image });
  LOADED.lock().map_err(err)?.push((key, loaded.clone()));
  Ok(loaded)
}

/// Reads a precompiled engine file, checks it against its sha256 and loads those very bytes, on a thread of
/// Node's pool (the host goes on loading its own modules meanwhile).
pub struct OpenPrecompiled {
  file: String,
  sha256: String,
  source: Vec<u8>,
}

impl Task for OpenPrecompiled {
  type Output = Arc<Loaded>;
  type JsValue = Runtime;

  fn compute(&mut self) -> Result<Arc<Loaded>> {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let code = std::fs::read(&self.file).map_err(|e| err(format!("{}: {e}", self.file)))?;
    let mut sum = String::with_capacity(64);
    for b in Sha256::digest(&code) {
      let _ = write!(sum, "{b:02x}");
    }
    if sum != self.sha256 {
      return Err(err(format!("{} does not match its sha256", self.file)));
    }
    load(sum, &code, &self.source)
  }

  fn resolve(&mut self, _env: Env, loaded: Arc<Loaded>) -> Result<Runtime> {
    Ok(Runtime { loaded })
  }
}

/// The precompiled engine in `file`, used only when its bytes hash to `sha256` (the one the host wrote beside
/// it): read, checked and loaded off the calling thread. Rejects when they do not, or wasmtime refuses them.
#[napi(ts_return_type = "Promise<Runtime>")]
pub fn open_precompiled(file: String, sha256: String, source: Uint8Array) -> AsyncTask<OpenPrecompiled> {
  AsyncTask::new(OpenPrecompiled { file, sha256, source: source.to_vec() })
}

/// The engine component, precompiled, with its imports bound: instantiates guests.
#[napi]
pub struct Runtime {
  loaded: Arc<Loaded>,
}

#[napi]
impl Runtime {
  /// The precompiled engine `code` (made by `precompile` for this engine configuration), known as `key`
  /// (its sha256: a second thread of the process gets the one already loaded).
  #[napi(constructor)]
  pub fn new(key: String, code: Uint8Array, source: Uint8Array) -> Result<Self> {
    // Safety (of `load`): these are the bytes the host wrote with `precompile` and checked against the
    // sha256 it wrote beside them (host/engine/wasmtime.ts).
    Ok(Runtime { loaded: load(key, &code, &source)? })
  }

  /// A new guest whose imports are the functions of `imports` (keyed by interface, as jco's are), sharing
  /// `state` (a Float64Array of at least 3 elements over an ArrayBuffer of its own: see `Guest`) with the host.
  /// Its memory starts as `snapshot`'s (one taken of a guest of this engine), else as the engine's.
  #[napi]
  pub fn instantiate(&self, env: Env, imports: Unknown, state: Unknown, snapshot: Option<&Snapshot>) -> Result<Guest> {
    let raw = env.raw();
    let obj = imports.raw();
    let state_ptr = js::f64_array(raw, state.raw(), STATE_LEN).map_err(|_| err("the guest's state is not a Float64Array of 3"))?;
    let mut funcs = Vec::with_capacity(self.loaded.imports.len());
    for spec in &self.loaded.imports {
      if spec.method {
        funcs.push(None);
        continue;
      }
      let found = js::get(raw, obj, &spec.interface).and_then(|i| {
        if js::type_of(raw, i)? != sys::ValueType::napi_object {
          return Err(Fail::Napi(String::new()));
        }
        let f = js::get(raw, i, &spec.name)?;
        if js::type_of(raw, f)? != sys::ValueType::napi_function {
          return Err(Fail::Napi(String::new()));
        }
        js::reference(raw, f)
      });
      match found {
        Ok(r) => funcs.push(Some(r)),
        Err(_) => {
          for r in funcs.into_iter().flatten() {
            js::unreference(raw, r);
          }
          return Err(err(format!("the host gives no function for the import {}#{}", spec.interface, spec.name)));
        }
      }
    }
    let host = Host {
      env: raw,
      funcs,
      resources: Resources::default(),
      resource_kinds: self.loaded.resource_kinds,
      thrown: None,
      state: js::reference(raw, state.raw()).ok(),
      limits: Limits { ceiling: usize::MAX, largest: 0, refused: false },
      calls: 0,
    };
    let mut store = Store::new(self.loaded.pre.engine(), host);
    store.limiter(|h| &mut h.limits);
    store.set_epoch_deadline(u64::MAX / 2);
    let image = snapshot.map_or_else(|| self.loaded.image.clone(), |s| s.image.clone());
    let (instance, view) = memory::with_image(image, || self.loaded.pre.instantiate(&mut store));
    let instance = instance.map_err(|x| err(format!("{x:#}")))?;
    let memory = view.ok_or_else(|| err("the engine component made no linear memory"))?;
    store.data_mut().limits.largest = memory.size();
    let x = &self.loaded.exports;
    let mut typed = |f: ComponentExportIndex| instance.get_func(&mut store, f).ok_or_else(|| err("the engine component lacks an export"));
    let (load, invoke, complete, complete_bytes, cancel, run_script, compile) =
      (typed(x.load)?, typed(x.invoke)?, typed(x.complete)?, typed(x.complete_bytes)?, typed(x.cancel)?, typed(x.run_script)?, typed(x.compile)?);
    let t = |e: wasmtime::Error| err(format!("{e:#}"));
    let exports = Exports {
      load: load.typed(&store).map_err(t)?,
      invoke: invoke.typed(&store).map_err(t)?,
      complete: complete.typed(&store).map_err(t)?,
      complete_bytes: complete_bytes.typed(&store).map_err(t)?,
      cancel: cancel.typed(&store).map_err(t)?,
      run_script: run_script.typed(&store).map_err(t)?,
      compile: compile.typed(&store).map_err(t)?,
    };
    // Safety: the array's elements are checked to be at least STATE_LEN f64s; its ArrayBuffer's memory
    // does not move, and the reference in `Host` keeps it alive as long as the store.
    unsafe {
      *state_ptr.add(STATE_DEADLINE) = -1.0;
      *state_ptr.add(STATE_MEMORY) = store.data().limits.largest as f64;
      *state_ptr.add(STATE_REFUSED) = 0.0;
    }
    Ok(Guest { store, exports, state: State(state_ptr), busy: false, memory })
  }
}

/// The outcome of a result-typed export: `ok` and its value, or the guest's error text.
#[napi(object)]
pub struct Outcome {
  pub ok: bool,
  pub value: Option<String>,
  pub bytes: Option<Uint8Array>,
}

type Text = std::result::Result<String, String>;
type Bytes = std::result::Result<Vec<u8>, String>;

/// The guest interface's exports, type-checked once at instantiation.
struct Exports {
  load: TypedFunc<(String, Vec<u8>), (Text,)>,
  invoke: TypedFunc<(u32, String, String), ()>,
  complete: TypedFunc<(u32, Text), ()>,
  complete_bytes: TypedFunc<(u32, Bytes), ()>,
  cancel: TypedFunc<(u32, String), ()>,
  run_script: TypedFunc<(u32, Vec<u8>), ()>,
  compile: TypedFunc<(String, String, bool), (Bytes,)>,
}

/// The instance's state that JavaScript reads and writes without a call: a Float64Array the host made
/// (its own ArrayBuffer, never handed to anything else), held by a reference for the guest's life.
///   [0] milliseconds from the start of the next run to its deadline (< 0: none), written by the host;
///   [1] bytes of the largest linear memory and [2] 1 once a growth past the ceiling was refused, written
///       here after every run.
const STATE_DEADLINE: usize = 0;
const STATE_MEMORY: usize = 1;
const STATE_REFUSED: usize = 2;
const STATE_LEN: usize = 3;

struct State(*mut f64);
// Only touched on the thread that owns the store, during a call from JavaScript.
unsafe impl Send for State {}

/// One guest: a store with the engine instantiated in it.
#[napi]
pub struct Guest {
  store: Store<Host>,
  exports: Exports,
  state: State,
  busy: bool,
  memory: memory::View,
}

/// A guest's memory as it was between two of its runs, to start other guests of the same engine from
/// (copy-on-write: `memory.rs`).
#[napi]
pub struct Snapshot {
  image: Arc<memory::Image>,
}

#[napi]
impl Snapshot {
  /// Bytes of its non-zero pages: what the process holds for it, once, however many guests map it.
  #[napi(getter)]
  pub fn resident_bytes(&self) -> f64 {
    self.image.resident() as f64
  }

  /// Bytes of the memory it starts a guest with.
  #[napi(getter)]
  pub fn bytes(&self) -> f64 {
    self.image.len() as f64
  }
}

#[napi]
impl Guest {
  /// How many times the guest has called the host (any import) since it was made.
  #[napi(getter)]
  pub fn import_calls(&self) -> f64 {
    self.store.data().calls as f64
  }

  /// Its memory now, to start other guests from. Refused while it runs (never the case from JavaScript:
  /// the guest is not re-entered) and when it holds a resource of the host's, which a copy could not.
  #[napi]
  pub fn snapshot(&self) -> Result<Snapshot> {
    if self.busy {
      return Err(err("a running guest cannot be snapshotted"));
    }
    if self.store.data().resources.slots.iter().any(Option::is_some) {
      return Err(err("a guest holding a host resource cannot be snapshotted"));
    }
    // Safety: no guest code runs on this store meanwhile (this call holds it).
    let bytes = unsafe { self.memory.copy() };
    Ok(Snapshot { image: Arc::new(memory::Image::new(&bytes).map_err(err)?) })
  }

  /// Linear memory may not grow past `bytes` (0: no ceiling).
  #[napi]
  pub fn set_memory_ceiling(&mut self, bytes: f64) {
    self.store.data_mut().limits.ceiling = if bytes > 0.0 { bytes as usize } else { usize::MAX };
  }

  #[napi]
  pub fn load(&mut self, env: Env, config: String, image: Uint8Array) -> Result<Outcome> {
    let f = self.exports.load;
    let r = self.run(env, f, (config, image.to_vec()))?;
    Ok(text_outcome(r.0))
  }

  #[napi]
  pub fn invoke(&mut self, env: Env, inv: u32, tool: String, args: String) -> Result<()> {
    let f = self.exports.invoke;
    self.run(env, f, (inv, tool, args))
  }

  #[napi]
  pub fn complete(&mut self, env: Env, op: u32, ok: bool, value: String) -> Result<()> {
    let f = self.exports.complete;
    let outcome: Text = if ok { Ok(value) } else { Err(value) };
    self.run(env, f, (op, outcome))
  }

  #[napi]
  pub fn complete_bytes(&mut self, env: Env, op: u32, bytes: Option<Uint8Array>, error: Option<String>) -> Result<()> {
    let f = self.exports.complete_bytes;
    let outcome: Bytes = match (bytes, error) {
      (Some(b), _) => Ok(b.to_vec()),
      (None, e) => Err(e.unwrap_or_default()),
    };
    self.run(env, f, (op, outcome))
  }

  #[napi]
  pub fn cancel(&mut self, env: Env, inv: u32, reason: String) -> Result<()> {
    let f = self.exports.cancel;
    self.run(env, f, (inv, reason))
  }

  #[napi]
  pub fn run_script(&mut self, env: Env, inv: u32, bytecode: Uint8Array) -> Result<()> {
    let f = self.exports.run_script;
    self.run(env, f, (inv, bytecode.to_vec()))
  }

  #[napi]
  pub fn compile(&mut self, env: Env, source: String, filename: String, module: bool) -> Result<Outcome> {
    let f = self.exports.compile;
    let r = self.run(env, f, (source, filename, module))?;
    Ok(match r.0 {
      Ok(b) => Outcome { ok: true, value: None, bytes: Some(Uint8Array::from(b)) },
      Err(e) => Outcome { ok: false, value: Some(e), bytes: None },
    })
  }
}

fn text_outcome(r: std::result::Result<String, String>) -> Outcome {
  match r {
    Ok(v) => Outcome { ok: true, value: Some(v), bytes: None },
    Err(e) => Outcome { ok: false, value: Some(e), bytes: None },
  }
}

impl Guest {
  /// Call export `f`, stopped at the deadline the state array holds; a trap, a deadline or a host function's
  /// exception becomes a JavaScript exception. The memory the run left is written to the state array.
  fn run<P, R>(&mut self, env: Env, f: TypedFunc<P, R>, params: P) -> Result<R>
  where
    P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower + Send + Sync,
    R: wasmtime::component::ComponentNamedList + wasmtime::component::Lift + Send + Sync,
  {
    if self.busy {
      return Err(err("the guest is already running (it may not be re-entered from an import)"));
    }
    let raw = env.raw();
    self.store.data_mut().env = raw;
    let ms = unsafe { *self.state.0.add(STATE_DEADLINE) };
    let ticks = if ms.is_finite() && ms >= 0.0 { (ms / EPOCH_TICK.as_millis() as f64).ceil() as u64 + 1 } else { u64::MAX / 2 };
    self.store.set_epoch_deadline(ticks);
    self.busy = true;
    let out = f.call(&mut self.store, params);
    self.busy = false;
    let limits = &self.store.data().limits;
    unsafe {
      *self.state.0.add(STATE_MEMORY) = limits.largest as f64;
      *self.state.0.add(STATE_REFUSED) = if limits.refused { 1.0 } else { 0.0 };
    }
    match out {
      Ok(r) => Ok(r),
      Err(e) => {
        if let Some(r) = self.store.data_mut().thrown.take() {
          let v = js::deref(raw, r);
          js::unreference(raw, r);
          if let Ok(v) = v {
            js::throw(raw, v);
            return Err(Error::new(Status::PendingException, "a host function threw"));
          }
        }
        let trap = e.downcast_ref::<Trap>().copied();
        let code = match trap {
          Some(Trap::Interrupt) => "KILN_DEADLINE",
          _ => "KILN_TRAP",
        };
        let msg = match trap {
          Some(t) => t.to_string(),
          None => format!("{e:#}"),
        };
        if let Ok(x) = js::error(raw, &msg) {
          if let Ok(c) = js::string(raw, code) {
            let _ = js::set(raw, x, "code", c);
          }
          js::throw(raw, x);
          return Err(Error::new(Status::PendingException, msg));
        }
        Err(err(msg))
      }
    }
  }
}
