//! Host arrays of one run ("HBM"), shared by the worker threads. Inputs are
//! read in place from the caller's arrays; outputs, and inputs that the
//! kernel writes (through an aliased output or a DMA), are owned buffers
//! behind a lock. The race checks guarantee that parallel units write
//! disjoint blocks, so the locks are held only for block copies.

use super::array::HostArray;
use super::error::Error;
use std::sync::{Arc, RwLock};

pub(crate) enum Buf {
    Shared(Arc<HostArray>),
    Owned(RwLock<Vec<u8>>),
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
            Buf::Shared(a) => Ok(f(&a.data)),
            Buf::Owned(l) => Ok(f(&l.read().map_err(|_| poisoned())?)),
        }
    }

    pub fn write<R>(&self, b: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Error> {
        match &self.bufs[b] {
            Buf::Shared(_) => Err(Error::Internal("write to a read-only input buffer".into())),
            Buf::Owned(l) => Ok(f(&mut l.write().map_err(|_| poisoned())?)),
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
                Buf::Shared(_) => None,
                Buf::Owned(l) => l.into_inner().ok(),
            })
            .collect()
    }

    /// A copy of a buffer's bytes.
    pub fn bytes(&self, b: usize) -> Result<Vec<u8>, Error> {
        self.read(b, |d| d.to_vec())
    }
}
