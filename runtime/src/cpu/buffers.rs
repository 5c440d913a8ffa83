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
