// Typed bindings for the imports whose signatures are made only of u32, bool, string, list<u8>,
// option<string> and result<string, string> / result<_, string>: the hot ones (vars.get, runtime.finish,
// runtime.interrupted, the capability calls, request bodies, random bytes). wasmtime lifts and lowers these
// straight to and from Rust types (`func_wrap`), with no dynamic `Val` or `Type` walked per call (a list<u8>
// is one copy, not a value per byte), and a string or byte argument goes from the guest's memory to
// JavaScript without a Rust copy. Every other import goes through the dynamic bridge (lib.rs).
//
// Invariants:
//  - A binding is chosen by the import's declared WIT signature, never by its name, and wasmtime checks it
//    against the component's at `instantiate_pre`: it cannot bind a function of another type.
//  - The JavaScript the host's function sees, and what becomes of its answer or its throw, are exactly the
//    dynamic bridge's (values.rs's conventions, lib.rs's `answer` rules): the same helpers make them.
use crate::js::{self, Fail, Js, Value};
use crate::{call_host, import_error, result_payload, Host};
use wasmtime::component::types::Type;
use wasmtime::component::{ComponentNamedList, ComponentType, Lift, LinkerInstance, Lower, WasmList, WasmStr};
use wasmtime::{AsContext, StoreContextMut};

/// Most arguments a typed import takes.
const MAX_ARGS: usize = 3;

/// One argument of a typed import, as the host's function receives it.
pub trait Arg: ComponentType + Lift + 'static {
  fn to_js(&self, store: &StoreContextMut<'_, Host>) -> Js<Value>;
}

impl Arg for u32 {
  fn to_js(&self, store: &StoreContextMut<'_, Host>) -> Js<Value> {
    js::number(store.data().env, *self as f64)
  }
}

impl Arg for WasmStr {
  fn to_js(&self, store: &StoreContextMut<'_, Host>) -> Js<Value> {
    let s = self.to_str(store.as_context()).map_err(Fail::Guest)?;
    js::string(store.data().env, &s)
  }
}

/// `list<u8>`: a Uint8Array.
impl Arg for WasmList<u8> {
  fn to_js(&self, store: &StoreContextMut<'_, Host>) -> Js<Value> {
    js::uint8array(store.data().env, self.as_le_slice(store.as_context()))
  }
}

/// `result<string, string>` as an argument: `{ tag: 'ok' | 'err', val }`.
impl Arg for Result<WasmStr, WasmStr> {
  fn to_js(&self, store: &StoreContextMut<'_, Host>) -> Js<Value> {
    let env = store.data().env;
    let (tag, val) = match self {
      Ok(v) => ("ok", v),
      Err(v) => ("err", v),
    };
    let o = js::object(env)?;
    let t = js::string(env, tag)?;
    js::set(env, o, "tag", t)?;
    let x = val.to_js(store)?;
    js::set(env, o, "val", x)?;
    Ok(o)
  }
}

/// A typed import's parameters, converted in order into `out`.
pub trait Params: ComponentNamedList + Lift + 'static {
  const LEN: usize;
  fn to_js(&self, store: &StoreContextMut<'_, Host>, out: &mut [Value; MAX_ARGS]) -> Js<()>;
}

impl Params for () {
  const LEN: usize = 0;
  fn to_js(&self, _: &StoreContextMut<'_, Host>, _: &mut [Value; MAX_ARGS]) -> Js<()> {
    Ok(())
  }
}

impl<A: Arg> Params for (A,) {
  const LEN: usize = 1;
  fn to_js(&self, store: &StoreContextMut<'_, Host>, out: &mut [Value; MAX_ARGS]) -> Js<()> {
    out[0] = self.0.to_js(store)?;
    Ok(())
  }
}

impl<A: Arg, B: Arg> Params for (A, B) {
  const LEN: usize = 2;
  fn to_js(&self, store: &StoreContextMut<'_, Host>, out: &mut [Value; MAX_ARGS]) -> Js<()> {
    out[0] = self.0.to_js(store)?;
    out[1] = self.1.to_js(store)?;
    Ok(())
  }
}

impl<A: Arg, B: Arg, C: Arg> Params for (A, B, C) {
  const LEN: usize = 3;
  fn to_js(&self, store: &StoreContextMut<'_, Host>, out: &mut [Value; MAX_ARGS]) -> Js<()> {
    out[0] = self.0.to_js(store)?;
    out[1] = self.1.to_js(store)?;
    out[2] = self.2.to_js(store)?;
    Ok(())
  }
}

/// A typed import's result, from what the host's function returned or threw.
pub trait Ret: ComponentNamedList + Lower + Send + Sync + Sized + 'static {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self>;
}

impl Ret for () {
  fn from_js(_: js::Env, returned: Js<Value>) -> Js<Self> {
    returned.map(|_| ())
  }
}

impl Ret for (u32,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    Ok((js::get_number(env, returned?)? as u32,))
  }
}

impl Ret for (bool,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    Ok((js::get_bool(env, returned?)?,))
  }
}

impl Ret for (Option<String>,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    let v = returned?;
    let t = js::type_of(env, v)?;
    if t == napi::sys::ValueType::napi_undefined || t == napi::sys::ValueType::napi_null {
      return Ok((None,));
    }
    Ok((Some(js::get_string(env, v)?),))
  }
}

