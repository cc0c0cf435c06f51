// Component values to JavaScript and back, by their WIT type, in jco's conventions: what the host's import
// functions already receive and return on the V8 backend (host/engine/imports.ts, host/engine/wasi.ts), so
// the same TypeScript answers both backends.
//
//   bool → boolean; u8..u32, s8..s32, f32, f64 → number; u64, s64 → BigInt; char, string → string;
//   list<u8> → Uint8Array; other lists and tuples → arrays; record → object with camelCase fields;
//   variant → { tag, val? }; enum → its case name; option<T> → T or undefined; result<T, E> (as an argument)
//   → { tag: 'ok' | 'err', val }; flags → object of booleans; a resource → the JavaScript object the host
//   handed out for it.
//
// Invariant: nothing here trusts a value's shape: a JavaScript value of the wrong kind is an error naming
// the expected type, never a panic.
use crate::js::{self, Fail, Js, Value};
use crate::Host;
use wasmtime::component::types::Type;
use wasmtime::component::{ResourceAny, ResourceDynamic, ResourceType, Val};
use wasmtime::StoreContextMut;

/// `check-write` → `checkWrite`, as jco names functions, methods and record fields.
pub fn camel(name: &str) -> String {
  let mut out = String::with_capacity(name.len());
  let mut up = false;
  for c in name.chars() {
    if c == '-' {
      up = true;
    } else if up {
      out.extend(c.to_uppercase());
      up = false;
    } else {
      out.push(c);
    }
  }
  out
}

fn resource_kind(ty: &ResourceType, kinds: u32) -> Option<u32> {
  (0..kinds).find(|k| *ty == ResourceType::host_dynamic(*k))
}

fn bad(what: &str) -> Fail {
  Fail::Napi(format!("expected {what}"))
}

pub fn to_js(store: &mut StoreContextMut<'_, Host>, v: &Val, ty: &Type) -> Js<Value> {
  let env = store.data().env;
  Ok(match (v, ty) {
    (Val::Bool(b), _) => js::boolean(env, *b)?,
    (Val::S8(n), _) => js::number(env, *n as f64)?,
    (Val::U8(n), _) => js::number(env, *n as f64)?,
    (Val::S16(n), _) => js::number(env, *n as f64)?,
    (Val::U16(n), _) => js::number(env, *n as f64)?,
    (Val::S32(n), _) => js::number(env, *n as f64)?,
    (Val::U32(n), _) => js::number(env, *n as f64)?,
    (Val::S64(n), _) => js::bigint_i64(env, *n)?,
    (Val::U64(n), _) => js::bigint_u64(env, *n)?,
    (Val::Float32(n), _) => js::number(env, *n as f64)?,
    (Val::Float64(n), _) => js::number(env, *n)?,
    (Val::Char(c), _) => js::string(env, &c.to_string())?,
    (Val::String(s), _) => js::string(env, s)?,
    (Val::List(items), Type::List(l)) => {
      let item = l.ty();
      if matches!(item, Type::U8) {
        let bytes: Vec<u8> = items.iter().map(|i| if let Val::U8(b) = i { *b } else { 0 }).collect();
        js::uint8array(env, &bytes)?
      } else {
        let arr = js::array(env, items.len())?;
        for (i, x) in items.iter().enumerate() {
          let x = to_js(store, x, &item)?;
          js::set_index(env, arr, i as u32, x)?;
        }
        arr
      }
    }
    (Val::Tuple(items), Type::Tuple(t)) => {
      let arr = js::array(env, items.len())?;
      for (i, (x, ty)) in items.iter().zip(t.types()).enumerate() {
        let x = to_js(store, x, &ty)?;
        js::set_index(env, arr, i as u32, x)?;
      }
      arr
    }
    (Val::Record(fields), Type::Record(r)) => {
      let o = js::object(env)?;
      for ((name, x), f) in fields.iter().zip(r.fields()) {
        let x = to_js(store, x, &f.ty)?;
        js::set(env, o, &camel(name), x)?;
      }
      o
    }
    (Val::Variant(tag, payload), Type::Variant(t)) => {
      let case_ty = t.cases().find(|c| c.name == tag).and_then(|c| c.ty);
      tagged(store, tag, payload.as_deref().zip(case_ty.as_ref()))?
    }
    (Val::Enum(name), _) => js::string(env, name)?,
    (Val::Option(None), _) => js::undefined(env)?,
    (Val::Option(Some(x)), Type::Option(o)) => to_js(store, x, &o.ty())?,
    (Val::Result(Ok(x)), Type::Result(r)) => tagged(store, "ok", x.as_deref().zip(r.ok().as_ref()))?,
    (Val::Result(Err(x)), Type::Result(r)) => tagged(store, "err", x.as_deref().zip(r.err().as_ref()))?,
    (Val::Flags(set), _) => {
      let o = js::object(env)?;
      for name in set {
        let t = js::boolean(env, true)?;
        js::set(env, o, &camel(name), t)?;
      }
      o
    }
    (Val::Resource(any), _) => {
      let r = ResourceDynamic::try_from_resource_any(*any, &mut *store).map_err(|e| Fail::Napi(format!("{e}")))?;
      store.data().resources.get(env, r.rep())?
    }
    _ => return Err(Fail::Napi("a value kind kiln's world does not use".into())),
  })
}

