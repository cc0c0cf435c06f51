// Raw N-API: the few JavaScript operations the value bridge needs, each returning a Rust `Result`.
//
// Invariant: every function here runs on the thread that owns `env`, inside a call from JavaScript (a
// method of the addon, or an import the guest called during one); none of them keeps a `napi_value`
// past that call (what must live longer is a `napi_ref`).
use napi::sys;
use std::ffi::{c_char, c_void, CString};
use std::ptr;

pub type Env = sys::napi_env;
pub type Value = sys::napi_value;

/// Why a JavaScript operation failed: an exception it raised (taken off the env), or an N-API failure; or
/// why reading the guest's value for it did (wasmtime's own error, as its dynamic lifting reports it).
pub enum Fail {
  Thrown(Value),
  Napi(String),
  Guest(wasmtime::Error),
}

pub type Js<T> = Result<T, Fail>;

fn check(env: Env, status: sys::napi_status, what: &str) -> Js<()> {
  if status == sys::Status::napi_ok {
    return Ok(());
  }
  let mut pending = false;
  unsafe { sys::napi_is_exception_pending(env, &mut pending) };
  if pending {
    let mut e = ptr::null_mut();
    unsafe { sys::napi_get_and_clear_last_exception(env, &mut e) };
    return Err(Fail::Thrown(e));
  }
  Err(Fail::Napi(format!("{what} failed (napi status {status})")))
}

macro_rules! napi_call {
  ($env:expr, $what:expr, $call:expr) => {
    check($env, unsafe { $call }, $what)
  };
}

pub fn type_of(env: Env, v: Value) -> Js<sys::napi_valuetype> {
  let mut t = 0;
  napi_call!(env, "typeof", sys::napi_typeof(env, v, &mut t))?;
  Ok(t)
}

pub fn undefined(env: Env) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "undefined", sys::napi_get_undefined(env, &mut v))?;
  Ok(v)
}

pub fn boolean(env: Env, b: bool) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "boolean", sys::napi_get_boolean(env, b, &mut v))?;
  Ok(v)
}

pub fn get_bool(env: Env, v: Value) -> Js<bool> {
  let mut b = false;
  let mut c = ptr::null_mut();
  napi_call!(env, "ToBoolean", sys::napi_coerce_to_bool(env, v, &mut c))?;
  napi_call!(env, "boolean value", sys::napi_get_value_bool(env, c, &mut b))?;
  Ok(b)
}

pub fn number(env: Env, n: f64) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "number", sys::napi_create_double(env, n, &mut v))?;
  Ok(v)
}

/// A number, or a BigInt (as jco accepts for 64-bit integers), as f64 / i128.
pub fn get_number(env: Env, v: Value) -> Js<f64> {
  if type_of(env, v)? == sys::ValueType::napi_bigint {
    let mut out = 0i64;
    let mut lossless = false;
    napi_call!(env, "bigint value", sys::napi_get_value_bigint_int64(env, v, &mut out, &mut lossless))?;
    return Ok(out as f64);
  }
  let mut c = ptr::null_mut();
  napi_call!(env, "ToNumber", sys::napi_coerce_to_number(env, v, &mut c))?;
  let mut n = 0f64;
  napi_call!(env, "number value", sys::napi_get_value_double(env, c, &mut n))?;
  Ok(n)
}

pub fn bigint_u64(env: Env, n: u64) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "bigint", sys::napi_create_bigint_uint64(env, n, &mut v))?;
  Ok(v)
}

pub fn bigint_i64(env: Env, n: i64) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "bigint", sys::napi_create_bigint_int64(env, n, &mut v))?;
  Ok(v)
}

pub fn get_u64(env: Env, v: Value) -> Js<u64> {
  if type_of(env, v)? == sys::ValueType::napi_bigint {
    let mut out = 0u64;
    let mut lossless = false;
    napi_call!(env, "bigint value", sys::napi_get_value_bigint_uint64(env, v, &mut out, &mut lossless))?;
    return Ok(out);
  }
  Ok(get_number(env, v)? as u64)
}

pub fn get_i64(env: Env, v: Value) -> Js<i64> {
  if type_of(env, v)? == sys::ValueType::napi_bigint {
    let mut out = 0i64;
    let mut lossless = false;
    napi_call!(env, "bigint value", sys::napi_get_value_bigint_int64(env, v, &mut out, &mut lossless))?;
    return Ok(out);
  }
  Ok(get_number(env, v)? as i64)
}

