//! Host arrays of one run ("HBM"), shared by the worker threads. Inputs are
//! read in place from the caller's arrays; outputs, and inputs that the
//! kernel writes (through an aliased output or a DMA), are owned buffers
//! behind a lock, or the caller's own output memory (see
//! `CpuKernel::run_in_place`). The race checks guarantee that parallel
//! units write disjoint blocks, so the locks are held only for block copies.

use super::array::HostArray;
use super::error::Error;
use std::sync::{Arc, RwLock};

/// Bytes a caller lends for the duration of one run
/// (`CpuKernel::run_in_place`): read-only for inputs, written for outputs.
#[derive(Clone, Copy)]
pub(crate) struct Lent {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a `Lent` is made from a borrow that outlives the run, and every
// access goes through `Buffers`, which serialises writes with a lock; the
// run drops every copy before it returns (instances keep no buffers).
unsafe impl Send for Lent {}
// SAFETY: as above.
unsafe impl Sync for Lent {}

impl Lent {
    pub fn input(b: &[u8]) -> Lent {
        Lent {
            ptr: b.as_ptr().cast_mut(),
            len: b.len(),
        }
    }

    pub fn output(b: &mut [u8]) -> Lent {
        Lent {
            ptr: b.as_mut_ptr(),
            len: b.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the lender's borrow is live for the whole run (see above).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The lent bytes, to write. Only for outputs, and only where no other
    /// view is live: before the run, under the buffer's write lock during
    /// it, and after the workers have joined.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: an output lent mutably, viewed at one of the times above,
        // so this is the only live view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

/// An input array read in place: the caller's `HostArray`, or lent bytes.
#[derive(Clone)]
pub(crate) enum Input {
    Array(Arc<HostArray>),
    Lent(Lent),
}

impl Input {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Input::Array(a) => &a.data,
            Input::Lent(l) => l.bytes(),
        }
    }
}

pub(crate) enum Buf {
    Shared(Input),
    Owned(RwLock<Vec<u8>>),
    /// An output written in place, in memory the caller lent.
    Lent(RwLock<Lent>),
}

pub(crate) struct Buffers {
    pub bufs: Vec<Buf>,
    /// The buffer of each operand (an aliased output shares its input's).
    pub of_operand: Vec<usize>,
    /// Owned buffers whose pages were never touched (outputs that only
    /// block write-backs fill).
    pub fresh: Vec<usize>,
}

fn poisoned() -> Error {
    Error::Internal("a host buffer's lock was poisoned by a panic".into())
}

impl Buffers {
    pub fn read<R>(&self, b: usize, f: impl FnOnce(&[u8]) -> R) -> Result<R, Error> {
        match &self.bufs[b] {
            Buf::Shared(a) => Ok(f(a.bytes())),
            Buf::Owned(l) => Ok(f(&l.read().map_err(|_| poisoned())?)),
            Buf::Lent(l) => Ok(f(l.read().map_err(|_| poisoned())?.bytes())),
        }
    }

    pub fn write<R>(&self, b: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Error> {
        match &self.bufs[b] {
            Buf::Shared(_) => Err(Error::Internal("write to a read-only input buffer".into())),
            Buf::Owned(l) => Ok(f(&mut l.write().map_err(|_| poisoned())?)),
            Buf::Lent(l) => Ok(f(l.write().map_err(|_| poisoned())?.bytes_mut())),
        }
    }

    /// The first byte and the length of output buffer `b`, for the runner
    /// to write blocks in place through: the owned vector is never resized
    /// during a run, and lent memory stays lent until the run returns.
    /// `None` for inputs read in place.
    ///
    /// Once a run writes a buffer through this pointer, every write of
    /// the run to that buffer goes through it, to blocks the writing unit
    /// has claimed (see `grid::Claims`), never through [`Self::write`].
    pub fn out_ptr(&self, b: usize) -> Option<(*mut u8, usize)> {
        match self.bufs.get(b)? {
            Buf::Shared(_) => None,
            Buf::Owned(l) => {
                let mut g = l.write().ok()?;
                Some((g.as_mut_ptr(), g.len()))
            }
            Buf::Lent(l) => {
                let mut g = l.write().ok()?;
                let bytes = g.bytes_mut();
                Some((bytes.as_mut_ptr(), bytes.len()))
            }
        }
    }

    /// Whether operand `i` is read in place from the caller's array
    /// (nothing writes it during the run).
    pub fn read_only(&self, i: usize) -> bool {
        matches!(self.bufs.get(self.of_operand[i]), Some(Buf::Shared(_)))
    }

    /// Faults in share `part` of `parts` of every fresh buffer, so that the
    /// workers zero their outputs' pages side by side before they run
    /// rather than one at a time inside a write-back's lock. Only the
    /// kernel touches the pages: no byte is read or written here.
    pub fn populate(&self, part: usize, parts: usize) {
        for &b in &self.fresh {
            let Buf::Owned(l) = &self.bufs[b] else {
                continue;
            };
            // The vector is never resized during a run, so its range stays
            // valid after the guard is dropped.
            let (ptr, len) = match l.read() {
                Ok(g) => (g.as_ptr() as usize, g.len()),
                Err(_) => continue,
            };
            let (lo, hi) = (len * part / parts, len * (part + 1) / parts);
            super::array::populate(ptr + lo, hi - lo);
        }
    }

    /// The owned buffers' bytes (`None` for inputs read in place).
    pub fn into_owned(self) -> Vec<Option<Vec<u8>>> {
        self.bufs
            .into_iter()
            .map(|b| match b {
                Buf::Shared(_) | Buf::Lent(_) => None,
                Buf::Owned(l) => l.into_inner().ok(),
            })
            .collect()
    }

    /// A copy of a buffer's bytes.
    pub fn bytes(&self, b: usize) -> Result<Vec<u8>, Error> {
        self.read(b, |d| d.to_vec())
    }
}