fn tagged(store: &mut StoreContextMut<'_, Host>, tag: &str, payload: Option<(&Val, &Type)>) -> Js<Value> {
  let env = store.data().env;
  let o = js::object(env)?;
  let t = js::string(env, tag)?;
  js::set(env, o, "tag", t)?;
  if let Some((p, ty)) = payload {
    let x = to_js(store, p, ty)?;
    js::set(env, o, "val", x)?;
  }
  Ok(o)
}

pub fn from_js(store: &mut StoreContextMut<'_, Host>, v: Value, ty: &Type) -> Js<Val> {
  let env = store.data().env;
  Ok(match ty {
    Type::Bool => Val::Bool(js::get_bool(env, v)?),
    Type::S8 => Val::S8(js::get_number(env, v)? as i8),
    Type::U8 => Val::U8(js::get_number(env, v)? as u8),
    Type::S16 => Val::S16(js::get_number(env, v)? as i16),
    Type::U16 => Val::U16(js::get_number(env, v)? as u16),
    Type::S32 => Val::S32(js::get_number(env, v)? as i32),
    Type::U32 => Val::U32(js::get_number(env, v)? as u32),
    Type::S64 => Val::S64(js::get_i64(env, v)?),
    Type::U64 => Val::U64(js::get_u64(env, v)?),
    Type::Float32 => Val::Float32(js::get_number(env, v)? as f32),
    Type::Float64 => Val::Float64(js::get_number(env, v)?),
    Type::Char => Val::Char(js::get_string(env, v)?.chars().next().ok_or_else(|| bad("a character"))?),
    Type::String => Val::String(js::get_string(env, v)?),
    Type::List(l) => {
      let item = l.ty();
      if matches!(item, Type::U8) {
        Val::List(js::get_bytes(env, v)?.into_iter().map(Val::U8).collect())
      } else {
        let n = js::array_len(env, v)?;
        let mut out = Vec::with_capacity(n as usize);
        for i in 0..n {
          let x = js::get_index(env, v, i)?;
          out.push(from_js(store, x, &item)?);
        }
        Val::List(out)
      }
    }
    Type::Tuple(t) => {
      let mut out = Vec::new();
      for (i, ty) in t.types().enumerate() {
        let x = js::get_index(env, v, i as u32)?;
        out.push(from_js(store, x, &ty)?);
      }
      Val::Tuple(out)
    }
    Type::Record(r) => {
      let mut out = Vec::new();
      for f in r.fields() {
        let x = js::get(env, v, &camel(f.name))?;
        out.push((f.name.to_string(), from_js(store, x, &f.ty)?));
      }
      Val::Record(out)
    }
    Type::Variant(t) => {
      let tag = js::get_string(env, js::get(env, v, "tag")?)?;
      let case = t.cases().find(|c| c.name == tag).ok_or_else(|| bad("a case of the variant"))?;
      let payload = match case.ty {
        Some(ty) => {
          let x = js::get(env, v, "val")?;
          Some(Box::new(from_js(store, x, &ty)?))
        }
        None => None,
      };
      Val::Variant(tag, payload)
    }
    Type::Enum(e) => {
      let name = js::get_string(env, v)?;
      if !e.names().any(|n| n == name) {
        return Err(bad("a case of the enum"));
      }
      Val::Enum(name)
    }
    Type::Option(o) => {
      let t = js::type_of(env, v)?;
      if t == napi::sys::ValueType::napi_undefined || t == napi::sys::ValueType::napi_null {
        Val::Option(None)
      } else {
        Val::Option(Some(Box::new(from_js(store, v, &o.ty())?)))
      }
    }
    Type::Result(r) => {
      let tag = js::get_string(env, js::get(env, v, "tag")?)?;
      let side = if tag == "ok" { r.ok() } else if tag == "err" { r.err() } else { return Err(bad("{ tag: 'ok' | 'err' }")) };
      let payload = match side {
        Some(ty) => {
          let x = js::get(env, v, "val")?;
          Some(Box::new(from_js(store, x, &ty)?))
        }
        None => None,
      };
      Val::Result(if tag == "ok" { Ok(payload) } else { Err(payload) })
    }
    Type::Flags(f) => {
      let mut set = Vec::new();
      for name in f.names() {
        if js::get_bool(env, js::get(env, v, &camel(name))?)? {
          set.push(name.to_string());
        }
      }
      Val::Flags(set)
    }
    Type::Own(rt) => {
      let kind = resource_kind(rt, store.data().resource_kinds).ok_or_else(|| bad("a resource of the host's"))?;
      let rep = store.data_mut().resources.insert(env, v)?;
      let any: ResourceAny = ResourceDynamic::new_own(rep, kind)
        .try_into_resource_any(&mut *store)
        .map_err(|e| Fail::Napi(format!("{e}")))?;
      Val::Resource(any)
    }
    _ => return Err(Fail::Napi("a type kiln's world does not use".into())),
  })
}