pub fn string(env: Env, s: &str) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "string", sys::napi_create_string_utf8(env, s.as_ptr() as *const c_char, s.len() as isize, &mut v))?;
  Ok(v)
}

/// The value as a string, as jco's `String(v)` would have it for a string (other types are refused).
pub fn get_string(env: Env, v: Value) -> Js<String> {
  if type_of(env, v)? != sys::ValueType::napi_string {
    return Err(Fail::Napi("expected a string".into()));
  }
  // A short string is read in one call. N-API writes whole characters only (at most 4 bytes each), so
  // fewer than `SHORT - 4` bytes written means nothing was left out.
  const SHORT: usize = 256;
  let mut short = [0u8; SHORT];
  let mut written = 0usize;
  napi_call!(env, "string value", sys::napi_get_value_string_utf8(env, v, short.as_mut_ptr() as *mut c_char, SHORT, &mut written))?;
  if written + 4 < SHORT {
    if let Ok(s) = std::str::from_utf8(&short[..written]) {
      return Ok(s.to_owned());
    }
  }
  let mut len = 0usize;
  napi_call!(env, "string length", sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut len))?;
  let mut buf = vec![0u8; len + 1];
  napi_call!(env, "string value", sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr() as *mut c_char, len + 1, &mut written))?;
  buf.truncate(written);
  // N-API writes UTF-8 (lone surrogates become U+FFFD), so this cannot fail.
  Ok(String::from_utf8(buf).unwrap_or_default())
}

pub fn object(env: Env) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "object", sys::napi_create_object(env, &mut v))?;
  Ok(v)
}

pub fn get(env: Env, obj: Value, name: &str) -> Js<Value> {
  let key = CString::new(name).map_err(|_| Fail::Napi("a property name holds NUL".into()))?;
  let mut v = ptr::null_mut();
  napi_call!(env, "get property", sys::napi_get_named_property(env, obj, key.as_ptr(), &mut v))?;
  Ok(v)
}

pub fn set(env: Env, obj: Value, name: &str, value: Value) -> Js<()> {
  let key = CString::new(name).map_err(|_| Fail::Napi("a property name holds NUL".into()))?;
  napi_call!(env, "set property", sys::napi_set_named_property(env, obj, key.as_ptr(), value))
}

pub fn has_own(env: Env, obj: Value, name: &str) -> Js<bool> {
  if type_of(env, obj)? != sys::ValueType::napi_object {
    return Ok(false);
  }
  let key = string(env, name)?;
  let mut b = false;
  napi_call!(env, "has own property", sys::napi_has_own_property(env, obj, key, &mut b))?;
  Ok(b)
}

pub fn array(env: Env, len: usize) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "array", sys::napi_create_array_with_length(env, len, &mut v))?;
  Ok(v)
}

pub fn set_index(env: Env, arr: Value, i: u32, value: Value) -> Js<()> {
  napi_call!(env, "set element", sys::napi_set_element(env, arr, i, value))
}

pub fn get_index(env: Env, arr: Value, i: u32) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "get element", sys::napi_get_element(env, arr, i, &mut v))?;
  Ok(v)
}

pub fn array_len(env: Env, arr: Value) -> Js<u32> {
  let mut is = false;
  napi_call!(env, "is array", sys::napi_is_array(env, arr, &mut is))?;
  if !is {
    return Err(Fail::Napi("expected an array".into()));
  }
  let mut n = 0u32;
  napi_call!(env, "array length", sys::napi_get_array_length(env, arr, &mut n))?;
  Ok(n)
}

pub fn uint8array(env: Env, bytes: &[u8]) -> Js<Value> {
  let mut data: *mut c_void = ptr::null_mut();
  let mut ab = ptr::null_mut();
  napi_call!(env, "ArrayBuffer", sys::napi_create_arraybuffer(env, bytes.len(), &mut data, &mut ab))?;
  if !bytes.is_empty() {
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data as *mut u8, bytes.len()) };
  }
  let mut v = ptr::null_mut();
  napi_call!(env, "Uint8Array", sys::napi_create_typedarray(env, sys::TypedarrayType::uint8_array, bytes.len(), ab, 0, &mut v))?;
  Ok(v)
}