impl Ret for (Vec<u8>,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    Ok((js::get_bytes(env, returned?)?,))
  }
}

impl Ret for (Result<String, String>,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    match returned {
      Ok(v) => Ok((Ok(js::get_string(env, v)?),)),
      Err(Fail::Thrown(e)) => Ok((Err(js::get_string(env, result_payload(env, e)?)?),)),
      Err(f) => Err(f),
    }
  }
}

impl Ret for (Result<(), String>,) {
  fn from_js(env: js::Env, returned: Js<Value>) -> Js<Self> {
    match returned {
      Ok(_) => Ok((Ok(()),)),
      Err(Fail::Thrown(e)) => Ok((Err(js::get_string(env, result_payload(env, e)?)?),)),
      Err(f) => Err(f),
    }
  }
}

/// Bind plain import `index` (lib.rs `Host::funcs`) as `name` with the Rust types `P` and `R`.
fn bind<P: Params, R: Ret>(li: &mut LinkerInstance<'_, Host>, name: &str, index: usize) -> wasmtime::Result<()> {
  li.func_wrap(name, move |mut store: StoreContextMut<'_, Host>, params: P| -> wasmtime::Result<R> {
    store.data_mut().calls += 1;
    let env = store.data().env;
    let scope = js::open_scope(env);
    let mut args = [std::ptr::null_mut(); MAX_ARGS];
    let out = match params.to_js(&store, &mut args) {
      Ok(()) => R::from_js(env, call_host(&store, index, &args[..P::LEN])),
      Err(f) => Err(f),
    };
    let out = out.map_err(|f| import_error(&mut store, f));
    js::close_scope(env, scope);
    out
  })
}

#[derive(Clone, Copy, PartialEq)]
enum A {
  U32,
  Str,
  Bytes,
  ResStr,
}

#[derive(Clone, Copy, PartialEq)]
enum R {
  Unit,
  U32,
  Bool,
  Bytes,
  OptStr,
  ResStr,
  ResUnitStr,
}

fn arg_kind(t: &Type) -> Option<A> {
  match t {
    Type::U32 => Some(A::U32),
    Type::String => Some(A::Str),
    Type::List(l) if matches!(l.ty(), Type::U8) => Some(A::Bytes),
    Type::Result(r) if matches!(r.ok(), Some(Type::String)) && matches!(r.err(), Some(Type::String)) => Some(A::ResStr),
    _ => None,
  }
}

fn ret_kind(t: Option<&Type>) -> Option<R> {
  Some(match t {
    None => R::Unit,
    Some(Type::U32) => R::U32,
    Some(Type::Bool) => R::Bool,
    Some(Type::List(l)) if matches!(l.ty(), Type::U8) => R::Bytes,
    Some(Type::Option(o)) if matches!(o.ty(), Type::String) => R::OptStr,
    Some(Type::Result(r)) if matches!(r.err(), Some(Type::String)) => match r.ok() {
      Some(Type::String) => R::ResStr,
      None => R::ResUnitStr,
      _ => return None,
    },
    _ => return None,
  })
}

/// Bind plain import `index` typed when its signature is one this file knows; false: it is not (the caller
/// binds it dynamically).
pub fn try_bind(li: &mut LinkerInstance<'_, Host>, name: &str, index: usize, params: &[Type], result: Option<&Type>) -> wasmtime::Result<bool> {
  let Some(args) = params.iter().map(arg_kind).collect::<Option<Vec<A>>>() else { return Ok(false) };
  let Some(ret) = ret_kind(result) else { return Ok(false) };
  use A::{Bytes as B, ResStr as Res, Str, U32 as U};
  match (args.as_slice(), ret) {
    ([], R::Bool) => bind::<(), (bool,)>(li, name, index)?,
    ([U], R::Unit) => bind::<(u32,), ()>(li, name, index)?,
    ([U], R::U32) => bind::<(u32,), (u32,)>(li, name, index)?,
    ([U], R::Bytes) => bind::<(u32,), (Vec<u8>,)>(li, name, index)?,
    ([U, U], R::U32) => bind::<(u32, u32), (u32,)>(li, name, index)?,
    ([U, Str], R::U32) => bind::<(u32, WasmStr), (u32,)>(li, name, index)?,
    ([U, Str], R::Unit) => bind::<(u32, WasmStr), ()>(li, name, index)?,
    ([U, Str, B], R::U32) => bind::<(u32, WasmStr, WasmList<u8>), (u32,)>(li, name, index)?,
    ([U, Res], R::Unit) => bind::<(u32, Result<WasmStr, WasmStr>), ()>(li, name, index)?,
    ([Str], R::OptStr) => bind::<(WasmStr,), (Option<String>,)>(li, name, index)?,
    ([Str], R::Bool) => bind::<(WasmStr,), (bool,)>(li, name, index)?,
    ([Str, Str], R::ResUnitStr) => bind::<(WasmStr, WasmStr), (Result<(), String>,)>(li, name, index)?,
    ([Str, Str, Str], R::ResStr) => bind::<(WasmStr, WasmStr, WasmStr), (Result<String, String>,)>(li, name, index)?,
    _ => return Ok(false),
  }
  Ok(true)
}
