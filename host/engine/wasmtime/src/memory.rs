// A guest's linear memory: a reservation whose first bytes map an image copy-on-write, so an instance holds
// only the pages its own work wrote.
//
// Invariants:
//  - An image is a sealed memfd holding the initial bytes of a linear memory (its zero pages are holes): the
//    engine's own snapshot (the component's data segments, which the precompiled engine no longer carries),
//    or a snapshot of one guest taken by the host (`Guest::snapshot`). Each instance maps it MAP_PRIVATE: a
//    write copies the page for that instance only, and no instance's write reaches the image or another
//    instance.
//  - A memory reserves what wasmtime asks (reservation + guard, PROT_NONE) and never moves: compiled code
//    elides bounds checks on that guarantee. Bytes past its size stay inaccessible until it grows.
//  - The image an instance starts from is named by the thread that instantiates it, just before, and taken by
//    the first memory made on that thread after (the engine component defines exactly one).
use std::cell::RefCell;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use wasmtime::{LinearMemory, MemoryCreator, MemoryType};

const PAGE: usize = 4096;
const WASM_PAGE: usize = 65536;

/// The initial contents of a linear memory, in a memfd of its own.
pub struct Image {
  fd: OwnedFd,
  /// Bytes, a whole number of wasm pages.
  len: usize,
  /// Bytes of its non-zero pages (what the image itself holds).
  resident: usize,
}

fn os_error(what: &str) -> String {
  format!("{what}: {}", std::io::Error::last_os_error())
}

impl Image {
  /// An image of `bytes` (padded with zeros to whole wasm pages); only its non-zero pages are written.
  pub fn new(bytes: &[u8]) -> Result<Image, String> {
    let len = bytes.len().div_ceil(WASM_PAGE) * WASM_PAGE;
    let name = c"kiln-memory-image";
    let raw = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
      return Err(os_error("memfd_create"));
    }
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
      return Err(os_error("ftruncate"));
    }
    let mut resident = 0;
    let mut at = 0;
    while at < bytes.len() {
      // A run of non-zero pages, written at once.
      let page = |i: usize| &bytes[i..(i + PAGE).min(bytes.len())];
      if page(at).iter().all(|&b| b == 0) {
        at += PAGE;
        continue;
      }
      let start = at;
      while at < bytes.len() && !page(at).iter().all(|&b| b == 0) {
        at += PAGE;
      }
      let end = at.min(bytes.len());
      let mut done = start;
      while done < end {
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), bytes[done..end].as_ptr().cast(), end - done, done as libc::off_t) };
        if n <= 0 {
          return Err(os_error("pwrite"));
        }
        done += n as usize;
      }
      resident += end - start;
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
      return Err(os_error("sealing the memory image"));
    }
    Ok(Image { fd, len, resident })
  }

  pub fn len(&self) -> usize {
    self.len
  }

  pub fn resident(&self) -> usize {
    self.resident
  }
}

/// What the host can read of an instance's memory (`Guest::snapshot`): where it is and its size now.
#[derive(Clone)]
pub struct View {
  base: usize,
  size: Arc<AtomicUsize>,
}

impl View {
  /// A copy of the memory's bytes. Safety: no guest code runs on it meanwhile (the caller holds the store).
  pub unsafe fn copy(&self) -> Vec<u8> {
    let size = self.size.load(Ordering::Relaxed);
    std::slice::from_raw_parts(self.base as *const u8, size).to_vec()
  }

  pub fn size(&self) -> usize {
    self.size.load(Ordering::Relaxed)
  }
}

thread_local! {
  /// The image the next memory made on this thread starts from, and the view of the last one made.
  static NEXT: RefCell<Option<Arc<Image>>> = const { RefCell::new(None) };
  static MADE: RefCell<Option<View>> = const { RefCell::new(None) };
}

/// Run `f` (an instantiation) with its memory starting from `image`; returns its result and the view of
/// the memory it made, if it made one.
pub fn with_image<T>(image: Arc<Image>, f: impl FnOnce() -> T) -> (T, Option<View>) {
  NEXT.with(|n| *n.borrow_mut() = Some(image));
  MADE.with(|m| m.borrow_mut().take());
  let out = f();
  NEXT.with(|n| n.borrow_mut().take());
  (out, MADE.with(|m| m.borrow_mut().take()))
}

struct Memory {
  base: *mut u8,
  /// The reservation and its guard, all of it mapped from `base`.
  mapped: usize,
  reserved: usize,
  size: Arc<AtomicUsize>,
  /// Kept as long as a mapping of it is.
  _image: Option<Arc<Image>>,
}

// The mapping is owned by this value alone; wasmtime calls it from the thread that owns the store.
unsafe impl Send for Memory {}
unsafe impl Sync for Memory {}

impl Drop for Memory {
  fn drop(&mut self) {
    unsafe { libc::munmap(self.base.cast(), self.mapped) };
  }
}

unsafe impl LinearMemory for Memory {
  fn byte_size(&self) -> usize {
    self.size.load(Ordering::Relaxed)
  }
  fn byte_capacity(&self) -> usize {
    self.reserved
  }
  fn grow_to(&mut self, new_size: usize) -> wasmtime::Result<()> {
    let size = self.byte_size();
    if new_size > self.reserved {
      wasmtime::bail!("a linear memory may not grow past its reservation");
    }
    if new_size > size {
      let r = unsafe { libc::mprotect(self.base.add(size).cast(), new_size - size, libc::PROT_READ | libc::PROT_WRITE) };
      if r != 0 {
        wasmtime::bail!("{}", os_error("mprotect"));
      }
      self.size.store(new_size, Ordering::Relaxed);
    }
    Ok(())
  }
  fn as_ptr(&self) -> *mut u8 {
    self.base
  }
}

/// The process's memory creator (`Config::with_host_memory`).
pub struct Creator;

unsafe impl MemoryCreator for Creator {
  fn new_memory(&self, _ty: MemoryType, minimum: usize, maximum: Option<usize>, reserved: Option<usize>, guard: usize) -> Result<Box<dyn LinearMemory>, String> {
    let reserved = reserved.ok_or("kiln's linear memories need a reservation (memory_reservation)")?;
    let image = NEXT.with(|n| n.borrow_mut().take());
    let start = image.as_ref().map_or(0, |i| i.len);
    let size = minimum.max(start);
    if size > reserved || maximum.is_some_and(|m| size > m) {
      return Err(format!("a memory image of {start} bytes does not fit this memory"));
    }
    let mapped = reserved + guard;
    let base = unsafe { libc::mmap(std::ptr::null_mut(), mapped, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0) };
    if base == libc::MAP_FAILED {
      return Err(os_error("reserving a linear memory"));
    }
    let memory = Memory { base: base.cast(), mapped, reserved, size: Arc::new(AtomicUsize::new(size)), _image: image.clone() };
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    if let Some(i) = &image {
      let m = unsafe { libc::mmap(base, i.len, rw, libc::MAP_PRIVATE | libc::MAP_FIXED, i.fd.as_raw_fd(), 0) };
      if m == libc::MAP_FAILED {
        return Err(os_error("mapping a memory image"));
      }
    }
    if size > start && unsafe { libc::mprotect(memory.base.add(start).cast(), size - start, rw) } != 0 {
      return Err(os_error("mprotect"));
    }
    MADE.with(|m| *m.borrow_mut() = Some(View { base: memory.base as usize, size: memory.size.clone() }));
    Ok(Box::new(memory))
  }
}
