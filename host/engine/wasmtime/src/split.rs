// The engine component split in two: its code without the data segments of the module that defines its
// linear memory, and that memory's initial bytes (what the segments write).
//
// Invariants:
//  - The code half is what is precompiled: wasmtime then writes nothing into a new memory, and the bytes half
//    is mapped in copy-on-write instead (memory.rs). Nothing else in the component changes.
//  - Exactly one core module of the component defines memory: one memory, 32-bit, not shared. Its data
//    segments are all active, at constant offsets, inside its initial size; anything else is refused, since
//    the split would change what the guest sees.
use wasmparser::{BinaryReader, DataKind, DataSectionReader, MemorySectionReader, Operator};

const WASM_PAGE: usize = 65536;
const CORE_MODULE: u8 = 1;
const MEMORY: u8 = 5;
const DATA: u8 = 11;
const DATA_COUNT: u8 = 12;

fn leb(bytes: &[u8], at: &mut usize) -> Result<usize, String> {
  let (mut v, mut shift) = (0usize, 0);
  loop {
    let b = *bytes.get(*at).ok_or("the engine component ends inside a section header")?;
    *at += 1;
    v |= ((b & 0x7f) as usize) << shift;
    if b & 0x80 == 0 {
      return Ok(v);
    }
    shift += 7;
    if shift > 28 {
      return Err("the engine component has a section size past 32 bits".into());
    }
  }
}

fn put_leb(out: &mut Vec<u8>, mut v: usize) {
  loop {
    let b = (v & 0x7f) as u8;
    v >>= 7;
    if v == 0 {
      out.push(b);
      return;
    }
    out.push(b | 0x80);
  }
}

/// The sections after a binary's 8-byte preamble: (id, header start, content range).
fn sections(bytes: &[u8]) -> Result<Vec<(u8, usize, std::ops::Range<usize>)>, String> {
  let mut out = Vec::new();
  let mut at = 8;
  while at < bytes.len() {
    let start = at;
    let id = bytes[at];
    at += 1;
    let size = leb(bytes, &mut at)?;
    let end = at.checked_add(size).filter(|&e| e <= bytes.len()).ok_or("the engine component has a section past its end")?;
    out.push((id, start, at..end));
    at = end;
  }
  Ok(out)
}

fn parse_error(e: wasmparser::BinaryReaderError) -> String {
  format!("the engine component's memory module: {e}")
}

/// The initial memory of the core module `module`, or None when it defines no memory.
fn initial_memory(module: &[u8]) -> Result<Option<Vec<u8>>, String> {
  let secs = sections(module)?;
  let Some((_, _, mem)) = secs.iter().find(|(id, _, _)| *id == MEMORY) else { return Ok(None) };
  let memories: Vec<_> = MemorySectionReader::new(BinaryReader::new(&module[mem.clone()], mem.start)).map_err(parse_error)?.into_iter().collect::<Result<_, _>>().map_err(parse_error)?;
  let [ty] = memories.as_slice() else { return Err(format!("the engine component's module defines {} memories, not one", memories.len())) };
  if ty.memory64 || ty.shared || ty.page_size_log2.is_some() {
    return Err("the engine component's memory is not a plain 32-bit memory".into());
  }
  let mut bytes = vec![0u8; ty.initial as usize * WASM_PAGE];
  for (_, _, data) in secs.iter().filter(|(id, _, _)| *id == DATA) {
    for d in DataSectionReader::new(BinaryReader::new(&module[data.clone()], data.start)).map_err(parse_error)? {
      let d = d.map_err(parse_error)?;
      let DataKind::Active { memory_index: 0, offset_expr } = d.kind else {
        return Err("the engine component has a data segment that is not active in its memory".into());
      };
      let mut ops = offset_expr.get_operators_reader();
      let offset = match (ops.read().map_err(parse_error)?, ops.read().map_err(parse_error)?) {
        (Operator::I32Const { value }, Operator::End) => value as u32 as usize,
        _ => return Err("the engine component has a data segment at an offset that is not a constant".into()),
      };
      let end = offset.checked_add(d.data.len()).filter(|&e| e <= bytes.len()).ok_or("the engine component has a data segment past its memory's initial size")?;
      bytes[offset..end].copy_from_slice(d.data);
    }
  }
  Ok(Some(bytes))
}

/// The initial bytes of `component`'s memory.
pub fn initial(component: &[u8]) -> Result<Vec<u8>, String> {
  split_as(component, false).map(|(_, m)| m)
}

/// `component` without its memory module's data segments, and that memory's initial bytes.
pub fn split(component: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
  split_as(component, true)
}

fn split_as(component: &[u8], code: bool) -> Result<(Vec<u8>, Vec<u8>), String> {
  if component.len() < 8 {
    return Err("the engine component is too short".into());
  }
  let mut out = component[..8].to_vec();
  let mut memory = None;
  for (id, start, content) in sections(component)? {
    let module = &component[content.clone()];
    let initial = if id == CORE_MODULE { initial_memory(module)? } else { None };
    let Some(initial) = initial else {
      if code {
        out.extend_from_slice(&component[start..content.end]);
      }
      continue;
    };
    if memory.replace(initial).is_some() {
      return Err("more than one module of the engine component defines memory".into());
    }
    if !code {
      continue;
    }
    let mut stripped = module[..8].to_vec();
    for (sid, s, c) in sections(module)? {
      if sid != DATA && sid != DATA_COUNT {
        stripped.extend_from_slice(&module[s..c.end]);
      }
    }
    out.push(CORE_MODULE);
    put_leb(&mut out, stripped.len());
    out.extend_from_slice(&stripped);
  }
  let memory = memory.ok_or("no module of the engine component defines memory")?;
  Ok((out, memory))
}