/// The bytes of a typed array (any kind: its bytes), or of an array of numbers.
pub fn get_bytes(env: Env, v: Value) -> Js<Vec<u8>> {
  let mut is = false;
  napi_call!(env, "is typed array", sys::napi_is_typedarray(env, v, &mut is))?;
  if is {
    let (mut ty, mut len, mut data, mut ab, mut off) = (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
    napi_call!(env, "typed array", sys::napi_get_typedarray_info(env, v, &mut ty, &mut len, &mut data, &mut ab, &mut off))?;
    let width = match ty {
      0..=2 => 1,
      3 | 4 => 2,
      5..=7 => 4,
      _ => 8,
    };
    if len == 0 || data.is_null() {
      return Ok(Vec::new());
    }
    return Ok(unsafe { std::slice::from_raw_parts(data as *const u8, len * width) }.to_vec());
  }
  let n = array_len(env, v)?;
  (0..n).map(|i| Ok(get_number(env, get_index(env, v, i)?)? as u8)).collect()
}

pub fn is_error(env: Env, v: Value) -> Js<bool> {
  let mut b = false;
  napi_call!(env, "is error", sys::napi_is_error(env, v, &mut b))?;
  Ok(b)
}

pub fn error(env: Env, message: &str) -> Js<Value> {
  let msg = string(env, message)?;
  let mut v = ptr::null_mut();
  napi_call!(env, "Error", sys::napi_create_error(env, ptr::null_mut(), msg, &mut v))?;
  Ok(v)
}

pub fn throw(env: Env, v: Value) {
  unsafe { sys::napi_throw(env, v) };
}

/// `f.apply(recv, args)`; an exception it throws is `Fail::Thrown`.
pub fn call(env: Env, recv: Value, f: Value, args: &[Value]) -> Js<Value> {
  if type_of(env, f)? != sys::ValueType::napi_function {
    return Err(Fail::Napi("not a function".into()));
  }
  call_function(env, recv, f, args)
}

/// `call` for a value already known to be a function.
pub fn call_function(env: Env, recv: Value, f: Value, args: &[Value]) -> Js<Value> {
  let mut out = ptr::null_mut();
  napi_call!(env, "call", sys::napi_call_function(env, recv, f, args.len(), args.as_ptr(), &mut out))?;
  Ok(out)
}

pub fn reference(env: Env, v: Value) -> Js<sys::napi_ref> {
  let mut r = ptr::null_mut();
  napi_call!(env, "reference", sys::napi_create_reference(env, v, 1, &mut r))?;
  Ok(r)
}

pub fn deref(env: Env, r: sys::napi_ref) -> Js<Value> {
  let mut v = ptr::null_mut();
  napi_call!(env, "reference value", sys::napi_get_reference_value(env, r, &mut v))?;
  Ok(v)
}

pub fn unreference(env: Env, r: sys::napi_ref) {
  unsafe { sys::napi_delete_reference(env, r) };
}

/// A handle scope: every value made until `close_scope` is released then.
pub fn open_scope(env: Env) -> sys::napi_handle_scope {
  let mut scope = ptr::null_mut();
  unsafe { sys::napi_open_handle_scope(env, &mut scope) };
  scope
}

pub fn close_scope(env: Env, scope: sys::napi_handle_scope) {
  unsafe { sys::napi_close_handle_scope(env, scope) };
}

/// The elements of `v`, a Float64Array of at least `len` elements over memory that does not move (an
/// ArrayBuffer's, never a typed array's on-heap storage: asking for the info moves that off-heap).
pub fn f64_array(env: Env, v: Value, len: usize) -> Js<*mut f64> {
  let mut is = false;
  napi_call!(env, "is typed array", sys::napi_is_typedarray(env, v, &mut is))?;
  if !is {
    return Err(Fail::Napi("expected a Float64Array".into()));
  }
  let (mut ty, mut n, mut data, mut ab, mut off) = (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
  napi_call!(env, "typed array", sys::napi_get_typedarray_info(env, v, &mut ty, &mut n, &mut data, &mut ab, &mut off))?;
  if ty != sys::TypedarrayType::float64_array || n < len || data.is_null() {
    return Err(Fail::Napi("expected a Float64Array".into()));
  }
  Ok(data as *mut f64)
}
